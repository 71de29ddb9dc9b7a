//! The evaluation record shared by the evaluator (which writes it into the trajectory), the
//! harness (which reads it over the wire and verifies it) and reports: an `EvalResult` with
//! readable enums, plus the data of each trajectory event.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{RunId, SessionId};
use crate::pb;
use crate::task_spec::TaskMode;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    HigherIsBetter,
    LowerIsBetter,
}

/// The scoring cap when a task does not set its own: a score is clamped to `[0, cap]`.
pub const DEFAULT_CAP: f64 = 1.5;

/// In words, for people: `higher is better` or `lower is better`.
///
/// ```
/// use ale_proto::records::Direction;
/// assert_eq!(Direction::LowerIsBetter.to_string(), "lower is better");
/// ```
impl std::fmt::Display for Direction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Direction::HigherIsBetter => "higher is better",
            Direction::LowerIsBetter => "lower is better",
        })
    }
}

impl Direction {
    /// `↑` or `↓`, as tables show the direction beside a metric's name.
    pub fn arrow(self) -> &'static str {
        match self {
            Direction::HigherIsBetter => "↑",
            Direction::LowerIsBetter => "↓",
        }
    }
}

/// What kind of task: optimise freely, or reproduce a published method.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Genre {
    Open,
    /// Scored only with a passing faithfulness verdict.
    Reproduction,
}

impl std::fmt::Display for Genre {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Genre::Open => "open",
            Genre::Reproduction => "reproduction",
        })
    }
}

/// A zero-target safety metric of a task and its penalty.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetyMetricRecord {
    pub name: String,
    pub penalty_factor: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvalStatus {
    Running,
    Completed,
    BudgetExceeded,
    /// Ended before its rollouts were played, by the agent's side (see the wire's
    /// `EVAL_STATUS_ENDED_EARLY`).
    EndedEarly,
    /// Ended by the evaluator itself: its shutdown or a failure of its own.
    EvaluatorEnded,
}

impl EvalStatus {
    pub fn is_finished(self) -> bool {
        self != EvalStatus::Running
    }
}

/// In words, for people: `running`, `completed`, `budget exceeded`, `ended early`, `ended by
/// the evaluator`.
impl std::fmt::Display for EvalStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EvalStatus::Running => "running",
            EvalStatus::Completed => "completed",
            EvalStatus::BudgetExceeded => "budget exceeded",
            EvalStatus::EndedEarly => "ended early",
            EvalStatus::EvaluatorEnded => "ended by the evaluator",
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Completed,
    Aborted,
    BudgetExceeded,
    NotRun,
    InProgress,
    /// The sim failed during the episode (a hosted sim's process crashed, hung, or answered
    /// what it must not): not the agent's failure, counted at the failure value all the same.
    SimFault,
}

impl Outcome {
    /// Whether the rollout counts at the task's failure value.
    pub fn is_failure(self) -> bool {
        matches!(
            self,
            Outcome::Aborted | Outcome::BudgetExceeded | Outcome::NotRun | Outcome::SimFault
        )
    }

    /// Whether the rollout has been played to its end (completed or failed while playing):
    /// neither still waiting to run nor in progress.
    pub fn is_played(self) -> bool {
        !matches!(self, Outcome::NotRun | Outcome::InProgress)
    }
}

/// The mean of the first 1, 2, … values: one running mean per value.
///
/// ```
/// assert_eq!(ale_proto::records::running_mean([2.0, 4.0, 0.0]), vec![2.0, 3.0, 2.0]);
/// ```
pub fn running_mean(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut sum = 0.0;
    values
        .into_iter()
        .enumerate()
        .map(|(n, v)| {
            sum += v;
            sum / (n + 1) as f64
        })
        .collect()
}

/// One planned rollout's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EpisodeRecord {
    // Fields in sorted order: see [`SortedFields`].
    pub episode_return: f64,
    pub index: u32,
    pub metric: f64,
    pub outcome: Outcome,
    /// The task's safety metrics over this rollout.
    pub safety: BTreeMap<String, f64>,
    pub seed_commitment: String,
    pub steps: u64,
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

/// The authoritative result of an evaluation session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalResultRecord {
    // Fields in sorted order: see [`SortedFields`].
    pub direction: Direction,
    pub episodes: Vec<EpisodeRecord>,
    pub metric_name: String,
    pub run_id: RunId,
    pub safety: BTreeMap<String, f64>,
    pub seed_commitments: Vec<String>,
    pub session_id: SessionId,
    pub status: EvalStatus,
    pub status_message: String,
    pub task_id: String,
    pub total_steps: u64,
    pub trajectory_head: String,
    pub value: f64,
}

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

/// A wire enum value that is not one this version knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {field} value {value}; the peer speaks a newer protocol than this build knows")]
pub struct UnknownEnum {
    pub field: &'static str,
    pub value: i32,
}

impl From<Direction> for pb::Direction {
    fn from(d: Direction) -> Self {
        match d {
            Direction::HigherIsBetter => pb::Direction::HigherIsBetter,
            Direction::LowerIsBetter => pb::Direction::LowerIsBetter,
        }
    }
}

