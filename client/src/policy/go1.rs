use std::f64::consts::PI;

use super::layout::go1::{
    ACTION_SCALE, CALF_LENGTH, COMMAND, CTRL_DT, DEFAULT_POSE, GRAVITY, GYRO, HIP_POSITIONS,
    JOINT_ANGLES, JOINT_VELOCITIES, JOINTS, OBSERVATION_LEN, THIGH_LENGTH, THIGH_OFFSET,
};
use ale_sim::{DType, Tensor};

use super::Policy;

/// +1 for the left legs (FL, RL), −1 for the right (FR, RR): the side the thigh sits on.
const SIDE: [f64; 4] = [-1.0, 1.0, -1.0, 1.0];
/// Where each leg's cycle starts: the diagonal pairs FR + RL and FL + RR alternate.
const PHASE_OFFSET: [f64; 4] = [0.0, 0.5, 0.5, 0.0];

/// A trot that follows the command, from the observation and a phase clock of its own.
///
/// The diagonal pairs swing in turn, each for half of `period`. A foot's path is planned in
/// the trunk's frame around where the default pose puts it (spread `width` further out): in
/// stance it sweeps backward at the speed the trunk should go, turning included, so that the
/// trunk moves on the command; in swing it travels forward on a half-sine `lift` high, landing
/// `raibert` seconds of velocity error further along (Raibert's rule, so that a trunk going
/// faster than asked is caught). The joint targets are the leg's inverse kinematics.
///
/// Feedback from the observation alone:
/// * **speed**: leg odometry — the stance feet's velocities from the joint angles and
///   velocities (forward kinematics), less the gyro's turning, give the trunk's velocity; an
///   integral of its error (gain `integral`, each axis bounded by `integral_limit`) and a
///   constant `forward_bias` (the servos' lag makes an open-loop trot drift backward) adjust
///   the speed the feet sweep at. Sideways speed is capped at `max_sideways`, the turning rate at
///   `max_turn`: beyond them this trot trips more than it tracks.
/// * **attitude**: the stance feet are raised or lowered in proportion to gravity's tilt in the
///   trunk's frame, `tau` seconds ahead by the gyro, so that the trunk stays level.
#[derive(Debug, Clone)]
pub struct Go1Trot {
    /// Seconds per gait cycle.
    pub period: f64,
    /// Swing height, metres.
    pub lift: f64,
    /// Extra outward spread of the feet, metres.
    pub width: f64,
    /// Landing offset per m/s of speed error, seconds.
    pub raibert: f64,
    /// Foot height change per unit of tilt, metres (per half-length of the trunk).
    pub attitude_gain: f64,
    /// Look-ahead of the tilt, seconds.
    pub tau: f64,
    /// Smoothing of the odometry: the fraction of each new estimate taken in.
    pub odometry_smoothing: f64,
    pub integral: f64,
    pub integral_limit: f64,
    /// m/s added to the forward sweep.
    pub forward_bias: f64,
    /// m/s and rad/s.
    pub max_sideways: f64,
    pub max_turn: f64,
    phase: f64,
    velocity: [f64; 2],
    error_integral: [f64; 2],
}

impl Default for Go1Trot {
    fn default() -> Self {
        Go1Trot {
            period: 0.4,
            lift: 0.1,
            width: 0.04,
            raibert: 0.05,
            attitude_gain: 2.0,
            tau: 0.1,
            odometry_smoothing: 0.2,
            integral: 0.3,
            integral_limit: 0.5,
            forward_bias: 0.3,
            max_sideways: 0.5,
            max_turn: 0.8,
            phase: 0.0,
            velocity: [0.0; 2],
            error_integral: [0.0; 2],
        }
    }
}

/// A leg's joint angles: abduction, thigh, knee.
type Joints = [f64; 3];

/// Leg `leg`'s foot in the trunk's frame for joint angles `q`.
fn foot(leg: usize, [abduction, thigh, knee]: Joints) -> [f64; 3] {
    let [hx, hy] = HIP_POSITIONS[leg];
    let offset = SIDE[leg] * THIGH_OFFSET;
    // In the leg's own plane (after the abduction): forward and down from the thigh joint.
    let x = -THIGH_LENGTH * thigh.sin() - CALF_LENGTH * (thigh + knee).sin();
    let z = -THIGH_LENGTH * thigh.cos() - CALF_LENGTH * (thigh + knee).cos();
    let (s, c) = abduction.sin_cos();
    [hx + x, hy + offset * c - z * s, offset * s + z * c]
}

