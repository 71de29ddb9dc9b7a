//! The `Sim` trait every simulator implements, and the episode bookkeeping they share.

use crate::space::{Space, SpaceError};
use crate::tensor::Tensor;

/// What one step produced besides the observation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Transition {
    pub reward: f64,
    /// The episode reached a terminal state of the task (Gymnasium's `terminated`).
    pub terminated: bool,
    /// The episode hit its step limit (Gymnasium's `truncated`, from `TimeLimit`).
    pub truncated: bool,
}

impl Transition {
    pub fn is_done(&self) -> bool {
        self.terminated || self.truncated
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    #[error("action {0}")]
    Action(#[from] SpaceError),
    #[error("step before reset: call reset to begin an episode")]
    NotReset,
    #[error("the episode is over (terminated or truncated): call reset to begin another")]
    EpisodeOver,
    #[error("invalid state: {0}")]
    State(String),
    /// The task's `[sim_config]` does not suit the sim.
    #[error("sim configuration: {0}")]
    Config(String),
    /// The sim's backend cannot run: a missing library or model file. The message says what
    /// is missing and how to get it.
    #[error("{0}")]
    Backend(String),
    /// The sim failed in the middle of its work, through no fault of the caller's (a hosted
    /// sim's process crashed, hung, or answered what it must not): the episode is lost; a
    /// later reset starts afresh. The message names the sim and the cause.
    #[error("{0}")]
    Fault(String),
    /// The sim needs a resource the evaluator has run out of (every sim-host slot taken).
    #[error("{0}")]
    Exhausted(String),
}

/// A running total a sim keeps over the current episode (collisions, success, time to goal),
/// reported in info maps and usable as a task's metric or safety metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counter {
    pub name: &'static str,
    pub value: f64,
}

/// A simulator: a Gymnasium env with its `TimeLimit` applied.
///
/// The sim owns its observation buffer and rewrites it in place, so stepping allocates nothing;
/// read it with [`Sim::observation`] after `reset` or `step`.
pub trait Sim: Send {
    /// The simulator id, e.g. `"CartPole-v1"`.
    fn id(&self) -> &'static str;
    fn observation_space(&self) -> &Space;
    fn action_space(&self) -> &Space;
    /// Begins an episode whose random initial state is drawn from `seed`. A sim whose backend
    /// fails here (a model that cannot be set up) says so, and no episode is running.
    fn reset(&mut self, seed: u64) -> Result<(), SimError>;
    /// Begins the next episode from the sim's own generator, as Gymnasium's `reset()` without
    /// a seed does: the stream the last seeded [`Sim::reset`] began goes on, so a vector env's
    /// autoreset draws what Gymnasium's would. `None`: the sim keeps no generator between
    /// episodes, or was never seeded; the caller seeds it instead.
    fn reset_continuing(&mut self) -> Option<Result<(), SimError>> {
        None
    }
    /// Applies one action. An action outside the action space, a step before the first reset
    /// and a step after the episode ended are errors that leave the sim unchanged.
    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError>;
    /// Begins an episode from an exact state instead of a seed, as Gymnasium's
    /// `env.unwrapped.state = state` right after `reset` does (what parity fixtures record).
    /// The state's layout is the sim's own; see its module.
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError>;
    /// The latest observation.
    fn observation(&self) -> &Tensor;
    /// Steps taken in the current episode.
    fn episode_steps(&self) -> u32;
    /// The sim's episode counters, in a fixed order; none for the classic-control sims.
    fn counters(&self) -> &[Counter] {
        &[]
    }
}

/// A sim's generator between episodes: NumPy's `default_rng(seed)` from its last seeded reset,
/// which Gymnasium's `env.np_random` is, drawn on by unseeded resets (see
/// [`Sim::reset_continuing`]).
#[derive(Debug, Clone, Default)]
pub struct EpisodeRng(Option<crate::numpy_rng::Generator>);

impl EpisodeRng {
    /// A fresh generator from `seed`, kept for the episodes after.
    pub fn seed(&mut self, seed: u64) -> &mut crate::numpy_rng::Generator {
        self.0.insert(crate::numpy_rng::default_rng(seed))
    }

    /// The generator the last seeded reset began, if any.
    pub fn continuing(&mut self) -> Option<&mut crate::numpy_rng::Generator> {
        self.0.as_mut()
    }
}

/// Where a sim is within an episode, and the step limit that truncates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpisodeClock {
    steps: u32,
    max_steps: u32,
    phase: Phase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    NotReset,
    Running,
    Over,
}

impl EpisodeClock {
    pub fn new(max_steps: u32) -> Self {
        EpisodeClock {
            steps: 0,
            max_steps,
            phase: Phase::NotReset,
        }
    }

    pub fn reset(&mut self) {
        self.steps = 0;
        self.phase = Phase::Running;
    }

    /// Fails unless an episode is running.
    pub fn check_can_step(&self) -> Result<(), SimError> {
        match self.phase {
            Phase::NotReset => Err(SimError::NotReset),
            Phase::Over => Err(SimError::EpisodeOver),
            Phase::Running => Ok(()),
        }
    }

    /// Counts a step and says whether the time limit truncates the episode.
    pub fn tick(&mut self, terminated: bool) -> bool {
        self.steps += 1;
        let truncated = self.steps >= self.max_steps;
        if terminated || truncated {
            self.phase = Phase::Over;
        }
        truncated
    }

    pub fn steps(&self) -> u32 {
        self.steps
    }

    pub fn max_steps(&self) -> u32 {
        self.max_steps
    }
}

/// Checks that a state given to `reset_to_state` has `N` finite elements.
pub fn state_array<const N: usize>(state: &[f64]) -> Result<[f64; N], SimError> {
    let array: [f64; N] = state
        .try_into()
        .map_err(|_| SimError::State(format!("expected {N} numbers, got {}", state.len())))?;
    if let Some(i) = array.iter().position(|v| !v.is_finite()) {
        return Err(SimError::State(format!("element {i} is {}", array[i])));
    }
    Ok(array)
}

/// The `Sim` methods every sim answers from the same fields (`observation_space`,
/// `action_space`, `observation`, `clock`), written once. Use inside `impl Sim for …`.
#[macro_export]
macro_rules! sim_accessors {
    ($id:expr) => {
        fn id(&self) -> &'static str {
            $id
        }

        fn observation_space(&self) -> &$crate::Space {
            &self.observation_space
        }

        fn action_space(&self) -> &$crate::Space {
            &self.action_space
        }

        fn observation(&self) -> &$crate::Tensor {
            &self.observation
        }

        fn episode_steps(&self) -> u32 {
            self.clock.steps()
        }
    };
}
