//! `reacher2d`: a planar two-link arm on a fixed base must put its fingertip on a target drawn
//! per episode. The arm is a rapier2d multibody (reduced coordinates) with two revolute joints;
//! the elbow has limits at ±2.6 rad. No gravity: the arm moves in the horizontal plane.
//!
//! Action: shoulder and elbow torques in [-1, 1], scaled to ±4 N·m. Targets are drawn 0.8–1.9 m
//! from the shoulder, where the arm reaches them without pressing an elbow limit. The episode terminates with
//! success when the fingertip is within 0.1 m of the target. Counters: `success`, the final
//! `distance`, and `joint_limit_violations` — steps spent pressed against an elbow limit, a
//! zero-target safety metric.

use std::f32::consts::PI;

use rapier2d::prelude::*;

use crate::draw::{Drawing, Role, Viewport, obs};
use crate::rng::Rng;
use crate::sim::{Counter, EpisodeClock, Sim, SimError, Transition, state_array};
use crate::space::{BoxSpace, Space};
use crate::tensor::{DType, Tensor};

pub const ID: &str = "reacher2d";
pub const MAX_EPISODE_STEPS: u32 = 200;

pub const LINK_LENGTH: f32 = 1.0;
const LINK_MASS: f32 = 1.0;
const LINK_RADIUS: f32 = 0.05;
pub const ELBOW_LIMIT: f32 = 2.6;
/// How close to a limit counts as pressing against it, radians.
const LIMIT_TOLERANCE: f32 = 0.02;
pub const MAX_TORQUE: f32 = 4.0;
pub const DT: f32 = 0.02;
pub const SUCCESS_RADIUS: f32 = 0.1;
/// Targets are drawn this far from the shoulder. The nearest reachable with the elbow inside
/// its limits is 2·L·cos(2.6 / 2) ≈ 0.53 m; 0.8 m leaves room to spare.
const MIN_TARGET_RADIUS: f64 = 0.8;
const MAX_TARGET_RADIUS: f64 = 1.9;
const JOINT_DAMPING: f32 = 0.2;

/// Observation layout.
pub const OBSERVATION_LABELS: [&str; 10] = [
    "cos(shoulder)",
    "sin(shoulder)",
    "cos(elbow)",
    "sin(elbow)",
    "shoulder velocity",
    "elbow velocity",
    "target x",
    "target y",
    "fingertip - target x",
    "fingertip - target y",
];

pub const SUCCESS: &str = "success";
pub const DISTANCE: &str = "distance";
pub const JOINT_LIMIT_VIOLATIONS: &str = "joint_limit_violations";
pub const COUNTERS: &[&str] = &[SUCCESS, DISTANCE, JOINT_LIMIT_VIOLATIONS];

fn wrap(a: f32) -> f32 {
    (a + PI).rem_euclid(2.0 * PI) - PI
}

/// The physics world of one episode.
struct Arm {
    pipeline: PhysicsPipeline,
    params: IntegrationParameters,
    islands: IslandManager,
    broad_phase: BroadPhaseBvh,
    narrow_phase: NarrowPhase,
    bodies: RigidBodySet,
    colliders: ColliderSet,
    impulse_joints: ImpulseJointSet,
    multibody_joints: MultibodyJointSet,
    ccd: CCDSolver,
    links: [RigidBodyHandle; 2],
}

