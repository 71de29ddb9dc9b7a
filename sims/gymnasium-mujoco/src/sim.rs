//! One env of this crate as a [`Sim`]: its spec and rules over a state of the shared model.

use ale_sim::{
    BoxSpace, DType, EpisodeClock, Sim, SimError, Space, SpaceError, Tensor, Transition,
};

use crate::env::{EnvSpec, Physics, Rules};
use crate::registry;

/// One of Gymnasium's MuJoCo envs with its `TimeLimit`: a state of the env's shared model.
///
/// The observation is float64, as Gymnasium's; the action float32, passed to MuJoCo
/// unclipped. `reset_to_state` takes the positions (`qpos`) followed by the velocities
/// (`qvel`), as `set_state(qpos, qvel)`.
pub struct GymnasiumMujoco {
    spec: &'static EnvSpec,
    rules: Box<dyn Rules>,
    physics: Physics,
    nq: usize,
    nv: usize,
    nu: usize,
    observation_space: Space,
    action_space: Space,
    observation: Tensor,
    clock: EpisodeClock,
    /// `env.np_random`, for unseeded resets.
    rng: ale_sim::EpisodeRng,
}

impl std::fmt::Debug for GymnasiumMujoco {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GymnasiumMujoco")
            .field("id", &self.spec.id)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

impl GymnasiumMujoco {
    /// A sim of Gymnasium env `id` (one of [`crate::ENV_IDS`]), truncated after `max_steps`
    /// steps. Fails with [`SimError::Backend`] when MuJoCo is not built in.
    pub fn new(id: &str, max_steps: u32) -> Result<GymnasiumMujoco, SimError> {
        let spec = registry::spec(id)
            .ok_or_else(|| SimError::Config(format!("no Gymnasium MuJoCo env is named {id:?}")))?;
        Self::of(spec, max_steps)
    }

    pub(crate) fn of(spec: &'static EnvSpec, max_steps: u32) -> Result<GymnasiumMujoco, SimError> {
        let model = spec.model()?;
        let rules = (spec.rules)(model);
        let (nq, nv, nu) = (model.nq(), model.nv(), model.nu());
        let n = rules.observation_len(model);
        let observation_space = Space::Box(labelled(
            BoxSpace::uniform(vec![n], DType::F64, f64::NEG_INFINITY, f64::INFINITY),
            (spec.view.labels)(model),
        ));
        // `actuator_ctrlrange.astype(np.float32)`.
        let (low, high) = model
            .ctrl_range()
            .iter()
            .map(|[lo, hi]| (f64::from(*lo as f32), f64::from(*hi as f32)))
            .unzip();
        let action_space = Space::Box(labelled(
            BoxSpace::vector(DType::F32, low, high),
            crate::view::action_labels(model),
        ));
        Ok(GymnasiumMujoco {
            rng: ale_sim::EpisodeRng::default(),
            spec,
            rules,
            physics: Physics::new(model, spec.frame_skip),
            nq,
            nv,
            nu,
            observation_space,
            action_space,
            observation: Tensor::zeros(vec![n], DType::F64),
            clock: EpisodeClock::new(max_steps),
        })
    }

    /// The current positions (`data.qpos`).
    pub fn qpos(&self) -> &[f64] {
        self.physics.data().qpos()
    }

    /// The current velocities (`data.qvel`).
    pub fn qvel(&self) -> &[f64] {
        self.physics.data().qvel()
    }

    /// MuJoCo's own part of one env step, for benchmarks: `action` as the controls, then the
    /// env's `frame_skip` calls of `mj_step`, and nothing else (no `mj_rnePostConstraint`,
    /// observation, reward, termination or time limit).
    pub fn step_physics_only(&mut self, action: &[f32]) {
        self.physics.step_only(action);
    }

    fn observe(&mut self) {
        let out = self
            .observation
            .as_f64_mut()
            .expect("the observation is float64");
        self.rules.observe(self.physics.data(), out);
    }

    /// The float32 elements of `action`, which must be of the action space's shape and finite
    /// (not necessarily within its bounds).
    fn decode<'a>(&self, action: &'a Tensor) -> Result<&'a [f32], SpaceError> {
        ale_sim::action::box_f32_slice(&self.action_space, action, self.nu)
    }
}

/// `space` with `labels` if they name each of its elements (tests check that they do).
fn labelled(mut space: BoxSpace, labels: Vec<String>) -> BoxSpace {
    if labels.len() == space.low.len() {
        space.labels = labels;
    }
    space
}

impl Sim for GymnasiumMujoco {
    fn id(&self) -> &'static str {
        self.spec.id
    }

    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn observation(&self) -> &Tensor {
        &self.observation
    }

    fn episode_steps(&self) -> u32 {
        self.clock.steps()
    }

    /// `reset(seed=seed)`: the noise is drawn from `np.random.default_rng(seed)`, as
    /// Gymnasium's `np_random` after a seeded reset.
    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let rng = self.rng.seed(seed);
        self.physics.reset_perturbed(self.rules.as_ref(), rng);
        self.observe();
        self.clock.reset();
        Ok(())
    }

    /// `reset()`: the noise drawn on from the last seeded reset's generator.
    fn reset_continuing(&mut self) -> Option<Result<(), SimError>> {
        let rng = self.rng.continuing()?;
        self.physics.reset_perturbed(self.rules.as_ref(), rng);
        self.observe();
        self.clock.reset();
        Some(Ok(()))
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        self.clock.check_can_step()?;
        let action = self.decode(action)?;
        let scored = self.rules.step(&mut self.physics, action);
        self.observe();
        let truncated = self.clock.tick(scored.terminated);
        Ok(Transition {
            reward: scored.reward,
            terminated: scored.terminated,
            truncated,
        })
    }

    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        let (nq, nv) = (self.nq, self.nv);
        if state.len() != nq + nv {
            return Err(SimError::State(format!(
                "{} takes qpos ({nq} numbers) then qvel ({nv}), {} in all; got {}",
                self.spec.id,
                nq + nv,
                state.len()
            )));
        }
        if let Some(i) = state.iter().position(|v| !v.is_finite()) {
            return Err(SimError::State(format!("element {i} is {}", state[i])));
        }
        self.physics.reset_to(&state[..nq], &state[nq..]);
        self.observe();
        self.clock.reset();
        Ok(())
    }
}
