//! [`VecEnv`]: a practice vector env, N sub-envs of one task behind one handle, reset and
//! stepped in one call each (`CreateEnv` with `num_envs`). Tensors travel batched,
//! `[num_envs, ...]`; infos in Gymnasium's vector layout (each key a tensor `[num_envs]`
//! beside its `_key` mask).

use ale_proto::EnvHandle;
use ale_proto::convert::tensor_to_pb_raw;
use ale_proto::pb::{self, ale_env_client::AleEnvClient};
use ale_sim::{Tensor, TensorData};
use tonic::transport::Channel;

use crate::env::{Client, EnvSpec, Info, decode_info, decode_observation, spec_from_wire};
use crate::error::ClientError;

/// What a vector env does when a sub-env's episode ends (Gymnasium 1.x's modes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AutoresetMode {
    /// The Step after the end resets the sub-env (its action unused, reward 0).
    #[default]
    NextStep,
    /// The Step that ends the episode resets it too; [`VecStepResult::finals`] holds the last
    /// observations.
    SameStep,
    /// Never: reset ended sub-envs with [`VecReset::mask`].
    Disabled,
}

impl AutoresetMode {
    fn to_pb(self) -> pb::AutoresetMode {
        match self {
            AutoresetMode::NextStep => pb::AutoresetMode::NextStep,
            AutoresetMode::SameStep => pb::AutoresetMode::SameStep,
            AutoresetMode::Disabled => pb::AutoresetMode::Disabled,
        }
    }

    fn from_pb(raw: i32) -> Result<AutoresetMode, ClientError> {
        match pb::AutoresetMode::try_from(raw) {
            Ok(pb::AutoresetMode::Unspecified | pb::AutoresetMode::NextStep) => {
                Ok(AutoresetMode::NextStep)
            }
            Ok(pb::AutoresetMode::SameStep) => Ok(AutoresetMode::SameStep),
            Ok(pb::AutoresetMode::Disabled) => Ok(AutoresetMode::Disabled),
            Err(_) => Err(ClientError::Missing("a known autoreset mode")),
        }
    }
}

/// What a vector Reset asks for. The default resets every sub-env, each from its own
/// generator (or a fresh seed).
#[derive(Debug, Clone, Default)]
pub struct VecReset {
    /// Sub-env i starts from `seed + i`.
    pub seed: Option<u64>,
    /// One seed per sub-env, instead of `seed`.
    pub seeds: Vec<u64>,
    /// Which sub-envs to reset; empty for all.
    pub mask: Vec<bool>,
}

impl VecReset {
    /// Every sub-env, sub-env i from `seed + i`.
    pub fn seeded(seed: u64) -> VecReset {
        VecReset {
            seed: Some(seed),
            ..VecReset::default()
        }
    }
}

#[derive(Debug, Clone)]
pub struct VecResetResult {
    /// `[num_envs, ...]`.
    pub observation: Tensor,
    pub info: Info,
}

/// The episodes a `SAME_STEP` Step ended: their sub-envs, last observations and infos.
#[derive(Debug, Clone)]
pub struct Finals {
    pub index: Vec<usize>,
    /// `[index.len(), ...]`.
    pub observation: Tensor,
    pub info: Info,
}

#[derive(Debug, Clone)]
pub struct VecStepResult {
    /// `[num_envs, ...]`.
    pub observation: Tensor,
    pub rewards: Vec<f64>,
    pub terminations: Vec<bool>,
    pub truncations: Vec<bool>,
    pub info: Info,
    pub finals: Option<Finals>,
}

/// A practice vector env.
///
/// ```no_run
/// # async fn run() -> Result<(), ale_client::ClientError> {
/// use ale_client::{AutoresetMode, Tensor, VecReset};
/// let client = ale_client::Client::connect("http://127.0.0.1:50051").await?;
/// let mut envs = client.create_vec("cartpole-balance", 64, AutoresetMode::NextStep).await?;
/// envs.reset(VecReset::seeded(0)).await?;
/// let push_right = Tensor::new(vec![64], ale_sim::TensorData::I64(vec![1; 64])).unwrap();
/// let step = envs.step(&push_right).await?;
/// assert_eq!(step.rewards.len(), 64);
/// # Ok(()) }
/// ```
pub struct VecEnv {
    client: AleEnvClient<Channel>,
    handle: EnvHandle,
    spec: EnvSpec,
    num_envs: usize,
    mode: AutoresetMode,
}

