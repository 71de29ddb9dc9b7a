//! An official interactive run: create the official env over the harness channel, hand it to
//! an agent process, wait for the session to finish, read the authoritative result.

use std::path::PathBuf;
use std::process::ExitStatus;
use std::time::Duration;

use ale_proto::pb;
use ale_proto::records::EvalResultRecord;
use ale_proto::{EnvHandle, RunId, SessionId};
use tokio::time::Instant;

use crate::agent::Agent;
use crate::channel;
use crate::error::HarnessError;

/// How long an agent may take past the session's time budget before the harness ends the
/// session itself; covers start-up and the last RPCs in flight.
pub const BUDGET_GRACE: Duration = Duration::from_secs(30);
/// How long a finished agent gets to exit on its own before it is killed.
pub const EXIT_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub task_id: String,
    /// The evaluator's harness socket (`<state>/harness.sock`).
    pub harness_socket: PathBuf,
    /// The agent channel URL handed to the agent as `ALE_ENDPOINT`.
    pub agent_endpoint: String,
    /// Program and arguments of the agent.
    pub agent_command: Vec<String>,
    pub poll_interval: Duration,
}

/// How a run ended.
#[derive(Debug)]
pub struct RunOutcome {
    pub handle: EnvHandle,
    pub run_id: RunId,
    pub result: EvalResultRecord,
    /// `None` if the agent had to be killed or could not be reaped.
    pub agent_exit: Option<ExitStatus>,
}

/// Runs one official interactive evaluation. `progress` sees each result read while the
/// session runs (status `running`) and the final one.
pub async fn run_interactive(
    options: &RunOptions,
    mut progress: impl FnMut(&EvalResultRecord),
) -> Result<RunOutcome, HarnessError> {
    if options.agent_command.is_empty() {
        return Err(HarnessError::NoAgent);
    }
    let mut client = channel::connect(&options.harness_socket).await?;
    let created = client
        .create_env(pb::CreateEnvRequest {
            task_id: options.task_id.clone(),
            official: true,
        })
        .await
        .map_err(HarnessError::rpc("CreateEnv"))?
        .into_inner();
    let handle = EnvHandle::from_wire(created.handle);
    let session_id = SessionId::from_wire(created.session_id);
    let run_id = RunId::from_wire(created.run_id);
    let spec = client
        .get_spec(pb::GetSpecRequest {
            handle: handle.to_string(),
        })
        .await
        .map_err(HarnessError::rpc("GetSpec"))?
        .into_inner();
    let budget = spec
        .task
        .and_then(|t| t.budgets)
        .map(|b| b.time_budget_seconds)
        .unwrap_or(0);
    let deadline =
        (budget > 0).then(|| Instant::now() + Duration::from_secs(budget) + BUDGET_GRACE);
    tracing::info!(%run_id, %handle, task = %options.task_id, "official env created; launching agent");

    let mut agent = Agent::launch(&options.agent_command, &options.agent_endpoint, &handle)?;
    let result = loop {
        tokio::time::sleep(options.poll_interval).await;
        let agent_gone = agent.try_exit().is_some();
        let overdue = deadline.is_some_and(|d| Instant::now() >= d);
        let response = client
            .get_eval_result(pb::GetEvalResultRequest {
                session_id: session_id.to_string(),
                end_session: agent_gone || overdue,
            })
            .await;
        match response {
            Ok(r) => {
                let record = r
                    .into_inner()
                    .result
                    .and_then(|r| EvalResultRecord::try_from(r).ok())
                    .ok_or(HarnessError::Malformed("GetEvalResult"))?;
                progress(&record);
                if record.status.is_finished() {
                    break record;
                }
            }
            // The agent has not started the session yet.
            Err(status) if status.code() == tonic::Code::FailedPrecondition => {}
            Err(status) => {
                agent.kill().await;
                return Err(HarnessError::Rpc {
                    rpc: "GetEvalResult",
                    status,
                });
            }
        }
    };
    let agent_exit = agent.finish(EXIT_GRACE).await;
    Ok(RunOutcome {
        handle,
        run_id,
        result,
        agent_exit,
    })
}
