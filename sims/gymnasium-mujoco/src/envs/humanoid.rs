//! `Humanoid-v5`: a three-dimensional biped (24 positions: the torso's free joint, x, y, z and
//! orientation quaternion, then 17 hinges of abdomen, hips, knees, shoulders and elbows; 17
//! motors in [-0.4, 0.4]). Reward: 1.25 × the x velocity of the whole body's centre of mass,
//! plus 5 while healthy, less 0.1·|ctrl|² and min(5e-7·|cfrc_ext|², 10) (the contact forces of
//! every body, the world's included). It terminates once unhealthy: healthy is the torso's z
//! within (1, 2).
//!
//! Observation (348), the same as `HumanoidStandup-v5`'s ([`observe`]): `qpos[2..]` (z,
//! orientation, the 17 joint angles), all 23 of `qvel`, then of bodies 1 to 13 their
//! com-based inertias (`cinert`, 10 numbers each), com-based velocities (`cvel`, 6 each),
//! the actuator forces on the 17 hinges (`qfrc_actuator[6..]`) and the bodies' external
//! forces (`cfrc_ext`, 6 each).

use std::sync::OnceLock;

use ale_mujoco::draw::{Camera, Height};
use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use crate::cost::pairwise_sum;
use crate::env::{Draw, EnvSpec, Noise, Physics, Rules, Scored};
use crate::view::{self, View};

pub(crate) const ID: &str = "Humanoid-v5";

const FORWARD_REWARD_WEIGHT: f64 = 1.25;
const CTRL_COST_WEIGHT: f64 = 0.1;
const CONTACT_COST_WEIGHT: f64 = 5e-7;
/// `contact_cost_range`'s upper end (the lower one is −∞).
const CONTACT_COST_MAX: f64 = 10.0;
const HEALTHY_REWARD: f64 = 5.0;
const HEALTHY_Z_RANGE: (f64, f64) = (1.0, 2.0);

/// `reset_model`'s noise, shared with `HumanoidStandup-v5`.
pub(crate) const NOISE: Noise = Noise {
    qpos: Draw::Uniform(1e-2),
    qvel: Draw::Uniform(1e-2),
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/humanoid.xml"),
    frame_skip: 5,
    max_episode_steps: 1000,
    observation_len: 348,
    action_len: 17,
    action_bound: 0.4,
    rules: |model| Box::new(Humanoid::new(model)),
    view: VIEW,
    model: OnceLock::new(),
};

/// How Humanoid and HumanoidStandup are seen: from the side, following the torso, the floor
/// and a standing humanoid's head in view.
pub(crate) const VIEW: View = View {
    camera: Camera::side(1, 2.0, Height::Fixed(-0.3, 2.1)),
    pose: |observation, qpos| view::positions_after(2, observation, qpos),
    labels,
};

/// `_get_obs`'s labels: positions but x and y, velocities, then each body's `cinert`, `cvel`,
/// the hinges' actuator forces and each body's `cfrc_ext`.
fn labels(model: &Model) -> Vec<String> {
    let mut labels = view::positions_then_velocities(model, 2);
    labels.extend(view::body_inertia_labels(model, 1));
    labels.extend(view::body_velocity_labels(model, 1));
    labels.extend(view::actuator_force_labels(model, 6));
    labels.extend(view::body_force_labels(model, 1));
    labels
}

struct Humanoid {
    /// `model.body_mass`, and its sum as NumPy takes it (`body_mass.sum()`).
    body_mass: Vec<f64>,
    total_mass: f64,
}

/// `_get_obs`'s length on `model`, the free joint's x and y left out.
pub(crate) fn observation_len(model: &Model) -> usize {
    let bodies = model.nbody() - 1;
    (model.nq() - 2) + model.nv() + bodies * 10 + bodies * 6 + (model.nv() - 6) + bodies * 6
}

/// `_get_obs` of Humanoid and HumanoidStandup: positions but x and y, velocities, then
/// `cinert[1:]`, `cvel[1:]`, `qfrc_actuator[6:]` and `cfrc_ext[1:]`, each flattened by rows.
pub(crate) fn observe(data: &Data, out: &mut [f64]) {
    let parts: [&[f64]; 6] = [
        &data.qpos()[2..],
        data.qvel(),
        data.cinert()[1..].as_flattened(),
        data.cvel()[1..].as_flattened(),
        &data.qfrc_actuator()[6..],
        data.cfrc_ext()[1..].as_flattened(),
    ];
    let mut rest = out;
    for part in parts {
        let (head, tail) = rest.split_at_mut(part.len());
        head.copy_from_slice(part);
        rest = tail;
    }
    debug_assert!(rest.is_empty(), "the observation's length is the parts'");
}

/// `weight * np.sum(np.square(data.ctrl))`: float64 (the controls are the float32 action
/// widened, unclipped), summed pairwise.
pub(crate) fn ctrl_cost(weight: f64, data: &Data) -> f64 {
    weight * pairwise_sum(data.ctrl(), |c: f64| c * c)
}

/// `np.clip(weight * np.sum(np.square(data.cfrc_ext)), -inf, max)`: float64, summed pairwise
/// over the (nbody, 6) array in row order; NaN stays NaN.
pub(crate) fn contact_cost(weight: f64, max: f64, data: &Data) -> f64 {
    let cost = weight * pairwise_sum(data.cfrc_ext().as_flattened(), |f: f64| f * f);
    cost.clamp(f64::NEG_INFINITY, max)
}

impl Humanoid {
    fn new(model: &Model) -> Humanoid {
        let body_mass = model.body_mass().to_vec();
        let total_mass = pairwise_sum(&body_mass, |m: f64| m);
        Humanoid {
            body_mass,
            total_mass,
        }
    }

    /// `mass_center`: `np.einsum("b,bj->j", body_mass, xipos) / body_mass.sum()`, x and y.
    /// NumPy's einsum adds the products body by body, in order, from 0, each product and sum
    /// rounded on its own.
    fn mass_center(&self, data: &Data) -> [f64; 2] {
        let mut num = [0.0f64; 2];
        for (m, x) in self.body_mass.iter().zip(data.xipos()) {
            for (n, x) in num.iter_mut().zip(x) {
                *n += m * x;
            }
        }
        num.map(|n| n / self.total_mass)
    }
}

impl Rules for Humanoid {
    fn observation_len(&self, model: &Model) -> usize {
        observation_len(model)
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        NOISE.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        observe(data, out);
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        let before = self.mass_center(physics.data());
        physics.do_simulation(action);
        let data = physics.data();
        let after = self.mass_center(data);
        let x_velocity = (after[0] - before[0]) / physics.dt();
        let z = data.qpos()[2];
        let healthy = HEALTHY_Z_RANGE.0 < z && z < HEALTHY_Z_RANGE.1;
        let forward_reward = FORWARD_REWARD_WEIGHT * x_velocity;
        let healthy_reward = if healthy { HEALTHY_REWARD } else { 0.0 };
        let costs = ctrl_cost(CTRL_COST_WEIGHT, data)
            + contact_cost(CONTACT_COST_WEIGHT, CONTACT_COST_MAX, data);
        Scored {
            reward: (forward_reward + healthy_reward) - costs,
            terminated: !healthy,
        }
    }
}
