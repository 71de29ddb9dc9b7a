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

/// Whether `ale harness run` ended with a report: every rollout played (0), or the run ended
/// early and says why in its exit code (3 the agent, 4 a budget, 5 the sim). 1 is the harness
/// or the evaluator failing, 2 a usage error.
#[allow(dead_code)]
pub fn reported(status: &std::process::ExitStatus) -> bool {
    matches!(status.code(), Some(0 | 3 | 4 | 5))
}
