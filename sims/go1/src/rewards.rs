//! MuJoCo Playground's Go1 joystick reward (`Joystick._get_reward` with `default_config`'s
//! scales): each term computed as Playground computes it, weighted by its scale, summed, times
//! `ctrl_dt`, clipped to [0, 10000]. Pure arithmetic over what one step read from the model, so
//! it is tested without MuJoCo.

use crate::layout::{CTRL_DT, DEFAULT_POSE, JOINTS};

/// `reward_config.tracking_sigma`.
const TRACKING_SIGMA: f64 = 0.25;
/// `reward_config.max_foot_height` (m).
const MAX_FOOT_HEIGHT: f64 = 0.1;
/// `_reward_pose`'s weights: abduction, thigh, knee.
const POSE_WEIGHTS: [f64; 3] = [1.0, 1.0, 0.1];
/// Below this norm a command counts as "stand still".
const STILL_COMMAND: f64 = 0.01;

/// What one step read, after its MuJoCo steps, for scoring it. Vectors are as the model's
/// sensors give them (see `assets/scene.xml`); feet are in `LEGS` order.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Readings<'a> {
    pub command: [f64; 3],
    /// `local_linvel`: the IMU's velocity in the trunk's frame.
    pub local_linvel: [f64; 3],
    /// `gyro`: the IMU's angular velocity in the trunk's frame.
    pub gyro: [f64; 3],
    /// `global_linvel`, `global_angvel`: the same in the world frame.
    pub global_linvel: [f64; 3],
    pub global_angvel: [f64; 3],
    /// `upvector`: the trunk's z axis in the world frame.
    pub upvector: [f64; 3],
    pub joint_angles: &'a [f64],
    pub joint_velocities: &'a [f64],
    pub actuator_force: &'a [f64],
    pub action: &'a [f32],
    pub last_action: &'a [f32],
    /// Each foot's world velocity and height.
    pub foot_velocity: [[f64; 3]; 4],
    pub foot_height: [f64; 4],
    pub contact: [bool; 4],
    pub first_contact: [bool; 4],
    /// Each foot's time in the air (s), this step's included.
    pub air_time: [f64; 4],
    /// Each foot's highest point in its current swing (m).
    pub swing_peak: [f64; 4],
    pub terminated: bool,
    /// The joints' soft limits: `soft_joint_pos_limit_factor` (0.95) times each end of the
    /// range, as Playground scales them.
    pub soft_limits: &'a [[f64; 2]; JOINTS],
}

/// Playground's reward terms, unscaled.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Terms {
    pub tracking_lin_vel: f64,
    pub tracking_ang_vel: f64,
    pub lin_vel_z: f64,
    pub ang_vel_xy: f64,
    pub orientation: f64,
    pub stand_still: f64,
    pub termination: f64,
    pub pose: f64,
    pub torques: f64,
    pub action_rate: f64,
    pub energy: f64,
    pub feet_slip: f64,
    pub feet_clearance: f64,
    pub feet_height: f64,
    pub feet_air_time: f64,
    pub dof_pos_limits: f64,
}

/// `reward_config.scales`.
pub(crate) const SCALES: Terms = Terms {
    tracking_lin_vel: 1.0,
    tracking_ang_vel: 0.5,
    lin_vel_z: -0.5,
    ang_vel_xy: -0.05,
    orientation: -5.0,
    stand_still: -1.0,
    termination: -1.0,
    pose: 0.5,
    torques: -0.0002,
    action_rate: -0.01,
    energy: -0.001,
    feet_slip: -0.1,
    feet_clearance: -2.0,
    feet_height: -0.2,
    feet_air_time: 0.1,
    dof_pos_limits: -1.0,
};

impl Terms {
    fn as_array(&self) -> [f64; 16] {
        [
            self.tracking_lin_vel,
            self.tracking_ang_vel,
            self.lin_vel_z,
            self.ang_vel_xy,
            self.orientation,
            self.stand_still,
            self.termination,
            self.pose,
            self.torques,
            self.action_rate,
            self.energy,
            self.feet_slip,
            self.feet_clearance,
            self.feet_height,
            self.feet_air_time,
            self.dof_pos_limits,
        ]
    }

    /// `clip(sum(term * scale) * dt, 0, 10000)`.
    pub fn reward(&self) -> f64 {
        let sum: f64 = self
            .as_array()
            .iter()
            .zip(SCALES.as_array())
            .map(|(term, scale)| term * scale)
            .sum();
        (sum * CTRL_DT).clamp(0.0, 10000.0)
    }
}

fn square(x: f64) -> f64 {
    x * x
}

fn norm(v: &[f64]) -> f64 {
    v.iter().map(|x| x * x).sum::<f64>().sqrt()
}

/// `exp(-|command[:2] - local_vel[:2]|² / sigma)`, in [0, 1]: 1 on the commanded velocity.
pub(crate) fn tracking_lin_vel(command: [f64; 3], local_linvel: [f64; 3]) -> f64 {
    let error = square(command[0] - local_linvel[0]) + square(command[1] - local_linvel[1]);
    (-error / TRACKING_SIGMA).exp()
}

