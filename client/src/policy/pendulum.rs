use ale_sim::Tensor;

use super::Policy;

/// Swings the pendulum up by pumping energy (full torque along the motion while below the
/// upright energy), then catches it with a PD controller once it is near the top. Torques stay
/// inside the action space's [-2, 2].
#[derive(Debug, Clone, Copy)]
pub struct PendulumHeuristic {
    /// PD gains on (angle from upright, angular velocity) near the top.
    pub catch_gains: [f32; 2],
    /// cos(angle) above which the catch controller takes over.
    pub catch_above: f32,
}

impl Default for PendulumHeuristic {
    fn default() -> Self {
        PendulumHeuristic {
            catch_gains: [10.0, 2.0],
            catch_above: 0.9,
        }
    }
}

impl Policy for PendulumHeuristic {
    fn act(&mut self, observation: &Tensor) -> Tensor {
        let o = observation.as_f32().unwrap_or(&[1.0, 0.0, 0.0]);
        let (cos, sin, vel) = (o[0], o[1], o[2]);
        let theta = sin.atan2(cos);
        let torque = if cos > self.catch_above {
            -(self.catch_gains[0] * theta + self.catch_gains[1] * vel)
        } else {
            // Energy relative to resting upright, for a uniform rod (I = m l^2 / 3).
            let energy = 0.5 * vel * vel / 3.0 + 5.0 * (cos - 1.0);
            if energy < 0.0 {
                2.0 * vel.signum()
            } else {
                -0.5 * vel
            }
        };
        Tensor::vector_f32(vec![torque.clamp(-2.0, 2.0)])
    }
}
