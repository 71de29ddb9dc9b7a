//! What the heuristics know of each sim: its id, and its observation and action layout and
//! physical constants as `docs/sims.md` documents them. Nothing here comes from a sim's code:
//! an agent links no sim it does not play. The tests check each value against the sim itself.

/// The classic-control sims' ids (Gymnasium's).
pub const CARTPOLE: &str = "CartPole-v1";
pub const PENDULUM: &str = "Pendulum-v1";
pub const MOUNTAIN_CAR: &str = "MountainCar-v0";
pub const MOUNTAIN_CAR_CONTINUOUS: &str = "MountainCarContinuous-v0";
pub const ACROBOT: &str = "Acrobot-v1";

/// nav2d: `[lidar × BEAMS, goal distance, goal bearing, speed, turn rate]`; action
/// `[forward speed, turn rate]`.
pub mod nav2d {
    pub const ID: &str = "nav2d";
    /// Lidar beams, evenly spaced counter-clockwise from straight ahead.
    pub const BEAMS: usize = 32;
    /// The lidar's range, metres: a beam that hits nothing reads this.
    pub const LIDAR_RANGE: f32 = 5.0;
    pub const ROBOT_RADIUS: f32 = 0.2;
    /// Seconds per step.
    pub const DT: f32 = 0.1;
    /// The action's bounds: forward speed (m/s) and turn rate (rad/s).
    pub const MAX_SPEED: f32 = 1.0;
    pub const MAX_TURN: f32 = 2.0;
    pub const GOAL_DISTANCE: usize = BEAMS;
    pub const GOAL_BEARING: usize = BEAMS + 1;
    pub const SPEED: usize = BEAMS + 2;
    pub const TURN_RATE: usize = BEAMS + 3;

    /// Beam `i`'s angle from the robot's heading, radians.
    pub fn beam_angle(i: usize) -> f32 {
        std::f32::consts::TAU * i as f32 / BEAMS as f32
    }
}

/// reacher2d: a two-link arm; its links' length and the elbow's limit.
pub mod reacher2d {
    pub const ID: &str = "reacher2d";
    pub const LINK_LENGTH: f32 = 1.0;
    /// The elbow turns within ±ELBOW_LIMIT radians.
    pub const ELBOW_LIMIT: f32 = 2.6;
}

/// swarm2d: one row of FEATURES per robot:
/// `[position (2), goal offset (2), velocity (2), walls (4), NEIGHBOURS × (offset (2), velocity (2))]`.
pub mod swarm2d {
    pub const ID: &str = "swarm2d";
    pub const ROBOTS: usize = 16;
    pub const NEIGHBOURS: usize = 4;
    pub const ROBOT_RADIUS: f32 = 0.25;
    pub const DT: f32 = 0.1;
    pub const MAX_SPEED: f32 = 1.0;
    pub const GOAL_OFFSET: usize = 2;
    pub const WALLS: usize = 6;
    pub const NEIGHBOUR: usize = 10;
    pub const NEIGHBOUR_FEATURES: usize = 4;
    pub const FEATURES: usize = NEIGHBOUR + NEIGHBOURS * NEIGHBOUR_FEATURES;
}

/// go1-joystick-flat: a Unitree Go1 following a velocity command. The observation (float32):
/// `[gyro (3), gravity in the trunk's frame (3), joint angles − DEFAULT_POSE (12), joint
/// velocities (12), the action just applied (12), command (3)]`; the action: 12 joint offsets
/// in [−1, 1], the target being `DEFAULT_POSE + ACTION_SCALE · action`. Legs FR, FL, RR, RL,
/// each abduction, thigh, knee.
pub mod go1 {
    pub const ID: &str = "go1-joystick-flat";
    /// Seconds per step.
    pub const CTRL_DT: f64 = 0.02;
    pub const JOINTS: usize = 12;
    pub const DEFAULT_POSE: [f64; JOINTS] = [
        0.1, 0.9, -1.8, -0.1, 0.9, -1.8, 0.1, 0.9, -1.8, -0.1, 0.9, -1.8,
    ];
    pub const ACTION_SCALE: f64 = 0.5;
    pub const GYRO: usize = 0;
    pub const GRAVITY: usize = 3;
    pub const JOINT_ANGLES: usize = 6;
    pub const JOINT_VELOCITIES: usize = 18;
    pub const COMMAND: usize = 42;
    pub const OBSERVATION_LEN: usize = 45;
    /// Each abduction joint's position in the trunk's frame (x forward, y left), the thigh
    /// joint's outward offset from it, and the thigh's and calf's lengths, metres.
    pub const HIP_POSITIONS: [[f64; 2]; 4] = [
        [0.1881, -0.04675],
        [0.1881, 0.04675],
        [-0.1881, -0.04675],
        [-0.1881, 0.04675],
    ];
    pub const THIGH_OFFSET: f64 = 0.08;
    pub const THIGH_LENGTH: f64 = 0.213;
    pub const CALF_LENGTH: f64 = 0.213;
}

