//! A run's trajectory: the evaluator's trusted events, hash-chained, in
//! `<state>/runs/<run_id>/trajectory.jsonl`. Every event reaches the OS before the RPC that
//! caused it answers.
//!
//! The chain format is [`ale_records::trajectory`]'s, shared with the harness that verifies it.
//! What this module adds is the evaluator's side only: a writer that always writes at the
//! trusted-evaluator level, creates its run folder exactly once inside the checked runs dir, and
//! holds the evaluator's signing key so that the session's last event is signed. Nothing outside
//! the evaluator can make one.

use std::path::Path;

use ale_proto::RunId;
use ale_records::private_files::{check_private_dir, create_private_dir};
use ale_records::signing_keys::SigningKey;
use ale_records::trajectory::{ChainWriter, EventKind, Level, PreparedData, TRAJECTORY_FILE};
use serde::Serialize;

use crate::error::Error;

/// The writing end of one run's trajectory. Its last event is signed with the evaluator's key,
/// so a record re-sealed by anyone else fails verification.
#[derive(Debug)]
pub struct TrajectoryWriter {
    chain: ChainWriter,
    signer: SigningKey,
}

/// What a client is told when a trusted event cannot be recorded (a full disk, a state dir
/// that went read-only): the request that caused it fails, and the run can go no further,
/// since an official step that is not on record must never count.
fn unrecorded(kind: EventKind, cause: std::io::Error) -> std::io::Error {
    std::io::Error::new(
        cause.kind(),
        format!(
            "the evaluator could not record the trusted event {} ({cause}), so this request is \
             refused and the run records nothing more; the evaluator's operator must free space \
             in (or repair) its state dir, then start a new run",
            kind.as_str()
        ),
    )
}

impl TrajectoryWriter {
    /// Appends one trusted event; returns its hash.
    pub fn append(&mut self, kind: EventKind, data: &impl Serialize) -> std::io::Result<String> {
        self.chain
            .append(kind, data)
            .map_err(|e| unrecorded(kind, e))
    }

    /// Appends one trusted event whose data was serialised beforehand; returns its hash.
    pub fn append_prepared(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
    ) -> std::io::Result<String> {
        self.chain
            .append_prepared(kind, data)
            .map_err(|e| unrecorded(kind, e))
    }

    /// Appends the last event, signed over its hash (the final head), and syncs the file.
    pub fn append_final(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
    ) -> std::io::Result<String> {
        let hash = self
            .chain
            .append_signed_prepared(kind, data, &self.signer)
            .and_then(|hash| self.chain.sync().map(|()| hash))
            .map_err(|e| unrecorded(kind, e))?;
        // The record is whole: what was set aside for it and not used goes back to the disk
        // (else every finished run would keep its reservation for good).
        if let Err(e) = self.chain.release_reserve() {
            tracing::warn!(error = %e, "cannot give back the disk reserved for a finished record");
        }
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

/// Disk set aside for a run's trusted events whatever the rest of the disk holds.
pub const RESERVE_BASE_BYTES: u64 = 64 << 10;

/// What one planned rollout adds to a run's record, at most: its `rollout_started` and
/// `rollout_finished` lines, its commitment in `session_started` and its episode in
/// `session_finished`'s result (about 1.2 KiB for the built-in tasks; the test
/// `a_full_disk_never_costs_a_started_run_its_record` in `tests/runs_apart.rs` measures it).
pub const RESERVE_PER_ROLLOUT_BYTES: u64 = 2 << 10;

/// The disk reserved for the record of a run of `episodes` planned rollouts.
pub fn reservation_for(episodes: u32) -> u64 {
    RESERVE_BASE_BYTES.saturating_add(u64::from(episodes).saturating_mul(RESERVE_PER_ROLLOUT_BYTES))
}

/// Starts a new trajectory in a new run folder `<runs_dir>/<run_id>` (0700). `runs_dir` must
/// be the private directory the state dir's preparation checked (not a link, ours, 0700);
/// the run folder is created exactly there, never through a link and never reused.
/// `signer` signs the trajectory's last event. `reserve` bytes of disk are set aside for
/// the events to come, so no one else filling the disk can make them unwritable; a disk
/// that cannot hold them refuses the run ([`Error::NoRoomForRecord`]) and nothing is left.
pub fn create(
    runs_dir: &Path,
    run_id: &RunId,
    signer: SigningKey,
    reserve: u64,
) -> Result<TrajectoryWriter, Error> {
    check_private_dir(runs_dir).map_err(std::io::Error::from)?;
    let run_dir = runs_dir.join(run_id.as_str());
    create_private_dir(&run_dir).map_err(|e| unrecorded(EventKind::RunStarted, e.into()))?;
    let chain = match ChainWriter::create(&run_dir.join(TRAJECTORY_FILE), Level::TrustedEvaluator) {
        Ok(chain) => chain,
        Err(e) => {
            let _ = std::fs::remove_dir(&run_dir);
            return Err(unrecorded(EventKind::RunStarted, e).into());
        }
    };
    match chain.reserve(reserve) {
        Ok(()) => {}
        Err(e) if matches!(e.raw_os_error(), Some(libc::EOPNOTSUPP)) => {
            tracing::warn!(
                dir = %runs_dir.display(),
                "this filesystem cannot reserve space; a full disk can cut a run's record short"
            );
        }
        Err(cause) => {
            drop(chain);
            discard(runs_dir, run_id);
            return Err(Error::NoRoomForRecord {
                bytes: reserve,
                dir: runs_dir.to_path_buf(),
                cause,
            });
        }
    }
    Ok(TrajectoryWriter { chain, signer })
}

/// Removes the run folder [`create`] made, and its trajectory, when not even `run_started`
/// could be recorded: there is no run to keep. Only those two names are removed, never
/// anything else that might be in the folder; a failure is logged, not fatal.
pub fn discard(runs_dir: &Path, run_id: &RunId) {
    let run_dir = runs_dir.join(run_id.as_str());
    let removed = std::fs::remove_file(run_dir.join(TRAJECTORY_FILE))
        .and_then(|()| std::fs::remove_dir(&run_dir));
    if let Err(e) = removed {
        tracing::warn!(run = %run_id, error = %e, "cannot remove the folder of a run that could not start");
    }
}
