//! The evaluation result shared by the evaluator (which writes it into the trajectory), the
//! harness (which reads it over the wire and verifies it) and reports: an `EvalResult` with
//! readable enums, and the terms a task is scored in (direction, genre).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::ids::{RunId, SessionId};
use crate::pb;

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
/// use ale_proto::eval::Direction;
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
/// assert_eq!(ale_proto::eval::running_mean([2.0, 4.0, 0.0]), vec![2.0, 3.0, 2.0]);
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
    // Fields in sorted order: see `ale_records::event_data::SortedFields`.
    pub episode_return: f64,
    pub index: u32,
    pub metric: f64,
    pub outcome: Outcome,
    /// The task's safety metrics over this rollout.
    pub safety: BTreeMap<String, f64>,
    pub seed_commitment: String,
    pub steps: u64,
}

/// The authoritative result of an evaluation session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalResultRecord {
    // Fields in sorted order: see `ale_records::event_data::SortedFields`.
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
