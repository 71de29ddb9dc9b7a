//! swarm2d against a reference written from its documented rules alone: plain loops over plain
//! vectors, nothing shared with the sim but its public constants. Both play the same scenes
//! with the same actions and must agree step for step on observations, rewards, flags and
//! counters.

use ale_sim::{Rng, Sim, Tensor, TensorData};
use ale_sims::swarm2d::{
    ARENA, ARRIVAL_BONUS, CONTACT_PENALTY, DT, FEATURES, GOAL_RADIUS, MAX_EPISODE_STEPS, MAX_SPEED,
    NEIGHBOURS, PASSES, ROBOT_RADIUS, ROBOTS, Swarm2d,
};

/// The documented physics, written out.
struct Reference {
    x: Vec<f32>,
    y: Vec<f32>,
    vx: Vec<f32>,
    vy: Vec<f32>,
    gx: Vec<f32>,
    gy: Vec<f32>,
    contacts: f64,
    steps: u32,
}

struct Outcome {
    reward: f64,
    terminated: bool,
    truncated: bool,
}

impl Reference {
    fn new(starts: &[(f32, f32)], goals: &[(f32, f32)]) -> Reference {
        Reference {
            x: starts.iter().map(|p| p.0).collect(),
            y: starts.iter().map(|p| p.1).collect(),
            vx: vec![0.0; ROBOTS],
            vy: vec![0.0; ROBOTS],
            gx: goals.iter().map(|p| p.0).collect(),
            gy: goals.iter().map(|p| p.1).collect(),
            contacts: 0.0,
            steps: 0,
        }
    }

    fn goal_distance(&self, i: usize) -> f32 {
        let dx = self.gx[i] - self.x[i];
        let dy = self.gy[i] - self.y[i];
        (dx * dx + dy * dy).sqrt()
    }

    fn success_fraction(&self) -> f64 {
        let mut at_goal = 0;
        for i in 0..ROBOTS {
            if self.goal_distance(i) < GOAL_RADIUS {
                at_goal += 1;
            }
        }
        at_goal as f64 / ROBOTS as f64
    }

    fn step(&mut self, action: &[f32]) -> Outcome {
        let before: Vec<f32> = (0..ROBOTS).map(|i| self.goal_distance(i)).collect();
        // Velocities: each component clipped, then the length.
        for i in 0..ROBOTS {
            let mut vx = action[2 * i].clamp(-MAX_SPEED, MAX_SPEED);
            let mut vy = action[2 * i + 1].clamp(-MAX_SPEED, MAX_SPEED);
            let speed = (vx * vx + vy * vy).sqrt();
            if speed > MAX_SPEED {
                vx *= MAX_SPEED / speed;
                vy *= MAX_SPEED / speed;
            }
            self.vx[i] = vx;
            self.vy[i] = vy;
        }
        // Everyone moves at once.
        for i in 0..ROBOTS {
            self.x[i] += self.vx[i] * DT;
            self.y[i] += self.vy[i] * DT;
        }
        // Contacts at the proposed positions: overlapping pairs, robots crossing a wall.
        let touch = 2.0 * ROBOT_RADIUS;
        let mut contacts = 0;
        for i in 0..ROBOTS {
            for j in 0..ROBOTS {
                if i < j {
                    let dx = self.x[j] - self.x[i];
                    let dy = self.y[j] - self.y[i];
                    if dx * dx + dy * dy < touch * touch {
                        contacts += 1;
                    }
                }
            }
            let low = ROBOT_RADIUS;
            let high = ARENA - ROBOT_RADIUS;
            if self.x[i] < low || self.x[i] > high || self.y[i] < low || self.y[i] > high {
                contacts += 1;
            }
        }
        // Resolution: passes of pairwise half-and-half pushes, then the walls.
        for _ in 0..PASSES {
            for i in 0..ROBOTS {
                for j in i + 1..ROBOTS {
                    let dx = self.x[j] - self.x[i];
                    let dy = self.y[j] - self.y[i];
                    let d = (dx * dx + dy * dy).sqrt();
                    if d < touch {
                        let (nx, ny) = if d > 0.0 {
                            (dx / d, dy / d)
                        } else {
                            (1.0, 0.0)
                        };
                        let half = (touch - d) / 2.0;
                        self.x[i] -= nx * half;
                        self.y[i] -= ny * half;
                        self.x[j] += nx * half;
                        self.y[j] += ny * half;
                    }
                }
            }
            for i in 0..ROBOTS {
                self.x[i] = self.x[i].clamp(ROBOT_RADIUS, ARENA - ROBOT_RADIUS);
                self.y[i] = self.y[i].clamp(ROBOT_RADIUS, ARENA - ROBOT_RADIUS);
            }
        }
        self.contacts += contacts as f64;
        let mut reward = 0.0;
        for (i, b) in before.iter().enumerate() {
            reward += f64::from(b - self.goal_distance(i));
        }
        reward -= CONTACT_PENALTY * contacts as f64;
        let terminated = self.success_fraction() == 1.0;
        if terminated {
            reward += ARRIVAL_BONUS;
        }
        self.steps += 1;
        Outcome {
            reward,
            terminated,
            truncated: self.steps >= MAX_EPISODE_STEPS,
        }
    }

