//! The events of a chain: who wrote one ([`Level`]), what happened ([`EventKind`]), and the
//! [`Event`] itself before it is sealed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who wrote an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The evaluator itself; the agent cannot influence these beyond its actions.
    TrustedEvaluator,
    /// The harness process.
    Harness,
}

impl Level {
    /// The name as the `level` field holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::TrustedEvaluator => "trusted_evaluator",
            Level::Harness => "harness",
        }
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// An official env was created; data: [`crate::event_data::RunStarted`].
    RunStarted,
    /// A batch run snapshotted its submission; data: [`crate::event_data::SubmissionReceived`].
    /// Once, before `session_started`, in a batch run only.
    SubmissionReceived,
    /// The agent started the eval session (a batch run: the evaluator did, on submission);
    /// data: [`crate::event_data::SessionStarted`].
    SessionStarted,
    /// A planned rollout began on its hidden seed; data: [`crate::event_data::RolloutStarted`].
    RolloutStarted,
    /// A rollout ended (completed, aborted or over budget); data:
    /// [`crate::event_data::RolloutFinished`].
    RolloutFinished,
    /// The session ended; data: the final [`ale_proto::eval::EvalResultRecord`] without its
    /// `trajectory_head` (which is this event's own hash).
    SessionFinished,
    /// In the harness's log: the harness began an official run.
    HarnessStarted,
    /// In the harness's log: the harness read the authoritative result; names the evaluator
    /// trajectory's head hash at that moment.
    ResultRead,
    /// In the harness's log: the harness scored the run.
    RunScored,
}

impl EventKind {
    /// The name as the `kind` field holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::RunStarted => "run_started",
            EventKind::SubmissionReceived => "submission_received",
            EventKind::SessionStarted => "session_started",
            EventKind::RolloutStarted => "rollout_started",
            EventKind::RolloutFinished => "rollout_finished",
            EventKind::SessionFinished => "session_finished",
            EventKind::HarnessStarted => "harness_started",
            EventKind::ResultRead => "result_read",
            EventKind::RunScored => "run_scored",
        }
    }

    /// Whether only the evaluator writes this kind (into `trajectory.jsonl`).
    pub fn is_evaluator_event(self) -> bool {
        !matches!(
            self,
            EventKind::HarnessStarted | EventKind::ResultRead | EventKind::RunScored
        )
    }
}

/// One event, before it is sealed into the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: u64,
    pub level: Level,
    pub kind: EventKind,
    pub time_unix_ms: u64,
    pub data: Value,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_kind_names_are_the_serialised_ones() {
        for kind in [
            EventKind::RunStarted,
            EventKind::SubmissionReceived,
            EventKind::SessionStarted,
            EventKind::RolloutStarted,
            EventKind::RolloutFinished,
            EventKind::SessionFinished,
            EventKind::HarnessStarted,
            EventKind::ResultRead,
            EventKind::RunScored,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }
}
