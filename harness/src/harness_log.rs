//! The harness's own chained log (`harness.jsonl`): the data of its events, written by
//! [`crate::run`] and read back by [`crate::verify`]. `run_scored` carries the score's
//! [`crate::scoring::Breakdown`] and, as the log's last event, the harness's signature.

use ale_proto::RunId;
use ale_proto::eval::EvalStatus;
use serde::{Deserialize, Serialize};

use crate::report::TaskSummary;
use ale_sandbox::SandboxRecord;

/// Data of `harness_started`: the run, the task as the evaluator described it, and the agent
/// and how it is confined.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HarnessStarted {
    pub run_id: RunId,
    pub task: TaskSummary,
    /// Empty when no agent ran (a batch run the harness submitted itself).
    pub agent_command: Vec<String>,
    /// The agent channel the agent was given; `None` when no agent ran.
    pub agent_endpoint: Option<String>,
    pub sandbox: SandboxRecord,
    pub harness_version: String,
    /// The name the run was given (`ale harness run --name`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Its tags (`--tag`, repeatable), in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
}

/// Data of `result_read`: the authoritative result as read over the harness channel, at which
/// trajectory head, and how the agent ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultRead {
    pub evaluator_head: String,
    pub status: EvalStatus,
    pub value: f64,
    /// Why the session ended: the evaluator's words, plus the harness's when it ended it.
    pub status_message: String,
    /// How the agent process ended, e.g. "exited with status 0".
    pub agent_exit: String,
    /// Whether the agent was gone before its session finished.
    pub left_early: bool,
}
