use super::layout::swarm2d::{
    DT, FEATURES, GOAL_OFFSET, MAX_SPEED, NEIGHBOUR, NEIGHBOUR_FEATURES, NEIGHBOURS, ROBOT_RADIUS,
    ROBOTS, WALLS,
};
use ale_sim::{Tensor, TensorData};

use super::Policy;

/// Clearance kept on top of every constraint, metres, so rounding never makes a contact.
const MARGIN: f32 = 0.01;

/// Steers every robot with a potential field, then keeps it from touching anything.
///
/// Each robot acts on its own row alone, the same rule for every row (what a shared-weight
/// policy does): attraction to its goal, proportional near it; repulsion from neighbours and
/// walls closer than `influence`, with a sideways part so that robots meeting head-on pass
/// each other on the right instead of stalling. A safety filter then bounds the speed toward
/// each observed neighbour to half the gap between them per step (the neighbour, running the
/// same rule, takes the other half) and toward each wall to the whole clearance, so robots
/// that all run this policy never touch.
#[derive(Debug, Clone, Copy)]
pub struct SwarmHeuristic {
    /// Velocity per metre of goal offset, 1/s (then capped at the top speed).
    pub goal_gain: f32,
    /// Neighbours and walls closer than this (rim to rim), metres, push back.
    pub influence: f32,
    /// Strength of the push at contact, m/s.
    pub repulsion: f32,
    /// Strength of the sideways part of a neighbour's push, as a fraction of the push.
    pub sidestep: f32,
}

impl Default for SwarmHeuristic {
    fn default() -> Self {
        SwarmHeuristic {
            goal_gain: 2.0,
            influence: 0.5,
            repulsion: 1.0,
            sidestep: 1.0,
        }
    }
}

/// `v · n ≤ bound`: a half-plane the velocity must stay in.
#[derive(Debug, Clone, Copy)]
struct Limit {
    n: [f32; 2],
    bound: f32,
}

const LIMITS: usize = NEIGHBOURS + 4;

impl SwarmHeuristic {
    /// The velocity for one robot's row of features.
    pub fn velocity(&self, row: &[f32]) -> [f32; 2] {
        let goal = [row[GOAL_OFFSET], row[GOAL_OFFSET + 1]];
        let mut v = [goal[0] * self.goal_gain, goal[1] * self.goal_gain];
        let mut limits = [Limit {
            n: [0.0, 0.0],
            bound: 0.0,
        }; LIMITS];
        for (k, limit) in limits[..NEIGHBOURS].iter_mut().enumerate() {
            let at = NEIGHBOUR + k * NEIGHBOUR_FEATURES;
            let r = [row[at], row[at + 1]];
            let distance = r[0].hypot(r[1]).max(1e-6);
            let n = [r[0] / distance, r[1] / distance];
            let gap = distance - 2.0 * ROBOT_RADIUS;
            if gap < self.influence {
                let push = self.repulsion * (1.0 - gap.max(0.0) / self.influence);
                // Away from the neighbour, and to the right of the line toward it.
                v[0] += push * (-n[0] + self.sidestep * n[1]);
                v[1] += push * (-n[1] - self.sidestep * n[0]);
            }
            *limit = Limit {
                n,
                bound: (gap - MARGIN).max(0.0) / (2.0 * DT),
            };
        }
        let walls = [[-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]];
        for (w, n) in walls.into_iter().enumerate() {
            let clearance = row[WALLS + w];
            if clearance < self.influence {
                let push = self.repulsion * (1.0 - clearance / self.influence);
                v[0] -= push * n[0];
                v[1] -= push * n[1];
            }
            limits[NEIGHBOURS + w] = Limit {
                n,
                bound: (clearance - MARGIN).max(0.0) / DT,
            };
        }
        let speed = v[0].hypot(v[1]);
        if speed > MAX_SPEED {
            v = [v[0] * MAX_SPEED / speed, v[1] * MAX_SPEED / speed];
        }
        keep_within(v, &limits)
    }
}

/// `v` moved into every half-plane: a few rounds of projection onto each one it leaves, then,
/// if some are still left, `v` shortened until it is inside them all (zero always is).
fn keep_within(mut v: [f32; 2], limits: &[Limit]) -> [f32; 2] {
    let excess = |v: [f32; 2], l: &Limit| v[0] * l.n[0] + v[1] * l.n[1] - l.bound;
    for _ in 0..3 {
        for l in limits {
            let e = excess(v, l);
            if e > 0.0 {
                v = [v[0] - e * l.n[0], v[1] - e * l.n[1]];
            }
        }
    }
    let mut scale: f32 = 1.0;
    for l in limits {
        let along = v[0] * l.n[0] + v[1] * l.n[1];
        if along > l.bound {
            scale = scale.min(l.bound / along);
        }
    }
    let v = [v[0] * scale, v[1] * scale];
    let speed = v[0].hypot(v[1]);
    if speed > MAX_SPEED {
        [v[0] * MAX_SPEED / speed, v[1] * MAX_SPEED / speed]
    } else {
        v
    }
}

impl Policy for SwarmHeuristic {
    fn act(&mut self, observation: &Tensor) -> Tensor {
        let mut out = vec![0.0f32; ROBOTS * 2];
        if let Some(o) = observation.as_f32()
            && o.len() == ROBOTS * FEATURES
        {
            for (row, a) in o.chunks_exact(FEATURES).zip(out.chunks_exact_mut(2)) {
                let v = self.velocity(row);
                a[0] = v[0].clamp(-MAX_SPEED, MAX_SPEED);
                a[1] = v[1].clamp(-MAX_SPEED, MAX_SPEED);
            }
        }
        Tensor::new(vec![ROBOTS, 2], TensorData::F32(out))
            .unwrap_or_else(|_| Tensor::zeros(vec![ROBOTS, 2], ale_sim::DType::F32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ale_sims::swarm2d::{MAX_EPISODE_STEPS, Swarm2d};

    /// Over the 32 practice seeds the swarm-goals task evaluates on, nearly every robot ends on
    /// its goal and none ever touches another or a wall.
    #[test]
    fn brings_the_swarm_home_without_contact() {
        let mut sim = Swarm2d::new(MAX_EPISODE_STEPS);
        let mut policy = SwarmHeuristic::default();
        // Counters: success fraction, contacts.
        let totals = super::super::counter_totals(&mut sim, &mut policy, 32);
        eprintln!(
            "success fraction {}, contacts {}",
            totals[0] / 32.0,
            totals[1]
        );
        assert!(
            totals[0] / 32.0 >= 0.95,
            "mean success fraction {}",
            totals[0] / 32.0
        );
        assert_eq!(totals[1], 0.0, "contacts");
    }

    #[test]
    fn the_filter_keeps_every_half_plane() {
        let limits = [
            Limit {
                n: [1.0, 0.0],
                bound: 0.1,
            },
            Limit {
                n: [0.0, 1.0],
                bound: 0.0,
            },
        ];
        let v = keep_within([1.0, 1.0], &limits);
        assert!(v[0] <= 0.1 + 1e-6 && v[1] <= 1e-6, "{v:?}");
        assert_eq!(keep_within([-0.5, -0.5], &limits), [-0.5, -0.5]);
    }
}