    /// One row per robot: position, goal offset, velocity, wall clearances, then the four
    /// nearest others (by distance, then index) as relative position and relative velocity.
    fn observation(&self) -> Vec<f32> {
        let mut out = Vec::new();
        for i in 0..ROBOTS {
            out.extend([self.x[i], self.y[i]]);
            out.extend([self.gx[i] - self.x[i], self.gy[i] - self.y[i]]);
            out.extend([self.vx[i], self.vy[i]]);
            out.extend([
                self.x[i] - ROBOT_RADIUS,
                ARENA - ROBOT_RADIUS - self.x[i],
                self.y[i] - ROBOT_RADIUS,
                ARENA - ROBOT_RADIUS - self.y[i],
            ]);
            let mut others: Vec<(f32, usize)> = (0..ROBOTS)
                .filter(|&j| j != i)
                .map(|j| {
                    let dx = self.x[j] - self.x[i];
                    let dy = self.y[j] - self.y[i];
                    (dx * dx + dy * dy, j)
                })
                .collect();
            others.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
            for &(_, j) in others.iter().take(NEIGHBOURS) {
                out.extend([self.x[j] - self.x[i], self.y[j] - self.y[i]]);
                out.extend([self.vx[j] - self.vx[i], self.vy[j] - self.vy[i]]);
            }
        }
        out
    }
}

/// Robot starts and goals.
struct Scene {
    starts: Vec<(f32, f32)>,
    goals: Vec<(f32, f32)>,
}

/// A scene: robots on a jittered 4 × 4 grid of `spacing`, centred at `centre`; goals on
/// another jittered grid, shuffled.
fn scene(rng: &mut Rng, spacing: f64, centre: (f64, f64)) -> Scene {
    let jitter = (spacing - 2.0 * f64::from(ROBOT_RADIUS) - 0.01) / 2.0;
    let grid = |rng: &mut Rng, spacing: f64, centre: (f64, f64)| -> Vec<(f32, f32)> {
        (0..ROBOTS)
            .map(|i| {
                let gx = centre.0 + spacing * ((i % 4) as f64 - 1.5);
                let gy = centre.1 + spacing * ((i / 4) as f64 - 1.5);
                (
                    (gx + rng.uniform(-jitter, jitter)) as f32,
                    (gy + rng.uniform(-jitter, jitter)) as f32,
                )
            })
            .collect()
    };
    let starts = grid(rng, spacing, centre);
    let mut goals = grid(rng, 2.0, (5.0, 5.0));
    for i in (1..goals.len()).rev() {
        goals.swap(i, rng.below(i as u64 + 1) as usize);
    }
    Scene { starts, goals }
}

fn state(starts: &[(f32, f32)], goals: &[(f32, f32)]) -> Vec<f64> {
    starts
        .iter()
        .chain(goals)
        .flat_map(|p| [f64::from(p.0), f64::from(p.1)])
        .collect()
}

/// How the test picks actions: from the sim's observation, so episodes go where policies go.
#[derive(Debug, Clone, Copy)]
enum Driver {
    /// Uniform in ±1.5 m/s per component: beyond the bounds, to exercise the clipping.
    Random,
    /// Toward the goal at full speed, with noise: crowds meet and push.
    Greedy,
    /// Everyone toward the arena's left wall: a pile-up.
    Pile,
}

