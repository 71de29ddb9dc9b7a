//! `Swimmer-v5`: a three-link swimmer in a viscous fluid (5 positions: root x, y, heading and
//! two joints; two motors in [-1, 1]). Reward: x velocity − 0.0001·|a|². It never terminates;
//! episodes end at the 1000-step limit.
//!
//! Observation (8): `qpos[2..]` (heading, the two joint angles), then all five of `qvel`. The
//! x and y positions are left out.

use std::sync::OnceLock;

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use crate::cost::control_cost;
use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Noise, Physics, Rules, Scored};
use crate::view::{self, View};

pub(crate) const ID: &str = "Swimmer-v5";

const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 1e-4;

/// `reset_model`'s noise.
const NOISE: Noise = Noise {
    qpos: Draw::Uniform(0.1),
    qvel: Draw::Uniform(0.1),
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/swimmer.xml"),
    frame_skip: 4,
    max_episode_steps: 1000,
    observation_len: 8,
    action_len: 2,
    action_bound: 1.0,
    rules: |_| Box::new(Swimmer),
    view: View {
        camera: Camera::top(1, 2.5, Height::Tracked(1.5)),
        pose: |observation, qpos| view::positions_after(2, observation, qpos),
        labels: |model| view::positions_then_velocities(model, 2),
    },
    model: OnceLock::new(),
};

struct Swimmer;

impl Rules for Swimmer {
    fn observation_len(&self, model: &Model) -> usize {
        model.nq() - 2 + model.nv()
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        NOISE.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let position = &data.qpos()[2..];
        out[..position.len()].copy_from_slice(position);
        out[position.len()..].copy_from_slice(data.qvel());
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        let x_before = physics.data().qpos()[0];
        physics.do_simulation(action);
        let x_velocity = (physics.data().qpos()[0] - x_before) / physics.dt();
        let forward_reward = FORWARD_REWARD_WEIGHT * x_velocity;
        let ctrl_cost = control_cost(CTRL_COST_WEIGHT, action);
        Scored {
            reward: forward_reward - f64::from(ctrl_cost),
            terminated: false,
        }
    }
}
