//! Gymnasium's `MountainCar-v0`: drive an underpowered car up the right hill (Discrete(3):
//! push left, no push, push right). All arithmetic in float64, as in Gymnasium; `reset(seed)`
//! draws the initial position as Gymnasium's `reset(seed=seed)` does.

use crate::draw::{Drawing, Role, Viewport, obs};
use crate::sim::EpisodeRng;
use crate::sim::{EpisodeClock, Sim, SimError, Transition, state_array};
use crate::space::{BoxSpace, DiscreteSpace, Space};
use crate::tensor::{DType, Tensor};

pub const ID: &str = "MountainCar-v0";
pub const MAX_EPISODE_STEPS: u32 = 200;

pub const MIN_POSITION: f64 = -1.2;
pub const MAX_POSITION: f64 = 0.6;
pub const MAX_SPEED: f64 = 0.07;
const GOAL_POSITION: f64 = 0.5;
const FORCE: f64 = 0.001;
const GRAVITY: f64 = 0.0025;

pub const OBSERVATION_LABELS: [&str; 2] = ["position", "velocity"];

/// The observation space both mountain cars share (bounds rounded to float32 like Gymnasium's).
pub fn observation_space() -> Space {
    let f = |v: f64| f64::from(v as f32);
    Space::Box(
        BoxSpace::vector(
            DType::F32,
            vec![f(MIN_POSITION), f(-MAX_SPEED)],
            vec![f(MAX_POSITION), f(MAX_SPEED)],
        )
        .with_labels(&OBSERVATION_LABELS),
    )
}

pub struct MountainCar {
    /// `env.np_random`, for unseeded resets.
    rng: EpisodeRng,
    /// (position, velocity)
    state: [f64; 2],
    clock: EpisodeClock,
    observation: Tensor,
    observation_space: Space,
    action_space: Space,
}

impl MountainCar {
    pub fn new(max_steps: u32) -> Self {
        MountainCar {
            rng: EpisodeRng::default(),
            state: [0.0; 2],
            clock: EpisodeClock::new(max_steps),
            observation: Tensor::zeros(vec![2], DType::F32),
            observation_space: observation_space(),
            action_space: Space::Discrete(DiscreteSpace::new(3).with_labels(&[
                "push left",
                "no push",
                "push right",
            ])),
        }
    }

    fn begin(&mut self, state: [f64; 2]) {
        self.state = state;
        self.clock.reset();
        self.write_observation();
    }

    fn write_observation(&mut self) {
        let [p, v] = self.state;
        if let Some(o) = self.observation.as_f32_mut() {
            o.copy_from_slice(&[p as f32, v as f32]);
        }
    }
}

impl Sim for MountainCar {
    crate::sim_accessors!(ID);

    /// Gymnasium's `[np_random.uniform(low=-0.6, high=-0.4), 0]`.
    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let position = self.rng.seed(seed).uniform(-0.6, -0.4);
        self.begin([position, 0.0]);
        Ok(())
    }

    fn reset_continuing(&mut self) -> Option<Result<(), SimError>> {
        let position = self.rng.continuing()?.uniform(-0.6, -0.4);
        self.begin([position, 0.0]);
        Some(Ok(()))
    }

    /// `[position, velocity]`.
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        self.begin(state_array(state)?);
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        let a = crate::action::discrete(&self.action_space, action)?;
        self.clock.check_can_step()?;
        let [mut position, mut velocity] = self.state;
        velocity += (a - 1) as f64 * FORCE + (3.0 * position).cos() * (-GRAVITY);
        velocity = velocity.clamp(-MAX_SPEED, MAX_SPEED);
        position += velocity;
        position = position.clamp(MIN_POSITION, MAX_POSITION);
        if position == MIN_POSITION && velocity < 0.0 {
            velocity = 0.0;
        }
        let terminated = position >= GOAL_POSITION && velocity >= 0.0;
        self.state = [position, velocity];
        self.write_observation();
        let truncated = self.clock.tick(terminated);
        Ok(Transition {
            reward: -1.0,
            terminated,
            truncated,
        })
    }
}

/// Gymnasium's hill: `y = 0.45 sin(3x) + 0.55`.
pub fn height(x: f64) -> f64 {
    (3.0 * x).sin() * 0.45 + 0.55
}

/// The hill, the flag at `goal`, and the car at the observed position.
pub fn draw_hill(observation: &Tensor, goal: f64) -> Drawing {
    let mut d = Drawing::new(Viewport {
        x_min: MIN_POSITION,
        x_max: MAX_POSITION,
        y_min: 0.0,
        y_max: 1.2,
    });
    let n = 60;
    let xs: Vec<f64> = (0..=n)
        .map(|i| MIN_POSITION + (MAX_POSITION - MIN_POSITION) * i as f64 / n as f64)
        .collect();
    for w in xs.windows(2) {
        d.line((w[0], height(w[0])), (w[1], height(w[1])), Role::Ground);
    }
    d.line(
        (goal, height(goal)),
        (goal, height(goal) + 0.12),
        Role::Goal,
    );
    d.polygon(
        vec![
            (goal, height(goal) + 0.12),
            (goal + 0.06, height(goal) + 0.1),
            (goal, height(goal) + 0.08),
        ],
        Role::Goal,
    );
    let x = obs(observation, 0);
    d.circle((x, height(x) + 0.04), 0.04, Role::Body);
    d
}

pub fn draw(observation: &Tensor) -> Drawing {
    draw_hill(observation, GOAL_POSITION)
}