impl Arm {
    /// An arm at joint angles `q` with joint velocities `qdot`.
    fn new(q: [f32; 2], qdot: [f32; 2]) -> Arm {
        let mut bodies = RigidBodySet::new();
        let mut colliders = ColliderSet::new();
        let mut multibody_joints = MultibodyJointSet::new();
        let base = bodies.insert(RigidBodyBuilder::fixed());
        let half = LINK_LENGTH / 2.0;
        let links = [0.0, 1.0].map(|i| {
            let body = bodies.insert(
                RigidBodyBuilder::dynamic().translation(Vector::new(half + i * LINK_LENGTH, 0.0)),
            );
            colliders.insert_with_parent(
                // The links give the arm its mass; with its elbow limits the arm cannot fold onto
                // itself, so they collide with nothing.
                ColliderBuilder::capsule_x(half, LINK_RADIUS)
                    .mass(LINK_MASS)
                    .collision_groups(InteractionGroups::none()),
                body,
                &mut bodies,
            );
            body
        });
        let shoulder = RevoluteJointBuilder::new()
            .contacts_enabled(false)
            .local_anchor1(Vector::new(0.0, 0.0))
            .local_anchor2(Vector::new(-half, 0.0));
        let elbow = RevoluteJointBuilder::new()
            .contacts_enabled(false)
            .local_anchor1(Vector::new(half, 0.0))
            .local_anchor2(Vector::new(-half, 0.0))
            .limits([-ELBOW_LIMIT, ELBOW_LIMIT]);
        multibody_joints.insert(base, links[0], shoulder, true);
        let handle = multibody_joints.insert(links[0], links[1], elbow, true);
        if let Some((multibody, _)) = handle.and_then(|h| multibody_joints.get_mut(h)) {
            // The root's joint becomes fixed (no dofs) once the multibody reads its fixed body.
            multibody.forward_kinematics(&bodies, true);
            multibody.apply_displacements(&q);
            multibody.forward_kinematics(&bodies, false);
            multibody.update_rigid_bodies(&mut bodies, false);
            let mut v = multibody.generalized_velocity_mut();
            v[0] = qdot[0];
            v[1] = qdot[1];
            multibody.damping_mut().fill(JOINT_DAMPING);
        }
        let params = IntegrationParameters {
            dt: DT,
            ..IntegrationParameters::default()
        };
        let mut arm = Arm {
            pipeline: PhysicsPipeline::new(),
            params,
            islands: IslandManager::new(),
            broad_phase: BroadPhaseBvh::new(),
            narrow_phase: NarrowPhase::new(),
            bodies,
            colliders,
            impulse_joints: ImpulseJointSet::new(),
            multibody_joints,
            ccd: CCDSolver::new(),
            links,
        };
        // Body velocities follow the joint velocities set above.
        arm.sync_body_velocities(qdot);
        arm
    }

    fn sync_body_velocities(&mut self, qdot: [f32; 2]) {
        let [l1, l2] = self.links;
        let (q1, _) = self.angles();
        let half = LINK_LENGTH / 2.0;
        let w1 = qdot[0];
        let w2 = qdot[0] + qdot[1];
        let elbow = Vector::new(LINK_LENGTH * q1.cos(), LINK_LENGTH * q1.sin());
        let perp = |v: Vector, w: f32| Vector::new(-v.y * w, v.x * w);
        let c1 = elbow * 0.5;
        if let Some(b) = self.bodies.get_mut(l1) {
            b.set_angvel(w1, true);
            b.set_linvel(perp(c1, w1), true);
        }
        let q12 = q1 + self.angles().1;
        let c2_rel = Vector::new(half * q12.cos(), half * q12.sin());
        if let Some(b) = self.bodies.get_mut(l2) {
            b.set_angvel(w2, true);
            b.set_linvel(perp(elbow, w1) + perp(c2_rel, w2), true);
        }
    }

    /// (shoulder, elbow) angles, each in [-pi, pi).
    fn angles(&self) -> (f32, f32) {
        let angle = |h: RigidBodyHandle| self.bodies.get(h).map_or(0.0, |b| b.rotation().angle());
        let (a1, a2) = (angle(self.links[0]), angle(self.links[1]));
        (wrap(a1), wrap(a2 - a1))
    }

    fn velocities(&self) -> (f32, f32) {
        let w = |h: RigidBodyHandle| self.bodies.get(h).map_or(0.0, |b| b.angvel());
        let (w1, w2) = (w(self.links[0]), w(self.links[1]));
        (w1, w2 - w1)
    }

    fn fingertip(&self) -> (f32, f32) {
        let (q1, q2) = self.angles();
        (
            LINK_LENGTH * (q1.cos() + (q1 + q2).cos()),
            LINK_LENGTH * (q1.sin() + (q1 + q2).sin()),
        )
    }

    fn step(&mut self, torques: [f32; 2]) {
        let [l1, l2] = self.links;
        if let Some(b) = self.bodies.get_mut(l1) {
            b.reset_torques(true);
            b.add_torque(torques[0] - torques[1], true);
        }
        if let Some(b) = self.bodies.get_mut(l2) {
            b.reset_torques(true);
            b.add_torque(torques[1], true);
        }
        self.pipeline.step(
            Vector::ZERO,
            &self.params,
            &mut self.islands,
            &mut self.broad_phase,
            &mut self.narrow_phase,
            &mut self.bodies,
            &mut self.colliders,
            &mut self.impulse_joints,
            &mut self.multibody_joints,
            &mut self.ccd,
            &(),
            &(),
        );
    }
}

pub struct Reacher2d {
    arm: Arm,
    target: (f32, f32),
    clock: EpisodeClock,
    counters: [Counter; 3],
    observation: Tensor,
    observation_space: Space,
    action_space: Space,
}