/// The foot's velocity relative to the trunk, in its frame, for joint angles `q` moving at `v`.
fn foot_velocity(leg: usize, [abduction, thigh, knee]: Joints, [va, vt, vk]: Joints) -> [f64; 3] {
    let offset = SIDE[leg] * THIGH_OFFSET;
    let z = -THIGH_LENGTH * thigh.cos() - CALF_LENGTH * (thigh + knee).cos();
    let vx = -THIGH_LENGTH * thigh.cos() * vt - CALF_LENGTH * (thigh + knee).cos() * (vt + vk);
    let vz = THIGH_LENGTH * thigh.sin() * vt + CALF_LENGTH * (thigh + knee).sin() * (vt + vk);
    let (s, c) = abduction.sin_cos();
    [
        vx,
        (-offset * s - z * c) * va - s * vz,
        (offset * c - z * s) * va + c * vz,
    ]
}

/// The joint angles that put leg `leg`'s foot at `p` (trunk frame), the knee bent backward as
/// the Go1's is. Out of reach, the leg is stretched toward it.
fn joints_for(leg: usize, p: [f64; 3]) -> Joints {
    let [hx, hy] = HIP_POSITIONS[leg];
    let offset = SIDE[leg] * THIGH_OFFSET;
    let (dx, dy, dz) = (p[0] - hx, p[1] - hy, p[2]);
    // Across the leg: the foot is `offset` out and `z` down in the abducted plane.
    let across = (dy * dy + dz * dz).max(THIGH_OFFSET * THIGH_OFFSET + 1e-4);
    let z = -(across - THIGH_OFFSET * THIGH_OFFSET).sqrt();
    let abduction = dz.atan2(dy) - z.atan2(offset);
    let abduction = (abduction + PI).rem_euclid(2.0 * PI) - PI;
    // Along the leg: two links of equal length.
    let reach = (dx * dx + z * z)
        .sqrt()
        .min(0.999 * (THIGH_LENGTH + CALF_LENGTH));
    let half_bend = (reach / (THIGH_LENGTH + CALF_LENGTH)).acos();
    [abduction, (-dx).atan2(-z) + half_bend, -2.0 * half_bend]
}

impl Go1Trot {
    /// The twelve action values for one observation.
    fn actions(&mut self, o: &[f32]) -> [f32; JOINTS] {
        let at = |i: usize| f64::from(o[i]);
        let command = [at(COMMAND), at(COMMAND + 1), at(COMMAND + 2)];
        let gyro = [at(GYRO), at(GYRO + 1), at(GYRO + 2)];
        let gravity = [at(GRAVITY), at(GRAVITY + 1)];
        let angles = |leg: usize| {
            [0, 1, 2].map(|j| at(JOINT_ANGLES + leg * 3 + j) + DEFAULT_POSE[leg * 3 + j])
        };
        let speeds = |leg: usize| [0, 1, 2].map(|j| at(JOINT_VELOCITIES + leg * 3 + j));
        let leg_phase = |phase: f64, leg: usize| (phase + PHASE_OFFSET[leg]) % 1.0;

        // Leg odometry over the feet well inside their stance (the second half of the cycle):
        // the trunk moves as minus a planted foot does, less its turning about the foot.
        let mut sum = [0.0; 2];
        let mut planted = 0.0;
        for leg in 0..4 {
            if (0.55..0.95).contains(&leg_phase(self.phase, leg)) {
                let p = foot(leg, angles(leg));
                let v = foot_velocity(leg, angles(leg), speeds(leg));
                sum[0] += -v[0] - (gyro[1] * p[2] - gyro[2] * p[1]);
                sum[1] += -v[1] - (gyro[2] * p[0] - gyro[0] * p[2]);
                planted += 1.0;
            }
        }
        if planted > 0.0 {
            for (v, s) in self.velocity.iter_mut().zip(sum) {
                *v += self.odometry_smoothing * (s / planted - *v);
            }
        }
        for ((integral, wanted), got) in self
            .error_integral
            .iter_mut()
            .zip(command)
            .zip(self.velocity)
        {
            *integral = (*integral + (wanted - got) * CTRL_DT)
                .clamp(-self.integral_limit, self.integral_limit);
        }
        let sweep = [
            command[0] + self.forward_bias + self.integral * self.error_integral[0],
            (command[1] + self.integral * self.error_integral[1])
                .clamp(-self.max_sideways, self.max_sideways),
        ];
        let turn = command[2].clamp(-self.max_turn, self.max_turn);
        let landing = [0, 1].map(|axis| self.raibert * (self.velocity[axis] - command[axis]));

        self.phase = (self.phase + CTRL_DT / self.period) % 1.0;
        let stance_time = self.period / 2.0;
        // Gravity's tilt a moment ahead: nose down makes gravity's x positive, left side up
        // its y negative.
        let tilt = [
            gravity[0] + self.tau * gyro[1],
            gravity[1] - self.tau * gyro[0],
        ];
        let mut out = [0.0f32; JOINTS];
        for leg in 0..4 {
            let home = foot(leg, [0, 1, 2].map(|j| DEFAULT_POSE[leg * 3 + j]));
            let home = [home[0], home[1] + SIDE[leg] * self.width, home[2]];
            // This foot's sweep over a stance: the trunk's velocity plus its turning here.
            let stride = [
                (sweep[0] - turn * home[1]) * stance_time,
                (sweep[1] + turn * home[0]) * stance_time,
            ];
            let phase = leg_phase(self.phase, leg);
            let (along, lift) = if phase < 0.5 {
                let s = phase / 0.5;
                (0.5 - 0.5 * (PI * s).cos(), self.lift * (PI * s).sin())
            } else {
                (1.0 - (phase - 0.5) / 0.5, 0.0)
            };
            let [x, y] =
                [0, 1].map(|axis| -stride[axis] / 2.0 + (stride[axis] + landing[axis]) * along);
            // Lower the foot (extend the leg) where the trunk sags.
            let level = -self.attitude_gain * (tilt[0] * home[0] + tilt[1] * home[1]);
            let target = joints_for(leg, [home[0] + x, home[1] + y, home[2] + lift + level]);
            for (j, angle) in target.iter().enumerate() {
                let offset = (angle - DEFAULT_POSE[leg * 3 + j]) / ACTION_SCALE;
                out[leg * 3 + j] = offset.clamp(-1.0, 1.0) as f32;
            }
        }
        out
    }
}

