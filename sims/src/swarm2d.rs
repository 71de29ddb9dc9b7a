//! `swarm2d`: sixteen disc robots in a 10 m × 10 m walled arena, each to its own goal.
//!
//! Each robot is holonomic and velocity-controlled: its row of the `[16, 2]` action is the
//! velocity (vx, vy) it moves at for the next 0.1 s step, each component clipped to ±1 m/s and
//! then the vector to a length of at most 1 m/s. Each episode's seed draws the starts and the
//! goals: inside the arena, no two starts and no two goals closer than 0.7 m (so every robot
//! can rest on its goal without touching another), each goal at least 1 m from its robot's
//! start.
//!
//! **Collisions.** All robots move at once to their proposed positions. Every pair of robots
//! whose proposed discs overlap, and every robot whose proposed disc crosses a wall, counts one
//! contact. The overlaps are then resolved deterministically: [`PASSES`] passes over the pairs
//! in index order, each overlapping pair pushed apart equally along the line between their
//! centres (along +x if the centres coincide), every robot clamped inside the walls after each
//! pass. In a dense crowd a small overlap can remain, and counts again at the next step if the
//! robots still press into each other.
//!
//! **Goal.** A robot is at its goal while its centre is within [`GOAL_RADIUS`] of it; a robot
//! can leave its goal again. The `success_fraction` counter is the fraction of robots at their
//! goals now, so its final value is the fraction at the end of the episode. The episode
//! terminates when every robot is at its goal at once, and is truncated at the step limit.
//!
//! **Reward** per step: the summed progress of all robots toward their goals in metres, minus
//! 0.1 per contact, plus 10 when the episode terminates.
//!
//! **Observation**, `[16, FEATURES]` float32, one row per robot with the same layout for every
//! robot, so one shared-weight policy can act on each row: see [`POSITION`] and the other
//! feature offsets. A robot sees its own position, its goal and its neighbours; the starts and
//! goals of other robots are in no row but their own.

use crate::draw::{Drawing, Role, Viewport, obs};
use crate::rng::Rng;
use crate::sim::{Counter, EpisodeClock, Sim, SimError, Transition, state_array};
use crate::space::{BoxSpace, Space};
use crate::tensor::{DType, Tensor};

pub const ID: &str = "swarm2d";
pub const MAX_EPISODE_STEPS: u32 = 300;

/// Robots in the arena.
pub const ROBOTS: usize = 16;
/// Neighbours each robot observes, nearest first.
pub const NEIGHBOURS: usize = 4;
pub const ARENA: f32 = 10.0;
pub const ROBOT_RADIUS: f32 = 0.25;
pub const GOAL_RADIUS: f32 = 0.2;
pub const DT: f32 = 0.1;
/// Largest speed of a robot, m/s: each action component is clipped to ±this, then the vector.
pub const MAX_SPEED: f32 = 1.0;
/// Push-apart passes that resolve overlaps each step.
pub const PASSES: usize = 4;
/// Reward per contact.
pub const CONTACT_PENALTY: f64 = 0.1;
/// Reward when every robot is at its goal.
pub const ARRIVAL_BONUS: f64 = 10.0;
/// Starts (and goals) are drawn at least this far apart, centre to centre.
pub const MIN_SEPARATION: f32 = 2.0 * ROBOT_RADIUS + 0.2;
/// Each goal is drawn at least this far from its robot's start.
pub const MIN_GOAL_DISTANCE: f32 = 1.0;
/// Starts and goals keep this much room between a robot's rim and the walls.
const WALL_MARGIN: f32 = 0.1;

// Every robot has `NEIGHBOURS` others to observe, so no row needs padding.
const _: () = assert!(ROBOTS > NEIGHBOURS);

/// Feature offsets within a robot's row. Own position (x, y), metres from the bottom-left
/// corner.
pub const POSITION: usize = 0;
/// Goal minus own position (dx, dy).
pub const GOAL_OFFSET: usize = 2;
/// Own velocity this step (vx, vy): the action after clipping.
pub const VELOCITY: usize = 4;
/// Clearance between the robot's rim and the left, right, bottom and top walls.
pub const WALLS: usize = 6;
/// The nearest `NEIGHBOURS` other robots, nearest first (ties by index), each as
/// [`NEIGHBOUR_FEATURES`] values: its position minus own (dx, dy) and its velocity minus own
/// (dvx, dvy).
pub const NEIGHBOUR: usize = 10;
pub const NEIGHBOUR_FEATURES: usize = 4;
/// Values in one robot's row.
pub const FEATURES: usize = NEIGHBOUR + NEIGHBOURS * NEIGHBOUR_FEATURES;
/// Numbers in a `reset_to_state` state: every start (x, y), then every goal (x, y).
pub const STATE_LEN: usize = 4 * ROBOTS;

