//! What an agent links to attach to an ALE evaluator.
//!
//! - [`Client`] / [`Env`]: async (tokio) access to the agent channel.
//! - [`blocking`]: the same for agents that do not use tokio.
//! - [`policy`]: built-in random and heuristic policies.
//! - [`play_episode`]: drive one episode with a policy.
//!
//! An agent launched by `ale harness run` finds its official env with
//! [`Env::from_agent_env`], starts the session and plays it:
//!
//! ```no_run
//! # async fn run() -> Result<(), ale_client::ClientError> {
//! use ale_client::{Env, play_episode, policy};
//! let mut env = Env::from_agent_env().await?;
//! let session = env.start_eval_session().await?;
//! let mut agent = policy::build(policy::PolicyKind::Heuristic, env.spec(), 0).unwrap();
//! for _ in 0..session.episodes {
//!     play_episode(&mut env, agent.as_mut(), None).await?;
//! }
//! # Ok(()) }
//! ```

pub mod blocking;
mod env;
mod error;
pub mod policy;
mod transport;
mod vector;

pub use ale_proto::task_spec::{
    Budgets, MetricSpec, SafetyMetricSpec, SubmissionContract, TaskMode,
};
pub use ale_proto::{BatchId, EnvHandle, SessionId, TaskSpec};
pub use ale_sim::{Rng, Space, Tensor};
pub use env::{
    BatchState, BatchStatus, Client, Env, EnvSpec, EvalSession, Info, InfoValue, ResetResult,
    StepResult,
};
pub use error::ClientError;
pub use vector::{AutoresetMode, Finals, VecEnv, VecReset, VecResetResult, VecStepResult};

/// What one episode amounted to.
#[derive(Debug, Clone, PartialEq)]
pub struct EpisodeSummary {
    pub episode_return: f64,
    pub steps: u64,
    pub terminated: bool,
    pub truncated: bool,
    /// The info map of the last step (the sim's episode counters among it).
    pub info: Info,
}

/// Resets `env` (with `seed`, ignored in an eval session) and steps it with `policy` until
/// the episode ends.
pub async fn play_episode(
    env: &mut Env,
    policy: &mut dyn policy::Policy,
    seed: Option<u64>,
) -> Result<EpisodeSummary, ClientError> {
    let mut observation = env.reset(seed).await?.observation;
    policy.reset();
    let mut summary = EpisodeSummary {
        episode_return: 0.0,
        steps: 0,
        terminated: false,
        truncated: false,
        info: Info::new(),
    };
    loop {
        let step = env.step(&policy.act(&observation)).await?;
        summary.episode_return += step.reward;
        summary.steps += 1;
        if step.is_done() {
            summary.terminated = step.terminated;
            summary.truncated = step.truncated;
            summary.info = step.info;
            return Ok(summary);
        }
        observation = step.observation;
    }
}
