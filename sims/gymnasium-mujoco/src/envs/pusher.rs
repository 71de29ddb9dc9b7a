//! `Pusher-v5`: a seven-joint arm on a table pushing a cylinder to a goal, on Gymnasium's
//! `pusher_v5.xml` (11 positions: the seven arm joints, then the cylinder's and the goal's
//! slides, y then x; seven motors in [-2, 2]; no gravity). Reward: −|object − goal| −
//! 0.5·|object − fingertip| − 0.1·|a|². It never terminates; episodes end at the 100-step
//! limit. Each reset leaves the arm at its default pose, puts the goal at the origin of its
//! slides and draws the cylinder more than 0.17 from it.
//!
//! Observation (23): the arm's seven joint angles and velocities, then the positions of the
//! fingertip (`tips_arm`), the cylinder (`object`) and the goal, x, y, z each.

use std::sync::OnceLock;

use ale_mujoco::draw::{Camera, Height};
use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use crate::cost::{norm, pairwise_sum};
use crate::env::{Draw, EnvSpec, Physics, Rules, Scored};
use crate::view::View;

pub(crate) const ID: &str = "Pusher-v5";

const REWARD_NEAR_WEIGHT: f64 = 0.5;
const REWARD_DIST_WEIGHT: f64 = 1.0;
const REWARD_CONTROL_WEIGHT: f64 = 0.1;
/// The arm's joints, first in `qpos` and `qvel`.
const ARM_JOINTS: usize = 7;

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/pusher_v5.xml"),
    frame_skip: 5,
    max_episode_steps: 100,
    observation_len: 23,
    action_len: 7,
    action_bound: 2.0,
    rules: |model| {
        let body = |name| {
            model
                .body_id(name)
                .unwrap_or_else(|| panic!("Gymnasium's pusher_v5.xml has a body named {name}"))
        };
        Box::new(Pusher {
            fingertip: body("tips_arm"),
            object: body("object"),
            goal: body("goal"),
        })
    },
    view: View {
        // From above, the table, the arm's shoulder and its reach in view.
        camera: Camera::top(0, 1.0, Height::Fixed(-1.1, 0.5)),
        pose,
        labels,
    },
    model: OnceLock::new(),
};

/// Where `pusher_v5.xml` puts the cylinder's and the goal's bodies (x, y), which their slides
/// move from.
const CYLINDER_AT_REST: [f64; 2] = [0.45, -0.05];
const GOAL_AT_REST: [f64; 2] = [0.45, -0.05];

/// The arm's angles, then each slide (y before x, as in `qpos`) from the cylinder's and the
/// goal's positions.
fn pose(o: &[f64], qpos: &mut [f64]) {
    qpos[..ARM_JOINTS].copy_from_slice(&o[..ARM_JOINTS]);
    let (cylinder, goal) = (&o[17..19], &o[20..22]);
    qpos[7] = cylinder[1] - CYLINDER_AT_REST[1];
    qpos[8] = cylinder[0] - CYLINDER_AT_REST[0];
    qpos[9] = goal[1] - GOAL_AT_REST[1];
    qpos[10] = goal[0] - GOAL_AT_REST[0];
}

fn labels(model: &Model) -> Vec<String> {
    let (qpos, qvel) = ale_mujoco::coordinate_labels(model.nq(), model.nv(), &model.joints());
    let mut labels: Vec<String> = qpos[..ARM_JOINTS].to_vec();
    labels.extend(qvel[..ARM_JOINTS].iter().map(|name| format!("vel {name}")));
    for body in ["tips_arm", "object", "goal"] {
        labels.extend(["x", "y", "z"].map(|k| format!("{body}.{k}")));
    }
    labels
}

struct Pusher {
    fingertip: usize,
    object: usize,
    goal: usize,
}

/// `a - b` of two body positions.
fn difference(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}

impl Rules for Pusher {
    fn observation_len(&self, _model: &Model) -> usize {
        ARM_JOINTS * 2 + 9
    }

    /// The default pose (no noise on the arm), a cylinder drawn U(−0.3, 0) × U(−0.2, 0.2)
    /// until it is more than 0.17 from the goal at (0, 0), then U(±0.005) on every velocity
    /// but the cylinder's and the goal's, which are 0.
    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        let cylinder = loop {
            let cylinder = [rng.uniform(-0.3, 0.0), rng.uniform(-0.2, 0.2)];
            // `cylinder_pos - goal_pos` with the goal at (0, 0) is the cylinder itself.
            if norm(&cylinder) > 0.17 {
                break cylinder;
            }
        };
        let n = qpos.len();
        qpos[n - 4..n - 2].copy_from_slice(&cylinder);
        qpos[n - 2..].fill(0.0);
        Draw::Uniform(0.005).add_to(rng, qvel);
        let n = qvel.len();
        qvel[n - 4..].fill(0.0);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        let (arm, bodies) = out.split_at_mut(ARM_JOINTS * 2);
        arm[..ARM_JOINTS].copy_from_slice(&data.qpos()[..ARM_JOINTS]);
        arm[ARM_JOINTS..].copy_from_slice(&data.qvel()[..ARM_JOINTS]);
        for (o, body) in bodies
            .chunks_exact_mut(3)
            .zip([self.fingertip, self.object, self.goal])
        {
            o.copy_from_slice(&data.body_xpos(body));
        }
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        physics.do_simulation(action);
        let data = physics.data();
        let object = data.body_xpos(self.object);
        let vec_1 = difference(object, data.body_xpos(self.fingertip));
        let vec_2 = difference(object, data.body_xpos(self.goal));
        let reward_near = -norm(&vec_1) * REWARD_NEAR_WEIGHT;
        let reward_dist = -norm(&vec_2) * REWARD_DIST_WEIGHT;
        // `-np.square(action).sum() * weight`: float32 throughout.
        let reward_ctrl = -pairwise_sum(action, |a: f32| a * a) * REWARD_CONTROL_WEIGHT as f32;
        Scored {
            reward: (reward_dist + f64::from(reward_ctrl)) + reward_near,
            terminated: false,
        }
    }
}
