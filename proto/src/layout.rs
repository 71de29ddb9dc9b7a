//! Where things live in an evaluator's state directory. The evaluator creates them; the harness
//! finds them.

use std::path::{Path, PathBuf};

use crate::ids::RunId;

/// The harness channel's Unix socket.
pub const HARNESS_SOCKET: &str = "harness.sock";
/// The 32-byte secret mixed into seed commitments.
pub const SECRET_FILE: &str = "evaluator.secret";
/// One folder per official run: `runs/<run_id>/`.
pub const RUNS_DIR: &str = "runs";
/// The agent channel's URL, present while an evaluator serves the state dir.
pub const AGENT_ENDPOINT_FILE: &str = "agent.endpoint";
/// The harness's report in a run folder.
pub const REPORT_FILE: &str = "report.json";
/// The evaluator's Ed25519 signing key: its 32-byte seed (0600).
pub const EVALUATOR_KEY_FILE: &str = "evaluator.key";
/// The evaluator's Ed25519 public key, 64 hex characters and a newline (0644).
pub const EVALUATOR_PUBLIC_KEY_FILE: &str = "evaluator.pub";
/// The harness's Ed25519 signing key: its 32-byte seed (0600).
pub const HARNESS_KEY_FILE: &str = "harness.key";
/// The harness's Ed25519 public key, 64 hex characters and a newline (0644).
pub const HARNESS_PUBLIC_KEY_FILE: &str = "harness.pub";

pub fn harness_socket(state_dir: &Path) -> PathBuf {
    state_dir.join(HARNESS_SOCKET)
}

pub fn runs_dir(state_dir: &Path) -> PathBuf {
    state_dir.join(RUNS_DIR)
}

pub fn run_dir(state_dir: &Path, run_id: &RunId) -> PathBuf {
    runs_dir(state_dir).join(run_id.as_str())
}

pub fn agent_endpoint_file(state_dir: &Path) -> PathBuf {
    state_dir.join(AGENT_ENDPOINT_FILE)
}