impl Reacher2d {
    pub fn new(max_steps: u32) -> Self {
        let inf = f64::INFINITY;
        let reach = f64::from(2.0 * LINK_LENGTH);
        let low = vec![
            -1.0,
            -1.0,
            -1.0,
            -1.0,
            -inf,
            -inf,
            -reach,
            -reach,
            -2.0 * reach,
            -2.0 * reach,
        ];
        let high: Vec<f64> = low.iter().map(|v| -v).collect();
        Reacher2d {
            arm: Arm::new([0.0; 2], [0.0; 2]),
            target: (1.0, 0.0),
            clock: EpisodeClock::new(max_steps),
            counters: [SUCCESS, DISTANCE, JOINT_LIMIT_VIOLATIONS]
                .map(|name| Counter { name, value: 0.0 }),
            observation: Tensor::zeros(vec![OBSERVATION_LABELS.len()], DType::F32),
            observation_space: Space::Box(
                BoxSpace::vector(DType::F32, low, high).with_labels(&OBSERVATION_LABELS),
            ),
            action_space: Space::Box(
                BoxSpace::uniform(vec![2], DType::F32, -1.0, 1.0)
                    .with_labels(&["shoulder torque", "elbow torque"]),
            ),
        }
    }

    fn begin(&mut self, q: [f32; 2], qdot: [f32; 2], target: (f32, f32)) {
        self.arm = Arm::new(q, qdot);
        self.target = target;
        for c in &mut self.counters {
            c.value = 0.0;
        }
        self.counters[1].value = f64::from(self.distance());
        self.clock.reset();
        self.write_observation();
    }

    fn distance(&self) -> f32 {
        let (fx, fy) = self.arm.fingertip();
        (fx - self.target.0).hypot(fy - self.target.1)
    }

    fn write_observation(&mut self) {
        let (q1, q2) = self.arm.angles();
        let (w1, w2) = self.arm.velocities();
        let (fx, fy) = self.arm.fingertip();
        let (tx, ty) = self.target;
        if let Some(o) = self.observation.as_f32_mut() {
            o.copy_from_slice(&[
                q1.cos(),
                q1.sin(),
                q2.cos(),
                q2.sin(),
                w1,
                w2,
                tx,
                ty,
                fx - tx,
                fy - ty,
            ]);
        }
    }
}

impl Sim for Reacher2d {
    crate::sim_accessors!(ID);

    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let mut rng = Rng::new(seed);
        let q = [
            rng.uniform(-std::f64::consts::PI, std::f64::consts::PI) as f32,
            rng.uniform(-2.0, 2.0) as f32,
        ];
        let radius = rng.uniform(MIN_TARGET_RADIUS, MAX_TARGET_RADIUS) as f32;
        let bearing = rng.uniform(-std::f64::consts::PI, std::f64::consts::PI) as f32;
        self.begin(
            q,
            [0.0; 2],
            (radius * bearing.cos(), radius * bearing.sin()),
        );
        Ok(())
    }

    /// `[shoulder, elbow, shoulder velocity, elbow velocity, target x, target y]`.
    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        let s = state_array::<6>(state)?.map(|v| v as f32);
        if s[1].abs() > ELBOW_LIMIT {
            return Err(SimError::State(format!(
                "the elbow angle {} is beyond its limits ±{ELBOW_LIMIT}",
                s[1]
            )));
        }
        if s[4].hypot(s[5]) > 2.0 * LINK_LENGTH {
            return Err(SimError::State(
                "the target is out of the arm's reach".into(),
            ));
        }
        self.begin([s[0], s[1]], [s[2], s[3]], (s[4], s[5]));
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        let a = crate::action::box_f32::<2>(&self.action_space, action)?;
        self.clock.check_can_step()?;
        let a = a.map(|v| v.clamp(-1.0, 1.0));
        self.arm.step(a.map(|v| v * MAX_TORQUE));
        let (_, elbow) = self.arm.angles();
        if elbow.abs() >= ELBOW_LIMIT - LIMIT_TOLERANCE {
            self.counters[2].value += 1.0;
        }
        let distance = self.distance();
        self.counters[1].value = f64::from(distance);
        let terminated = distance < SUCCESS_RADIUS;
        if terminated {
            self.counters[0].value = 1.0;
        }
        let effort = a[0] * a[0] + a[1] * a[1];
        self.write_observation();
        let truncated = self.clock.tick(terminated);
        Ok(Transition {
            reward: f64::from(-distance - 0.01 * effort),
            terminated,
            truncated,
        })
    }

    fn counters(&self) -> &[Counter] {
        &self.counters
    }
}

