//! With the `mujoco` feature: checks that libmujoco is where mujoco-rs will look for it, and
//! makes the binaries that link it find it at run time with no LD_LIBRARY_PATH.
//!
//! mujoco-rs's own build script links `-lmujoco` from `MUJOCO_DYNAMIC_LINK_DIR`, which the
//! workspace's `.cargo/config.toml` sets to `target/mujoco-3.17.0/lib` (scripts/fetch-mujoco
//! puts the library there); a value in the environment wins. Linking is all it does: the
//! binaries still need to find `libmujoco.so.3.17.0` when they start. So this script
//!
//! - gives this crate's own tests and examples a run path to that folder
//!   (`cargo:rustc-link-arg` applies to this package's binaries only, never to dependents');
//! - links the library into `OUT_DIR/lib` and adds that folder to the link search path, which
//!   does propagate: `cargo run` and `cargo test` put search folders that lie inside the
//!   target folder on the dynamic loader's path, for every package that depends on this one;
//! - hands the folder to dependents' build scripts as `DEP_ALE_MUJOCO_LIB_DIR`, so a binary
//!   crate that links MuJoCo gives its own binaries the same run path
//!   (`cargo:rustc-link-arg-bins=-Wl,-rpath,$DEP_ALE_MUJOCO_LIB_DIR`).
//!
//! Without the feature it does nothing: no library is needed.

use std::path::{Path, PathBuf};

const LIB: &str = "libmujoco.so.3.17.0";

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=MUJOCO_DYNAMIC_LINK_DIR");
    if std::env::var_os("CARGO_FEATURE_MUJOCO").is_none() {
        return;
    }
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() != Ok("linux") {
        panic!(
            "ale-mujoco's `mujoco` feature supports Linux only (scripts/fetch-mujoco fetches the Linux library)"
        );
    }
    let Some(dir) = std::env::var_os("MUJOCO_DYNAMIC_LINK_DIR").map(PathBuf::from) else {
        // mujoco-rs falls back to pkg-config: a system-wide MuJoCo, found by the loader as is.
        println!(
            "cargo::warning=MUJOCO_DYNAMIC_LINK_DIR is not set (is cargo running outside the \
             workspace, away from its .cargo/config.toml?); mujoco-rs will try pkg-config"
        );
        return;
    };
    let lib = dir.join(LIB);
    if !lib.is_file() {
        panic!(
            "MuJoCo 3.17.0 is not in {} (no {LIB}): run scripts/fetch-mujoco first, or build \
             without the `mujoco` feature",
            dir.display()
        );
    }
    let dir = dir.canonicalize().expect("canonical MuJoCo library folder");
    println!("cargo::rerun-if-changed={}", dir.join(LIB).display());

    // A run path for this package's own tests and examples.
    println!("cargo::rustc-link-arg=-Wl,-rpath,{}", dir.display());

    // A copy of the library's name inside the target folder, for `cargo run`/`cargo test` of
    // dependents (cargo only puts search folders inside the target folder on the loader's path).
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("lib");
    std::fs::create_dir_all(&out).expect("create OUT_DIR/lib");
    relink(&dir.join(LIB), &out.join(LIB));
    println!("cargo::rustc-link-search=native={}", out.display());

    println!("cargo::metadata=lib_dir={}", dir.display());
}

#[cfg(unix)]
fn relink(target: &Path, link: &Path) {
    match std::fs::remove_file(link) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => panic!("remove {}: {e}", link.display()),
    }
    std::os::unix::fs::symlink(target, link)
        .unwrap_or_else(|e| panic!("link {} -> {}: {e}", link.display(), target.display()));
}

#[cfg(not(unix))]
fn relink(_: &Path, _: &Path) {
    unreachable!("Linux only, checked above")
}
