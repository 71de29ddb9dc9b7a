//! `Swimmer-v5`: a three-link swimmer in a viscous fluid (5 positions: root x, y, heading and
//! two joints; two motors in [-1, 1]). Reward: x velocity − 0.0001·|a|². It never terminates;
//! episodes end at the 1000-step limit.
//!
//! Observation (8): `qpos[2..]` (heading, the two joint angles), then all five of `qvel`. The
//! x and y positions are left out.

use std::sync::OnceLock;

use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Noise};
use crate::envs::locomotion::Runner;
use crate::view::{self, View};

pub(crate) const ID: &str = "Swimmer-v5";

const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 1e-4;

/// `reset_model`'s noise.
const NOISE: Noise = Noise {
    qpos: Draw::Uniform(0.1),
    qvel: Draw::Uniform(0.1),
};

const RULES: Runner = Runner {
    excluded_positions: 2,
    forward_reward_weight: FORWARD_REWARD_WEIGHT,
    ctrl_cost_weight: CTRL_COST_WEIGHT,
    noise: NOISE,
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/swimmer.xml"),
    frame_skip: 4,
    max_episode_steps: 1000,
    observation_len: 8,
    action_len: 2,
    action_bound: 1.0,
    rules: |_| Box::new(RULES),
    view: View {
        camera: Camera::top(1, 2.5, Height::Tracked(1.5)),
        pose: |observation, qpos| view::positions_after(2, observation, qpos),
        labels: |model| view::positions_then_velocities(model, 2),
    },
    model: OnceLock::new(),
};
