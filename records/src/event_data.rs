//! The data of each trajectory event, as the evaluator writes it and the harness reads it back,
//! and the one other record the evaluator leaves in a run folder, `interrupted.json`. The
//! session's result ([`EvalResultRecord`], the `session_finished` data) is the wire's
//! `EvalResult` in domain form, in [`ale_proto::eval`].

use serde::{Deserialize, Serialize};

use ale_proto::eval::{Direction, EpisodeRecord, EvalResultRecord, Genre};
use ale_proto::task_spec::TaskMode;
use ale_proto::{RunId, SessionId};

/// A zero-target safety metric of a task and its penalty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetyMetricRecord {
    pub name: String,
    pub penalty_factor: f64,
}

/// A record whose fields are declared in sorted order (and whose nested records and maps are
/// sorted too), so that serde_json writes it as canonical JSON directly, without building a
/// `serde_json::Value` first: the records a batch run writes by the thousand.
/// `trajectory::PreparedData::of_sorted` relies on it; a test checks each against the
/// canonical writer.
pub trait SortedFields: Serialize {}

impl SortedFields for EpisodeRecord {}
impl SortedFields for EvalResultRecord {}
impl SortedFields for SessionStarted {}
impl SortedFields for RolloutStarted {}

/// Data of a `run_started` event: the run, and everything needed to score it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunStarted {
    pub run_id: RunId,
    pub session_id: SessionId,
    pub task_id: String,
    pub sim: String,
    pub genre: Genre,
    /// How the official episodes are played. Records written before batch mode existed lack
    /// it; they were all interactive.
    #[serde(default)]
    pub mode: TaskMode,
    pub metric_name: String,
    pub direction: Direction,
    pub target: f64,
    pub cap: f64,
    pub failure_value: f64,
    pub safety: Vec<SafetyMetricRecord>,
    pub episodes: u32,
    pub max_steps_per_episode: u32,
    pub max_total_steps: u64,
    pub time_budget_seconds: u64,
    pub evaluator_version: String,
    /// The named evaluation seed set the run plays, if any (fresh hidden seeds otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_set: Option<SeedSetRecord>,
}

/// A named evaluation seed set as a run records it: its name and its commitment
/// ([`crate::commitment::seed_set_commitment`]), the same for every run on the set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedSetRecord {
    pub commitment: String,
    pub name: String,
}

/// Data of a `session_started` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SessionStarted {
    // Fields in sorted order: see [`SortedFields`].
    /// One per planned rollout, in order.
    pub seed_commitments: Vec<String>,
    pub session_id: SessionId,
}

/// Data of a `submission_received` event: the batch submission the run evaluates, as the
/// evaluator snapshotted it. `sha256` is the hex digest of exactly the bytes the pipeline ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmissionReceived {
    /// The contract's entrypoint: a plain file name inside the submission dir.
    pub entrypoint: String,
    /// The contract's format, e.g. `mlp-safetensors`.
    pub format: String,
    /// The file's length.
    pub bytes: u64,
    /// Lowercase hex SHA-256 of the file's contents.
    pub sha256: String,
}

/// Data of a `rollout_started` event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RolloutStarted {
    // Fields in sorted order: see [`SortedFields`].
    pub index: u32,
    pub seed_commitment: String,
}

/// What `<run dir>/interrupted.json` ([`crate::layout::INTERRUPTED_FILE`]) holds: a run whose
/// session never finished, found by the evaluator when it started again on the state dir (the
/// evaluator that wrote the run was killed, or its machine went down). The session's hidden
/// seeds died with that process, so the run can never be resumed; its trajectory is left
/// exactly as it was found, unsigned. This file is the evaluator's statement of what it found,
/// not a signed record: a verifier checks that it names the trajectory's actual last event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterruptedRun {
    /// When the evaluator found the run unfinished.
    pub found_unix_ms: u64,
    /// Whole events in the trajectory when it was found.
    pub events: u64,
    /// The hash of the last whole event (the 64 zero hex digits of the genesis for none).
    pub head: String,
    /// Bytes after the last whole line: a line the interruption cut short (0 if none).
    pub torn_bytes: u64,
}

/// Data of a `rollout_finished` event: the rollout's [`EpisodeRecord`].
pub type RolloutFinished = EpisodeRecord;
