//! Records where scripts/fetch-go1 puts the Unitree Go1 model, `target/mujoco-menagerie/
//! unitree_go1` under the workspace root (whatever CARGO_TARGET_DIR says, as for MuJoCo's
//! library), as the absolute path `ALE_GO1_DEFAULT_ASSETS`: the sim reads its model from there
//! at run time unless `ALE_GO1_ASSETS` names another folder. Nothing is checked or fetched
//! here; a missing model is the sim's error, with what to run.

use std::path::Path;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let manifest = std::env::var_os("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest)
        .parent()
        .and_then(Path::parent)
        .expect("sims/go1 lies two folders below the workspace root");
    let dir = root.join("target/mujoco-menagerie/unitree_go1");
    let dir = dir.to_str().expect("the workspace lies at a UTF-8 path");
    println!("cargo::rustc-env=ALE_GO1_DEFAULT_ASSETS={dir}");
}