/// The arm from the observed joint angles, and the target.
pub fn draw(observation: &Tensor) -> Drawing {
    let reach = f64::from(2.0 * LINK_LENGTH) + 0.2;
    let mut d = Drawing::new(Viewport {
        x_min: -reach,
        x_max: reach,
        y_min: -reach,
        y_max: reach,
    });
    let l = f64::from(LINK_LENGTH);
    let (c1, s1, c2, s2) = (
        obs(observation, 0),
        obs(observation, 1),
        obs(observation, 2),
        obs(observation, 3),
    );
    let elbow = (l * c1, l * s1);
    let (c12, s12) = (c1 * c2 - s1 * s2, s1 * c2 + c1 * s2);
    let tip = (elbow.0 + l * c12, elbow.1 + l * s12);
    let target = (obs(observation, 6), obs(observation, 7));
    d.circle((0.0, 0.0), 2.0 * l, Role::Ground);
    d.circle(target, f64::from(SUCCESS_RADIUS), Role::Goal);
    d.line((0.0, 0.0), elbow, Role::Limb);
    d.line(elbow, tip, Role::Limb);
    d.circle((0.0, 0.0), 0.08, Role::Joint);
    d.circle(elbow, 0.06, Role::Joint);
    d.circle(tip, 0.04, Role::Body);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn torque(a: f32, b: f32) -> Tensor {
        Tensor::vector_f32(vec![a, b])
    }

    #[test]
    fn initial_angles_and_velocities_are_as_set() {
        let mut sim = Reacher2d::new(MAX_EPISODE_STEPS);
        sim.reset_to_state(&[0.5, -1.0, 0.0, 0.0, 1.0, 1.0])
            .unwrap();
        let (q1, q2) = sim.arm.angles();
        assert!(
            (q1 - 0.5).abs() < 1e-4 && (q2 + 1.0).abs() < 1e-4,
            "{q1} {q2}"
        );
        let o = sim.observation().as_f32().unwrap();
        assert!((o[0] - 0.5f32.cos()).abs() < 1e-4);
    }

    #[test]
    fn a_shoulder_torque_turns_the_arm_and_no_torque_keeps_it_still() {
        let mut sim = Reacher2d::new(MAX_EPISODE_STEPS);
        sim.reset_to_state(&[0.0, 0.0, 0.0, 0.0, 0.0, 1.5]).unwrap();
        for _ in 0..10 {
            sim.step(&torque(0.0, 0.0)).unwrap();
        }
        let (q1, q2) = sim.arm.angles();
        assert!(q1.abs() < 1e-4 && q2.abs() < 1e-4, "{q1} {q2}");
        for _ in 0..10 {
            sim.step(&torque(1.0, 0.0)).unwrap();
        }
        let (q1, q2) = sim.arm.angles();
        assert!(
            q1 > 0.02,
            "a counter-clockwise torque turns the shoulder counter-clockwise: {q1}"
        );
        assert!(q2 < -0.02, "the free elbow lags behind: {q2}");
    }

    #[test]
    fn the_elbow_stops_at_its_limit_and_it_is_counted() {
        let mut sim = Reacher2d::new(MAX_EPISODE_STEPS);
        sim.reset_to_state(&[0.0, 2.4, 0.0, 0.0, -1.5, -0.5])
            .unwrap();
        for _ in 0..100 {
            sim.step(&torque(0.0, 1.0)).unwrap();
        }
        let (_, q2) = sim.arm.angles();
        assert!(q2 <= ELBOW_LIMIT + 0.05, "{q2}");
        assert!(sim.counters()[2].value > 10.0, "{:?}", sim.counters());
    }

    #[test]
    fn reaching_the_target_terminates_with_success() {
        let mut sim = Reacher2d::new(MAX_EPISODE_STEPS);
        // The fingertip of a straight arm is at (2, 0); put the target right there.
        sim.reset_to_state(&[0.0, 0.0, 0.0, 0.0, 1.95, 0.0])
            .unwrap();
        let t = sim.step(&torque(0.0, 0.0)).unwrap();
        assert!(t.terminated);
        assert_eq!(sim.counters()[0].value, 1.0);
    }

    #[test]
    fn seeds_reproduce_episodes() {
        let run = |seed| {
            let mut sim = Reacher2d::new(MAX_EPISODE_STEPS);
            sim.reset(seed).unwrap();
            for _ in 0..20 {
                sim.step(&torque(0.3, -0.2)).unwrap();
            }
            sim.observation().clone()
        };
        assert_eq!(run(4), run(4));
        assert_ne!(run(4), run(5));
    }
}
