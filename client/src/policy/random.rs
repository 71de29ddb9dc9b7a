use ale_sim::{Rng, Space, Tensor};

use super::Policy;

/// Uniformly random actions from the action space.
pub struct RandomPolicy {
    space: Space,
    rng: Rng,
}

impl RandomPolicy {
    pub fn new(space: Space, seed: u64) -> Self {
        RandomPolicy {
            space,
            rng: Rng::new(seed),
        }
    }
}

impl Policy for RandomPolicy {
    fn act(&mut self, _observation: &Tensor) -> Tensor {
        self.space.sample(&mut self.rng)
    }
}
