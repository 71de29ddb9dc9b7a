//! The harness channel: gRPC over the evaluator's private Unix socket. [`HarnessChannel`] is
//! the only place the harness touches wire messages; everything past it is domain types.

use std::path::{Path, PathBuf};

use ale_proto::pb::{self, ale_env_client::AleEnvClient};
use ale_proto::records::EvalResultRecord;
use ale_proto::{EnvHandle, RunId, SessionId, TaskSpec};
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

use crate::error::HarnessError;

/// Connects to the harness socket at `path`, for callers that speak the protocol themselves
/// (protocol tests). The harness itself uses [`HarnessChannel`].
pub async fn connect(path: &Path) -> Result<AleEnvClient<Channel>, HarnessError> {
    let socket: PathBuf = path.to_path_buf();
    // The URI is required by the API but unused: the connector always dials the socket.
    let channel = Endpoint::from_static("http://harness.sock")
        .connect_with_connector(tower::service_fn(move |_| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(socket).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|cause| HarnessError::Connect {
            socket: path.to_path_buf(),
            cause,
        })?;
    Ok(AleEnvClient::new(channel))
}

/// An official env the harness created, and the task it belongs to.
#[derive(Debug, Clone)]
pub struct OfficialEnv {
    pub handle: EnvHandle,
    pub session_id: SessionId,
    pub run_id: RunId,
    pub task: TaskSpec,
}

/// The harness's typed view of the calls it makes on its channel.
#[derive(Debug, Clone)]
pub struct HarnessChannel {
    client: AleEnvClient<Channel>,
}

impl HarnessChannel {
    pub async fn connect(path: &Path) -> Result<HarnessChannel, HarnessError> {
        Ok(HarnessChannel {
            client: connect(path).await?,
        })
    }

    /// Creates the official env of `task_id`, with the session and run it will be scored in.
    pub async fn create_official(&mut self, task_id: &str) -> Result<OfficialEnv, HarnessError> {
        let created = self
            .client
            .create_env(pb::CreateEnvRequest {
                task_id: task_id.to_string(),
                official: true,
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
