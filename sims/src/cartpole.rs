//! Gymnasium's `CartPole-v1`, step for step: the same constants, Euler integration in f64,
//! float32 observations, termination thresholds and the 500-step time limit; `reset(seed)`
//! draws the initial state as Gymnasium's `reset(seed=seed)` does.

use crate::draw::{Drawing, Role, Viewport, obs};
use crate::numpy_rng::Generator;
use crate::sim::EpisodeRng;
use crate::sim::{EpisodeClock, Sim, SimError, Transition, state_array};
use crate::space::{BoxSpace, DiscreteSpace, Space};
use crate::tensor::{DType, Tensor};

pub const ID: &str = "CartPole-v1";
/// Gymnasium registers CartPole-v1 with `max_episode_steps=500`.
pub const MAX_EPISODE_STEPS: u32 = 500;

const GRAVITY: f64 = 9.8;
const MASS_CART: f64 = 1.0;
const MASS_POLE: f64 = 0.1;
const TOTAL_MASS: f64 = MASS_POLE + MASS_CART;
/// Half the pole's length.
const LENGTH: f64 = 0.5;
const POLE_MASS_LENGTH: f64 = MASS_POLE * LENGTH;
const FORCE_MAG: f64 = 10.0;
const TAU: f64 = 0.02;
pub const THETA_THRESHOLD: f64 = 12.0 * 2.0 * std::f64::consts::PI / 360.0;
pub const X_THRESHOLD: f64 = 2.4;

pub const OBSERVATION_LABELS: [&str; 4] = [
    "cart position",
    "cart velocity",
    "pole angle",
    "pole angular velocity",
];

/// The state Gymnasium calls `(x, x_dot, theta, theta_dot)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CartPoleState {
    pub x: f64,
    pub x_dot: f64,
    pub theta: f64,
    pub theta_dot: f64,
}

pub struct CartPole {
    /// `env.np_random`, for unseeded resets.
    rng: EpisodeRng,
    state: CartPoleState,
    clock: EpisodeClock,
    observation: Tensor,
    observation_space: Space,
    action_space: Space,
}

impl CartPole {
    pub fn new(max_steps: u32) -> Self {
        let high = [
            X_THRESHOLD * 2.0,
            f64::INFINITY,
            THETA_THRESHOLD * 2.0,
            f64::INFINITY,
        ]
        .map(|h| f64::from(h as f32));
        let observation_space = Space::Box(
            BoxSpace::vector(DType::F32, high.map(|h| -h).to_vec(), high.to_vec())
                .with_labels(&OBSERVATION_LABELS),
        );
        let action_space =
            Space::Discrete(DiscreteSpace::new(2).with_labels(&["push left", "push right"]));
        CartPole {
            rng: EpisodeRng::default(),
            state: CartPoleState {
                x: 0.0,
                x_dot: 0.0,
                theta: 0.0,
                theta_dot: 0.0,
            },
            clock: EpisodeClock::new(max_steps),
            observation: Tensor::zeros(vec![4], DType::F32),
            observation_space,
            action_space,
        }
    }

    /// Gymnasium's `np_random.uniform(low=-0.05, high=0.05, size=(4,))`.
    fn draw_start(rng: &mut Generator) -> CartPoleState {
        let mut s = [0.0; 4];
        rng.fill_uniform(-0.05, 0.05, &mut s);
        let [x, x_dot, theta, theta_dot] = s;
        CartPoleState {
            x,
            x_dot,
            theta,
            theta_dot,
        }
    }

    pub fn state(&self) -> CartPoleState {
        self.state
    }

    /// Begins an episode from an exact state (what Gymnasium's `env.unwrapped.state = ...`
    /// after `reset` does), for parity checks and reproductions.
    pub fn reset_to(&mut self, state: CartPoleState) {
        self.state = state;
        self.clock.reset();
        self.write_observation();
    }

    /// One step with the action already decoded: 0 pushes left, 1 pushes right.
    pub fn step_action(&mut self, push_right: bool) -> Result<Transition, SimError> {
        self.clock.check_can_step()?;
        let CartPoleState {
            x,
            x_dot,
            theta,
            theta_dot,
        } = self.state;
        let force = if push_right { FORCE_MAG } else { -FORCE_MAG };
        let costheta = theta.cos();
        let sintheta = theta.sin();
        let temp = (force + POLE_MASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS;
        let thetaacc = (GRAVITY * sintheta - costheta * temp)
            / (LENGTH * (4.0 / 3.0 - MASS_POLE * (costheta * costheta) / TOTAL_MASS));
        let xacc = temp - POLE_MASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
        self.state = CartPoleState {
            x: x + TAU * x_dot,
            x_dot: x_dot + TAU * xacc,
            theta: theta + TAU * theta_dot,
            theta_dot: theta_dot + TAU * thetaacc,
        };
        self.write_observation();
        let s = self.state;
        let terminated = s.x < -X_THRESHOLD
            || s.x > X_THRESHOLD
            || s.theta < -THETA_THRESHOLD
            || s.theta > THETA_THRESHOLD;
        let truncated = self.clock.tick(terminated);
        // Every step up to and including the one that terminates earns 1; the clock refuses
        // steps after termination, so Gymnasium's reward-0 branch cannot be reached.
        Ok(Transition {
            reward: 1.0,
            terminated,
            truncated,
        })
    }

    fn write_observation(&mut self) {
        let s = self.state;
        if let Some(obs) = self.observation.as_f32_mut() {
            obs.copy_from_slice(&[
                s.x as f32,
                s.x_dot as f32,
                s.theta as f32,
                s.theta_dot as f32,
            ]);
        }
    }
}

impl Sim for CartPole {
    crate::sim_accessors!(ID);

    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let start = Self::draw_start(self.rng.seed(seed));
        self.reset_to(start);
        Ok(())
    }

