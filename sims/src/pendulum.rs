//! Gymnasium's `Pendulum-v1`: swing a pendulum up and hold it. The arithmetic follows
//! Gymnasium under NumPy 2's promotion rules: the torque stays float32 (so `0.001 * u**2` and
//! `3 * u` are float32 operations), the state is float64. `reset(seed)` draws the initial
//! state as Gymnasium's `reset(seed=seed)` does.

use std::f64::consts::PI;

use crate::draw::{Drawing, Role, Viewport, obs};
use crate::numpy_rng::Generator;
use crate::sim::EpisodeRng;
use crate::sim::{EpisodeClock, Sim, SimError, Transition, state_array};
use crate::space::{BoxSpace, Space};
use crate::tensor::{DType, Tensor};

pub const ID: &str = "Pendulum-v1";
pub const MAX_EPISODE_STEPS: u32 = 200;

const MAX_SPEED: f64 = 8.0;
const MAX_TORQUE: f32 = 2.0;
const DT: f64 = 0.05;
const G: f64 = 10.0;
const M: f64 = 1.0;
const L: f64 = 1.0;

pub const OBSERVATION_LABELS: [&str; 3] = ["cos(theta)", "sin(theta)", "angular velocity"];

/// Gymnasium's `angle_normalize`: NumPy's floored modulo into [-pi, pi).
pub fn angle_normalize(x: f64) -> f64 {
    (x + PI).rem_euclid(2.0 * PI) - PI
}

pub struct Pendulum {
    /// `env.np_random`, for unseeded resets.
    rng: EpisodeRng,
    /// (theta, theta_dot); theta = 0 is upright.
    state: [f64; 2],
    clock: EpisodeClock,
    observation: Tensor,
    observation_space: Space,
    action_space: Space,
}

impl Pendulum {
    pub fn new(max_steps: u32) -> Self {
        Pendulum {
            rng: EpisodeRng::default(),
            state: [0.0; 2],
            clock: EpisodeClock::new(max_steps),
            observation: Tensor::zeros(vec![3], DType::F32),
            observation_space: Space::Box(
                BoxSpace::vector(
                    DType::F32,
                    vec![-1.0, -1.0, -MAX_SPEED],
                    vec![1.0, 1.0, MAX_SPEED],
                )
                .with_labels(&OBSERVATION_LABELS),
            ),
            action_space: Space::Box(
                BoxSpace::uniform(vec![1], DType::F32, -2.0, 2.0).with_labels(&["torque"]),
            ),
        }
    }

    fn write_observation(&mut self) {
        let [th, thdot] = self.state;
        if let Some(o) = self.observation.as_f32_mut() {
            o.copy_from_slice(&[th.cos() as f32, th.sin() as f32, thdot as f32]);
        }
    }

    /// Gymnasium's `np_random.uniform(low=-high, high=high)` for `[theta, theta_dot]`.
    fn draw_start(rng: &mut Generator) -> [f64; 2] {
        let theta = rng.uniform(-PI, PI);
        let theta_dot = rng.uniform(-1.0, 1.0);
        [theta, theta_dot]
    }

    fn begin(&mut self, state: [f64; 2]) {
        self.state = state;
        self.clock.reset();
        self.write_observation();
    }
}

impl Sim for Pendulum {
    crate::sim_accessors!(ID);

    /// Gymnasium's `np_random.uniform(low=-high, high=high)` with `high = [pi, 1]`: one
    /// draw per element, in order.
    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let start = Self::draw_start(self.rng.seed(seed));
        self.begin(start);
        Ok(())
    }

    fn reset_continuing(&mut self) -> Option<Result<(), SimError>> {
        let start = Self::draw_start(self.rng.continuing()?);
        self.begin(start);
        Some(Ok(()))
    }

    /// `[theta, theta_dot]`.
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        self.begin(state_array(state)?);
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        let [u] = crate::action::box_f32::<1>(&self.action_space, action)?;
        self.clock.check_can_step()?;
        let u = u.clamp(-MAX_TORQUE, MAX_TORQUE);
        let [th, thdot] = self.state;
        let costs =
            angle_normalize(th).powi(2) + 0.1 * (thdot * thdot) + f64::from(0.001f32 * (u * u));
        let accel = 3.0 * G / (2.0 * L) * th.sin() + f64::from(3.0f32 / (M * L * L) as f32 * u);
        let newthdot = (thdot + accel * DT).clamp(-MAX_SPEED, MAX_SPEED);
        let newth = th + newthdot * DT;
        self.state = [newth, newthdot];
        self.write_observation();
        let truncated = self.clock.tick(false);
        Ok(Transition {
            reward: -costs,
            terminated: false,
            truncated,
        })
    }
}

/// The rod from its pivot, from the observed cos/sin of the angle (0 = upright).
pub fn draw(observation: &Tensor) -> Drawing {
    let (c, s) = (obs(observation, 0), obs(observation, 1));
    let mut d = Drawing::new(Viewport {
        x_min: -1.3,
        x_max: 1.3,
        y_min: -1.3,
        y_max: 1.3,
    });
    d.circle((0.0, 1.0), 0.04, Role::Goal);
    // theta is measured from upright, counter-clockwise positive.
    d.line((0.0, 0.0), (-L * s, L * c), Role::Limb);
    d.circle((0.0, 0.0), 0.05, Role::Joint);
    d
}
