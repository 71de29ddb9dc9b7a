//! Every bundled simulator, by id.

use crate::cartpole::{self, CartPole};
use crate::sim::Sim;

/// A simulator the registry can build.
#[derive(Debug, Clone, Copy)]
pub struct SimInfo {
    pub id: &'static str,
    /// Gymnasium's `max_episode_steps` for this env, used when a task does not set its own.
    pub default_max_steps: u32,
    build: fn(u32) -> Box<dyn Sim>,
}

impl SimInfo {
    /// A fresh sim whose episodes are truncated after `max_steps` steps.
    pub fn build(&self, max_steps: u32) -> Box<dyn Sim> {
        (self.build)(max_steps)
    }
}

pub const SIMS: &[SimInfo] = &[SimInfo {
    id: cartpole::ID,
    default_max_steps: cartpole::MAX_EPISODE_STEPS,
    build: |max_steps| Box::new(CartPole::new(max_steps)),
}];

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
