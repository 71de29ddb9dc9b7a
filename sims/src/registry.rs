//! Every bundled simulator, by id.

use crate::draw::Drawing;
use crate::sim::Sim;
use crate::tensor::Tensor;
use crate::{
    acrobot, cartpole, mountain_car, mountain_car_continuous, nav2d, pendulum, reacher2d, swarm2d,
};

/// A simulator the registry can build.
#[derive(Debug, Clone, Copy)]
pub struct SimInfo {
    pub id: &'static str,
    /// Gymnasium's `max_episode_steps` for this env, used when a task does not set its own.
    pub default_max_steps: u32,
    /// Whether episodes match a Gymnasium env step for step (parity fixtures apply).
    pub gymnasium_parity: bool,
    /// Names of the episode counters the sim reports, in order.
    pub counters: &'static [&'static str],
    build: fn(u32) -> Box<dyn Sim>,
    draw: fn(&Tensor) -> Drawing,
}

impl SimInfo {
    /// A fresh sim whose episodes are truncated after `max_steps` steps.
    pub fn build(&self, max_steps: u32) -> Box<dyn Sim> {
        (self.build)(max_steps)
    }

    /// A picture of the scene as far as `observation` shows it; nothing else goes in.
    pub fn draw(&self, observation: &Tensor) -> Drawing {
        (self.draw)(observation)
    }
}

pub const SIMS: &[SimInfo] = &[
    SimInfo {
        id: cartpole::ID,
        default_max_steps: cartpole::MAX_EPISODE_STEPS,
        gymnasium_parity: true,
        counters: &[],
        build: |n| Box::new(cartpole::CartPole::new(n)),
        draw: cartpole::draw,
    },
    SimInfo {
        id: pendulum::ID,
        default_max_steps: pendulum::MAX_EPISODE_STEPS,
        gymnasium_parity: true,
        counters: &[],
        build: |n| Box::new(pendulum::Pendulum::new(n)),
        draw: pendulum::draw,
    },
    SimInfo {
        id: mountain_car::ID,
        default_max_steps: mountain_car::MAX_EPISODE_STEPS,
        gymnasium_parity: true,
        counters: &[],
        build: |n| Box::new(mountain_car::MountainCar::new(n)),
        draw: mountain_car::draw,
    },
    SimInfo {
        id: mountain_car_continuous::ID,
        default_max_steps: mountain_car_continuous::MAX_EPISODE_STEPS,
        gymnasium_parity: true,
        counters: &[],
        build: |n| Box::new(mountain_car_continuous::MountainCarContinuous::new(n)),
        draw: mountain_car_continuous::draw,
    },
    SimInfo {
        id: acrobot::ID,
        default_max_steps: acrobot::MAX_EPISODE_STEPS,
        gymnasium_parity: true,
        counters: &[],
        build: |n| Box::new(acrobot::Acrobot::new(n)),
        draw: acrobot::draw,
    },
    SimInfo {
        id: nav2d::ID,
        default_max_steps: nav2d::MAX_EPISODE_STEPS,
        gymnasium_parity: false,
        counters: nav2d::COUNTERS,
        build: |n| Box::new(nav2d::Nav2d::new(n)),
        draw: nav2d::draw,
    },
    SimInfo {
        id: reacher2d::ID,
        default_max_steps: reacher2d::MAX_EPISODE_STEPS,
        gymnasium_parity: false,
        counters: reacher2d::COUNTERS,
        build: |n| Box::new(reacher2d::Reacher2d::new(n)),
        draw: reacher2d::draw,
    },
    SimInfo {
        id: swarm2d::ID,
        default_max_steps: swarm2d::MAX_EPISODE_STEPS,
        gymnasium_parity: false,
        counters: swarm2d::COUNTERS,
        build: |n| Box::new(swarm2d::Swarm2d::new(n)),
        draw: swarm2d::draw,
    },
];

/// The simulator registered under `id`.
///
/// ```
/// let info = ale_sims::find("CartPole-v1").unwrap();
/// let mut sim = info.build(info.default_max_steps);
/// sim.reset(7);
/// assert_eq!(sim.observation().len(), 4);
/// ```
pub fn find(id: &str) -> Option<&'static SimInfo> {
    SIMS.iter().find(|s| s.id == id)
}
