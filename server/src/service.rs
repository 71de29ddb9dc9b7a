//! The gRPC edge: decode the request, call one evaluator function, encode the answer.

use std::collections::HashMap;
use std::sync::Arc;

use ale_proto::convert::{WireError, tensor_to_pb_raw};
use ale_proto::pb::{self, ale_env_server::AleEnv, catalog_server::Catalog};
use ale_proto::{BatchId, EnvHandle, SessionId};
use ale_sim::{Tensor, TensorData};
use tonic::{Request, Response, Status};

use crate::batch::BatchState;
use crate::channel::Channel;
use crate::env::StepInfo;
use crate::evaluator::{EnvShape, Evaluator, Placement, ResetAnswer, StepAnswer};
use crate::serve::ConnectionInfo;
use crate::task::Task;
use crate::vector::{Autoreset, Column, VectorInfo};

/// A task as the wire carries it. A task whose spaces cannot be known here (its sim's backend
/// cannot run and its entry declares none) is listed without them.
pub fn task_metadata(task: &Task) -> pb::TaskMetadata {
    match task.spec() {
        Ok(spec) => pb::TaskMetadata::from(&spec),
        Err(_) => pb::TaskMetadata {
            observation_space: None,
            action_space: None,
            ..pb::TaskMetadata::from(&task.spec)
        },
    }
}

/// `AleEnv` on one listener. The channel is fixed when the listener is set up.
#[derive(Clone)]
pub struct AleEnvService {
    evaluator: Arc<Evaluator>,
    channel: Channel,
}

impl AleEnvService {
    pub fn new(evaluator: Arc<Evaluator>, channel: Channel) -> Self {
        AleEnvService { evaluator, channel }
    }
}

impl AleEnvService {
    /// Runs `f` on the evaluator: inline, or, when the evaluator hosts sims in processes of
    /// their own, on a blocking thread. A hosted sim's call may wait on its host up to its
    /// timeout, holding its env's lock, and neither may stall the runtime that serves every
    /// other client and the harness.
    async fn call<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Evaluator, Channel) -> Result<T, crate::error::Error> + Send + 'static,
    ) -> Result<T, Status> {
        let placement = if self.evaluator.hosts_processes() {
            Placement::Blocking
        } else {
            Placement::Inline
        };
        self.call_where(placement, f).await
    }

    async fn call_where<T: Send + 'static>(
        &self,
        placement: Placement,
        f: impl FnOnce(&Evaluator, Channel) -> Result<T, crate::error::Error> + Send + 'static,
    ) -> Result<T, Status> {
        if placement == Placement::Inline {
            return Ok(f(&self.evaluator, self.channel)?);
        }
        let evaluator = self.evaluator.clone();
        let channel = self.channel;
        tokio::task::spawn_blocking(move || match placement {
            Placement::VectorThreads => {
                crate::vector::on_vector_threads(move || f(&evaluator, channel))
            }
            Placement::Inline | Placement::Blocking => f(&evaluator, channel),
        })
        .await
        .map_err(|e| Status::internal(format!("the request's task failed: {e}")))?
        .map_err(Status::from)
    }
}

fn bad_request(what: &str, e: WireError) -> Status {
    Status::invalid_argument(format!("{what}: {e}"))
}

fn number(v: f64) -> pb::Value {
    pb::Value {
        kind: Some(pb::value::Kind::Number(v)),
    }
}

fn integer(v: i64) -> pb::Value {
    pb::Value {
        kind: Some(pb::value::Kind::Integer(v)),
    }
}

fn tensor(t: pb::Tensor) -> pb::Value {
    pb::Value {
        kind: Some(pb::value::Kind::Tensor(t)),
    }
}

fn raw(shape: &[usize], data: TensorData) -> pb::Tensor {
    tensor_to_pb_raw(shape, &data)
}

/// A vector info map in Gymnasium's layout: each key a tensor `[num_envs]`, beside `_key`, a
/// bool tensor marking the sub-envs that hold a value.
fn encode_vector_info(info: VectorInfo) -> HashMap<String, pb::Value> {
    let n = info.mask.len();
    let mask = raw(&[n], TensorData::Bool(info.mask));
    let mut map = HashMap::with_capacity(2 * info.columns.len());
    for (key, column) in info.columns {
        let data = match column {
            Column::Integers(v) => TensorData::I64(v),
            Column::Numbers(v) => TensorData::F64(v),
        };
        map.insert(format!("_{key}"), tensor(mask.clone()));
        map.insert(key.to_string(), tensor(raw(&[n], data)));
    }
    map
}

fn raw_tensor(t: Tensor) -> pb::Tensor {
    tensor_to_pb_raw(t.shape(), t.data())
}

fn autoreset_to_pb(mode: Autoreset) -> pb::AutoresetMode {
    match mode {
        Autoreset::NextStep => pb::AutoresetMode::NextStep,
        Autoreset::SameStep => pb::AutoresetMode::SameStep,
        Autoreset::Disabled => pb::AutoresetMode::Disabled,
    }
}

