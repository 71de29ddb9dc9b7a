//! With the `mujoco` feature: gives the `ale` binary a run path to the folder libmujoco was
//! linked from, so that `target/release/ale` starts without LD_LIBRARY_PATH. ale-mujoco's
//! build script names the folder (`DEP_ALE_MUJOCO_LIB_DIR`, which reaches only the packages
//! that depend on it directly, hence tui's direct dependency). Without the feature, or with
//! a system-wide MuJoCo found by pkg-config, there is no folder and nothing to do.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=DEP_ALE_MUJOCO_LIB_DIR");
    if let Some(dir) = std::env::var_os("DEP_ALE_MUJOCO_LIB_DIR") {
        let dir = dir
            .to_str()
            .expect("the MuJoCo library folder is a UTF-8 path");
        println!("cargo::rustc-link-arg-bins=-Wl,-rpath,{dir}");
    }
}
