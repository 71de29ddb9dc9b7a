//! The harness channel: gRPC over the evaluator's private Unix socket. [`HarnessChannel`] is
//! the only place the harness touches wire messages; everything past it is domain types.

use std::path::{Path, PathBuf};

use ale_proto::eval::EvalResultRecord;
use ale_proto::pb::{self, ale_env_client::AleEnvClient, catalog_client::CatalogClient};
use ale_proto::{BatchId, EnvHandle, RunId, SessionId, TaskSpec};
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

use crate::error::HarnessError;

/// Connects to the harness socket at `path`, for callers that speak the protocol themselves
/// (protocol tests). The harness itself uses [`HarnessChannel`].
pub async fn connect(path: &Path) -> Result<AleEnvClient<Channel>, HarnessError> {
    Ok(AleEnvClient::new(connect_channel(path).await?))
}

async fn connect_channel(path: &Path) -> Result<Channel, HarnessError> {
    let socket: PathBuf = path.to_path_buf();
    // The URI is required by the API but unused: the connector always dials the socket.
    let channel = Endpoint::from_static("http://harness.sock")
        .connect_with_connector(tower::service_fn(move |_| {
            let socket = socket.clone();
            async move {
                // Held while connecting: a path past `sun_path` is reached through it.
                let address = ale_proto::socket_path::SocketPath::new(&socket)?;
                let stream = tokio::net::UnixStream::connect(address.as_path()).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|cause| HarnessError::Connect {
            socket: path.to_path_buf(),
            cause,
        })?;
    Ok(channel)
}

/// An official env the harness created, and the task it belongs to.
#[derive(Debug, Clone)]
pub struct OfficialEnv {
    pub handle: EnvHandle,
    pub session_id: SessionId,
    pub run_id: RunId,
    pub task: TaskSpec,
}

/// Where a batch run stands, as `GetBatchEvalStatus` says on the harness channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchRunState {
    Queued,
    Running,
    Succeeded,
    Failed,
}

/// A batch run's status; the result is there once the run has finished.
#[derive(Debug, Clone)]
pub struct BatchProgress {
    pub state: BatchRunState,
    /// 0..=1.
    pub progress: f64,
    pub message: String,
    pub result: Option<EvalResultRecord>,
}

/// `queued`, `running (40%)`, `succeeded: all 50 rollouts played`, `failed: …`.
impl std::fmt::Display for BatchProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.state {
            BatchRunState::Queued => write!(f, "queued"),
            BatchRunState::Running => write!(f, "running ({:.0}%)", self.progress * 100.0),
            BatchRunState::Succeeded => write!(f, "succeeded: {}", self.message),
            BatchRunState::Failed => write!(f, "failed: {}", self.message),
        }
    }
}

/// The harness's typed view of the calls it makes on its channel.
#[derive(Debug, Clone)]
pub struct HarnessChannel {
    client: AleEnvClient<Channel>,
    catalog: CatalogClient<Channel>,
}

impl HarnessChannel {
    pub async fn connect(path: &Path) -> Result<HarnessChannel, HarnessError> {
        let channel = connect_channel(path).await?;
        Ok(HarnessChannel {
            client: AleEnvClient::new(channel.clone()),
            catalog: CatalogClient::new(channel),
        })
    }

    /// The task `task_id` as the evaluator describes it (before any env of it exists), or
    /// `None` if the evaluator hosts no such task.
    pub async fn task(&mut self, task_id: &str) -> Result<Option<TaskSpec>, HarnessError> {
        let tasks = self
            .catalog
            .list_tasks(pb::ListTasksRequest {})
            .await
            .map_err(HarnessError::rpc("ListTasks"))?
            .into_inner()
            .tasks;
        tasks
            .into_iter()
            .find(|t| t.id == task_id)
            .map(|t| TaskSpec::try_from(t).map_err(HarnessError::wire("ListTasks")))
            .transpose()
    }