    fn reset_continuing(&mut self) -> Option<Result<(), SimError>> {
        let start = Self::draw_start(self.rng.continuing()?);
        self.reset_to(start);
        Some(Ok(()))
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        let a = crate::action::discrete(&self.action_space, action)?;
        self.step_action(a == 1)
    }

    /// `[x, x_dot, theta, theta_dot]`.
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        let [x, x_dot, theta, theta_dot] = state_array(state)?;
        self.reset_to(CartPoleState {
            x,
            x_dot,
            theta,
            theta_dot,
        });
        Ok(())
    }
}

/// The cart on its track and the pole, from the observed position and angle.
pub fn draw(observation: &Tensor) -> Drawing {
    let (x, theta) = (obs(observation, 0), obs(observation, 2));
    let mut d = Drawing::new(Viewport {
        x_min: -X_THRESHOLD - 0.4,
        x_max: X_THRESHOLD + 0.4,
        y_min: -0.6,
        y_max: 1.6,
    });
    d.line(
        (-X_THRESHOLD - 0.4, 0.0),
        (X_THRESHOLD + 0.4, 0.0),
        Role::Ground,
    );
    d.line((-X_THRESHOLD, -0.2), (-X_THRESHOLD, 0.2), Role::Hazard);
    d.line((X_THRESHOLD, -0.2), (X_THRESHOLD, 0.2), Role::Hazard);
    d.rect((x, 0.1), (0.25, 0.1), Role::Body);
    let pivot = (x, 0.2);
    let tip = (
        x + 2.0 * LENGTH * theta.sin(),
        0.2 + 2.0 * LENGTH * theta.cos(),
    );
    d.line(pivot, tip, Role::Limb);
    d.circle(pivot, 0.03, Role::Joint);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_episode_and_bounds_terminate() {
        let run = |seed| {
            let mut sim = CartPole::new(MAX_EPISODE_STEPS);
            sim.reset(seed).unwrap();
            let mut obs = vec![sim.observation().as_f32().unwrap().to_vec()];
            loop {
                let t = sim.step(&Tensor::scalar_i64(1)).unwrap();
                obs.push(sim.observation().as_f32().unwrap().to_vec());
                if t.is_done() {
                    assert!(t.terminated && !t.truncated);
                    break obs;
                }
            }
        };
        assert_eq!(run(7), run(7));
        assert_ne!(run(7), run(8));
    }

    #[test]
    fn truncates_at_the_time_limit_and_refuses_further_steps() {
        let mut sim = CartPole::new(3);
        sim.reset(1).unwrap();
        for i in 0..3 {
            let t = sim.step(&Tensor::scalar_i64(i % 2)).unwrap();
            assert_eq!(t.truncated, i == 2);
        }
        assert_eq!(sim.step(&Tensor::scalar_i64(0)), Err(SimError::EpisodeOver));
    }

    #[test]
    fn bad_actions_are_rejected_and_change_nothing() {
        let mut sim = CartPole::new(MAX_EPISODE_STEPS);
        assert_eq!(sim.step(&Tensor::scalar_i64(0)), Err(SimError::NotReset));
        sim.reset(3).unwrap();
        let before = sim.state();
        for bad in [
            Tensor::scalar_i64(2),
            Tensor::vector_f32(vec![1.0]),
            Tensor::new(vec![1], ale_sim::TensorData::I64(vec![1])).unwrap(),
        ] {
            let err = sim.step(&bad).unwrap_err();
            assert!(err.to_string().contains("Discrete(2)"), "{err}");
        }
        assert_eq!(sim.state(), before);
        assert_eq!(sim.episode_steps(), 0);
    }

    /// Reference: Gymnasium 1.4.0, `env.unwrapped.state = [0.01, -0.02, 0.03, 0.04]` after
    /// `reset`, then actions 1, 0, 1; `env.unwrapped.state` printed after each step.
    #[test]
    fn steps_match_gymnasium_bit_for_bit() {
        let mut sim = CartPole::new(MAX_EPISODE_STEPS);
        sim.reset_to(CartPoleState {
            x: 0.01,
            x_dot: -0.02,
            theta: 0.03,
            theta_dot: 0.04,
        });
        let expected = [
            (
                1,
                [
                    0.009600000000000001,
                    0.17467919574755525,
                    0.030799999999999998,
                    -0.2430687179600081,
                ],
            ),
            (
                0,
                [
                    0.013093583914951107,
                    -0.020868848948191993,
                    0.025938625640799837,
                    0.0591679999394166,
                ],
            ),
            (
                1,
                [
                    0.012676206935987267,
                    0.1738717748734813,
                    0.02712198563958817,
                    -0.22521957255967326,
                ],
            ),
        ];
        for (action, [x, x_dot, theta, theta_dot]) in expected {
            let t = sim.step(&Tensor::scalar_i64(action)).unwrap();
            assert_eq!(
                t,
                Transition {
                    reward: 1.0,
                    terminated: false,
                    truncated: false
                }
            );
            assert_eq!(
                sim.state(),
                CartPoleState {
                    x,
                    x_dot,
                    theta,
                    theta_dot
                }
            );
            let obs = sim.observation().as_f32().unwrap();
            assert_eq!(
                obs,
                [x as f32, x_dot as f32, theta as f32, theta_dot as f32]
            );
        }
    }
}
