//! Gymnasium's `Acrobot-v1`: swing a two-link chain's tip above a line by torquing the middle
//! joint. The "book" dynamics integrated with Gymnasium's RK4 over one 0.2 s step, in float64,
//! operation for operation. `reset(seed)` draws the initial state as Gymnasium's
//! `reset(seed=seed)` does.

use std::f64::consts::PI;

use crate::draw::{Drawing, Role, Viewport, obs};
use crate::numpy_rng::Generator;
use crate::numpy_trig::{cos_f32, sin_f32};
use crate::sim::EpisodeRng;
use crate::sim::{EpisodeClock, Sim, SimError, Transition, state_array};
use crate::space::{BoxSpace, DiscreteSpace, Space};
use crate::tensor::{DType, Tensor};

pub const ID: &str = "Acrobot-v1";
pub const MAX_EPISODE_STEPS: u32 = 500;

const DT: f64 = 0.2;
const LINK_LENGTH_1: f64 = 1.0;
const LINK_MASS_1: f64 = 1.0;
const LINK_MASS_2: f64 = 1.0;
const LINK_COM_POS_1: f64 = 0.5;
const LINK_COM_POS_2: f64 = 0.5;
const LINK_MOI: f64 = 1.0;
const MAX_VEL_1: f64 = 4.0 * PI;
const MAX_VEL_2: f64 = 9.0 * PI;
const AVAIL_TORQUE: [f64; 3] = [-1.0, 0.0, 1.0];

pub const OBSERVATION_LABELS: [&str; 6] = [
    "cos(theta1)",
    "sin(theta1)",
    "cos(theta2)",
    "sin(theta2)",
    "theta1 velocity",
    "theta2 velocity",
];

pub struct Acrobot {
    /// `env.np_random`, for unseeded resets.
    rng: EpisodeRng,
    /// (theta1, theta2, dtheta1, dtheta2)
    state: [f64; 4],
    clock: EpisodeClock,
    observation: Tensor,
    observation_space: Space,
    action_space: Space,
}

/// Gymnasium's `_dsdt` ("book" variant) on the augmented state `[s0..s3, torque]`.
fn dsdt(s: [f64; 5]) -> [f64; 5] {
    let (m1, m2, l1, lc1, lc2, i1, i2, g) = (
        LINK_MASS_1,
        LINK_MASS_2,
        LINK_LENGTH_1,
        LINK_COM_POS_1,
        LINK_COM_POS_2,
        LINK_MOI,
        LINK_MOI,
        9.8,
    );
    let a = s[4];
    let (theta1, theta2, dtheta1, dtheta2) = (s[0], s[1], s[2], s[3]);
    let d1 = m1 * lc1.powi(2)
        + m2 * (l1.powi(2) + lc2.powi(2) + 2.0 * l1 * lc2 * theta2.cos())
        + i1
        + i2;
    let d2 = m2 * (lc2.powi(2) + l1 * lc2 * theta2.cos()) + i2;
    let phi2 = m2 * lc2 * g * (theta1 + theta2 - PI / 2.0).cos();
    let phi1 = -m2 * l1 * lc2 * (dtheta2 * dtheta2) * theta2.sin()
        - 2.0 * m2 * l1 * lc2 * dtheta2 * dtheta1 * theta2.sin()
        + (m1 * lc1 + m2 * l1) * g * (theta1 - PI / 2.0).cos()
        + phi2;
    let ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * (dtheta1 * dtheta1) * theta2.sin() - phi2)
        / (m2 * lc2.powi(2) + i2 - d2 * d2 / d1);
    let ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    [dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0]
}

fn axpy(y: [f64; 5], a: f64, k: [f64; 5]) -> [f64; 5] {
    std::array::from_fn(|i| y[i] + a * k[i])
}

