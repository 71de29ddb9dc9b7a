//! How every command that takes a run reads its argument: a run folder, a trajectory file
//! (or a bundle, where the command says so), or a run id looked up in the state dir.

use std::path::{Path, PathBuf};

/// A run argument as a path: itself if it exists, else the folder of the run of that id in
/// `state_dir`.
pub fn resolve(run: &Path, state_dir: &Path) -> anyhow::Result<PathBuf> {
    if run.exists() {
        return Ok(run.to_path_buf());
    }
    let text = run.to_string_lossy();
    anyhow::ensure!(
        text.starts_with("run-") && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
        "{} does not exist (a RUN is a run folder, a trajectory.jsonl, or a run id in the state dir)",
        run.display()
    );
    let id = ale_proto::RunId::from_wire(text.as_ref());
    let dir = ale_records::layout::run_dir(state_dir, &id);
    anyhow::ensure!(
        dir.is_dir(),
        "{} is neither a file, a folder, nor a run in {} (`ale harness runs --state-dir DIR` \
         lists them)",
        run.display(),
        state_dir.display()
    );
    Ok(dir)
}
