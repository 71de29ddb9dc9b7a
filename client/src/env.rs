//! The async client: connect to an evaluator, create or attach to envs, drive episodes.

use std::collections::BTreeMap;

use ale_proto::pb::{self, ale_env_client::AleEnvClient, catalog_client::CatalogClient};
use ale_proto::{BatchId, EnvHandle, SessionId, TaskSpec, agent_env};
use ale_sim::{Space, Tensor};
use tonic::transport::{Channel, Endpoint};
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

use crate::error::ClientError;

/// A connection to an evaluator's agent channel.
///
/// ```no_run
/// # async fn run() -> Result<(), ale_client::ClientError> {
/// let client = ale_client::Client::connect("http://127.0.0.1:50051").await?;
/// let mut env = client.create("cartpole-balance").await?;
/// let first = env.reset(Some(7)).await?;
/// let step = env.step(&ale_sim::Tensor::scalar_i64(1)).await?;
/// # let _ = (first, step); Ok(()) }
/// ```
#[derive(Clone)]
pub struct Client {
    channel: Channel,
    env: AleEnvClient<Channel>,
    catalog: CatalogClient<Channel>,
    health: HealthClient<Channel>,
}

/// A value in an info map.
#[derive(Debug, Clone, PartialEq)]
pub enum InfoValue {
    Number(f64),
    Integer(i64),
    Flag(bool),
    Text(String),
    Tensor(Tensor),
}

pub type Info = BTreeMap<String, InfoValue>;

/// What `GetSpec` says about an env, decoded.
#[derive(Debug, Clone)]
pub struct EnvSpec {
    pub observation_space: Space,
    pub action_space: Space,
    pub task: TaskSpec,
    pub official: bool,
}

/// The first observation of an episode.
#[derive(Debug, Clone)]
pub struct ResetResult {
    pub observation: Tensor,
    pub info: Info,
}

/// One step's outcome (Gymnasium ≥ 0.26 semantics).
#[derive(Debug, Clone)]
pub struct StepResult {
    pub observation: Tensor,
    pub reward: f64,
    pub terminated: bool,
    pub truncated: bool,
    pub info: Info,
}

impl StepResult {
    pub fn is_done(&self) -> bool {
        self.terminated || self.truncated
    }
}

/// Where a batch run is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchState {
    Queued,
    Running,
    Succeeded,
    Failed,
}

impl BatchState {
    pub fn is_finished(self) -> bool {
        matches!(self, BatchState::Succeeded | BatchState::Failed)
    }
}

/// A batch run's status as the agent channel shows it: no result.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchStatus {
    pub state: BatchState,
    /// Fraction of the planned rollouts played, 0 to 1.
    pub progress: f64,
    /// Why it failed, or what it is doing.
    pub message: String,
}

/// A started eval session, as the agent sees it (no result: the harness reads that).
#[derive(Debug, Clone)]
pub struct EvalSession {
    pub session_id: SessionId,
    pub episodes: u32,
}

/// Decodes an info map; a value that does not decode is an error naming its key.
pub(crate) fn decode_info(
    info: std::collections::HashMap<String, pb::Value>,
) -> Result<Info, ClientError> {
    info.into_iter()
        .map(|(key, v)| {
            let value = match v.kind {
                None => return Err(ClientError::EmptyInfoValue(key)),
                Some(pb::value::Kind::Number(x)) => InfoValue::Number(x),
                Some(pb::value::Kind::Integer(x)) => InfoValue::Integer(x),
                Some(pb::value::Kind::Flag(x)) => InfoValue::Flag(x),
                Some(pb::value::Kind::Text(x)) => InfoValue::Text(x),
                Some(pb::value::Kind::Tensor(t)) => match Tensor::try_from(t) {
                    Ok(t) => InfoValue::Tensor(t),
                    Err(cause) => return Err(ClientError::InfoValue { key, cause }),
                },
            };
            Ok((key, value))
        })
        .collect()
}

/// A `GetSpec` answer, decoded.
pub(crate) fn spec_from_wire(spec: pb::GetSpecResponse) -> Result<EnvSpec, ClientError> {
    let space = |s: Option<pb::Space>, what| {
        let s = s.ok_or(ClientError::Missing(what))?;
        Space::try_from(s).map_err(|cause| ClientError::Wire { what, cause })
    };
    Ok(EnvSpec {
        observation_space: space(spec.observation_space, "observation space")?,
        action_space: space(spec.action_space, "action space")?,
        task: decode_task(spec.task.ok_or(ClientError::Missing("task metadata"))?)?,
        official: spec.official,
    })
}

