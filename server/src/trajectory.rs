//! A run's trajectory: the evaluator's trusted events, hash-chained, in
//! `<state>/runs/<run_id>/trajectory.jsonl`. Every event reaches the OS before the RPC that
//! caused it answers.

use std::path::Path;

use ale_proto::RunId;
use ale_proto::private_files::{check_private_dir, create_private_dir};
use ale_proto::trajectory::{ChainWriter, Level, TRAJECTORY_FILE};

pub type TrajectoryWriter = ChainWriter;

/// Starts a new trajectory in a new run folder `<runs_dir>/<run_id>` (0700). `runs_dir` must
/// be the private directory the state dir's preparation checked (not a link, ours, 0700);
/// the run folder is created exactly there, never through a link and never reused.
pub fn create(runs_dir: &Path, run_id: &RunId) -> std::io::Result<TrajectoryWriter> {
    check_private_dir(runs_dir)?;
    let run_dir = runs_dir.join(run_id.as_str());
    create_private_dir(&run_dir)?;
    ChainWriter::create(&run_dir.join(TRAJECTORY_FILE), Level::TrustedEvaluator)
}