/// Counter names.
pub const SUCCESS_FRACTION: &str = "success_fraction";
pub const CONTACTS: &str = "contacts";
pub const COUNTERS: &[&str] = &[SUCCESS_FRACTION, CONTACTS];

type Vec2 = [f32; 2];

pub struct Swarm2d {
    position: [Vec2; ROBOTS],
    velocity: [Vec2; ROBOTS],
    goal: [Vec2; ROBOTS],
    /// Each robot's distance to its goal after the latest step.
    goal_distance: [f32; ROBOTS],
    clock: EpisodeClock,
    counters: [Counter; 2],
    observation: Tensor,
    observation_space: Space,
    action_space: Space,
}

/// A robot's row bounds: (low, high) for each feature.
fn feature_bounds() -> [(f64, f64); FEATURES] {
    let arena = f64::from(ARENA);
    let speed = f64::from(MAX_SPEED);
    let mut bounds = [(0.0, 0.0); FEATURES];
    bounds[POSITION] = (0.0, arena);
    bounds[POSITION + 1] = (0.0, arena);
    bounds[GOAL_OFFSET] = (-arena, arena);
    bounds[GOAL_OFFSET + 1] = (-arena, arena);
    bounds[VELOCITY] = (-speed, speed);
    bounds[VELOCITY + 1] = (-speed, speed);
    for b in &mut bounds[WALLS..WALLS + 4] {
        *b = (0.0, arena);
    }
    for k in 0..NEIGHBOURS {
        let at = NEIGHBOUR + k * NEIGHBOUR_FEATURES;
        bounds[at] = (-arena, arena);
        bounds[at + 1] = (-arena, arena);
        bounds[at + 2] = (-2.0 * speed, 2.0 * speed);
        bounds[at + 3] = (-2.0 * speed, 2.0 * speed);
    }
    bounds
}

fn distance_squared(a: Vec2, b: Vec2) -> f32 {
    let (dx, dy) = (b[0] - a[0], b[1] - a[1]);
    dx * dx + dy * dy
}

fn distance(a: Vec2, b: Vec2) -> f32 {
    distance_squared(a, b).sqrt()
}

/// Whether a robot centred at `p` lies inside the walls.
fn inside(p: Vec2) -> bool {
    p.iter()
        .all(|&v| (ROBOT_RADIUS..=ARENA - ROBOT_RADIUS).contains(&v))
}

/// A point a robot can occupy, at least `MIN_SEPARATION` from every point in `taken` and, if
/// given, at least `MIN_GOAL_DISTANCE` from `away_from`.
fn draw_point(rng: &mut Rng, taken: &[Vec2], away_from: Option<Vec2>) -> Vec2 {
    let low = f64::from(ROBOT_RADIUS + WALL_MARGIN);
    let high = f64::from(ARENA - ROBOT_RADIUS - WALL_MARGIN);
    // The arena has room for far more robots than it holds: this ends after a few draws.
    loop {
        let p = [rng.uniform(low, high) as f32, rng.uniform(low, high) as f32];
        let clear = taken.iter().all(|&q| distance(p, q) >= MIN_SEPARATION);
        let far = away_from.is_none_or(|s| distance(p, s) >= MIN_GOAL_DISTANCE);
        if clear && far {
            return p;
        }
    }
}

