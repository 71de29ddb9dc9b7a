//! A blocking client for agents that do not use tokio: the same calls, each run to completion
//! on a private single-threaded runtime.

use ale_proto::EnvHandle;
use ale_sim::Tensor;
use tokio::runtime::{Builder, Runtime};

use crate::env::{self, EnvSpec, EvalSession, ResetResult, StepResult};
use crate::error::ClientError;
use crate::vector::{self, AutoresetMode, VecReset, VecResetResult, VecStepResult};

fn runtime() -> Result<Runtime, ClientError> {
    Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(ClientError::Runtime)
}

/// A blocking connection to an evaluator.
///
/// ```no_run
/// let client = ale_client::blocking::Client::connect("http://127.0.0.1:50051").unwrap();
/// let mut env = client.create("cartpole-balance").unwrap();
/// env.reset(Some(7)).unwrap();
/// ```
pub struct Client {
    rt: std::sync::Arc<Runtime>,
    inner: env::Client,
}

impl Client {
    pub fn connect(endpoint: &str) -> Result<Client, ClientError> {
        let rt = runtime()?;
        let inner = rt.block_on(env::Client::connect(endpoint))?;
        Ok(Client {
            rt: std::sync::Arc::new(rt),
            inner,
        })
    }

    pub fn list_tasks(&self) -> Result<Vec<ale_proto::TaskSpec>, ClientError> {
        self.rt.block_on(self.inner.list_tasks())
    }

    pub fn create(&self, task_id: &str) -> Result<Env, ClientError> {
        let inner = self.rt.block_on(self.inner.create(task_id))?;
        Ok(Env {
            rt: self.rt.clone(),
            inner,
        })
    }

    /// A practice vector env of `num_envs` sub-envs (see [`crate::VecEnv`]).
    pub fn create_vec(
        &self,
        task_id: &str,
        num_envs: u32,
        mode: AutoresetMode,
    ) -> Result<VecEnv, ClientError> {
        let inner = self
            .rt
            .block_on(self.inner.create_vec(task_id, num_envs, mode))?;
        Ok(VecEnv {
            rt: self.rt.clone(),
            inner,
        })
    }

    pub fn attach(&self, handle: EnvHandle) -> Result<Env, ClientError> {
        let inner = self.rt.block_on(self.inner.attach(handle))?;
        Ok(Env {
            rt: self.rt.clone(),
            inner,
        })
    }
}

/// A blocking handle on one environment.
pub struct Env {
    rt: std::sync::Arc<Runtime>,
    inner: env::Env,
}

impl Env {
    /// Attaches to the env a harness launched this agent for (`ALE_ENDPOINT`, `ALE_ENV_HANDLE`).
    pub fn from_agent_env() -> Result<Env, ClientError> {
        let rt = runtime()?;
        let inner = rt.block_on(env::Env::from_agent_env())?;
        Ok(Env {
            rt: std::sync::Arc::new(rt),
            inner,
        })
    }

    pub fn handle(&self) -> &EnvHandle {
        self.inner.handle()
    }

    pub fn spec(&self) -> &EnvSpec {
        self.inner.spec()
    }

    pub fn reset(&mut self, seed: Option<u64>) -> Result<ResetResult, ClientError> {
        self.rt.block_on(self.inner.reset(seed))
    }

    pub fn step(&mut self, action: &Tensor) -> Result<StepResult, ClientError> {
        self.rt.block_on(self.inner.step(action))
    }

    pub fn start_eval_session(&mut self) -> Result<EvalSession, ClientError> {
        self.rt.block_on(self.inner.start_eval_session())
    }
}

/// A blocking handle on a practice vector env.
pub struct VecEnv {
    rt: std::sync::Arc<Runtime>,
    inner: vector::VecEnv,
}

impl VecEnv {
    pub fn handle(&self) -> &EnvHandle {
        self.inner.handle()
    }

    pub fn spec(&self) -> &EnvSpec {
        self.inner.spec()
    }

    pub fn num_envs(&self) -> usize {
        self.inner.num_envs()
    }

    pub fn autoreset_mode(&self) -> AutoresetMode {
        self.inner.autoreset_mode()
    }

    pub fn reset(&mut self, reset: VecReset) -> Result<VecResetResult, ClientError> {
        self.rt.block_on(self.inner.reset(reset))
    }

    pub fn step(&mut self, actions: &Tensor) -> Result<VecStepResult, ClientError> {
        self.rt.block_on(self.inner.step(actions))
    }
}
