use super::layout::reacher2d::{ELBOW_LIMIT, LINK_LENGTH};
use ale_sim::Tensor;

use super::Policy;

/// Reaches by inverse kinematics: solves for the joint angles that put the fingertip on the
/// observed target (of the two elbow solutions, the one nearer the current elbow angle), then
/// drives the joints there with a PD controller. Steering in joint space keeps the elbow on a
/// path to its goal angle, away from its limits, even while the shoulder swings hard.
/// Everything comes from the observation: joint angles as cos/sin, velocities, and the target.
#[derive(Debug, Clone, Copy)]
pub struct ReacherHeuristic {
    /// Proportional gains (shoulder, elbow), normalized torque per radian.
    pub stiffness: [f32; 2],
    /// Derivative gains (shoulder, elbow), normalized torque per rad/s.
    pub damping: [f32; 2],
}

impl Default for ReacherHeuristic {
    fn default() -> Self {
        ReacherHeuristic {
            stiffness: [5.0, 5.0],
            damping: [2.0, 1.0],
        }
    }
}

fn wrap(a: f32) -> f32 {
    use std::f32::consts::{PI, TAU};
    (a + PI).rem_euclid(TAU) - PI
}

/// Joint angles that put the fingertip at (x, y), with the elbow bent the way `elbow_sign`
/// says; targets out of reach are pulled onto the reachable annulus.
pub fn inverse_kinematics(x: f32, y: f32, elbow_sign: f32) -> (f32, f32) {
    let l = LINK_LENGTH;
    let r2 = (x * x + y * y).clamp(1e-6, 4.0 * l * l);
    let cos_q2 = ((r2 - 2.0 * l * l) / (2.0 * l * l)).clamp(-1.0, 1.0);
    let q2 = (elbow_sign * cos_q2.acos()).clamp(-ELBOW_LIMIT, ELBOW_LIMIT);
    let q1 = y.atan2(x) - (l * q2.sin()).atan2(l + l * q2.cos());
    (wrap(q1), q2)
}

impl Policy for ReacherHeuristic {
    fn act(&mut self, observation: &Tensor) -> Tensor {
        let Some(&[c1, s1, c2, s2, w1, w2, tx, ty, _, _]) = observation.as_f32() else {
            return Tensor::vector_f32(vec![0.0, 0.0]);
        };
        let (q1, q2) = (s1.atan2(c1), s2.atan2(c2));
        let sign = if q2 >= 0.0 { 1.0 } else { -1.0 };
        let (g1, g2) = inverse_kinematics(tx, ty, sign);
        let t1 = self.stiffness[0] * wrap(g1 - q1) - self.damping[0] * w1;
        let t2 = self.stiffness[1] * (g2 - q2) - self.damping[1] * w2;
        Tensor::vector_f32(vec![t1.clamp(-1.0, 1.0), t2.clamp(-1.0, 1.0)])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over 100 seeded targets the heuristic reaches every one without pressing a limit.
    #[test]
    fn reaches_every_target_without_touching_a_limit() {
        let mut sim = ale_sims::reacher2d::Reacher2d::new(ale_sims::reacher2d::MAX_EPISODE_STEPS);
        let mut policy = ReacherHeuristic::default();
        // Counters: success, final distance, joint-limit violations.
        let totals = super::super::counter_totals(&mut sim, &mut policy, 100);
        assert_eq!(totals[0], 100.0, "targets reached");
        assert_eq!(totals[2], 0.0, "steps pressed against an elbow limit");
    }

    #[test]
    fn inverse_kinematics_puts_the_fingertip_on_the_target() {
        for (x, y) in [(1.2, 0.3), (-0.9, 0.4), (0.1, -1.8)] {
            for sign in [1.0, -1.0] {
                let (q1, q2) = inverse_kinematics(x, y, sign);
                let tip = (q1.cos() + (q1 + q2).cos(), q1.sin() + (q1 + q2).sin());
                assert!(
                    (tip.0 - x).abs() < 1e-4 && (tip.1 - y).abs() < 1e-4,
                    "{tip:?} vs ({x}, {y})"
                );
            }
        }
    }
}
