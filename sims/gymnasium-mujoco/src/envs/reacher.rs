//! `Reacher-v5`: a two-link arm on a table reaching for a target (4 positions: the two joint
//! angles and the target's x, y, which stays put; two motors in [-1, 1]). Reward:
//! −|fingertip − target| − |a|². It never terminates; episodes end at the 50-step limit.
//! Each reset draws the arm's angles near zero and a target within 0.2 of the centre.
//!
//! Observation (10): cos and sin of both joint angles, the target's x, y, the two joint
//! velocities, and fingertip − target in x, y.

use std::sync::OnceLock;

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use crate::cost::{norm, pairwise_sum};
use ale_mujoco::draw::{Camera, Height};

use crate::env::{Draw, EnvSpec, Physics, Rules, Scored};
use crate::view::View;

pub(crate) const ID: &str = "Reacher-v5";

const REWARD_DIST_WEIGHT: f64 = 1.0;
const REWARD_CONTROL_WEIGHT: f64 = 1.0;

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/reacher.xml"),
    frame_skip: 2,
    max_episode_steps: 50,
    observation_len: 10,
    action_len: 2,
    action_bound: 1.0,
    rules: |model| {
        let body = |name| {
            model
                .body_id(name)
                .unwrap_or_else(|| panic!("Gymnasium's reacher.xml has a body named {name}"))
        };
        Box::new(Reacher {
            fingertip: body("fingertip"),
            target: body("target"),
        })
    },
    view: View {
        camera: Camera::top(0, 0.25, Height::Fixed(-0.25, 0.25)),
        // cos and sin of the two joint angles, then the target's two positions.
        pose: |o, qpos| {
            qpos[0] = o[2].atan2(o[0]);
            qpos[1] = o[3].atan2(o[1]);
            qpos[2] = o[4];
            qpos[3] = o[5];
        },
        labels: |model| {
            let (qpos, qvel) =
                ale_mujoco::coordinate_labels(model.nq(), model.nv(), &model.joints());
            let mut labels = vec![
                format!("cos {}", qpos[0]),
                format!("cos {}", qpos[1]),
                format!("sin {}", qpos[0]),
                format!("sin {}", qpos[1]),
                qpos[2].clone(),
                qpos[3].clone(),
                format!("vel {}", qvel[0]),
                format!("vel {}", qvel[1]),
            ];
            labels.extend(["fingertip-target x", "fingertip-target y"].map(String::from));
            labels
        },
    },
    model: OnceLock::new(),
};

struct Reacher {
    fingertip: usize,
    target: usize,
}

impl Reacher {
    /// `get_body_com("fingertip") - get_body_com("target")`.
    fn offset(&self, data: &Data) -> [f64; 3] {
        let (tip, target) = (data.body_xpos(self.fingertip), data.body_xpos(self.target));
        [tip[0] - target[0], tip[1] - target[1], tip[2] - target[2]]
    }
}

impl Rules for Reacher {
    fn observation_len(&self, _model: &Model) -> usize {
        10
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        Draw::Uniform(0.1).add_to(rng, qpos);
        let goal = loop {
            let goal = [rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)];
            if norm(&goal) < 0.2 {
                break goal;
            }
        };
        let n = qpos.len();
        qpos[n - 2..].copy_from_slice(&goal);
        Draw::Uniform(0.005).add_to(rng, qvel);
        let n = qvel.len();
        qvel[n - 2..].fill(0.0);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let (qpos, qvel) = (data.qpos(), data.qvel());
        let offset = self.offset(data);
        let values = [
            qpos[0].cos(),
            qpos[1].cos(),
            qpos[0].sin(),
            qpos[1].sin(),
            qpos[2],
            qpos[3],
            qvel[0],
            qvel[1],
            offset[0],
            offset[1],
        ];
        out.copy_from_slice(&values);
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        physics.do_simulation(action);
        let reward_dist = -norm(&self.offset(physics.data())) * REWARD_DIST_WEIGHT;
        // `-np.square(action).sum() * weight`: float32 throughout.
        let reward_ctrl = -pairwise_sum(action, |a: f32| a * a) * REWARD_CONTROL_WEIGHT as f32;
        Scored {
            reward: reward_dist + f64::from(reward_ctrl),
            terminated: false,
        }
    }
}
