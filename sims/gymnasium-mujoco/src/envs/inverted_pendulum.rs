//! `InvertedPendulum-v5`: a pole hinged on a cart that slides along a rail; the force on the
//! cart (±3, gear 100) keeps the pole up. Reward 1 per step while the pole is within 0.2 rad
//! of upright; past that, or on any non-finite value, the episode terminates with reward 0.
//!
//! Observation (4): cart position, pole angle, cart velocity, pole angular velocity.

use std::sync::OnceLock;

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Noise, Physics, Rules, Scored};
use crate::view::{self, View};

pub(crate) const ID: &str = "InvertedPendulum-v5";

/// `reset_model`'s noise.
const NOISE: Noise = Noise {
    qpos: Draw::Uniform(0.01),
    qvel: Draw::Uniform(0.01),
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/inverted_pendulum.xml"),
    frame_skip: 2,
    max_episode_steps: 1000,
    observation_len: 4,
    action_len: 1,
    action_bound: 3.0,
    rules: |_| Box::new(InvertedPendulum),
    view: View {
        camera: Camera::side(0, 1.2, Height::Fixed(-0.4, 0.9)),
        pose: |observation, qpos| view::positions_after(0, observation, qpos),
        labels: |model| view::positions_then_velocities(model, 0),
    },
    model: OnceLock::new(),
};

struct InvertedPendulum;

impl Rules for InvertedPendulum {
    fn observation_len(&self, model: &Model) -> usize {
        model.nq() + model.nv()
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        NOISE.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let (qpos, qvel) = (data.qpos(), data.qvel());
        out[..qpos.len()].copy_from_slice(qpos);
        out[qpos.len()..].copy_from_slice(qvel);
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        physics.do_simulation(action);
        let data = physics.data();
        let finite = data.qpos().iter().chain(data.qvel()).all(|v| v.is_finite());
        let terminated = !finite || data.qpos()[1].abs() > 0.2;
        Scored {
            reward: if terminated { 0.0 } else { 1.0 },
            terminated,
        }
    }
}
