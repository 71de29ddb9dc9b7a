//! A run's trajectory: the evaluator's trusted events, hash-chained, in
//! `<state>/runs/<run_id>/trajectory.jsonl`. Every event reaches the OS before the RPC that
//! caused it answers.
//!
//! The chain format is [`ale_proto::trajectory`]'s, shared with the harness that verifies it.
//! What this module adds is the evaluator's side only: a writer that always writes at the
//! trusted-evaluator level, creates its run folder exactly once inside the checked runs dir, and
//! holds the evaluator's signing key so that the session's last event is signed. Nothing outside
//! the evaluator can make one.

use std::path::Path;

use ale_proto::RunId;
use ale_proto::keys::SigningKey;
use ale_proto::private_files::{check_private_dir, create_private_dir};
use ale_proto::trajectory::{ChainWriter, EventKind, Level, PreparedData, TRAJECTORY_FILE};
use serde::Serialize;

/// The writing end of one run's trajectory. Its last event is signed with the evaluator's key,
/// so a record re-sealed by anyone else fails verification.
#[derive(Debug)]
pub struct TrajectoryWriter {
    chain: ChainWriter,
    signer: SigningKey,
}

impl TrajectoryWriter {
    /// Appends one trusted event; returns its hash.
    pub fn append(&mut self, kind: EventKind, data: &impl Serialize) -> std::io::Result<String> {
        self.chain.append(kind, data)
    }

    /// Appends one trusted event whose data was serialised beforehand; returns its hash.
    pub fn append_prepared(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
    ) -> std::io::Result<String> {
        self.chain.append_prepared(kind, data)
    }

    /// Appends the last event, signed over its hash (the final head), and syncs the file.
    pub fn append_final(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
    ) -> std::io::Result<String> {
        let hash = self
            .chain
            .append_signed_prepared(kind, data, &self.signer)?;
        self.chain.sync()?;
        Ok(hash)
    }

    pub fn head(&self) -> String {
        self.chain.head()
    }

    /// Lets events wait in memory until the last, signed one (which is flushed and synced):
    /// for a batch run, whose rollouts no RPC waits for.
    pub fn set_buffered(&mut self) -> std::io::Result<()> {
        self.chain.set_buffered(true)
    }
}

/// Starts a new trajectory in a new run folder `<runs_dir>/<run_id>` (0700). `runs_dir` must
/// be the private directory the state dir's preparation checked (not a link, ours, 0700);
/// the run folder is created exactly there, never through a link and never reused.
/// `signer` signs the trajectory's last event.
pub fn create(
    runs_dir: &Path,
    run_id: &RunId,
    signer: SigningKey,
) -> std::io::Result<TrajectoryWriter> {
    check_private_dir(runs_dir)?;
    let run_dir = runs_dir.join(run_id.as_str());
    create_private_dir(&run_dir)?;
    Ok(TrajectoryWriter {
        chain: ChainWriter::create(&run_dir.join(TRAJECTORY_FILE), Level::TrustedEvaluator)?,
        signer,
    })
}
