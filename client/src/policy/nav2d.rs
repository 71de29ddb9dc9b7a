use super::layout::nav2d::{
    BEAMS, DT, GOAL_BEARING, GOAL_DISTANCE, LIDAR_RANGE, MAX_SPEED, MAX_TURN, SPEED, TURN_RATE,
    beam_angle,
};
use ale_sim::Tensor;

use super::Policy;

/// Cell size of the heuristic's map, metres.
const CELL: f32 = 0.15;
/// The map spans ±MAP_HALF metres around the start (the arena is 10 m across).
const MAP_HALF: f32 = 11.0;
const MAP_N: usize = (2.0 * MAP_HALF / CELL) as usize;

/// Navigates by mapping and planning, from observations alone.
///
/// The robot moves kinematically, so integrating the observed speed and turn rate gives its
/// exact pose relative to where it started. Each lidar hit is placed in an occupancy grid and
/// inflated by the robot's radius plus a margin; a breadth-first distance field from the
/// goal (placed by its observed distance and bearing) gives the way around obstacles, with
/// unseen cells assumed free. The robot steers at a point a little way down that path and
/// slows down when the free distance straight ahead shortens.
#[derive(Debug, Clone)]
pub struct Nav2dHeuristic {
    /// Obstacles are inflated by this much (robot radius plus margin), metres.
    pub inflation: f32,
    /// Steering gain, rad/s per radian of heading error.
    pub steer_gain: f32,
    /// How far down the planned path to aim, in cells.
    pub lookahead: usize,
    pose: Option<(f32, f32, f32)>,
    blocked: Vec<bool>,
    distance: Vec<u32>,
}

impl Default for Nav2dHeuristic {
    fn default() -> Self {
        Nav2dHeuristic {
            inflation: 0.33,
            steer_gain: 3.0,
            lookahead: 5,
            pose: None,
            blocked: vec![false; MAP_N * MAP_N],
            distance: vec![u32::MAX; MAP_N * MAP_N],
        }
    }
}

fn wrap(a: f32) -> f32 {
    use std::f32::consts::{PI, TAU};
    (a + PI).rem_euclid(TAU) - PI
}

fn cell_of(x: f32, y: f32) -> Option<usize> {
    let i = ((x + MAP_HALF) / CELL).floor();
    let j = ((y + MAP_HALF) / CELL).floor();
    let n = MAP_N as f32;
    (i >= 0.0 && j >= 0.0 && i < n && j < n).then(|| j as usize * MAP_N + i as usize)
}

fn centre(k: usize) -> (f32, f32) {
    let c = |v: usize| (v as f32 + 0.5) * CELL - MAP_HALF;
    (c(k % MAP_N), c(k / MAP_N))
}

impl Nav2dHeuristic {
    /// Marks the disc of `inflation` around a lidar hit at (x, y) as blocked.
    fn mark(&mut self, x: f32, y: f32) {
        let r = (self.inflation / CELL).ceil() as i32;
        let Some(k) = cell_of(x, y) else { return };
        let (ci, cj) = ((k % MAP_N) as i32, (k / MAP_N) as i32);
        for dj in -r..=r {
            for di in -r..=r {
                let (i, j) = (ci + di, cj + dj);
                if i < 0 || j < 0 || i >= MAP_N as i32 || j >= MAP_N as i32 {
                    continue;
                }
                let (cx, cy) = centre(j as usize * MAP_N + i as usize);
                if (cx - x).hypot(cy - y) <= self.inflation {
                    self.blocked[j as usize * MAP_N + i as usize] = true;
                }
            }
        }
    }

    /// The distance field (in cells) from the goal over unblocked cells.
    fn plan(&mut self, goal: usize, robot: usize) {
        self.distance.fill(u32::MAX);
        let mut queue = std::collections::VecDeque::from([goal]);
        self.distance[goal] = 0;
        while let Some(k) = queue.pop_front() {
            let d = self.distance[k] + 1;
            let (i, j) = (k % MAP_N, k / MAP_N);
            let neighbours = [
                (i > 0).then(|| k - 1),
                (i + 1 < MAP_N).then(|| k + 1),
                (j > 0).then(|| k - MAP_N),
                (j + 1 < MAP_N).then(|| k + MAP_N),
            ];
            for next in neighbours.into_iter().flatten() {
                // The robot's own cell is always enterable, so it can leave a tight spot.
                if (!self.blocked[next] || next == robot) && self.distance[next] == u32::MAX {
                    self.distance[next] = d;
                    queue.push_back(next);
                }
            }
        }
    }

