//! A run's trajectory: the evaluator's trusted events, hash-chained, in
//! `<state>/runs/<run_id>/trajectory.jsonl`. Every event reaches the OS before the RPC that
//! caused it answers.

use std::os::unix::fs::DirBuilderExt;
use std::path::Path;

use ale_proto::trajectory::{ChainWriter, Level, TRAJECTORY_FILE};

pub type TrajectoryWriter = ChainWriter;

/// Starts a new trajectory in `run_dir` (created 0700); fails if one exists there.
pub fn create(run_dir: &Path) -> std::io::Result<TrajectoryWriter> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(run_dir)?;
    ChainWriter::create(&run_dir.join(TRAJECTORY_FILE), Level::TrustedEvaluator)
}