fn autoreset_from_pb(raw: i32) -> Result<Autoreset, Status> {
    match pb::AutoresetMode::try_from(raw) {
        Ok(pb::AutoresetMode::Unspecified | pb::AutoresetMode::NextStep) => Ok(Autoreset::NextStep),
        Ok(pb::AutoresetMode::SameStep) => Ok(Autoreset::SameStep),
        Ok(pb::AutoresetMode::Disabled) => Ok(Autoreset::Disabled),
        Err(_) => Err(Status::invalid_argument(format!(
            "CreateEnvRequest.autoreset_mode {raw} is not an autoreset mode: use NEXT_STEP (1), \
             SAME_STEP (2) or DISABLED (3)"
        ))),
    }
}

fn encode_info(info: StepInfo) -> HashMap<String, pb::Value> {
    use ale_proto::info_keys::*;
    let mut map = HashMap::with_capacity(4 + info.counters.len());
    let steps = i64::try_from(info.episode_steps).unwrap_or(i64::MAX);
    map.insert(EPISODE_STEPS.into(), integer(steps));
    map.insert(EPISODE_RETURN.into(), number(info.episode_return));
    if let Some((index, planned)) = info.rollout {
        map.insert(ROLLOUT_INDEX.into(), integer(i64::from(index)));
        map.insert(ROLLOUTS_PLANNED.into(), integer(i64::from(planned)));
    }
    for c in info.counters {
        map.insert(c.name.into(), number(c.value));
    }
    map
}

#[tonic::async_trait]
impl AleEnv for AleEnvService {
    async fn create_env(
        &self,
        request: Request<pb::CreateEnvRequest>,
    ) -> Result<Response<pb::CreateEnvResponse>, Status> {
        // Set by the listener for every connection it accepts; absent only in-process.
        let connection = request
            .extensions()
            .get::<ConnectionInfo>()
            .map(|info| info.id);
        let req = request.into_inner();
        let shape = EnvShape {
            num_envs: req.num_envs,
            autoreset: autoreset_from_pb(req.autoreset_mode)?,
            vector: req.vector,
        };
        // Building a vector's sub-envs takes a while: never on the runtime's thread.
        let placement = if self.evaluator.hosts_processes() || req.num_envs > 1 || req.vector {
            Placement::Blocking
        } else {
            Placement::Inline
        };
        let created = self
            .call_where(placement, move |e, channel| {
                let seed_set = Some(req.seed_set.as_str()).filter(|s| !s.is_empty());
                e.create_env_shaped(
                    channel,
                    connection,
                    &req.task_id,
                    req.official,
                    shape,
                    seed_set,
                )
            })
            .await?;
        let (session_id, run_id) = created
            .official
            .as_ref()
            .map(|(s, r)| (s.to_string(), r.to_string()))
            .unwrap_or_default();
        Ok(Response::new(pb::CreateEnvResponse {
            handle: created.handle.to_string(),
            official: created.official.is_some(),
            task_id: created.task_id,
            session_id,
            run_id,
            num_envs: u32::try_from(created.num_envs).unwrap_or(u32::MAX),
            autoreset_mode: autoreset_to_pb(created.autoreset) as i32,
        }))
    }

    async fn get_spec(
        &self,
        request: Request<pb::GetSpecRequest>,
    ) -> Result<Response<pb::GetSpecResponse>, Status> {
        let handle = EnvHandle::from_wire(request.into_inner().handle);
        let spec = self
            .call(move |e, channel| e.spec(channel, &handle))
            .await?;
        Ok(Response::new(pb::GetSpecResponse {
            observation_space: Some((&spec.observation_space).into()),
            action_space: Some((&spec.action_space).into()),
            task: Some(task_metadata(&spec.task)),
            official: spec.official,
            num_envs: u32::try_from(spec.num_envs).unwrap_or(u32::MAX),
            autoreset_mode: autoreset_to_pb(spec.autoreset) as i32,
        }))
    }

    async fn reset(
        &self,
        request: Request<pb::ResetRequest>,
    ) -> Result<Response<pb::ResetResponse>, Status> {
        let req = request.into_inner();
        let handle = EnvHandle::from_wire(req.handle);
        let (seed, seeds, mask) = (req.seed, req.seeds, req.reset_mask);
        // A vector env whose calls take a while runs on a blocking thread (its blocks on the
        // vector threads), so no amount of stepping holds the runtime that serves the harness.
        let placement = self.evaluator.placement(self.channel, &handle);
        let answer = self
            .call_where(placement, move |e, channel| {
                e.reset_any(channel, &handle, seed, &seeds, &mask)
            })
            .await?;
        Ok(Response::new(match answer {
            ResetAnswer::Single(observation, info) => pb::ResetResponse {
                observation: Some(observation.into()),
                info: encode_info(info),
            },
            ResetAnswer::Vector(reset) => pb::ResetResponse {
                observation: Some(raw_tensor(reset.observation)),
                info: encode_vector_info(reset.info),
            },
        }))
    }

