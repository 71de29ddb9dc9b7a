//! `nav2d`: a differential-drive robot crosses a 10 m × 10 m arena from the bottom to a goal at
//! the top through a random obstacle field, sensing with a 32-beam lidar.
//!
//! Each episode's seed draws a difficulty and with it the number, size and place of the
//! obstacles (BARN-style: from a sparse field to a cluttered one); a breadth-first search over
//! the inflated occupancy grid rejects fields with no way through. The obstacles are rapier2d
//! colliders in a BVH; lidar beams are ray casts and collision checks shape intersections
//! through rapier's query pipeline. The robot moves kinematically (unicycle model): a move that
//! would collide is refused, counted, and the robot stays put.
//!
//! The obstacle field is the rollout's hidden scene: the observation carries only the lidar
//! ranges, the goal's distance and bearing, and the robot's own velocities.

use std::f32::consts::{PI, TAU};

use rapier2d::prelude::*;

use crate::draw::{Drawing, Role, Viewport, obs};
use crate::rng::Rng;
use crate::sim::{Counter, EpisodeClock, Sim, SimError, Transition, state_array};
use crate::space::{BoxSpace, Space};
use crate::tensor::{DType, Tensor};
use ale_sim::MapView;

pub const ID: &str = "nav2d";
pub const MAX_EPISODE_STEPS: u32 = 500;

pub const BEAMS: usize = 32;
pub const LIDAR_RANGE: f32 = 5.0;
pub const ROBOT_RADIUS: f32 = 0.2;
pub const DT: f32 = 0.1;
pub const ARENA: f32 = 10.0;
pub const GOAL_RADIUS: f32 = 0.4;
const START: (f32, f32) = (5.0, 0.8);
const GOAL: (f32, f32) = (5.0, 9.2);
pub const MAX_SPEED: f32 = 1.0;
pub const MAX_REVERSE: f32 = 0.5;
pub const MAX_TURN: f32 = 2.0;

/// Observation layout: lidar ranges, then these.
pub const GOAL_DISTANCE: usize = BEAMS;
pub const GOAL_BEARING: usize = BEAMS + 1;
pub const SPEED: usize = BEAMS + 2;
pub const TURN_RATE: usize = BEAMS + 3;
pub const OBSERVATION_LEN: usize = BEAMS + 4;

/// Counter names.
pub const SUCCESS: &str = "success";
pub const TIME_TO_GOAL: &str = "time_to_goal";
pub const COLLISIONS: &str = "collisions";
pub const COUNTERS: &[&str] = &[SUCCESS, TIME_TO_GOAL, COLLISIONS];

/// Angle of beam `i` relative to the robot's heading.
pub fn beam_angle(i: usize) -> f32 {
    TAU * i as f32 / BEAMS as f32
}

fn wrap_angle(a: f32) -> f32 {
    (a + PI).rem_euclid(TAU) - PI
}

/// The static world of one episode: walls and obstacles in a BVH.
struct World {
    /// The obstacles as drawn, for the operator's map ([`MapView`]).
    obstacles: Vec<Obstacle>,
    colliders: ColliderSet,
    bodies: RigidBodySet,
    broad_phase: BroadPhaseBvh,
    narrow_phase: NarrowPhase,
    robot: Ball,
}

impl World {
    fn new(obstacles: Vec<Obstacle>) -> World {
        let mut colliders = ColliderSet::new();
        let half = ARENA / 2.0;
        let walls = [
            ((half, -0.1), (half + 0.2, 0.1)),
            ((half, ARENA + 0.1), (half + 0.2, 0.1)),
            ((-0.1, half), (0.1, half + 0.2)),
            ((ARENA + 0.1, half), (0.1, half + 0.2)),
        ];
        for ((x, y), (hx, hy)) in walls {
            colliders.insert(ColliderBuilder::cuboid(hx, hy).translation(Vector::new(x, y)));
        }
        for o in &obstacles {
            let builder = match o.shape {
                ObstacleShape::Circle(r) => ColliderBuilder::ball(r),
                ObstacleShape::Box(hx, hy) => ColliderBuilder::cuboid(hx, hy).rotation(o.angle),
            };
            colliders.insert(builder.translation(Vector::new(o.x, o.y)));
        }
        let params = IntegrationParameters::default();
        let mut broad_phase = BroadPhaseBvh::new();
        for (handle, collider) in colliders.iter() {
            broad_phase.set_aabb(&params, handle, collider.compute_aabb());
        }
        World {
            obstacles,
            colliders,
            bodies: RigidBodySet::new(),
            broad_phase,
            narrow_phase: NarrowPhase::new(),
            robot: Ball::new(ROBOT_RADIUS),
        }
    }

