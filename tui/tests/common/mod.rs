//! What the integration tests of `ale` as a process share: a state dir as the evaluator
//! requires one, and running `ale` with its output read.
// Each test binary uses only some of these.
#![allow(dead_code)]

use std::process::{Command, Output};

pub const ALE: &str = env!("CARGO_BIN_EXE_ale");

/// A temporary directory usable as a state dir as it is: private (0700).
pub fn private_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .unwrap()
}

/// `ale ARGS`, run to its end.
pub fn ale(args: &[&str]) -> Output {
    Command::new(ALE).args(args).output().unwrap()
}

/// What a finished process wrote, standard output first.
pub fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