#[cfg(test)]
mod tests {
    use ale_sims as sims;

    #[test]
    fn the_documented_layout_is_the_sims_own() {
        assert_eq!(super::CARTPOLE, sims::cartpole::ID);
        assert_eq!(super::PENDULUM, sims::pendulum::ID);
        assert_eq!(super::MOUNTAIN_CAR, sims::mountain_car::ID);
        assert_eq!(
            super::MOUNTAIN_CAR_CONTINUOUS,
            sims::mountain_car_continuous::ID
        );
        assert_eq!(super::ACROBOT, sims::acrobot::ID);

        use super::nav2d as n;
        use sims::nav2d as s;
        assert_eq!(n::ID, s::ID);
        assert_eq!(n::BEAMS, s::BEAMS);
        assert_eq!(n::LIDAR_RANGE, s::LIDAR_RANGE);
        assert_eq!(n::ROBOT_RADIUS, s::ROBOT_RADIUS);
        assert_eq!(n::DT, s::DT);
        assert_eq!(n::MAX_SPEED, s::MAX_SPEED);
        assert_eq!(n::MAX_TURN, s::MAX_TURN);
        assert_eq!(
            [n::GOAL_DISTANCE, n::GOAL_BEARING, n::SPEED, n::TURN_RATE],
            [s::GOAL_DISTANCE, s::GOAL_BEARING, s::SPEED, s::TURN_RATE]
        );
        for i in 0..n::BEAMS {
            assert_eq!(n::beam_angle(i), s::beam_angle(i));
        }

        assert_eq!(super::reacher2d::ID, sims::reacher2d::ID);
        assert_eq!(super::reacher2d::LINK_LENGTH, sims::reacher2d::LINK_LENGTH);
        assert_eq!(super::reacher2d::ELBOW_LIMIT, sims::reacher2d::ELBOW_LIMIT);

        use super::swarm2d as w;
        use sims::swarm2d as t;
        assert_eq!(w::ID, t::ID);
        assert_eq!(
            [
                w::ROBOTS,
                w::NEIGHBOURS,
                w::GOAL_OFFSET,
                w::WALLS,
                w::NEIGHBOUR,
                w::NEIGHBOUR_FEATURES,
                w::FEATURES
            ],
            [
                t::ROBOTS,
                t::NEIGHBOURS,
                t::GOAL_OFFSET,
                t::WALLS,
                t::NEIGHBOUR,
                t::NEIGHBOUR_FEATURES,
                t::FEATURES
            ]
        );
        assert_eq!(
            [w::ROBOT_RADIUS, w::DT, w::MAX_SPEED],
            [t::ROBOT_RADIUS, t::DT, t::MAX_SPEED]
        );
    }

    #[test]
    fn the_documented_go1_layout_is_the_sims_own() {
        use super::go1 as c;
        use ale_sims_go1::layout as s;
        assert_eq!(c::ID, s::ID);
        assert_eq!(
            [
                c::CTRL_DT,
                c::ACTION_SCALE,
                c::THIGH_OFFSET,
                c::THIGH_LENGTH,
                c::CALF_LENGTH
            ],
            [
                s::CTRL_DT,
                s::ACTION_SCALE,
                s::THIGH_OFFSET,
                s::THIGH_LENGTH,
                s::CALF_LENGTH
            ]
        );
        assert_eq!(c::DEFAULT_POSE, s::DEFAULT_POSE);
        assert_eq!(c::HIP_POSITIONS, s::HIP_POSITIONS);
        assert_eq!(
            [
                c::JOINTS,
                c::GYRO,
                c::GRAVITY,
                c::JOINT_ANGLES,
                c::JOINT_VELOCITIES,
                c::COMMAND,
                c::OBSERVATION_LEN
            ],
            [
                s::JOINTS,
                s::GYRO,
                s::GRAVITY,
                s::JOINT_ANGLES,
                s::JOINT_VELOCITIES,
                s::COMMAND,
                s::OBSERVATION_LEN
            ]
        );
    }
}
