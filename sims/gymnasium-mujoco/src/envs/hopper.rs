//! `Hopper-v5`: a planar one-legged hopper (6 positions: root x, z, pitch, thigh, leg, foot;
//! three motors in [-1, 1]). Reward: forward velocity + 1 while healthy − 0.001·|a|². It
//! terminates once unhealthy: healthy is every element of the state past x and z
//! (`state_vector()[2:]`) within (−100, 100), z above 0.7 and the pitch within (−0.2, 0.2).
//!
//! Observation (11): `qpos[1..]` (z, pitch, the three joint angles), then `qvel` clipped to
//! ±10.

use std::sync::OnceLock;

use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Noise};
use crate::envs::locomotion::Walker;
use crate::view::{self, View};

pub(crate) const ID: &str = "Hopper-v5";

const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 1e-3;
const HEALTHY_REWARD: f64 = 1.0;
const HEALTHY_STATE_RANGE: (f64, f64) = (-100.0, 100.0);
const HEALTHY_Z_RANGE: (f64, f64) = (0.7, f64::INFINITY);
const HEALTHY_ANGLE_RANGE: (f64, f64) = (-0.2, 0.2);
const VELOCITY_CLIP: f64 = 10.0;

/// `reset_model`'s noise.
const NOISE: Noise = Noise {
    qpos: Draw::Uniform(5e-3),
    qvel: Draw::Uniform(5e-3),
};

const RULES: Walker = Walker {
    forward_reward_weight: FORWARD_REWARD_WEIGHT,
    ctrl_cost_weight: CTRL_COST_WEIGHT,
    healthy_reward: HEALTHY_REWARD,
    healthy_state_range: Some(HEALTHY_STATE_RANGE),
    healthy_z_range: HEALTHY_Z_RANGE,
    healthy_angle_range: HEALTHY_ANGLE_RANGE,
    velocity_clip: VELOCITY_CLIP,
    noise: NOISE,
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/hopper.xml"),
    frame_skip: 4,
    max_episode_steps: 1000,
    observation_len: 11,
    action_len: 3,
    action_bound: 1.0,
    rules: |_| Box::new(RULES),
    view: View {
        camera: Camera::side(1, 2.0, Height::Fixed(-0.3, 1.9)),
        pose: |observation, qpos| view::positions_after(1, observation, qpos),
        labels: |model| view::positions_then_velocities(model, 1),
    },
    model: OnceLock::new(),
};
