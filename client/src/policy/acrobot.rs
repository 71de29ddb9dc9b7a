use ale_sim::Tensor;

use super::Policy;

/// Pumps energy into the chain by torquing the middle joint against the first link's swing
/// relative to the second (torque sign of θ̇₂ − θ̇₁). About 80 steps to swing up.
#[derive(Debug, Clone, Copy, Default)]
pub struct AcrobotHeuristic;

impl Policy for AcrobotHeuristic {
    fn act(&mut self, observation: &Tensor) -> Tensor {
        let (d1, d2) = match observation.as_f32() {
            Some([.., d1, d2]) => (*d1, *d2),
            _ => (0.0, 0.0),
        };
        Tensor::scalar_i64(if d2 - d1 > 0.0 { 2 } else { 0 })
    }
}
