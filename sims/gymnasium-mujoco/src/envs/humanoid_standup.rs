//! `HumanoidStandup-v5`: Humanoid's biped lying on its back, to stand up (the same 24
//! positions, 17 motors in [-0.4, 0.4]). Reward: the torso's height z / the model's timestep
//! (0.003 s, not the env step's `dt`) − 0.1·|ctrl|² − min(5e-7·|cfrc_ext|², 10) + 1. It never
//! terminates; episodes end at the 1000-step limit.
//!
//! Observation (348): as `Humanoid-v5`'s ([`humanoid::observe`]).

use std::sync::OnceLock;

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;

use crate::env::{EnvSpec, Physics, Rules, Scored};
use crate::envs::humanoid;

pub(crate) const ID: &str = "HumanoidStandup-v5";

const CTRL_COST_WEIGHT: f64 = 0.1;
const IMPACT_COST_WEIGHT: f64 = 0.5e-6;
/// `impact_cost_range`'s upper end (the lower one is −∞).
const IMPACT_COST_MAX: f64 = 10.0;

pub(crate) static SPEC: EnvSpec = EnvSpec {
    id: ID,
    xml: include_str!("../../assets/humanoidstandup.xml"),
    frame_skip: 5,
    max_episode_steps: 1000,
    observation_len: 348,
    action_len: 17,
    action_bound: 0.4,
    rules: |model| {
        Box::new(HumanoidStandup {
            timestep: model.timestep(),
        })
    },
    view: humanoid::VIEW,
    model: OnceLock::new(),
};

struct HumanoidStandup {
    /// `model.opt.timestep`, which the height reward divides by.
    timestep: f64,
}

impl Rules for HumanoidStandup {
    fn observation_len(&self, model: &Model) -> usize {
        humanoid::observation_len(model)
    }

    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        humanoid::NOISE.add_to(rng, qpos, qvel);
    }

    fn observe(&self, data: &Data, out: &mut [f64]) {
        humanoid::observe(data, out);
    }

    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored {
        physics.do_simulation(action);
        let data = physics.data();
        // `(pos_after - 0) / timestep`; subtracting 0 changes no float64, -0.0 included.
        let uph_cost = data.qpos()[2] / self.timestep;
        let quad_ctrl_cost = humanoid::ctrl_cost(CTRL_COST_WEIGHT, data);
        let quad_impact_cost = humanoid::contact_cost(IMPACT_COST_WEIGHT, IMPACT_COST_MAX, data);
        Scored {
            reward: uph_cost - quad_ctrl_cost - quad_impact_cost + 1.0,
            terminated: false,
        }
    }
}