    async fn step(
        &self,
        request: Request<pb::StepRequest>,
    ) -> Result<Response<pb::StepResponse>, Status> {
        let req = request.into_inner();
        let handle = EnvHandle::from_wire(req.handle);
        let action = req
            .action
            .ok_or_else(|| Status::invalid_argument("StepRequest.action is missing"))?;
        let action = Tensor::try_from(action).map_err(|e| bad_request("StepRequest.action", e))?;
        let placement = self.evaluator.placement(self.channel, &handle);
        let answer = self
            .call_where(placement, move |e, channel| {
                e.step_any(channel, &handle, &action)
            })
            .await?;
        Ok(Response::new(match answer {
            StepAnswer::Single(observation, t, info) => pb::StepResponse {
                observation: Some(observation.into()),
                reward: t.reward,
                terminated: t.terminated,
                truncated: t.truncated,
                info: encode_info(info),
                ..Default::default()
            },
            StepAnswer::Vector(step) => {
                let n = step.rewards.len();
                let (final_index, final_observation, final_info) = match step.finals {
                    Some(f) => (
                        f.index,
                        Some(raw_tensor(f.observation)),
                        encode_vector_info(f.info),
                    ),
                    None => (Vec::new(), None, HashMap::new()),
                };
                pb::StepResponse {
                    observation: Some(raw_tensor(step.observation)),
                    info: encode_vector_info(step.info),
                    rewards: Some(raw(&[n], TensorData::F64(step.rewards))),
                    terminations: Some(raw(&[n], TensorData::Bool(step.terminations))),
                    truncations: Some(raw(&[n], TensorData::Bool(step.truncations))),
                    final_index,
                    final_observation,
                    final_info,
                    ..Default::default()
                }
            }
        }))
    }

    async fn start_eval_session(
        &self,
        request: Request<pb::StartEvalSessionRequest>,
    ) -> Result<Response<pb::StartEvalSessionResponse>, Status> {
        let handle = EnvHandle::from_wire(request.into_inner().handle);
        let (session_id, episodes) = self
            .call(move |e, channel| e.start_eval_session(channel, &handle))
            .await?;
        Ok(Response::new(pb::StartEvalSessionResponse {
            session_id: session_id.to_string(),
            episodes,
        }))
    }

    async fn get_eval_result(
        &self,
        request: Request<pb::GetEvalResultRequest>,
    ) -> Result<Response<pb::GetEvalResultResponse>, Status> {
        let req = request.into_inner();
        let session_id = SessionId::from_wire(req.session_id);
        let end_session = req.end_session;
        let record = self
            .call(move |e, channel| e.eval_result(channel, &session_id, end_session))
            .await?;
        Ok(Response::new(pb::GetEvalResultResponse {
            result: Some((&record).into()),
        }))
    }

    async fn submit_batch_eval(
        &self,
        request: Request<pb::SubmitBatchEvalRequest>,
    ) -> Result<Response<pb::SubmitBatchEvalResponse>, Status> {
        let handle = EnvHandle::from_wire(request.into_inner().handle);
        // Reading the submission is file I/O of up to the size cap: off the runtime's threads.
        let evaluator = self.evaluator.clone();
        let channel = self.channel;
        let batch_id =
            tokio::task::spawn_blocking(move || evaluator.submit_batch_eval(channel, &handle))
                .await
                .map_err(|e| Status::internal(format!("the submission task failed: {e}")))??;
        Ok(Response::new(pb::SubmitBatchEvalResponse {
            batch_id: batch_id.to_string(),
        }))
    }

    async fn get_batch_eval_status(
        &self,
        request: Request<pb::GetBatchEvalStatusRequest>,
    ) -> Result<Response<pb::GetBatchEvalStatusResponse>, Status> {
        let batch_id = BatchId::from_wire(request.into_inner().batch_id);
        let status = self
            .call(move |e, channel| e.batch_status(channel, &batch_id))
            .await?;
        let state = match status.state {
            BatchState::Queued => pb::BatchState::Queued,
            BatchState::Running => pb::BatchState::Running,
            BatchState::Succeeded => pb::BatchState::Succeeded,
            BatchState::Failed(_) => pb::BatchState::Failed,
        };
        Ok(Response::new(pb::GetBatchEvalStatusResponse {
            state: state as i32,
            progress: status.progress,
            message: status.message,
            result: status.result.as_ref().map(pb::EvalResult::from),
        }))
    }
}

/// `Catalog` (task discovery), the same on both channels.
#[derive(Clone)]
pub struct CatalogService {
    evaluator: Arc<Evaluator>,
}

impl CatalogService {
    pub fn new(evaluator: Arc<Evaluator>) -> Self {
        CatalogService { evaluator }
    }
}

#[tonic::async_trait]
impl Catalog for CatalogService {
    async fn list_tasks(
        &self,
        _request: Request<pb::ListTasksRequest>,
    ) -> Result<Response<pb::ListTasksResponse>, Status> {
        Ok(Response::new(pb::ListTasksResponse {
            tasks: self
                .evaluator
                .tasks()
                .iter()
                .map(|t| task_metadata(t))
                .collect(),
        }))
    }
}
