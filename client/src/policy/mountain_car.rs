use ale_sim::Tensor;

use super::Policy;

/// Rocks the car: from rest it first pushes toward the nearer slope (left from the right of
/// x = -0.485), then pushes in the direction of motion, switching a little early on the left
/// slope (push right once `v > 0.005 (x + 0.5)`). About 106 steps per episode on average.
#[derive(Debug, Clone, Copy, Default)]
pub struct MountainCarHeuristic;

/// Whether to push right, for both mountain cars.
fn push_right(position: f32, velocity: f32) -> bool {
    if velocity == 0.0 {
        position <= -0.485
    } else {
        velocity > 0.005 * (position + 0.5)
    }
}

fn state(observation: &Tensor) -> (f32, f32) {
    match observation.as_f32() {
        Some([p, v, ..]) => (*p, *v),
        _ => (-0.5, 0.0),
    }
}

impl Policy for MountainCarHeuristic {
    fn act(&mut self, observation: &Tensor) -> Tensor {
        let (p, v) = state(observation);
        Tensor::scalar_i64(if push_right(p, v) { 2 } else { 0 })
    }
}

/// The same rocking with a continuous force of fixed magnitude: less than full force costs
/// less (-0.1·force² per step) and still reaches the flag.
#[derive(Debug, Clone, Copy)]
pub struct MountainCarContinuousHeuristic {
    pub force: f32,
}

impl Default for MountainCarContinuousHeuristic {
    fn default() -> Self {
        MountainCarContinuousHeuristic { force: 0.8 }
    }
}

impl Policy for MountainCarContinuousHeuristic {
    fn act(&mut self, observation: &Tensor) -> Tensor {
        let (p, v) = state(observation);
        let force = if push_right(p, v) {
            self.force
        } else {
            -self.force
        };
        Tensor::vector_f32(vec![force])
    }
}
