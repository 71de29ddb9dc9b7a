//! `Walker2d-v5`: a planar two-legged walker (9 positions: root x, z, pitch and three joints
//! per leg; six motors in [-1, 1]), on Gymnasium's v5 model (both feet with friction 1.9).
//! Reward: forward velocity + 1 while healthy − 0.001·|a|². It terminates once unhealthy:
//! healthy is z within (0.8, 2) and the pitch within (−1, 1).
//!
//! Observation (17): `qpos[1..]` (z, pitch, the six joint angles), then `qvel` clipped to ±10.

use std::sync::OnceLock;

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use crate::cost::control_cost;
use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Noise, Physics, Rules, Scored, clip};
use crate::view::{self, View};

pub(crate) const ID: &str = "Walker2d-v5";

const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 1e-3;
const HEALTHY_REWARD: f64 = 1.0;
const HEALTHY_Z_RANGE: (f64, f64) = (0.8, 2.0);
const HEALTHY_ANGLE_RANGE: (f64, f64) = (-1.0, 1.0);
const VELOCITY_CLIP: f64 = 10.0;

/// `reset_model`'s noise.
const NOISE: Noise = Noise {
    qpos: Draw::Uniform(5e-3),
    qvel: Draw::Uniform(5e-3),
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/walker2d_v5.xml"),
    frame_skip: 4,
    max_episode_steps: 1000,
    observation_len: 17,
    action_len: 6,
    action_bound: 1.0,
    rules: |_| Box::new(Walker2d),
    view: View {
        camera: Camera::side(1, 2.0, Height::Fixed(-0.3, 1.9)),
        pose: |observation, qpos| view::positions_after(1, observation, qpos),
        labels: |model| view::positions_then_velocities(model, 1),
    },
    model: OnceLock::new(),
};

struct Walker2d;

/// Strictly inside `(low, high)`, as Gymnasium's `low < x < high`; NaN is outside.
fn within(x: f64, (low, high): (f64, f64)) -> bool {
    low < x && x < high
}

impl Rules for Walker2d {
    fn observation_len(&self, model: &Model) -> usize {
        model.nq() - 1 + model.nv()
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        NOISE.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let position = &data.qpos()[1..];
        out[..position.len()].copy_from_slice(position);
        for (o, v) in out[position.len()..].iter_mut().zip(data.qvel()) {
            *o = clip(*v, VELOCITY_CLIP);
        }
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        let x_before = physics.data().qpos()[0];
        physics.do_simulation(action);
        let data = physics.data();
        let x_velocity = (data.qpos()[0] - x_before) / physics.dt();
        let healthy =
            within(data.qpos()[1], HEALTHY_Z_RANGE) && within(data.qpos()[2], HEALTHY_ANGLE_RANGE);
        let forward_reward = FORWARD_REWARD_WEIGHT * x_velocity;
        let healthy_reward = if healthy { HEALTHY_REWARD } else { 0.0 };
        let ctrl_cost = control_cost(CTRL_COST_WEIGHT, action);
        Scored {
            reward: (forward_reward + healthy_reward) - f64::from(ctrl_cost),
            terminated: !healthy,
        }
    }
}