    fn query(&self) -> QueryPipeline<'_> {
        self.broad_phase.as_query_pipeline(
            self.narrow_phase.query_dispatcher(),
            &self.bodies,
            &self.colliders,
            QueryFilter::default(),
        )
    }

    /// Whether a disc of `radius` at (x, y) touches anything.
    fn blocked(&self, x: f32, y: f32, radius: f32) -> bool {
        let pose = Pose::from_translation(Vector::new(x, y));
        let query = self.query();
        if radius == ROBOT_RADIUS {
            query.intersect_shape(pose, &self.robot).next().is_some()
        } else {
            query
                .intersect_shape(pose, &Ball::new(radius))
                .next()
                .is_some()
        }
    }

    /// Lidar ranges from (x, y) with heading `theta`, written into `out`.
    fn scan(&self, x: f32, y: f32, theta: f32, out: &mut [f32]) {
        let query = self.query();
        let origin = Vector::new(x, y);
        for (i, range) in out.iter_mut().enumerate() {
            let (s, c) = (theta + beam_angle(i)).sin_cos();
            let ray = Ray::new(origin, Vector::new(c, s));
            *range = query
                .cast_ray(&ray, LIDAR_RANGE, true)
                .map_or(LIDAR_RANGE, |(_, toi)| toi);
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum ObstacleShape {
    Circle(f32),
    Box(f32, f32),
}

#[derive(Debug, Clone, Copy)]
struct Obstacle {
    x: f32,
    y: f32,
    angle: f32,
    shape: ObstacleShape,
}

/// Grid resolution of the feasibility check.
const GRID: f32 = 0.2;
/// Clearance beyond the robot's radius every field keeps along at least one way through:
/// passages are at least 2 × (0.2 + 0.15) = 0.7 m wide.
const PASSAGE_MARGIN: f32 = 0.15;

/// Whether the start connects to the goal for a disc of `ROBOT_RADIUS + PASSAGE_MARGIN`.
fn path_exists(world: &World) -> bool {
    let n = (ARENA / GRID) as usize;
    let cell = |i: usize| (i as f32 + 0.5) * GRID;
    let index = |x: f32| ((x / GRID) as usize).min(n - 1);
    let mut free = vec![false; n * n];
    for (k, f) in free.iter_mut().enumerate() {
        *f = !world.blocked(cell(k % n), cell(k / n), ROBOT_RADIUS + PASSAGE_MARGIN);
    }
    let start = index(START.1) * n + index(START.0);
    let goal = index(GOAL.1) * n + index(GOAL.0);
    if !free[start] || !free[goal] {
        return false;
    }
    let mut seen = vec![false; n * n];
    let mut queue = std::collections::VecDeque::from([start]);
    seen[start] = true;
    while let Some(k) = queue.pop_front() {
        if k == goal {
            return true;
        }
        let (i, j) = (k % n, k / n);
        let neighbours = [
            (i > 0).then(|| k - 1),
            (i + 1 < n).then(|| k + 1),
            (j > 0).then(|| k - n),
            (j + 1 < n).then(|| k + n),
        ];
        for next in neighbours.into_iter().flatten() {
            if free[next] && !seen[next] {
                seen[next] = true;
                queue.push_back(next);
            }
        }
    }
    false
}

/// The obstacle field of `seed`: fields without a way through are redrawn.
fn field(seed: u64) -> World {
    let mut rng = Rng::new(seed);
    loop {
        let world = World::new(draw_obstacles(&mut rng));
        if path_exists(&world) {
            return world;
        }
    }
}

/// Draws an obstacle field from `rng`: difficulty in [0, 1) sets how many obstacles.
fn draw_obstacles(rng: &mut Rng) -> Vec<Obstacle> {
    let difficulty = rng.next_f64() as f32;
    let count = 8 + (difficulty * 24.0) as usize;
    let mut obstacles = Vec::with_capacity(count);
    while obstacles.len() < count {
        let x = rng.uniform(0.5, 9.5) as f32;
        let y = rng.uniform(2.0, 8.0) as f32;
        let shape = if rng.below(2) == 0 {
            ObstacleShape::Circle(rng.uniform(0.2, 0.5) as f32)
        } else {
            ObstacleShape::Box(rng.uniform(0.15, 0.6) as f32, rng.uniform(0.15, 0.6) as f32)
        };
        let angle = rng.uniform(0.0, std::f64::consts::PI) as f32;
        obstacles.push(Obstacle { x, y, angle, shape });
    }
    obstacles
}

pub struct Nav2d {
    world: World,
    x: f32,
    y: f32,
    theta: f32,
    speed: f32,
    turn_rate: f32,
    goal_distance: f32,
    clock: EpisodeClock,
    counters: [Counter; 3],
    observation: Tensor,
    observation_space: Space,
    action_space: Space,
}

impl Nav2d {
    pub fn new(max_steps: u32) -> Self {
        let mut low = vec![0.0; BEAMS];
        let mut high = vec![f64::from(LIDAR_RANGE); BEAMS];
        low.extend([
            0.0,
            -std::f64::consts::PI,
            -f64::from(MAX_REVERSE),
            -f64::from(MAX_TURN),
        ]);
        high.extend([
            20.0,
            std::f64::consts::PI,
            f64::from(MAX_SPEED),
            f64::from(MAX_TURN),
        ]);
        let mut labels: Vec<String> = (0..BEAMS)
            .map(|i| format!("lidar {:>3}°", (beam_angle(i).to_degrees()).round() as i32))
            .collect();
        labels.extend(["goal distance", "goal bearing", "speed", "turn rate"].map(String::from));
        let mut observation_space = BoxSpace::vector(DType::F32, low, high);
        observation_space.labels = labels;
        Nav2d {
            world: World::new(Vec::new()),
            x: START.0,
            y: START.1,
            theta: PI / 2.0,
            speed: 0.0,
            turn_rate: 0.0,
            goal_distance: 0.0,
            clock: EpisodeClock::new(max_steps),
            counters: [SUCCESS, TIME_TO_GOAL, COLLISIONS].map(|name| Counter { name, value: 0.0 }),
            observation: Tensor::zeros(vec![OBSERVATION_LEN], DType::F32),
            observation_space: Space::Box(observation_space),
            action_space: Space::Box(
                BoxSpace::vector(
                    DType::F32,
                    vec![-f64::from(MAX_REVERSE), -f64::from(MAX_TURN)],
                    vec![f64::from(MAX_SPEED), f64::from(MAX_TURN)],
                )
                .with_labels(&["speed (m/s)", "turn rate (rad/s)"]),
            ),
        }
    }

    /// Starts an episode in the current world.
    fn begin(&mut self, x: f32, y: f32, theta: f32) {
        (self.x, self.y, self.theta) = (x, y, theta);
        (self.speed, self.turn_rate) = (0.0, 0.0);
        self.goal_distance = self.distance_to_goal();
        for c in &mut self.counters {
            c.value = 0.0;
        }
        self.clock.reset();
        self.write_observation();
    }

    fn distance_to_goal(&self) -> f32 {
        (GOAL.0 - self.x).hypot(GOAL.1 - self.y)
    }

    fn write_observation(&mut self) {
        let bearing = wrap_angle((GOAL.1 - self.y).atan2(GOAL.0 - self.x) - self.theta);
        let (x, y, theta) = (self.x, self.y, self.theta);
        let (distance, speed, turn) = (self.goal_distance, self.speed, self.turn_rate);
        if let Some(o) = self.observation.as_f32_mut() {
            self.world.scan(x, y, theta, &mut o[..BEAMS]);
            o[GOAL_DISTANCE] = distance;
            o[GOAL_BEARING] = bearing;
            o[SPEED] = speed;
            o[TURN_RATE] = turn;
        }
    }
}

impl Sim for Nav2d {
    crate::sim_accessors!(ID);

    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let world = field(seed);
        self.world = world;
        self.begin(START.0, START.1, PI / 2.0);
        Ok(())
    }

    /// `[x, y, heading, seed]`: the obstacle field of `seed`, the robot placed at (x, y).
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        let [x, y, theta, seed] = state_array(state)?;
        let (x, y) = (x as f32, y as f32);
        if !(0.0..=ARENA).contains(&x) || !(0.0..=ARENA).contains(&y) {
            return Err(SimError::State(format!("({x}, {y}) is outside the arena")));
        }
        let world = field(seed as u64);
        if world.blocked(x, y, ROBOT_RADIUS) {
            return Err(SimError::State(format!(
                "the robot at ({x}, {y}) overlaps an obstacle"
            )));
        }
        self.world = world;
        self.begin(x, y, theta as f32);
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        let [v, w] = crate::action::box_f32::<2>(&self.action_space, action)?;
        self.clock.check_can_step()?;
        let v = v.clamp(-MAX_REVERSE, MAX_SPEED);
        let w = w.clamp(-MAX_TURN, MAX_TURN);
        let theta = wrap_angle(self.theta + w * DT);
        let heading = self.theta + 0.5 * w * DT;
        let (nx, ny) = (
            self.x + v * heading.cos() * DT,
            self.y + v * heading.sin() * DT,
        );
        let mut reward = -0.05;
        self.theta = theta;
        self.turn_rate = w;
        if self.world.blocked(nx, ny, ROBOT_RADIUS) {
            self.speed = 0.0;
            self.counters[2].value += 1.0;
            reward -= 1.0;
        } else {
            (self.x, self.y) = (nx, ny);
            self.speed = v;
        }
        let distance = self.distance_to_goal();
        reward += 10.0 * f64::from(self.goal_distance - distance);
        self.goal_distance = distance;
        let terminated = distance < GOAL_RADIUS;
        if terminated {
            reward += 10.0;
            self.counters[0].value = 1.0;
        }
        self.write_observation();
        let truncated = self.clock.tick(terminated);
        self.counters[1].value = f64::from(self.clock.steps()) * f64::from(DT);
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

/// The robot's own view: itself at the centre facing up, each lidar beam to where it hit, and
/// the goal where distance and bearing put it. Obstacles appear only as the beams' hits.
pub fn draw(observation: &Tensor) -> Drawing {
    let r = f64::from(LIDAR_RANGE);
    let mut d = Drawing::new(Viewport {
        x_min: -r,
        x_max: r,
        y_min: -r,
        y_max: r,
    });
    // Heading points up: a beam at angle a (counter-clockwise from heading) goes to
    // (-sin a, cos a).
    let direction = |a: f64| (-a.sin(), a.cos());
    for i in 0..BEAMS {
        let range = obs(observation, i);
        let (dx, dy) = direction(f64::from(beam_angle(i)));
        let end = (dx * range, dy * range);
        d.line((0.0, 0.0), end, Role::Sensor);
        if range < r - 1e-3 {
            d.circle(end, 0.06, Role::Hazard);
        }
    }
    let (gd, gb) = (
        obs(observation, GOAL_DISTANCE),
        obs(observation, GOAL_BEARING),
    );
    let (gx, gy) = direction(gb);
    let shown = gd.min(r - 0.3);
    d.circle((gx * shown, gy * shown), f64::from(GOAL_RADIUS), Role::Goal);
    d.circle((0.0, 0.0), f64::from(ROBOT_RADIUS), Role::Body);
    d.line((0.0, 0.0), (0.0, f64::from(ROBOT_RADIUS) * 1.8), Role::Limb);
    d
}

/// The operator's map of a practice env: the whole arena from above, with the obstacle field
/// the observation hides, the goal, where the lidar's beams hit, and the robot at its pose.
impl MapView for Nav2d {
    fn map(&self) -> Drawing {
        let margin = 0.3;
        let mut d = Drawing::new(Viewport {
            x_min: -margin,
            x_max: f64::from(ARENA) + margin,
            y_min: -margin,
            y_max: f64::from(ARENA) + margin,
        });
        let a = f64::from(ARENA);
        d.polygon(vec![(0.0, 0.0), (a, 0.0), (a, a), (0.0, a)], Role::Ground);
        for o in &self.world.obstacles {
            let center = (f64::from(o.x), f64::from(o.y));
            match o.shape {
                ObstacleShape::Circle(r) => d.circle(center, f64::from(r), Role::Hazard),
                ObstacleShape::Box(hx, hy) => {
                    let (s, c) = f64::from(o.angle).sin_cos();
                    let corner =
                        |u: f64, v: f64| (center.0 + u * c - v * s, center.1 + u * s + v * c);
                    let (hx, hy) = (f64::from(hx), f64::from(hy));
                    d.polygon(
                        vec![
                            corner(-hx, -hy),
                            corner(hx, -hy),
                            corner(hx, hy),
                            corner(-hx, hy),
                        ],
                        Role::Hazard,
                    );
                }
            }
        }
        d.circle(
            (f64::from(GOAL.0), f64::from(GOAL.1)),
            f64::from(GOAL_RADIUS),
            Role::Goal,
        );
        let robot = (f64::from(self.x), f64::from(self.y));
        let theta = f64::from(self.theta);
        if let Some(ranges) = self.observation.as_f32() {
            for (i, range) in ranges.iter().take(BEAMS).enumerate() {
                if *range >= LIDAR_RANGE {
                    continue;
                }
                let (s, c) = (theta + f64::from(beam_angle(i))).sin_cos();
                let r = f64::from(*range);
                d.circle((robot.0 + c * r, robot.1 + s * r), 0.05, Role::Sensor);
            }
        }
        d.circle(robot, f64::from(ROBOT_RADIUS), Role::Body);
        let nose = f64::from(ROBOT_RADIUS) * 1.8;
        d.line(
            robot,
            (robot.0 + theta.cos() * nose, robot.1 + theta.sin() * nose),
            Role::Limb,
        );
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn forward() -> Tensor {
        Tensor::vector_f32(vec![1.0, 0.0])
    }

    #[test]
    fn the_same_seed_gives_the_same_field_and_scan() {
        let (mut a, mut b) = (Nav2d::new(MAX_EPISODE_STEPS), Nav2d::new(MAX_EPISODE_STEPS));
        a.reset(11).unwrap();
        b.reset(11).unwrap();
        assert_eq!(a.observation(), b.observation());
        b.reset(12).unwrap();
        assert_ne!(a.observation(), b.observation());
    }

    /// The operator's map shows the seed's whole field (which the observation hides), the
    /// goal, and the robot where it is, facing where it faces.
    #[test]
    fn the_map_draws_the_hidden_field_and_the_robot_at_its_pose() {
        use crate::draw::Shape;
        let mut sim = Nav2d::new(MAX_EPISODE_STEPS);
        sim.reset(11).unwrap();
        let hazards = |d: &Drawing| {
            d.shapes
                .iter()
                .filter(|s| {
                    matches!(
                        s,
                        Shape::Circle {
                            role: Role::Hazard,
                            ..
                        } | Shape::Polygon {
                            role: Role::Hazard,
                            ..
                        }
                    )
                })
                .count()
        };
        let body = |d: &Drawing| {
            d.shapes.iter().find_map(|s| match s {
                Shape::Circle {
                    center,
                    role: Role::Body,
                    ..
                } => Some(*center),
                _ => None,
            })
        };
        let map = sim.map();
        assert_eq!(hazards(&map), sim.world.obstacles.len());
        assert!(hazards(&map) >= 8, "every field has at least 8 obstacles");
        assert_eq!(body(&map), Some((f64::from(START.0), f64::from(START.1))));
        assert!(map.shapes.iter().any(|s| matches!(
            s,
            Shape::Circle {
                role: Role::Goal,
                ..
            }
        )));
        let hits = map
            .shapes
            .iter()
            .filter(|s| {
                matches!(
                    s,
                    Shape::Circle {
                        role: Role::Sensor,
                        ..
                    }
                )
            })
            .count();
        let ranges = sim.observation().as_f32().unwrap()[..BEAMS].to_vec();
        assert_eq!(hits, ranges.iter().filter(|r| **r < LIDAR_RANGE).count());
        assert!(hits > 0, "the walls are in range of some beams: {ranges:?}");

        // Driving forward (north) moves the robot on the map, not the field.
        sim.step(&forward()).unwrap();
        let moved = sim.map();
        let (x, y) = body(&moved).unwrap();
        assert!((x - f64::from(START.0)).abs() < 1e-6, "{x}");
        assert!(y > f64::from(START.1), "{y}");
        assert_eq!(hazards(&moved), hazards(&map));

        // Another seed, another field.
        let mut other = Nav2d::new(MAX_EPISODE_STEPS);
        other.reset(12).unwrap();
        assert_ne!(other.map().shapes, map.shapes);
    }

    #[test]
    fn lidar_sees_the_walls_of_an_empty_arena() {
        let mut sim = Nav2d::new(MAX_EPISODE_STEPS);
        sim.begin(5.0, 5.0, PI / 2.0);
        let o = sim.observation().as_f32().unwrap();
        // Beam 0 points along the heading (up): the top wall is 5 m away, at the range limit.
        assert!((o[0] - 5.0).abs() < 1e-4, "{}", o[0]);
        sim.begin(5.0, 8.0, PI / 2.0);
        let o = sim.observation().as_f32().unwrap();
        assert!((o[0] - 2.0).abs() < 1e-3, "{}", o[0]);
        // Beam 8 points left (90° counter-clockwise): the left wall is 5 m away.
        assert!((o[8] - 5.0).abs() < 1e-3, "{}", o[8]);
    }

    #[test]
    fn a_state_inside_an_obstacle_is_refused_and_changes_nothing() {
        let mut sim = Nav2d::new(MAX_EPISODE_STEPS);
        sim.reset(3).unwrap();
        let before = sim.observation().clone();
        assert!(sim.reset_to_state(&[-1.0, 5.0, 0.0, 3.0]).is_err());
        assert!(
            sim.reset_to_state(&[0.05, 5.0, 0.0, 3.0]).is_err(),
            "inside the wall"
        );
        assert_eq!(sim.observation(), &before);
        sim.reset_to_state(&[5.0, 1.0, 0.0, 3.0]).unwrap();
    }

    #[test]
    fn driving_into_a_wall_is_refused_and_counted() {
        let mut sim = Nav2d::new(MAX_EPISODE_STEPS);
        sim.begin(5.0, 0.25, -PI / 2.0);
        let t = sim.step(&forward()).unwrap();
        assert!(t.reward < -1.0);
        assert_eq!(sim.counters()[2].value, 1.0);
        assert_eq!((sim.x, sim.y), (5.0, 0.25));
    }

    #[test]
    fn reaching_the_goal_terminates_with_success_and_time() {
        let mut sim = Nav2d::new(MAX_EPISODE_STEPS);
        sim.begin(GOAL.0, GOAL.1 - 0.45, PI / 2.0);
        let t = sim.step(&forward()).unwrap();
        assert!(t.terminated);
        assert_eq!(sim.counters()[0].value, 1.0);
        assert!((sim.counters()[1].value - 0.1).abs() < 1e-6);
    }

    #[test]
    fn every_seeded_field_has_a_way_through() {
        for seed in 0..20 {
            let mut sim = Nav2d::new(MAX_EPISODE_STEPS);
            sim.reset(seed).unwrap();
            assert!(path_exists(&sim.world), "seed {seed}");
        }
    }
}
