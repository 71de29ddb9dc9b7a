//! `HalfCheetah-v5`: a planar two-legged runner (9 positions: root x, z, pitch and six leg
//! joints; six motors in [-1, 1]). Reward: forward velocity − 0.1·|a|². It never terminates;
//! episodes end at the 1000-step limit.
//!
//! Observation (17): `qpos[1..]` (root z and pitch, the six joint angles), then all nine of
//! `qvel`. The x position is left out (`exclude_current_positions_from_observation`).

use std::sync::OnceLock;

use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Noise};
use crate::envs::locomotion::Runner;
use crate::view::{self, View};

pub(crate) const ID: &str = "HalfCheetah-v5";

const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 0.1;

/// `reset_model`'s noise.
const NOISE: Noise = Noise {
    qpos: Draw::Uniform(0.1),
    qvel: Draw::Normal(0.1),
};

const RULES: Runner = Runner {
    excluded_positions: 1,
    forward_reward_weight: FORWARD_REWARD_WEIGHT,
    ctrl_cost_weight: CTRL_COST_WEIGHT,
    noise: NOISE,
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/half_cheetah.xml"),
    frame_skip: 5,
    max_episode_steps: 1000,
    observation_len: 17,
    action_len: 6,
    action_bound: 1.0,
    rules: |_| Box::new(RULES),
    view: View {
        camera: Camera::side(1, 2.5, Height::Fixed(-0.4, 1.6)),
        pose: |observation, qpos| view::positions_after(1, observation, qpos),
        labels: |model| view::positions_then_velocities(model, 1),
    },
    model: OnceLock::new(),
};