impl Swarm2d {
    pub fn new(max_steps: u32) -> Self {
        let (low, high): (Vec<f64>, Vec<f64>) = (0..ROBOTS).flat_map(|_| feature_bounds()).unzip();
        let speed = f64::from(MAX_SPEED);
        Swarm2d {
            position: [[0.0; 2]; ROBOTS],
            velocity: [[0.0; 2]; ROBOTS],
            goal: [[0.0; 2]; ROBOTS],
            goal_distance: [0.0; ROBOTS],
            clock: EpisodeClock::new(max_steps),
            counters: [SUCCESS_FRACTION, CONTACTS].map(|name| Counter { name, value: 0.0 }),
            observation: Tensor::zeros(vec![ROBOTS, FEATURES], DType::F32),
            observation_space: Space::Box(BoxSpace {
                shape: vec![ROBOTS, FEATURES],
                dtype: DType::F32,
                low,
                high,
                labels: Vec::new(),
            }),
            action_space: Space::Box(BoxSpace::uniform(
                vec![ROBOTS, 2],
                DType::F32,
                -speed,
                speed,
            )),
        }
    }

    /// Starts an episode with the robots at `starts`, each heading for its goal in `goals`.
    fn begin(&mut self, starts: [Vec2; ROBOTS], goals: [Vec2; ROBOTS]) {
        self.position = starts;
        self.goal = goals;
        self.velocity = [[0.0; 2]; ROBOTS];
        for i in 0..ROBOTS {
            self.goal_distance[i] = distance(starts[i], goals[i]);
        }
        self.counters[1].value = 0.0;
        self.counters[0].value = self.fraction_at_goal();
        self.clock.reset();
        self.write_observation();
    }

    fn fraction_at_goal(&self) -> f64 {
        let at_goal = self
            .goal_distance
            .iter()
            .filter(|&&d| d < GOAL_RADIUS)
            .count();
        at_goal as f64 / ROBOTS as f64
    }

    /// Moves every robot by its velocity, counts the contacts the moves make and resolves them;
    /// returns the number of contacts.
    fn advance(&mut self) -> u32 {
        for (p, v) in self.position.iter_mut().zip(&self.velocity) {
            p[0] += v[0] * DT;
            p[1] += v[1] * DT;
        }
        let touch = (2.0 * ROBOT_RADIUS) * (2.0 * ROBOT_RADIUS);
        let mut contacts = 0;
        for i in 0..ROBOTS {
            for j in i + 1..ROBOTS {
                if distance_squared(self.position[i], self.position[j]) < touch {
                    contacts += 1;
                }
            }
            if !inside(self.position[i]) {
                contacts += 1;
            }
        }
        for _ in 0..PASSES {
            self.push_apart();
        }
        contacts
    }

    /// One pass of the overlap resolution: pairs in index order, then the walls.
    fn push_apart(&mut self) {
        let touch = 2.0 * ROBOT_RADIUS;
        for i in 0..ROBOTS {
            for j in i + 1..ROBOTS {
                let (a, b) = (self.position[i], self.position[j]);
                let d2 = distance_squared(a, b);
                if d2 >= touch * touch {
                    continue;
                }
                let d = d2.sqrt();
                let normal = if d > 0.0 {
                    [(b[0] - a[0]) / d, (b[1] - a[1]) / d]
                } else {
                    [1.0, 0.0]
                };
                let push = 0.5 * (touch - d);
                for (axis, n) in normal.into_iter().enumerate() {
                    self.position[i][axis] -= n * push;
                    self.position[j][axis] += n * push;
                }
            }
        }
        for p in &mut self.position {
            for v in p.iter_mut() {
                *v = v.clamp(ROBOT_RADIUS, ARENA - ROBOT_RADIUS);
            }
        }
    }

    /// The `NEIGHBOURS` robots nearest to robot `i`, nearest first, ties by index.
    fn nearest(&self, i: usize) -> [usize; NEIGHBOURS] {
        let mut index = [0; NEIGHBOURS];
        let mut d2 = [f32::INFINITY; NEIGHBOURS];
        for j in (0..ROBOTS).filter(|&j| j != i) {
            let dj = distance_squared(self.position[i], self.position[j]);
            if dj >= d2[NEIGHBOURS - 1] {
                continue;
            }
            let mut k = NEIGHBOURS - 1;
            while k > 0 && dj < d2[k - 1] {
                d2[k] = d2[k - 1];
                index[k] = index[k - 1];
                k -= 1;
            }
            d2[k] = dj;
            index[k] = j;
        }
        index
    }

