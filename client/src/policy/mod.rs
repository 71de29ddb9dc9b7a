//! Built-in policies. Each sees only observations (and the spaces), never simulator state.

mod acrobot;
mod cartpole;
mod go1;
pub mod layout;
mod mountain_car;
mod nav2d;
mod pendulum;
mod random;
mod reacher;
mod swarm;

pub use acrobot::AcrobotHeuristic;
pub use cartpole::CartPoleHeuristic;
pub use go1::Go1Trot;
pub use mountain_car::{MountainCarContinuousHeuristic, MountainCarHeuristic};
pub use nav2d::Nav2dHeuristic;
pub use pendulum::PendulumHeuristic;
pub use random::RandomPolicy;
pub use reacher::ReacherHeuristic;
pub use swarm::SwarmHeuristic;

use ale_sim::Tensor;

use crate::env::EnvSpec;

/// Maps an observation to an action.
pub trait Policy: Send {
    fn act(&mut self, observation: &Tensor) -> Tensor;
    /// Forgets what the policy remembered of the previous episode; call it after each reset.
    fn reset(&mut self) {}
}

/// Which built-in policy to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    Random,
    Heuristic,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 2] = [PolicyKind::Random, PolicyKind::Heuristic];

    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Random => "random",
            PolicyKind::Heuristic => "heuristic",
        }
    }

    pub fn from_name(name: &str) -> Option<PolicyKind> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// No heuristic is bundled for this env's simulator.
#[derive(Debug, Clone, thiserror::Error)]
#[error("no heuristic policy for simulator {0}; use the random policy")]
pub struct NoHeuristic(pub String);

/// Builds a built-in policy for an env. `seed` drives the random policy.
pub fn build(kind: PolicyKind, spec: &EnvSpec, seed: u64) -> Result<Box<dyn Policy>, NoHeuristic> {
    match kind {
        PolicyKind::Random => Ok(Box::new(RandomPolicy::new(spec.action_space.clone(), seed))),
        PolicyKind::Heuristic => {
            heuristic(&spec.task.sim).ok_or_else(|| NoHeuristic(spec.task.sim.clone()))
        }
    }
}

/// The bundled observation-only heuristic for a simulator.
pub fn heuristic(sim: &str) -> Option<Box<dyn Policy>> {
    use layout::{ACROBOT, CARTPOLE, MOUNTAIN_CAR, MOUNTAIN_CAR_CONTINUOUS, PENDULUM};
    Some(match sim {
        CARTPOLE => Box::new(CartPoleHeuristic::default()),
        PENDULUM => Box::new(PendulumHeuristic::default()),
        MOUNTAIN_CAR => Box::new(MountainCarHeuristic),
        MOUNTAIN_CAR_CONTINUOUS => Box::new(MountainCarContinuousHeuristic::default()),
        ACROBOT => Box::new(AcrobotHeuristic),
        layout::nav2d::ID => Box::new(Nav2dHeuristic::default()),
        layout::reacher2d::ID => Box::new(ReacherHeuristic::default()),
        layout::swarm2d::ID => Box::new(SwarmHeuristic::default()),
        layout::go1::ID => Box::new(Go1Trot::default()),
        _ => return None,
    })
}

/// Plays `policy` in-process on `sim` for the seeds `0..episodes` and sums each counter's final
/// value over the episodes: a quick measure of a heuristic, for tests.
#[cfg(test)]
pub(crate) fn counter_totals(
    sim: &mut dyn ale_sim::Sim,
    policy: &mut dyn Policy,
    episodes: u64,
) -> Vec<f64> {
    let mut totals = vec![0.0; sim.counters().len()];
    for seed in 0..episodes {
        sim.reset(seed).unwrap();
        policy.reset();
        while !sim.step(&policy.act(sim.observation())).unwrap().is_done() {}
        for (total, c) in totals.iter_mut().zip(sim.counters()) {
            *total += c.value;
        }
    }
    totals
}
