//! The rules two pairs of Gymnasium's planar envs share, each env giving its own constants:
//! [`Runner`] (HalfCheetah, Swimmer), which never falls, and [`Walker`] (Hopper, Walker2d),
//! which terminates once unhealthy. Both are scored on the root's x velocity, `qpos[0]`'s
//! change over `dt`, less a float32 control cost.

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use crate::cost::control_cost;
use crate::env::{Noise, Physics, Rules, Scored, clip};

/// A body that moves along x and never falls. Observation: `qpos[excluded_positions..]`,
/// then all of `qvel`. Reward: `forward_reward_weight` × x velocity − the control cost.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Runner {
    /// How many leading positions the observation leaves out
    /// (`exclude_current_positions_from_observation`).
    pub excluded_positions: usize,
    pub forward_reward_weight: f64,
    pub ctrl_cost_weight: f64,
    /// `reset_model`'s noise.
    pub noise: Noise,
}

/// Strictly inside `(low, high)`, as Gymnasium's `low < x < high`; NaN is outside.
fn within(x: f64, (low, high): (f64, f64)) -> bool {
    low < x && x < high
}

/// How far x moved over the step: runs it, and answers `(qpos[0] after − before) / dt`.
fn x_velocity_over_step(physics: &mut Physics, action: &[f32]) -> f64 {
    let x_before = physics.data().qpos()[0];
    physics.do_simulation(action);
    (physics.data().qpos()[0] - x_before) / physics.dt()
}

impl Rules for Runner {
    fn observation_len(&self, model: &Model) -> usize {
        model.nq() - self.excluded_positions + model.nv()
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        self.noise.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let position = &data.qpos()[self.excluded_positions..];
        out[..position.len()].copy_from_slice(position);
        out[position.len()..].copy_from_slice(data.qvel());
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        let x_velocity = x_velocity_over_step(physics, action);
        let forward_reward = self.forward_reward_weight * x_velocity;
        let ctrl_cost = control_cost(self.ctrl_cost_weight, action);
        Scored {
            reward: forward_reward - f64::from(ctrl_cost),
            terminated: false,
        }
    }
}

/// A planar body on legs, upright while healthy (root x, z, pitch first in `qpos`).
/// Observation: `qpos[1..]`, then `qvel` clipped to ±`velocity_clip`. Reward:
/// `forward_reward_weight` × x velocity + `healthy_reward` while healthy − the control cost.
/// Healthy is z and pitch strictly within their ranges and, where there is one, every element
/// of the state past x and z (`state_vector()[2:]`) strictly within `healthy_state_range`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Walker {
    pub forward_reward_weight: f64,
    pub ctrl_cost_weight: f64,
    pub healthy_reward: f64,
    pub healthy_state_range: Option<(f64, f64)>,
    pub healthy_z_range: (f64, f64),
    pub healthy_angle_range: (f64, f64),
    pub velocity_clip: f64,
    /// `reset_model`'s noise.
    pub noise: Noise,
}

impl Walker {
    fn is_healthy(&self, data: &Data) -> bool {
        let qpos = data.qpos();
        let (z, angle) = (qpos[1], qpos[2]);
        let state_is_healthy = self.healthy_state_range.is_none_or(|range| {
            qpos[2..]
                .iter()
                .chain(data.qvel())
                .all(|&x| within(x, range))
        });
        state_is_healthy
            && within(z, self.healthy_z_range)
            && within(angle, self.healthy_angle_range)
    }
}

impl Rules for Walker {
    fn observation_len(&self, model: &Model) -> usize {
        model.nq() - 1 + model.nv()
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        self.noise.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let position = &data.qpos()[1..];
        out[..position.len()].copy_from_slice(position);
        for (o, v) in out[position.len()..].iter_mut().zip(data.qvel()) {
            *o = clip(*v, self.velocity_clip);
        }
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        let x_velocity = x_velocity_over_step(physics, action);
        let healthy = self.is_healthy(physics.data());
        let forward_reward = self.forward_reward_weight * x_velocity;
        let healthy_reward = if healthy { self.healthy_reward } else { 0.0 };
        let ctrl_cost = control_cost(self.ctrl_cost_weight, action);
        Scored {
            reward: (forward_reward + healthy_reward) - f64::from(ctrl_cost),
            terminated: !healthy,
        }
    }
}