    fn write_observation(&mut self) {
        for i in 0..ROBOTS {
            let nearest = self.nearest(i);
            let (p, v, g) = (self.position[i], self.velocity[i], self.goal[i]);
            let Some(o) = self.observation.as_f32_mut() else {
                return;
            };
            let row = &mut o[i * FEATURES..(i + 1) * FEATURES];
            row[POSITION..POSITION + 2].copy_from_slice(&p);
            row[GOAL_OFFSET] = g[0] - p[0];
            row[GOAL_OFFSET + 1] = g[1] - p[1];
            row[VELOCITY..VELOCITY + 2].copy_from_slice(&v);
            row[WALLS] = p[0] - ROBOT_RADIUS;
            row[WALLS + 1] = ARENA - ROBOT_RADIUS - p[0];
            row[WALLS + 2] = p[1] - ROBOT_RADIUS;
            row[WALLS + 3] = ARENA - ROBOT_RADIUS - p[1];
            for (k, &j) in nearest.iter().enumerate() {
                let (q, w) = (self.position[j], self.velocity[j]);
                let at = NEIGHBOUR + k * NEIGHBOUR_FEATURES;
                row[at] = q[0] - p[0];
                row[at + 1] = q[1] - p[1];
                row[at + 2] = w[0] - v[0];
                row[at + 3] = w[1] - v[1];
            }
        }
    }
}

impl Sim for Swarm2d {
    crate::sim_accessors!(ID);

    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let mut rng = Rng::new(seed);
        let mut starts = [[0.0; 2]; ROBOTS];
        for i in 0..ROBOTS {
            starts[i] = draw_point(&mut rng, &starts[..i], None);
        }
        let mut goals = [[0.0; 2]; ROBOTS];
        for i in 0..ROBOTS {
            goals[i] = draw_point(&mut rng, &goals[..i], Some(starts[i]));
        }
        self.begin(starts, goals);
        Ok(())
    }

    /// `[x0, y0, …, x15, y15, goal x0, goal y0, …, goal x15, goal y15]`: every robot inside the
    /// walls, no two robots overlapping, every goal a place a robot fits.
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        let state = state_array::<STATE_LEN>(state)?;
        let point = |k: usize| [state[2 * k] as f32, state[2 * k + 1] as f32];
        let starts: [Vec2; ROBOTS] = std::array::from_fn(point);
        let goals: [Vec2; ROBOTS] = std::array::from_fn(|i| point(ROBOTS + i));
        for (what, points) in [("robot", &starts), ("goal", &goals)] {
            if let Some(i) = points.iter().position(|&p| !inside(p)) {
                return Err(SimError::State(format!(
                    "{what} {i} at {:?} is not inside the walls ({ROBOT_RADIUS} to {} on both axes)",
                    points[i],
                    ARENA - ROBOT_RADIUS
                )));
            }
        }
        for i in 0..ROBOTS {
            for j in i + 1..ROBOTS {
                if distance(starts[i], starts[j]) < 2.0 * ROBOT_RADIUS {
                    return Err(SimError::State(format!(
                        "robots {i} and {j} overlap: their centres are closer than {}",
                        2.0 * ROBOT_RADIUS
                    )));
                }
            }
        }
        self.begin(starts, goals);
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        let action = crate::action::box_f32_rows::<ROBOTS, 2>(&self.action_space, action)?;
        self.clock.check_can_step()?;
        for (v, a) in self.velocity.iter_mut().zip(action) {
            let a = a.map(|c| c.clamp(-MAX_SPEED, MAX_SPEED));
            let speed = (a[0] * a[0] + a[1] * a[1]).sqrt();
            let scale = if speed > MAX_SPEED {
                MAX_SPEED / speed
            } else {
                1.0
            };
            *v = [a[0] * scale, a[1] * scale];
        }
        let contacts = self.advance();
        let mut progress = 0.0;
        for i in 0..ROBOTS {
            let d = distance(self.position[i], self.goal[i]);
            progress += f64::from(self.goal_distance[i] - d);
            self.goal_distance[i] = d;
        }
        let fraction = self.fraction_at_goal();
        let terminated = fraction == 1.0;
        self.counters[0].value = fraction;
        self.counters[1].value += f64::from(contacts);
        let mut reward = progress - CONTACT_PENALTY * f64::from(contacts);
        if terminated {
            reward += ARRIVAL_BONUS;
        }
        self.write_observation();
        let truncated = self.clock.tick(terminated);
        Ok(Transition {
            reward,
            terminated,
            truncated,
        })
    }

    fn counters(&self) -> &[Counter] {
        &self.counters
    }
}