/// Gymnasium's `rk4` over `t = [0, dt]`.
fn rk4(y0: [f64; 5]) -> [f64; 5] {
    let dt = DT - 0.0;
    let dt2 = dt / 2.0;
    let k1 = dsdt(y0);
    let k2 = dsdt(axpy(y0, dt2, k1));
    let k3 = dsdt(axpy(y0, dt2, k2));
    let k4 = dsdt(axpy(y0, dt, k3));
    std::array::from_fn(|i| y0[i] + dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
}

/// Gymnasium's `wrap`: shifts by whole periods into [m, M].
fn wrap(mut x: f64, m: f64, big_m: f64) -> f64 {
    let diff = big_m - m;
    while x > big_m {
        x -= diff;
    }
    while x < m {
        x += diff;
    }
    x
}

/// Gymnasium's `bound`: Python's `min(max(x, m), M)`.
fn bound(x: f64, m: f64, big_m: f64) -> f64 {
    let lifted = if m > x { m } else { x };
    if big_m < lifted { big_m } else { lifted }
}

impl Acrobot {
    pub fn new(max_steps: u32) -> Self {
        let high = [1.0, 1.0, 1.0, 1.0, MAX_VEL_1, MAX_VEL_2].map(|h| f64::from(h as f32));
        Acrobot {
            rng: EpisodeRng::default(),
            state: [0.0; 4],
            clock: EpisodeClock::new(max_steps),
            observation: Tensor::zeros(vec![6], DType::F32),
            observation_space: Space::Box(
                BoxSpace::vector(DType::F32, high.map(|h| -h).to_vec(), high.to_vec())
                    .with_labels(&OBSERVATION_LABELS),
            ),
            action_space: Space::Discrete(DiscreteSpace::new(3).with_labels(&[
                "torque -1",
                "torque 0",
                "torque +1",
            ])),
        }
    }

    /// Gymnasium's `np_random.uniform(low=-0.1, high=0.1, size=(4,)).astype(np.float32)`.
    fn draw_start(rng: &mut Generator) -> [f32; 4] {
        let mut drawn = [0.0; 4];
        rng.fill_uniform(-0.1, 0.1, &mut drawn);
        drawn.map(|x| x as f32)
    }

    /// Begins an episode from a drawn (float32) state.
    fn begin_drawn(&mut self, state: [f32; 4]) {
        self.begin(state.map(f64::from));
        self.write_observation_f32(state);
    }

    fn begin(&mut self, state: [f64; 4]) {
        self.state = state;
        self.clock.reset();
        self.write_observation();
    }

    fn write_observation(&mut self) {
        let [t1, t2, d1, d2] = self.state;
        if let Some(o) = self.observation.as_f32_mut() {
            o.copy_from_slice(&[
                t1.cos() as f32,
                t1.sin() as f32,
                t2.cos() as f32,
                t2.sin() as f32,
                d1 as f32,
                d2 as f32,
            ]);
        }
    }

    /// The observation of a float32 state, as Gymnasium's `_get_ob` computes it right after
    /// `reset`: NumPy's float32 `cos` and `sin`.
    fn write_observation_f32(&mut self, [t1, t2, d1, d2]: [f32; 4]) {
        if let Some(o) = self.observation.as_f32_mut() {
            o.copy_from_slice(&[cos_f32(t1), sin_f32(t1), cos_f32(t2), sin_f32(t2), d1, d2]);
        }
    }
}

impl Sim for Acrobot {
    crate::sim_accessors!(ID);

    /// Gymnasium's `np_random.uniform(low=-0.1, high=0.1, size=(4,)).astype(np.float32)`.
    /// The first step widens that float32 state to float64 exactly (`np.append` with the
    /// torque), but the first observation takes NumPy's float32 `cos` and `sin` of it.
    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let state = Self::draw_start(self.rng.seed(seed));
        self.begin_drawn(state);
        Ok(())
    }

    fn reset_continuing(&mut self) -> Option<Result<(), SimError>> {
        let state = Self::draw_start(self.rng.continuing()?);
        self.begin_drawn(state);
        Some(Ok(()))
    }

    /// `[theta1, theta2, dtheta1, dtheta2]`.
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        self.begin(state_array(state)?);
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        let a = crate::action::discrete(&self.action_space, action)?;
        self.clock.check_can_step()?;
        let [t1, t2, d1, d2] = self.state;
        let ns = rk4([t1, t2, d1, d2, AVAIL_TORQUE[a as usize]]);
        self.state = [
            wrap(ns[0], -PI, PI),
            wrap(ns[1], -PI, PI),
            bound(ns[2], -MAX_VEL_1, MAX_VEL_1),
            bound(ns[3], -MAX_VEL_2, MAX_VEL_2),
        ];
        let [t1, t2, _, _] = self.state;
        let terminated = -t1.cos() - (t2 + t1).cos() > 1.0;
        self.write_observation();
        let truncated = self.clock.tick(terminated);
        Ok(Transition {
            reward: if terminated { 0.0 } else { -1.0 },
            terminated,
            truncated,
        })
    }
}

/// The two links hanging from the pivot, and the line the tip must rise above.
pub fn draw(observation: &Tensor) -> Drawing {
    let (c1, s1, c2, s2) = (
        obs(observation, 0),
        obs(observation, 1),
        obs(observation, 2),
        obs(observation, 3),
    );
    let mut d = Drawing::new(Viewport {
        x_min: -2.2,
        x_max: 2.2,
        y_min: -2.2,
        y_max: 2.2,
    });
    d.line((-2.2, 1.0), (2.2, 1.0), Role::Goal);
    // theta1 = 0 hangs straight down; angles counter-clockwise.
    let p1 = (LINK_LENGTH_1 * s1, -LINK_LENGTH_1 * c1);
    // cos/sin of theta1 + theta2 from the observed pairs.
    let (c12, s12) = (c1 * c2 - s1 * s2, s1 * c2 + c1 * s2);
    let p2 = (p1.0 + s12, p1.1 - c12);
    d.line((0.0, 0.0), p1, Role::Limb);
    d.line(p1, p2, Role::Limb);
    d.circle((0.0, 0.0), 0.06, Role::Joint);
    d.circle(p1, 0.06, Role::Joint);
    d.circle(p2, 0.04, Role::Body);
    d
}