fn actions(driver: Driver, observation: &[f32], rng: &mut Rng) -> Vec<f32> {
    let mut out = Vec::with_capacity(2 * ROBOTS);
    for i in 0..ROBOTS {
        let row = &observation[i * FEATURES..(i + 1) * FEATURES];
        let (ax, ay) = match driver {
            Driver::Random => (rng.uniform(-1.5, 1.5), rng.uniform(-1.5, 1.5)),
            Driver::Greedy => {
                let (dx, dy) = (f64::from(row[2]), f64::from(row[3]));
                let d = dx.hypot(dy).max(1e-6);
                let gain = (d / 0.3).min(1.0) / d;
                (
                    dx * gain + rng.uniform(-0.2, 0.2),
                    dy * gain + rng.uniform(-0.2, 0.2),
                )
            }
            Driver::Pile => (-1.0, rng.uniform(-0.3, 0.3)),
        };
        out.extend([ax as f32, ay as f32]);
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-4 * (1.0 + a.abs().max(b.abs()))
}

/// Plays one episode on both; returns (steps, contacts) for the coverage checks.
fn compare(driver: Driver, episode: u64, spacing: f64, centre: (f64, f64)) -> (u32, f64, bool) {
    let mut rng = Rng::new(episode);
    let Scene { starts, goals } = scene(&mut rng, spacing, centre);
    let mut sim = Swarm2d::new(MAX_EPISODE_STEPS);
    sim.reset_to_state(&state(&starts, &goals)).unwrap();
    let mut reference = Reference::new(&starts, &goals);
    let context = |step: u32| format!("{driver:?} episode {episode} step {step}");
    let mut terminated = false;
    for step in 0..MAX_EPISODE_STEPS {
        let ours = sim.observation().as_f32().unwrap().to_vec();
        let theirs = reference.observation();
        assert_eq!(ours.len(), theirs.len());
        for (k, (a, b)) in ours.iter().zip(&theirs).enumerate() {
            assert!(
                close(f64::from(*a), f64::from(*b)),
                "{}: observation [{}, {}] is {a}, the reference says {b}",
                context(step),
                k / FEATURES,
                k % FEATURES
            );
        }
        let action = actions(driver, &ours, &mut rng);
        let tensor = Tensor::new(vec![ROBOTS, 2], TensorData::F32(action.clone())).unwrap();
        let t = sim.step(&tensor).unwrap();
        let r = reference.step(&action);
        assert!(
            close(t.reward, r.reward),
            "{}: reward {} vs {}",
            context(step),
            t.reward,
            r.reward
        );
        assert_eq!(
            (t.terminated, t.truncated),
            (r.terminated, r.truncated),
            "{}",
            context(step)
        );
        let counters = sim.counters();
        assert_eq!(
            counters[0].value,
            reference.success_fraction(),
            "{}",
            context(step)
        );
        assert_eq!(counters[1].value, reference.contacts, "{}", context(step));
        if t.is_done() {
            terminated = t.terminated;
            break;
        }
    }
    (sim.episode_steps(), reference.contacts, terminated)
}

#[test]
fn swarm2d_matches_the_reference_with_random_actions() {
    let mut contacts = 0.0;
    for episode in 0..6 {
        let (steps, c, _) = compare(Driver::Random, episode, 2.0, (5.0, 5.0));
        assert_eq!(steps, MAX_EPISODE_STEPS);
        contacts += c;
    }
    assert!(contacts > 0.0, "random play should touch a wall or a robot");
}

#[test]
fn swarm2d_matches_the_reference_in_crowds_and_pile_ups() {
    let mut contacts = 0.0;
    let mut terminated = 0;
    for episode in 0..6 {
        let (_, c, t) = compare(Driver::Greedy, 100 + episode, 0.56, (5.0, 5.0));
        contacts += c;
        terminated += usize::from(t);
        let (_, c, _) = compare(Driver::Pile, 200 + episode, 1.0, (6.0, 5.0));
        assert!(c > 100.0, "a pile-up makes contacts, got {c}");
        contacts += c;
    }
    assert!(contacts > 0.0);
    assert!(
        terminated > 0,
        "some greedy episodes end with every robot home"
    );
}