/// The arena from above: each robot where its row puts it, a line to its goal, and its
/// velocity. Everything drawn is in the observation: a robot's row holds its position and
/// its goal offset.
pub fn draw(observation: &Tensor) -> Drawing {
    let arena = f64::from(ARENA);
    let mut d = Drawing::new(Viewport {
        x_min: -0.5,
        x_max: arena + 0.5,
        y_min: -0.5,
        y_max: arena + 0.5,
    });
    d.rect(
        (arena / 2.0, arena / 2.0),
        (arena / 2.0, arena / 2.0),
        Role::Ground,
    );
    for i in 0..ROBOTS {
        let f = |k: usize| obs(observation, i * FEATURES + k);
        let p = (f(POSITION), f(POSITION + 1));
        let goal = (p.0 + f(GOAL_OFFSET), p.1 + f(GOAL_OFFSET + 1));
        d.circle(goal, f64::from(GOAL_RADIUS), Role::Goal);
        d.line(p, goal, Role::Sensor);
        d.circle(p, f64::from(ROBOT_RADIUS), Role::Body);
        let scale = f64::from(ROBOT_RADIUS) * 2.0 / f64::from(MAX_SPEED);
        d.line(
            p,
            (p.0 + f(VELOCITY) * scale, p.1 + f(VELOCITY + 1) * scale),
            Role::Limb,
        );
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn still() -> Tensor {
        Tensor::zeros(vec![ROBOTS, 2], DType::F32)
    }

    fn actions(rows: [Vec2; ROBOTS]) -> Tensor {
        let data = ale_sim::TensorData::F32(rows.iter().flatten().copied().collect());
        Tensor::new(vec![ROBOTS, 2], data).unwrap()
    }

    /// A scene of robots on a 4 × 4 grid, 2 m apart, each goal 1 m to its right.
    fn grid() -> ([Vec2; ROBOTS], [Vec2; ROBOTS]) {
        let starts =
            std::array::from_fn(|i| [1.5 + 2.0 * (i % 4) as f32, 1.5 + 2.0 * (i / 4) as f32]);
        let goals = starts.map(|p: Vec2| [p[0] + 1.0, p[1]]);
        (starts, goals)
    }

    #[test]
    fn seeded_scenes_are_reproducible_separated_and_inside() {
        let (mut a, mut b) = (
            Swarm2d::new(MAX_EPISODE_STEPS),
            Swarm2d::new(MAX_EPISODE_STEPS),
        );
        for seed in 0..50 {
            a.reset(seed).unwrap();
            b.reset(seed).unwrap();
            assert_eq!(a.observation(), b.observation());
            for i in 0..ROBOTS {
                assert!(inside(a.position[i]) && inside(a.goal[i]), "seed {seed}");
                assert!(distance(a.position[i], a.goal[i]) >= MIN_GOAL_DISTANCE);
                for j in i + 1..ROBOTS {
                    assert!(distance(a.position[i], a.position[j]) >= MIN_SEPARATION);
                    assert!(distance(a.goal[i], a.goal[j]) >= MIN_SEPARATION);
                }
            }
            assert_eq!(a.counters()[0].value, 0.0);
        }
        b.reset(51).unwrap();
        assert_ne!(a.observation(), b.observation());
    }

    #[test]
    fn rows_describe_each_robot_and_its_nearest_neighbours() {
        let mut sim = Swarm2d::new(MAX_EPISODE_STEPS);
        let (starts, goals) = grid();
        sim.begin(starts, goals);
        let o = sim.observation().as_f32().unwrap();
        let row = &o[5 * FEATURES..6 * FEATURES];
        assert_eq!(&row[POSITION..POSITION + 2], &[3.5, 3.5]);
        assert_eq!(&row[GOAL_OFFSET..GOAL_OFFSET + 2], &[1.0, 0.0]);
        assert_eq!(&row[WALLS..WALLS + 4], &[3.25, 6.25, 3.25, 6.25]);
        // Robot 5's four nearest are 1 (below), 4 (left), 6 (right), 9 (above): all 2 m away,
        // so in index order.
        let offsets: Vec<(f32, f32)> = (0..NEIGHBOURS)
            .map(|k| (row[NEIGHBOUR + 4 * k], row[NEIGHBOUR + 4 * k + 1]))
            .collect();
        assert_eq!(offsets, [(0.0, -2.0), (-2.0, 0.0), (2.0, 0.0), (0.0, 2.0)]);
    }

    #[test]
    fn a_robot_driven_into_a_wall_stops_there_and_counts_a_contact() {
        let mut sim = Swarm2d::new(MAX_EPISODE_STEPS);
        let (mut starts, goals) = grid();
        starts[0] = [ROBOT_RADIUS + 0.05, 1.5];
        sim.begin(starts, goals);
        let mut rows = [[0.0; 2]; ROBOTS];
        rows[0] = [-1.0, 0.0];
        let t = sim.step(&actions(rows)).unwrap();
        assert_eq!(sim.position[0], [ROBOT_RADIUS, 1.5]);
        assert_eq!(sim.counters()[1].value, 1.0);
        assert!(t.reward < 0.0);
        // Resting against the wall without pushing is no contact.
        sim.step(&still()).unwrap();
        assert_eq!(sim.counters()[1].value, 1.0);
    }

    #[test]
    fn two_robots_driven_together_are_pushed_apart_and_count_one_contact() {
        let mut sim = Swarm2d::new(MAX_EPISODE_STEPS);
        let (mut starts, goals) = grid();
        starts[1] = [starts[0][0] + 0.55, starts[0][1]];
        sim.begin(starts, goals);
        let mut rows = [[0.0; 2]; ROBOTS];
        rows[0] = [1.0, 0.0];
        rows[1] = [-1.0, 0.0];
        sim.step(&actions(rows)).unwrap();
        assert_eq!(sim.counters()[1].value, 1.0);
        let gap = distance(sim.position[0], sim.position[1]);
        assert!((gap - 2.0 * ROBOT_RADIUS).abs() < 1e-5, "{gap}");
        // Symmetric pushes leave the midpoint where it was.
        assert!((sim.position[0][0] + sim.position[1][0] - 2.0 * 1.5 - 0.55).abs() < 1e-5);
    }

    #[test]
    fn speed_is_clipped_per_component_then_in_length() {
        let mut sim = Swarm2d::new(MAX_EPISODE_STEPS);
        let (starts, goals) = grid();
        sim.begin(starts, goals);
        let mut rows = [[0.0; 2]; ROBOTS];
        rows[5] = [3.0, 3.0];
        sim.step(&actions(rows)).unwrap();
        let v = sim.velocity[5];
        assert!(
            (v[0] - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6,
            "{v:?}"
        );
        assert!((v[0] - v[1]).abs() < 1e-6);
    }

    #[test]
    fn all_robots_on_their_goals_terminate_with_full_success() {
        let mut sim = Swarm2d::new(MAX_EPISODE_STEPS);
        let (starts, _) = grid();
        let goals = starts.map(|p: Vec2| [p[0] + 0.05, p[1]]);
        sim.begin(starts, goals);
        assert_eq!(sim.counters()[0].value, 1.0);
        let t = sim.step(&actions([[0.5, 0.0]; ROBOTS])).unwrap();
        assert!(t.terminated);
        assert!(t.reward > ARRIVAL_BONUS);
        assert_eq!(sim.counters()[0].value, 1.0);
    }

    #[test]
    fn bad_states_are_refused_and_change_nothing() {
        let mut sim = Swarm2d::new(MAX_EPISODE_STEPS);
        sim.reset(3).unwrap();
        let before = sim.observation().clone();
        let (starts, goals) = grid();
        let state = |starts: [Vec2; ROBOTS], goals: [Vec2; ROBOTS]| -> Vec<f64> {
            starts
                .iter()
                .chain(&goals)
                .flatten()
                .map(|&v| f64::from(v))
                .collect()
        };
        let mut overlapping = starts;
        overlapping[1] = [overlapping[0][0] + 0.3, overlapping[0][1]];
        let mut outside = goals;
        outside[3] = [ARENA, 5.0];
        for bad in [
            state(overlapping, goals),
            state(starts, outside),
            vec![1.0; STATE_LEN - 1],
        ] {
            assert!(sim.reset_to_state(&bad).is_err());
        }
        assert_eq!(sim.observation(), &before);
        sim.reset_to_state(&state(starts, goals)).unwrap();
    }
}