impl Client {
    /// Creates a practice vector env of `num_envs` sub-envs of `task_id`.
    pub async fn create_vec(
        &self,
        task_id: &str,
        num_envs: u32,
        mode: AutoresetMode,
    ) -> Result<VecEnv, ClientError> {
        let mut client = self.raw();
        let created = client
            .create_env(pb::CreateEnvRequest {
                task_id: task_id.to_string(),
                official: false,
                num_envs,
                autoreset_mode: mode.to_pb() as i32,
                vector: true,
                ..Default::default()
            })
            .await?
            .into_inner();
        let handle = EnvHandle::from_wire(created.handle);
        let spec = client
            .get_spec(pb::GetSpecRequest {
                handle: handle.to_string(),
            })
            .await?
            .into_inner();
        if spec.num_envs != num_envs.max(1) {
            // An evaluator older than vector envs makes a single env of any request.
            return Err(ClientError::Missing(
                "a vector env of the sub-envs asked for",
            ));
        }
        let num_envs = usize::try_from(spec.num_envs).unwrap_or(usize::MAX);
        let mode = AutoresetMode::from_pb(spec.autoreset_mode)?;
        Ok(VecEnv {
            spec: spec_from_wire(spec)?,
            client,
            handle,
            num_envs,
            mode,
        })
    }
}

impl VecEnv {
    pub fn handle(&self) -> &EnvHandle {
        &self.handle
    }

    /// The task and one sub-env's spaces.
    pub fn spec(&self) -> &EnvSpec {
        &self.spec
    }

    pub fn num_envs(&self) -> usize {
        self.num_envs
    }

    pub fn autoreset_mode(&self) -> AutoresetMode {
        self.mode
    }

    pub async fn reset(&mut self, reset: VecReset) -> Result<VecResetResult, ClientError> {
        let resp = self
            .client
            .reset(pb::ResetRequest {
                handle: self.handle.to_string(),
                seed: reset.seed,
                seeds: reset.seeds,
                reset_mask: reset.mask,
            })
            .await?
            .into_inner();
        Ok(VecResetResult {
            observation: decode_observation(resp.observation)?,
            info: decode_info(resp.info)?,
        })
    }

    /// One step of every sub-env: `actions` is `[num_envs, ...]`, one action each.
    pub async fn step(&mut self, actions: &Tensor) -> Result<VecStepResult, ClientError> {
        let resp = self
            .client
            .step(pb::StepRequest {
                handle: self.handle.to_string(),
                action: Some(tensor_to_pb_raw(actions.shape(), actions.data())),
            })
            .await?
            .into_inner();
        let finals = match resp.final_observation {
            Some(observation) => Some(Finals {
                index: resp.final_index.iter().map(|&i| i as usize).collect(),
                observation: decode(observation, "final observations")?,
                info: decode_info(resp.final_info)?,
            }),
            None => None,
        };
        Ok(VecStepResult {
            observation: decode_observation(resp.observation)?,
            rewards: match decode_vector(resp.rewards, "rewards")? {
                TensorData::F64(v) => v,
                _ => return Err(ClientError::Missing("rewards of dtype float64")),
            },
            terminations: flags(resp.terminations, "terminations")?,
            truncations: flags(resp.truncations, "truncations")?,
            info: decode_info(resp.info)?,
            finals,
        })
    }
}

fn decode(t: pb::Tensor, what: &'static str) -> Result<Tensor, ClientError> {
    Tensor::try_from(t).map_err(|cause| ClientError::Wire { what, cause })
}

fn decode_vector(t: Option<pb::Tensor>, what: &'static str) -> Result<TensorData, ClientError> {
    Ok(decode(t.ok_or(ClientError::Missing(what))?, what)?.into_data())
}

fn flags(t: Option<pb::Tensor>, what: &'static str) -> Result<Vec<bool>, ClientError> {
    match decode_vector(t, what)? {
        TensorData::Bool(v) => Ok(v),
        _ => Err(ClientError::Missing("flags of dtype bool")),
    }
}