impl Policy for Go1Trot {
    fn act(&mut self, observation: &Tensor) -> Tensor {
        match observation.as_f32() {
            Some(o) if o.len() == OBSERVATION_LEN => Tensor::vector_f32(self.actions(o).to_vec()),
            _ => Tensor::zeros(vec![JOINTS], DType::F32),
        }
    }

    fn reset(&mut self) {
        self.phase = 0.0;
        self.velocity = [0.0; 2];
        self.error_integral = [0.0; 2];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_kinematics_undoes_forward_kinematics() {
        for leg in 0..4 {
            for q in [[0.1, 0.9, -1.8], [-0.3, 0.5, -1.2], [0.4, 1.3, -2.2]] {
                let back = joints_for(leg, foot(leg, q));
                for j in 0..3 {
                    assert!(
                        (back[j] - q[j]).abs() < 1e-9,
                        "leg {leg}: {q:?} -> {back:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn foot_velocity_is_the_derivative_of_the_foot() {
        let (q, v) = ([0.2, 0.8, -1.6], [0.5, -1.0, 2.0]);
        let h = 1e-6;
        for leg in 0..4 {
            let ahead = foot(leg, [0, 1, 2].map(|j| q[j] + h * v[j]));
            let here = foot(leg, q);
            let analytic = foot_velocity(leg, q, v);
            for k in 0..3 {
                let numeric = (ahead[k] - here[k]) / h;
                assert!((numeric - analytic[k]).abs() < 1e-4, "leg {leg} axis {k}");
            }
        }
    }

    /// The task plays 1000-step episodes on hidden seeds; over the 32 practice seeds 0..32
    /// the trot must never fall and must track the command at least as well as the task's
    /// target asks (its `[metric].target`, read from the task file).
    #[test]
    fn go1_trot_walks_on_command_without_falling_and_reaches_the_target() {
        let entry = ale_sims_go1::catalog();
        let entry = entry.find(super::super::layout::go1::ID).unwrap();
        if !ale_sims_go1::MUJOCO_BUILT_IN {
            // Nothing to play: the sim says how to get MuJoCo (run this test with
            // `--features ale-sims-go1/mujoco` to play it).
            let err = entry.build_plain(10).err().unwrap().to_string();
            assert!(err.contains("--features mujoco"), "{err}");
            return;
        }
        let mut sim = entry.build_plain(entry.default_max_steps()).unwrap();
        let mut policy = Go1Trot::default();
        // Counters: falls, tracking_lin_vel.
        let totals = super::super::counter_totals(sim.as_mut(), &mut policy, 32);
        let tracking = totals[1] / 32.0;
        eprintln!(
            "go1 trot: mean tracking_lin_vel {tracking:.4}, falls {}",
            totals[0]
        );
        assert_eq!(totals[0], 0.0, "falls");
        let target = task_target(include_str!("../../../server/tasks/go1-joystick.toml"));
        assert!(
            tracking >= target,
            "mean tracking {tracking} under the target {target}"
        );
    }

    /// `[metric].target` of a task file.
    fn task_target(toml: &str) -> f64 {
        let metric = toml.split("[metric]").nth(1).expect("a [metric] table");
        metric
            .lines()
            .find_map(|line| line.strip_prefix("target = "))
            .and_then(|v| v.trim().parse().ok())
            .expect("a target in [metric]")
    }
}