fn decode_task(task: pb::TaskMetadata) -> Result<TaskSpec, ClientError> {
    TaskSpec::try_from(task).map_err(|cause| ClientError::Wire {
        what: "task metadata",
        cause,
    })
}

pub(crate) fn decode_observation(t: Option<pb::Tensor>) -> Result<Tensor, ClientError> {
    let t = t.ok_or(ClientError::Missing("an observation"))?;
    Tensor::try_from(t).map_err(|cause| ClientError::Wire {
        what: "observation",
        cause,
    })
}

impl Client {
    /// Connects to `endpoint`: `http://HOST:PORT` over TCP, or `unix:///PATH` (also
    /// `unix:/PATH`) over a Unix socket, as a sandboxed agent's `ALE_ENDPOINT` names it.
    pub async fn connect(endpoint: &str) -> Result<Client, ClientError> {
        let connect_err = |cause| ClientError::Connect {
            endpoint: endpoint.to_string(),
            cause,
        };
        let channel = match crate::transport::unix_socket_path(endpoint) {
            Some(path) => crate::transport::connect_unix(path).await,
            None => {
                let endpoint_config =
                    Endpoint::from_shared(endpoint.to_string()).map_err(connect_err)?;
                crate::transport::connect(endpoint_config).await
            }
        }
        .map_err(connect_err)?;
        Ok(Client {
            env: AleEnvClient::new(channel.clone()),
            catalog: CatalogClient::new(channel.clone()),
            health: HealthClient::new(channel.clone()),
            channel,
        })
    }

    /// Whether the evaluator says it is serving (`grpc.health.v1.Health/Check` for the whole
    /// server). An evaluator that cannot be reached is an error, not `false`.
    pub async fn serving(&self) -> Result<bool, ClientError> {
        let answer = self
            .health
            .clone()
            .check(HealthCheckRequest {
                service: String::new(),
            })
            .await?
            .into_inner();
        Ok(answer.status() == ServingStatus::Serving)
    }

    /// Every task the evaluator hosts.
    pub async fn list_tasks(&self) -> Result<Vec<TaskSpec>, ClientError> {
        let resp = self
            .catalog
            .clone()
            .list_tasks(pb::ListTasksRequest {})
            .await?;
        resp.into_inner()
            .tasks
            .into_iter()
            .map(decode_task)
            .collect()
    }

    /// Creates a practice env for `task_id`.
    pub async fn create(&self, task_id: &str) -> Result<Env, ClientError> {
        let resp = self
            .env
            .clone()
            .create_env(pb::CreateEnvRequest {
                task_id: task_id.to_string(),
                official: false,
                ..Default::default()
            })
            .await?
            .into_inner();
        self.attach(EnvHandle::from_wire(resp.handle)).await
    }

    /// Attaches to an env created elsewhere (e.g. the official env a harness hands over).
    pub async fn attach(&self, handle: EnvHandle) -> Result<Env, ClientError> {
        let mut client = self.env.clone();
        let spec = client
            .get_spec(pb::GetSpecRequest {
                handle: handle.to_string(),
            })
            .await?
            .into_inner();
        Ok(Env {
            client,
            handle,
            spec: spec_from_wire(spec)?,
        })
    }

    /// The raw generated client, for RPCs this wrapper does not cover.
    pub fn raw(&self) -> AleEnvClient<Channel> {
        self.env.clone()
    }

    /// The connection itself, for the other services the evaluator serves on it
    /// (`grpc.health.v1.Health`, `grpc.reflection.v1.ServerReflection`).
    pub fn channel(&self) -> Channel {
        self.channel.clone()
    }
}

/// One environment on the evaluator.
pub struct Env {
    client: AleEnvClient<Channel>,
    handle: EnvHandle,
    spec: EnvSpec,
}