/// Every term of one step.
pub(crate) fn terms(r: &Readings<'_>) -> Terms {
    let command_norm = norm(&r.command);
    let moving = command_norm > STILL_COMMAND;
    let still = command_norm < STILL_COMMAND;
    let pose_offset = |i: usize| r.joint_angles[i] - DEFAULT_POSE[i];

    let torques = norm(r.actuator_force) + r.actuator_force.iter().map(|f| f.abs()).sum::<f64>();
    let energy = r
        .joint_velocities
        .iter()
        .zip(r.actuator_force)
        .map(|(v, f)| v.abs() * f.abs())
        .sum();
    let action_rate = r
        .action
        .iter()
        .zip(r.last_action)
        .map(|(a, b)| square(f64::from(*a) - f64::from(*b)))
        .sum();
    let pose = (-(0..JOINTS)
        .map(|i| square(pose_offset(i)) * POSE_WEIGHTS[i % 3])
        .sum::<f64>())
    .exp();
    let stand_still = if still {
        (0..JOINTS).map(|i| pose_offset(i).abs()).sum()
    } else {
        0.0
    };
    let dof_pos_limits = (0..JOINTS)
        .map(|i| {
            let [low, high] = r.soft_limits[i];
            let q = r.joint_angles[i];
            -(q - low).min(0.0) + (q - high).max(0.0)
        })
        .sum();

    let mut feet_slip = 0.0;
    let mut feet_clearance = 0.0;
    let mut feet_height = 0.0;
    let mut feet_air_time = 0.0;
    for foot in 0..4 {
        let [vx, vy, _] = r.foot_velocity[foot];
        let speed_sq = vx * vx + vy * vy;
        if r.contact[foot] {
            feet_slip += speed_sq;
        }
        feet_clearance += (r.foot_height[foot] - MAX_FOOT_HEIGHT).abs() * speed_sq.sqrt().sqrt();
        if r.first_contact[foot] {
            feet_height += square(r.swing_peak[foot] / MAX_FOOT_HEIGHT - 1.0);
            feet_air_time += r.air_time[foot] - 0.1;
        }
    }
    if !moving {
        feet_slip = 0.0;
        feet_height = 0.0;
        feet_air_time = 0.0;
    }

    Terms {
        tracking_lin_vel: tracking_lin_vel(r.command, r.local_linvel),
        tracking_ang_vel: (-square(r.command[2] - r.gyro[2]) / TRACKING_SIGMA).exp(),
        lin_vel_z: square(r.global_linvel[2]),
        ang_vel_xy: square(r.global_angvel[0]) + square(r.global_angvel[1]),
        orientation: square(r.upvector[0]) + square(r.upvector[1]),
        stand_still,
        termination: if r.terminated { 1.0 } else { 0.0 },
        pose,
        torques,
        action_rate,
        energy,
        feet_slip,
        feet_clearance,
        feet_height,
        feet_air_time,
        dof_pos_limits,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Menagerie's joint ranges, times 0.95.
    const SOFT: [[f64; 2]; JOINTS] = {
        let leg = [
            [-0.863 * 0.95, 0.863 * 0.95],
            [-0.686 * 0.95, 4.501 * 0.95],
            [-2.818 * 0.95, -0.888 * 0.95],
        ];
        [
            leg[0], leg[1], leg[2], leg[0], leg[1], leg[2], leg[0], leg[1], leg[2], leg[0], leg[1],
            leg[2],
        ]
    };

    /// Standing in the default pose, level and still, feet down, on a forward command.
    fn standing<'a>(zeros: &'a [f64; JOINTS], actions: &'a [f32; JOINTS]) -> Readings<'a> {
        Readings {
            command: [0.5, 0.0, 0.0],
            local_linvel: [0.0; 3],
            gyro: [0.0; 3],
            global_linvel: [0.0; 3],
            global_angvel: [0.0; 3],
            upvector: [0.0, 0.0, 1.0],
            joint_angles: &DEFAULT_POSE,
            joint_velocities: zeros,
            actuator_force: zeros,
            action: actions,
            last_action: actions,
            foot_velocity: [[0.0; 3]; 4],
            foot_height: [0.023; 4],
            contact: [true; 4],
            first_contact: [false; 4],
            air_time: [0.0; 4],
            swing_peak: [0.0; 4],
            terminated: false,
            soft_limits: &SOFT,
        }
    }

    #[test]
    fn tracking_is_one_on_the_command_and_falls_off_with_sigma() {
        assert_eq!(tracking_lin_vel([0.5, -0.2, 0.0], [0.5, -0.2, 9.0]), 1.0);
        // An error of 0.5 m/s: exp(-0.25 / 0.25).
        let t = tracking_lin_vel([0.5, 0.0, 0.0], [0.0, 0.0, 0.0]);
        assert!((t - (-1.0f64).exp()).abs() < 1e-15, "{t}");
    }

    #[test]
    fn standing_still_on_a_forward_command_earns_its_tracking_and_pose_terms() {
        let (zeros, actions) = ([0.0; JOINTS], [0.0; JOINTS]);
        let r = standing(&zeros, &actions);
        let t = terms(&r);
        let expected = Terms {
            tracking_lin_vel: (-1.0f64).exp(),
            tracking_ang_vel: 1.0,
            pose: 1.0,
            ..Terms::default()
        };
        assert_eq!(t, expected);
        // (e^-1 + 0.5 * 1 + 0.5 * 1) * 0.02
        let reward = ((-1.0f64).exp() + 1.0) * CTRL_DT;
        assert!((t.reward() - reward).abs() < 1e-15);
    }

    #[test]
    fn each_penalty_is_playgrounds_formula() {
        let zeros = [0.0; JOINTS];
        let mut angles = DEFAULT_POSE;
        angles[0] = SOFT[0][0] - 0.25; // the first abduction past its soft lower limit
        angles[2] = SOFT[2][1] + 0.5; // the first knee past its soft upper limit
        let offsets = [angles[0] - DEFAULT_POSE[0], angles[2] - DEFAULT_POSE[2]];
        let velocities = [2.0; JOINTS];
        let mut forces = [0.0; JOINTS];
        forces[0] = 3.0;
        forces[1] = -4.0;
        let action = [0.5; JOINTS];
        let last = [0.0; JOINTS];
        let r = Readings {
            command: [0.0, 0.0, 0.0],
            global_linvel: [0.0, 0.0, 2.0],
            global_angvel: [1.0, 2.0, 3.0],
            upvector: [0.6, 0.0, 0.8],
            joint_angles: &angles,
            joint_velocities: &velocities,
            actuator_force: &forces,
            action: &action,
            last_action: &last,
            foot_velocity: [[3.0, 4.0, 9.0], [0.0; 3], [0.0; 3], [0.0; 3]],
            foot_height: [0.3, 0.1, 0.1, 0.1],
            first_contact: [true, false, false, false],
            air_time: [0.5, 0.0, 0.0, 0.0],
            swing_peak: [0.2, 0.0, 0.0, 0.0],
            terminated: true,
            ..standing(&zeros, &action)
        };
        let t = terms(&r);
        assert_eq!(t.lin_vel_z, 4.0);
        assert_eq!(t.ang_vel_xy, 5.0);
        assert!((t.orientation - 0.36).abs() < 1e-15);
        assert_eq!(t.termination, 1.0);
        assert_eq!(t.torques, 5.0 + 7.0);
        assert_eq!(t.energy, 2.0 * 7.0);
        assert_eq!(t.action_rate, 12.0 * 0.25);
        assert!(
            (t.dof_pos_limits - 0.75).abs() < 1e-12,
            "{}",
            t.dof_pos_limits
        );
        // Off the default pose at an abduction (weight 1) and a knee (weight 0.1).
        let pose = (-(offsets[0] * offsets[0] + offsets[1] * offsets[1] * 0.1)).exp();
        assert!((t.pose - pose).abs() < 1e-12, "{}", t.pose);
        // A zero command: standing still costs the distance from the pose, and the feet
        // terms that reward stepping are off.
        let distance = offsets[0].abs() + offsets[1].abs();
        assert!((t.stand_still - distance).abs() < 1e-12);
        assert_eq!(
            (t.feet_slip, t.feet_height, t.feet_air_time),
            (0.0, 0.0, 0.0)
        );
        // |0.3 - 0.1| * sqrt(|(3, 4)|) for the one moving foot.
        assert!((t.feet_clearance - 0.2 * 5f64.sqrt()).abs() < 1e-12);
        // Penalties outweigh the rest: clipped at 0.
        assert_eq!(t.reward(), 0.0);
    }

    #[test]
    fn the_feet_terms_count_landings_on_a_moving_command() {
        let (zeros, actions) = ([0.0; JOINTS], [0.0; JOINTS]);
        let r = Readings {
            foot_velocity: [[0.3, 0.4, 0.0], [0.0; 3], [0.0; 3], [0.0; 3]],
            contact: [true, true, false, false],
            first_contact: [true, false, true, false],
            air_time: [0.3, 0.0, 0.2, 0.0],
            swing_peak: [0.05, 0.0, 0.15, 0.0],
            ..standing(&zeros, &actions)
        };
        let t = terms(&r);
        assert!((t.feet_slip - 0.25).abs() < 1e-15);
        assert!(
            (t.feet_height - (0.25 + 0.25)).abs() < 1e-12,
            "{}",
            t.feet_height
        );
        assert!((t.feet_air_time - (0.2 + 0.1)).abs() < 1e-12);
        assert_eq!(t.stand_still, 0.0);
    }
}
