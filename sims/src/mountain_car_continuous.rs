//! Gymnasium's `MountainCarContinuous-v0`: the mountain car with a continuous force in
//! [-1, 1], +100 on reaching the flag and -0.1·force² per step.
//!
//! Gymnasium stores this env's state as a float32 array after every step, and under NumPy 2
//! every later operation on it is float32 arithmetic whenever the other operand is a Python
//! float, including the comparisons. A small NumPy-scalar type reproduces those promotion rules so the episode
//! matches step for step. `reset(seed)` draws the initial position as Gymnasium's
//! `reset(seed=seed)` does, into a float64 state.

use crate::draw::Drawing;
use crate::mountain_car::{MAX_POSITION, MAX_SPEED, MIN_POSITION, draw_hill, observation_space};
use crate::sim::EpisodeRng;
use crate::sim::{EpisodeClock, Sim, SimError, Transition, state_array};
use crate::space::{BoxSpace, Space};
use crate::tensor::{DType, Tensor};

pub const ID: &str = "MountainCarContinuous-v0";
pub const MAX_EPISODE_STEPS: u32 = 999;

const GOAL_POSITION: f64 = 0.45;
const POWER: f64 = 0.0015;

/// A NumPy scalar or a Python float, for NumPy 2 (NEP 50) promotion: float32 with a Python
/// float stays float32; anything with a float64 becomes float64.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Np {
    F32(f32),
    F64(f64),
    Py(f64),
}

impl Np {
    fn value(self) -> f64 {
        match self {
            Np::F32(x) => f64::from(x),
            Np::F64(x) | Np::Py(x) => x,
        }
    }

    fn binary(self, other: Np, f32_op: fn(f32, f32) -> f32, f64_op: fn(f64, f64) -> f64) -> Np {
        match (self, other) {
            (Np::F32(a), Np::F32(b)) => Np::F32(f32_op(a, b)),
            (Np::F32(a), Np::Py(b)) => Np::F32(f32_op(a, b as f32)),
            (Np::Py(a), Np::F32(b)) => Np::F32(f32_op(a as f32, b)),
            (Np::Py(a), Np::Py(b)) => Np::Py(f64_op(a, b)),
            (a, b) => Np::F64(f64_op(a.value(), b.value())),
        }
    }

    fn add(self, o: Np) -> Np {
        self.binary(o, |a, b| a + b, |a, b| a + b)
    }

    fn sub(self, o: Np) -> Np {
        self.binary(o, |a, b| a - b, |a, b| a - b)
    }

    fn mul(self, o: Np) -> Np {
        self.binary(o, |a, b| a * b, |a, b| a * b)
    }

    /// Compares with a Python float: in float32 when self is a float32.
    fn cmp_py(self, py: f64) -> std::cmp::Ordering {
        let ordering = match self {
            Np::F32(x) => x.partial_cmp(&(py as f32)),
            Np::F64(x) | Np::Py(x) => x.partial_cmp(&py),
        };
        ordering.unwrap_or(std::cmp::Ordering::Equal)
    }

    fn gt(self, py: f64) -> bool {
        self.cmp_py(py).is_gt()
    }

    fn lt(self, py: f64) -> bool {
        self.cmp_py(py).is_lt()
    }

    fn ge(self, py: f64) -> bool {
        self.cmp_py(py).is_ge()
    }

    fn eq_py(self, py: f64) -> bool {
        self.cmp_py(py).is_eq()
    }
}

pub struct MountainCarContinuous {
    /// `env.np_random`, for unseeded resets.
    rng: EpisodeRng,
    /// (position, velocity): float64 right after a reset, float32 after any step.
    state: [Np; 2],
    clock: EpisodeClock,
    observation: Tensor,
    observation_space: Space,
    action_space: Space,
}

impl MountainCarContinuous {
    pub fn new(max_steps: u32) -> Self {
        MountainCarContinuous {
            rng: EpisodeRng::default(),
            state: [Np::F64(0.0); 2],
            clock: EpisodeClock::new(max_steps),
            observation: Tensor::zeros(vec![2], DType::F32),
            observation_space: observation_space(),
            action_space: Space::Box(
                BoxSpace::uniform(vec![1], DType::F32, -1.0, 1.0).with_labels(&["force"]),
            ),
        }
    }

    fn begin(&mut self, position: f64, velocity: f64) {
        self.state = [Np::F64(position), Np::F64(velocity)];
        self.clock.reset();
        self.write_observation();
    }

    fn write_observation(&mut self) {
        let [p, v] = self.state;
        if let Some(o) = self.observation.as_f32_mut() {
            o.copy_from_slice(&[p.value() as f32, v.value() as f32]);
        }
    }
}

impl Sim for MountainCarContinuous {
    crate::sim_accessors!(ID);

    /// Gymnasium's `[np_random.uniform(low=-0.6, high=-0.4), 0]`.
    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let position = self.rng.seed(seed).uniform(-0.6, -0.4);
        self.begin(position, 0.0);
        Ok(())
    }

    fn reset_continuing(&mut self) -> Option<Result<(), SimError>> {
        let position = self.rng.continuing()?.uniform(-0.6, -0.4);
        self.begin(position, 0.0);
        Some(Ok(()))
    }

    /// `[position, velocity]`.
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        let [p, v] = state_array(state)?;
        self.begin(p, v);
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        let [a] = crate::action::box_f32::<1>(&self.action_space, action)?;
        self.clock.check_can_step()?;
        let [mut position, mut velocity] = self.state;
        // force = min(max(action[0], -1.0), 1.0), with Python's min/max returning an operand.
        let raw = Np::F32(a);
        let lifted = if Np::Py(-1.0).value() > raw.value() {
            Np::Py(-1.0)
        } else {
            raw
        };
        let force = if Np::Py(1.0).value() < lifted.value() {
            Np::Py(1.0)
        } else {
            lifted
        };
        let three_x = Np::Py(3.0).mul(position);
        let gravity = Np::Py(0.0025 * three_x.value().cos());
        velocity = velocity.add(force.mul(Np::Py(POWER)).sub(gravity));
        if velocity.gt(MAX_SPEED) {
            velocity = Np::Py(MAX_SPEED);
        }
        if velocity.lt(-MAX_SPEED) {
            velocity = Np::Py(-MAX_SPEED);
        }
        position = position.add(velocity);
        if position.gt(MAX_POSITION) {
            position = Np::Py(MAX_POSITION);
        }
        if position.lt(MIN_POSITION) {
            position = Np::Py(MIN_POSITION);
        }
        if position.eq_py(MIN_POSITION) && velocity.lt(0.0) {
            velocity = Np::Py(0.0);
        }
        let terminated = position.ge(GOAL_POSITION) && velocity.ge(0.0);
        let mut reward = if terminated { 100.0 } else { 0.0 };
        reward -= f64::from(a).powi(2) * 0.1;
        self.state = [
            Np::F32(position.value() as f32),
            Np::F32(velocity.value() as f32),
        ];
        self.write_observation();
        let truncated = self.clock.tick(terminated);
        Ok(Transition {
            reward,
            terminated,
            truncated,
        })
    }
}

pub fn draw(observation: &Tensor) -> Drawing {
    draw_hill(observation, GOAL_POSITION)
}