impl Env {
    /// Attaches to the env a harness launched this agent for: reads `ALE_ENDPOINT` and
    /// `ALE_ENV_HANDLE`.
    pub async fn from_agent_env() -> Result<Env, ClientError> {
        let var =
            |name: &'static str| std::env::var(name).map_err(|_| ClientError::MissingEnvVar(name));
        let endpoint = var(agent_env::ENDPOINT)?;
        let handle = var(agent_env::ENV_HANDLE)?;
        Client::connect(&endpoint)
            .await?
            .attach(EnvHandle::from_wire(handle))
            .await
    }

    pub fn handle(&self) -> &EnvHandle {
        &self.handle
    }

    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    /// Begins an episode. `seed` makes a practice episode reproducible; in an eval session it
    /// is ignored and the evaluator's hidden seed is used.
    pub async fn reset(&mut self, seed: Option<u64>) -> Result<ResetResult, ClientError> {
        let resp = self
            .client
            .reset(pb::ResetRequest {
                handle: self.handle.to_string(),
                seed,
                ..Default::default()
            })
            .await?
            .into_inner();
        Ok(ResetResult {
            observation: decode_observation(resp.observation)?,
            info: decode_info(resp.info)?,
        })
    }

    pub async fn step(&mut self, action: &Tensor) -> Result<StepResult, ClientError> {
        let resp = self
            .client
            .step(pb::StepRequest {
                handle: self.handle.to_string(),
                action: Some(action.clone().into()),
            })
            .await?
            .into_inner();
        Ok(StepResult {
            observation: decode_observation(resp.observation)?,
            reward: resp.reward,
            terminated: resp.terminated,
            truncated: resp.truncated,
            info: decode_info(resp.info)?,
        })
    }

    /// The raw generated client this env talks through, for RPCs this wrapper does not cover.
    pub fn raw_client(&self) -> AleEnvClient<Channel> {
        self.client.clone()
    }

    /// Submits the policy file this (official, batch-task) env's contract names, written into
    /// the submission folder beforehand (see [`Env::submission_path`]): the evaluator reads it
    /// once, now, and rolls it out on hidden seeds. The answer is the batch run's id; the
    /// result is the harness's to read.
    pub async fn submit_batch(&mut self) -> Result<BatchId, ClientError> {
        let resp = self
            .client
            .submit_batch_eval(pb::SubmitBatchEvalRequest {
                handle: self.handle.to_string(),
            })
            .await?
            .into_inner();
        Ok(BatchId::from_wire(resp.batch_id))
    }

    /// Where this batch-task env's submission goes: the contract's entrypoint inside the
    /// folder `ALE_SUBMISSION_DIR` names (set by the harness; inside its sandbox, the
    /// contract's `submission_path`).
    pub fn submission_path(&self) -> Result<std::path::PathBuf, ClientError> {
        let contract = self
            .spec
            .task
            .submission_contract
            .as_ref()
            .ok_or(ClientError::NotBatch)?;
        let dir = std::env::var_os(agent_env::SUBMISSION_DIR)
            .ok_or(ClientError::MissingEnvVar(agent_env::SUBMISSION_DIR))?;
        Ok(std::path::Path::new(&dir).join(&contract.entrypoint))
    }

    /// A batch run's state as this channel may see it (the agent channel never gets the
    /// result).
    pub async fn batch_status(&mut self, batch_id: &BatchId) -> Result<BatchStatus, ClientError> {
        let resp = self
            .client
            .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
                batch_id: batch_id.to_string(),
            })
            .await?
            .into_inner();
        let state = match resp.state() {
            pb::BatchState::Queued => BatchState::Queued,
            pb::BatchState::Running => BatchState::Running,
            pb::BatchState::Succeeded => BatchState::Succeeded,
            pb::BatchState::Failed => BatchState::Failed,
            pb::BatchState::Unspecified => return Err(ClientError::Missing("batch state")),
        };
        Ok(BatchStatus {
            state,
            progress: resp.progress,
            message: resp.message,
        })
    }

    /// Starts the official eval session on this (official) env.
    pub async fn start_eval_session(&mut self) -> Result<EvalSession, ClientError> {
        let resp = self
            .client
            .start_eval_session(pb::StartEvalSessionRequest {
                handle: self.handle.to_string(),
            })
            .await?
            .into_inner();
        Ok(EvalSession {
            session_id: SessionId::from_wire(resp.session_id),
            episodes: resp.episodes,
        })
    }
}
