//! `Ant-v5`: a four-legged walker on a free joint (15 positions: torso x, y, z, orientation
//! quaternion, then hip and ankle of each leg; eight motors in [-1, 1]). Reward: the torso's x
//! velocity + 1 while healthy − 0.5·|a|² − 0.0005·|clip(cfrc_ext, −1, 1)|² (the contact
//! forces of every body, the world's included). It terminates once unhealthy: healthy is a
//! finite state with the torso's z within [0.2, 1].
//!
//! Observation (105): `qpos[2..]` (z, orientation, the eight joint angles), all fourteen of
//! `qvel`, then the clipped contact forces of bodies 1 to 13, six numbers each.

use std::sync::OnceLock;

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use crate::cost::{control_cost, pairwise_sum};
use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Noise, Physics, Rules, Scored};
use crate::view::{self, View};

pub(crate) const ID: &str = "Ant-v5";

const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 0.5;
const CONTACT_COST_WEIGHT: f64 = 5e-4;
const HEALTHY_REWARD: f64 = 1.0;
/// `main_body`: the torso.
const MAIN_BODY: usize = 1;
/// Closed, unlike the other envs' ranges: Gymnasium writes `min_z <= z <= max_z`.
const HEALTHY_Z_RANGE: (f64, f64) = (0.2, 1.0);
const CONTACT_FORCE_LIMIT: f64 = 1.0;

/// `reset_model`'s noise.
const NOISE: Noise = Noise {
    qpos: Draw::Uniform(0.1),
    qvel: Draw::Normal(0.1),
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/ant.xml"),
    frame_skip: 5,
    max_episode_steps: 1000,
    observation_len: 105,
    action_len: 8,
    action_bound: 1.0,
    rules: |_| Box::new(Ant),
    view: View {
        camera: Camera::elevated(1, 2.5, Height::Tracked(1.5)),
        pose: |observation, qpos| view::positions_after(2, observation, qpos),
        labels: |model| {
            let mut labels = view::positions_then_velocities(model, 2);
            labels.extend(view::body_force_labels(model, 1));
            labels
        },
    },
    model: OnceLock::new(),
};

struct Ant;

/// `np.clip(cfrc_ext, -1, 1)`, one element.
fn contact_force(x: f64) -> f64 {
    x.clamp(-CONTACT_FORCE_LIMIT, CONTACT_FORCE_LIMIT)
}

fn is_healthy(data: &Data) -> bool {
    let finite = data.qpos().iter().chain(data.qvel()).all(|v| v.is_finite());
    let z = data.qpos()[2];
    finite && HEALTHY_Z_RANGE.0 <= z && z <= HEALTHY_Z_RANGE.1
}

impl Rules for Ant {
    fn observation_len(&self, model: &Model) -> usize {
        model.nq() - 2 + model.nv() + (model.nbody() - 1) * 6
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        NOISE.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let position = &data.qpos()[2..];
        let (out_position, rest) = out.split_at_mut(position.len());
        out_position.copy_from_slice(position);
        let (out_velocity, out_forces) = rest.split_at_mut(data.qvel().len());
        out_velocity.copy_from_slice(data.qvel());
        for (o, f) in out_forces
            .iter_mut()
            .zip(data.cfrc_ext()[1..].as_flattened())
        {
            *o = contact_force(*f);
        }
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        let x_before = physics.data().body_xpos(MAIN_BODY)[0];
        physics.do_simulation(action);
        let data = physics.data();
        let x_velocity = (data.body_xpos(MAIN_BODY)[0] - x_before) / physics.dt();
        let healthy = is_healthy(data);
        let forward_reward = x_velocity * FORWARD_REWARD_WEIGHT;
        let healthy_reward = if healthy { HEALTHY_REWARD } else { 0.0 };
        let ctrl_cost = control_cost(CTRL_COST_WEIGHT, action);
        // `weight * np.sum(np.square(clip(cfrc_ext)))`: float64 throughout, summed pairwise
        // over the (nbody, 6) array in row order.
        let contact_cost = CONTACT_COST_WEIGHT
            * pairwise_sum(data.cfrc_ext().as_flattened(), |f: f64| {
                let c = contact_force(f);
                c * c
            });
        Scored {
            reward: (forward_reward + healthy_reward) - (f64::from(ctrl_cost) + contact_cost),
            terminated: !healthy,
        }
    }
}