    /// Follows the distance field downhill from `from` for `lookahead` cells.
    fn waypoint(&self, from: usize) -> usize {
        let mut k = from;
        for _ in 0..self.lookahead {
            let (i, j) = (k % MAP_N, k / MAP_N);
            let next = [
                (i > 0).then(|| k - 1),
                (i + 1 < MAP_N).then(|| k + 1),
                (j > 0).then(|| k - MAP_N),
                (j + 1 < MAP_N).then(|| k + MAP_N),
            ]
            .into_iter()
            .flatten()
            .min_by_key(|&n| self.distance[n]);
            match next {
                Some(n) if self.distance[n] < self.distance[k] => k = n,
                _ => break,
            }
        }
        k
    }
}

impl Policy for Nav2dHeuristic {
    fn reset(&mut self) {
        self.pose = None;
        self.blocked.fill(false);
    }

    fn act(&mut self, observation: &Tensor) -> Tensor {
        let Some(o) = observation.as_f32().filter(|o| o.len() > TURN_RATE) else {
            return Tensor::vector_f32(vec![0.0, 0.0]);
        };
        // Dead reckoning, exactly as the robot moves: heading first, position on the midpoint.
        let (mut x, mut y, mut theta) = self.pose.unwrap_or((0.0, 0.0, 0.0));
        if self.pose.is_some() {
            let (v, w) = (o[SPEED], o[TURN_RATE]);
            let mid = theta + 0.5 * w * DT;
            theta = wrap(theta + w * DT);
            x += v * mid.cos() * DT;
            y += v * mid.sin() * DT;
        }
        self.pose = Some((x, y, theta));
        for (i, &r) in o[..BEAMS].iter().enumerate() {
            if r < LIDAR_RANGE - 1e-3 {
                let a = theta + beam_angle(i);
                self.mark(x + r * a.cos(), y + r * a.sin());
            }
        }
        let (gd, gb) = (o[GOAL_DISTANCE], o[GOAL_BEARING]);
        let (gx, gy) = (x + gd * (theta + gb).cos(), y + gd * (theta + gb).sin());
        let (Some(robot), Some(goal)) = (cell_of(x, y), cell_of(gx, gy)) else {
            return Tensor::vector_f32(vec![0.0, 0.0]);
        };
        self.blocked[goal] = false;
        self.plan(goal, robot);
        let target = if self.distance[robot] == u32::MAX {
            gb
        } else {
            let (wx, wy) = centre(self.waypoint(robot));
            wrap((wy - y).atan2(wx - x) - theta)
        };
        let turn = (self.steer_gain * target).clamp(-MAX_TURN, MAX_TURN);
        let ahead = free_distance(&o[..BEAMS], 0.0, super::layout::nav2d::ROBOT_RADIUS + 0.05);
        let speed = if target.abs() > 0.8 {
            0.0
        } else {
            (ahead - 0.1).clamp(0.0, MAX_SPEED) * (1.0 - target.abs() / 0.8)
        };
        Tensor::vector_f32(vec![speed, turn])
    }
}

/// How far the robot can move along `heading` (relative to its own) before a lidar hit comes
/// within `half_width` of its path.
fn free_distance(ranges: &[f32], heading: f32, half_width: f32) -> f32 {
    let mut free = f32::INFINITY;
    for (j, &r) in ranges.iter().enumerate() {
        if r >= LIDAR_RANGE - 1e-3 {
            continue;
        }
        let rel = beam_angle(j) - heading;
        let (along, across) = (r * rel.cos(), r * rel.sin());
        if along > 0.0 && across.abs() < half_width {
            let blocked_at = along - (half_width * half_width - across * across).sqrt();
            free = free.min(blocked_at.max(0.0));
        }
    }
    free
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Over 40 seeded fields the heuristic reaches every goal without touching anything.
    #[test]
    fn reaches_every_goal_without_collisions() {
        let mut sim = ale_sims::nav2d::Nav2d::new(ale_sims::nav2d::MAX_EPISODE_STEPS);
        let mut policy = Nav2dHeuristic::default();
        // Counters: success, time to goal, collisions.
        let totals = super::super::counter_totals(&mut sim, &mut policy, 40);
        assert_eq!(totals[0], 40.0, "goals reached");
        assert!(
            totals[1] / 40.0 < 20.0,
            "mean time to goal {} s",
            totals[1] / 40.0
        );
        assert_eq!(totals[2], 0.0, "collisions");
    }
}