impl From<EvalStatus> for pb::EvalStatus {
    fn from(s: EvalStatus) -> Self {
        match s {
            EvalStatus::Running => pb::EvalStatus::Running,
            EvalStatus::Completed => pb::EvalStatus::Completed,
            EvalStatus::BudgetExceeded => pb::EvalStatus::BudgetExceeded,
            EvalStatus::EndedEarly => pb::EvalStatus::EndedEarly,
            EvalStatus::EvaluatorEnded => pb::EvalStatus::EvaluatorEnded,
        }
    }
}

impl From<Outcome> for pb::Outcome {
    fn from(o: Outcome) -> Self {
        match o {
            Outcome::Completed => pb::Outcome::Completed,
            Outcome::Aborted => pb::Outcome::Aborted,
            Outcome::BudgetExceeded => pb::Outcome::BudgetExceeded,
            Outcome::NotRun => pb::Outcome::NotRun,
            Outcome::InProgress => pb::Outcome::InProgress,
            Outcome::SimFault => pb::Outcome::SimFault,
        }
    }
}

pub fn direction_from_pb(raw: i32) -> Result<Direction, UnknownEnum> {
    match pb::Direction::try_from(raw) {
        Ok(pb::Direction::HigherIsBetter) => Ok(Direction::HigherIsBetter),
        Ok(pb::Direction::LowerIsBetter) => Ok(Direction::LowerIsBetter),
        _ => Err(UnknownEnum {
            field: "direction",
            value: raw,
        }),
    }
}

fn status_from_pb(raw: i32) -> Result<EvalStatus, UnknownEnum> {
    match pb::EvalStatus::try_from(raw) {
        Ok(pb::EvalStatus::Running) => Ok(EvalStatus::Running),
        Ok(pb::EvalStatus::Completed) => Ok(EvalStatus::Completed),
        Ok(pb::EvalStatus::BudgetExceeded) => Ok(EvalStatus::BudgetExceeded),
        Ok(pb::EvalStatus::EndedEarly) => Ok(EvalStatus::EndedEarly),
        Ok(pb::EvalStatus::EvaluatorEnded) => Ok(EvalStatus::EvaluatorEnded),
        _ => Err(UnknownEnum {
            field: "status",
            value: raw,
        }),
    }
}

fn outcome_from_pb(raw: i32) -> Result<Outcome, UnknownEnum> {
    match pb::Outcome::try_from(raw) {
        Ok(pb::Outcome::Completed) => Ok(Outcome::Completed),
        Ok(pb::Outcome::Aborted) => Ok(Outcome::Aborted),
        Ok(pb::Outcome::BudgetExceeded) => Ok(Outcome::BudgetExceeded),
        Ok(pb::Outcome::NotRun) => Ok(Outcome::NotRun),
        Ok(pb::Outcome::InProgress) => Ok(Outcome::InProgress),
        Ok(pb::Outcome::SimFault) => Ok(Outcome::SimFault),
        _ => Err(UnknownEnum {
            field: "outcome",
            value: raw,
        }),
    }
}

impl From<&EvalResultRecord> for pb::EvalResult {
    fn from(r: &EvalResultRecord) -> Self {
        pb::EvalResult {
            session_id: r.session_id.to_string(),
            run_id: r.run_id.to_string(),
            task_id: r.task_id.clone(),
            metric_name: r.metric_name.clone(),
            value: r.value,
            direction: pb::Direction::from(r.direction) as i32,
            status: pb::EvalStatus::from(r.status) as i32,
            status_message: r.status_message.clone(),
            episodes: r
                .episodes
                .iter()
                .map(|e| pb::EpisodeOutcome {
                    index: e.index,
                    outcome: pb::Outcome::from(e.outcome) as i32,
                    metric: e.metric,
                    steps: e.steps,
                    episode_return: e.episode_return,
                    seed_commitment: e.seed_commitment.clone(),
                    safety: e.safety.iter().map(|(k, v)| (k.clone(), *v)).collect(),
                })
                .collect(),
            seed_commitments: r.seed_commitments.clone(),
            trajectory_head: r.trajectory_head.clone(),
            total_steps: r.total_steps,
            safety: r.safety.iter().map(|(k, v)| (k.clone(), *v)).collect(),
        }
    }
}

impl TryFrom<pb::EvalResult> for EvalResultRecord {
    type Error = UnknownEnum;

    fn try_from(r: pb::EvalResult) -> Result<Self, UnknownEnum> {
        Ok(EvalResultRecord {
            session_id: SessionId::from_wire(r.session_id),
            run_id: RunId::from_wire(r.run_id),
            task_id: r.task_id,
            metric_name: r.metric_name,
            value: r.value,
            direction: direction_from_pb(r.direction)?,
            status: status_from_pb(r.status)?,
            status_message: r.status_message,
            episodes: r
                .episodes
                .into_iter()
                .map(|e| {
                    Ok(EpisodeRecord {
                        index: e.index,
                        outcome: outcome_from_pb(e.outcome)?,
                        metric: e.metric,
                        steps: e.steps,
                        episode_return: e.episode_return,
                        seed_commitment: e.seed_commitment,
                        safety: e.safety.into_iter().collect(),
                    })
                })
                .collect::<Result<_, UnknownEnum>>()?,
            seed_commitments: r.seed_commitments,
            trajectory_head: r.trajectory_head,
            total_steps: r.total_steps,
            safety: r.safety.into_iter().collect(),
        })
    }
}