    /// Creates the official env of `task_id`, with the session and run it will be scored in,
    /// played on the task's evaluation seed set `seed_set` if one is named.
    pub async fn create_official(
        &mut self,
        task_id: &str,
        seed_set: Option<&str>,
    ) -> Result<OfficialEnv, HarnessError> {
        let created = self
            .client
            .create_env(pb::CreateEnvRequest {
                task_id: task_id.to_string(),
                official: true,
                seed_set: seed_set.unwrap_or_default().to_string(),
                ..Default::default()
            })
            .await
            .map_err(HarnessError::rpc("CreateEnv"))?
            .into_inner();
        let handle = EnvHandle::from_wire(created.handle);
        let spec = self
            .client
            .get_spec(pb::GetSpecRequest {
                handle: handle.to_string(),
            })
            .await
            .map_err(HarnessError::rpc("GetSpec"))?
            .into_inner();
        let task = spec.task.ok_or(HarnessError::Malformed("GetSpec"))?;
        Ok(OfficialEnv {
            handle,
            session_id: SessionId::from_wire(created.session_id),
            run_id: RunId::from_wire(created.run_id),
            task: TaskSpec::try_from(task).map_err(HarnessError::wire("GetSpec"))?,
        })
    }

    /// Submits the official batch env `handle`'s submission; the id of its run.
    pub async fn submit_batch(&mut self, handle: &EnvHandle) -> Result<BatchId, HarnessError> {
        let answer = self
            .client
            .submit_batch_eval(pb::SubmitBatchEvalRequest {
                handle: handle.to_string(),
            })
            .await
            .map_err(HarnessError::rpc("SubmitBatchEval"))?
            .into_inner();
        Ok(BatchId::from_wire(answer.batch_id))
    }

    /// A batch run's status, with its result once finished.
    pub async fn batch_status(
        &mut self,
        batch_id: &BatchId,
    ) -> Result<BatchProgress, HarnessError> {
        let answer = self
            .client
            .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
                batch_id: batch_id.to_string(),
            })
            .await
            .map_err(HarnessError::rpc("GetBatchEvalStatus"))?
            .into_inner();
        let state = match pb::BatchState::try_from(answer.state) {
            Ok(pb::BatchState::Queued) => BatchRunState::Queued,
            Ok(pb::BatchState::Running) => BatchRunState::Running,
            Ok(pb::BatchState::Succeeded) => BatchRunState::Succeeded,
            Ok(pb::BatchState::Failed) => BatchRunState::Failed,
            _ => {
                return Err(HarnessError::wire("GetBatchEvalStatus")(
                    ale_proto::eval::UnknownEnum {
                        field: "state",
                        value: answer.state,
                    }
                    .into(),
                ));
            }
        };
        let result = answer
            .result
            .map(EvalResultRecord::try_from)
            .transpose()
            .map_err(|e| HarnessError::wire("GetBatchEvalStatus")(e.into()))?;
        Ok(BatchProgress {
            state,
            progress: answer.progress,
            message: answer.message,
            result,
        })
    }

    /// The session's result so far; `end_session` ends it first. `None` while the agent has
    /// not started the session.
    pub async fn eval_result(
        &mut self,
        session_id: &SessionId,
        end_session: bool,
    ) -> Result<Option<EvalResultRecord>, HarnessError> {
        let answer = self
            .client
            .get_eval_result(pb::GetEvalResultRequest {
                session_id: session_id.to_string(),
                end_session,
            })
            .await;
        match answer {
            Ok(r) => {
                let result = r
                    .into_inner()
                    .result
                    .ok_or(HarnessError::Malformed("GetEvalResult"))?;
                EvalResultRecord::try_from(result)
                    .map(Some)
                    .map_err(|e| HarnessError::wire("GetEvalResult")(e.into()))
            }
            Err(status) if status.code() == tonic::Code::FailedPrecondition => Ok(None),
            Err(status) => Err(HarnessError::Rpc {
                rpc: "GetEvalResult",
                status,
            }),
        }
    }
}
