//! [`SimBlock`]: several envs of one sim stepped together, as the batch pipeline plays them.
//! Most sims step one by one ([`SimsBlock`]); a sim hosted in another process steps a whole
//! block in one message to its host.

use crate::sim::{Counter, Sim, SimError, Transition};
use crate::space::Space;
use crate::tensor::Tensor;

/// `len()` envs of one sim, numbered from 0.
pub trait SimBlock: Send {
    fn len(&self) -> usize;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn observation_space(&self) -> &Space;

    fn action_space(&self) -> &Space;

    /// Begins an episode in env `env` from `seed`.
    fn reset(&mut self, env: usize, seed: u64) -> Result<(), SimError>;

    /// Begins env `env`'s next episode from its own generator (see
    /// [`Sim::reset_continuing`]); `None`: the caller seeds it.
    fn reset_continuing(&mut self, env: usize) -> Option<Result<(), SimError>> {
        let _ = env;
        None
    }

    /// One step in each env of `which`, `actions[k]` for `which[k]` (each a member of the
    /// action space, checked by the caller); `results` is cleared and gets one result per env,
    /// in `which`'s order.
    fn step(
        &mut self,
        which: &[usize],
        actions: &[Tensor],
        results: &mut Vec<Result<Transition, SimError>>,
    );

    /// Env `env`'s latest observation.
    fn observation(&self, env: usize) -> &Tensor;

    /// Env `env`'s episode counters.
    fn counters(&self, env: usize) -> &[Counter];
}

/// A block of independent sims, stepped one after the other.
pub struct SimsBlock {
    sims: Vec<Box<dyn Sim>>,
}

impl SimsBlock {
    /// A block of `sims`; at least one, all of the same sim.
    pub fn new(sims: Vec<Box<dyn Sim>>) -> SimsBlock {
        assert!(!sims.is_empty(), "a block holds at least one sim");
        SimsBlock { sims }
    }
}

impl SimBlock for SimsBlock {
    fn len(&self) -> usize {
        self.sims.len()
    }

    fn observation_space(&self) -> &Space {
        self.sims[0].observation_space()
    }

    fn action_space(&self) -> &Space {
        self.sims[0].action_space()
    }

    fn reset(&mut self, env: usize, seed: u64) -> Result<(), SimError> {
        self.sims[env].reset(seed)
    }

    fn reset_continuing(&mut self, env: usize) -> Option<Result<(), SimError>> {
        self.sims[env].reset_continuing()
    }

    fn step(
        &mut self,
        which: &[usize],
        actions: &[Tensor],
        results: &mut Vec<Result<Transition, SimError>>,
    ) {
        results.clear();
        results.extend(
            which
                .iter()
                .zip(actions)
                .map(|(&env, action)| self.sims[env].step(action)),
        );
    }

    fn observation(&self, env: usize) -> &Tensor {
        self.sims[env].observation()
    }

    fn counters(&self, env: usize) -> &[Counter] {
        self.sims[env].counters()
    }
}
