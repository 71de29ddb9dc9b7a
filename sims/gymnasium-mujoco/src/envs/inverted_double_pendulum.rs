//! `InvertedDoublePendulum-v5`: two poles in a chain on a cart (3 positions: cart x and the
//! two hinge angles; one motor in [-1, 1], gear 500). Reward: 10 while the tip (site 0) is
//! above 1 m, − 0.01·x_tip² − (y_tip − 2)² − 0.001·v₁² − 0.005·v₂² with v the hinge
//! velocities. It terminates once the tip's height is at most 1 m.
//!
//! Observation (9): cart x, sin and cos of both hinge angles, `qvel` clipped to ±10, and the
//! cart's constraint force (`qfrc_constraint[0]`) clipped to ±10.

use std::sync::OnceLock;

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Noise, Physics, Rules, Scored, clip};
use crate::view::View;

pub(crate) const ID: &str = "InvertedDoublePendulum-v5";

const HEALTHY_REWARD: f64 = 10.0;
const CLIP: f64 = 10.0;

/// `reset_model`'s noise.
const NOISE: Noise = Noise {
    qpos: Draw::Uniform(0.1),
    qvel: Draw::Normal(0.1),
};

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/inverted_double_pendulum.xml"),
    frame_skip: 5,
    max_episode_steps: 1000,
    observation_len: 9,
    action_len: 1,
    action_bound: 1.0,
    rules: |_| Box::new(InvertedDoublePendulum),
    view: View {
        camera: Camera::side(0, 1.2, Height::Fixed(-0.3, 1.5)),
        // Cart x, the sines of the two angles, then their cosines.
        pose: |o, qpos| {
            qpos[0] = o[0];
            qpos[1] = o[1].atan2(o[3]);
            qpos[2] = o[2].atan2(o[4]);
        },
        labels: |model| {
            let (qpos, qvel) =
                ale_mujoco::coordinate_labels(model.nq(), model.nv(), &model.joints());
            let mut labels = vec![qpos[0].clone()];
            labels.extend(qpos[1..].iter().map(|n| format!("sin {n}")));
            labels.extend(qpos[1..].iter().map(|n| format!("cos {n}")));
            labels.extend(qvel.iter().map(|n| format!("vel {n}")));
            labels.push(format!("constraint force {}", qpos[0]));
            labels
        },
    },
    model: OnceLock::new(),
};

struct InvertedDoublePendulum;

impl Rules for InvertedDoublePendulum {
    fn observation_len(&self, model: &Model) -> usize {
        1 + 2 * (model.nq() - 1) + model.nv() + 1
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        NOISE.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let (qpos, qvel) = (data.qpos(), data.qvel());
        let angles = &qpos[1..];
        let mut out = out.iter_mut();
        let mut put = |v: f64| *out.next().expect("observation length") = v;
        put(qpos[0]);
        angles.iter().for_each(|a| put(a.sin()));
        angles.iter().for_each(|a| put(a.cos()));
        qvel.iter().for_each(|v| put(clip(*v, CLIP)));
        put(clip(data.qfrc_constraint()[0], CLIP));
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        physics.do_simulation(action);
        let data = physics.data();
        let [x, _, y] = data.site_xpos(0);
        let terminated = y <= 1.0;
        let (v1, v2) = (data.qvel()[1], data.qvel()[2]);
        let dist_penalty = 0.01 * (x * x) + (y - 2.0) * (y - 2.0);
        let vel_penalty = 1e-3 * (v1 * v1) + 5e-3 * (v2 * v2);
        let alive_bonus = if terminated { 0.0 } else { HEALTHY_REWARD };
        Scored {
            reward: alive_bonus - dist_penalty - vel_penalty,
            terminated,
        }
    }
}
