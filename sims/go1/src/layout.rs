//! What an agent sees of go1-joystick-flat: its observation and action, and the constants of
//! MuJoCo Playground's `Go1JoystickFlatTerrain` they are made with (`go1/joystick.py`'s
//! `default_config` and its scene's `home` keyframe). Joints and legs are in the model's order:
//! front right, front left, rear right, rear left, each hip abduction, thigh (hip pitch), knee.

/// The sim's id in the catalog.
pub const ID: &str = "go1-joystick-flat";

/// Seconds per step (`ctrl_dt`): `SUBSTEPS` MuJoCo steps of `SIM_DT` (`sim_dt`).
pub const CTRL_DT: f64 = 0.02;
pub const SIM_DT: f64 = 0.004;
pub const SUBSTEPS: u32 = 5;
/// Steps per episode (`episode_length`): 20 s.
pub const EPISODE_STEPS: u32 = 1000;

/// The legs, as the model names their feet (geoms and sites).
pub const LEGS: [&str; 4] = ["FR", "FL", "RR", "RL"];
/// Actuated joints: three per leg.
pub const JOINTS: usize = 12;

/// The legs' geometry, Menagerie's `go1.xml` (tested against the compiled model): where each
/// leg's abduction joint lies in the trunk's frame (x forward, y left; m), how far outward the
/// thigh joint sits from it (along y, −y for the right legs), and the thigh's and calf's
/// lengths (thigh joint to knee, knee to foot centre).
pub const HIP_POSITIONS: [[f64; 2]; 4] = [
    [0.1881, -0.04675],
    [0.1881, 0.04675],
    [-0.1881, -0.04675],
    [-0.1881, 0.04675],
];
pub const THIGH_OFFSET: f64 = 0.08;
pub const THIGH_LENGTH: f64 = 0.213;
pub const CALF_LENGTH: f64 = 0.213;

/// The default pose: each leg's abduction, thigh and knee angle (rad), Playground's `home`
/// keyframe. Actions and the observed joint angles are offsets from it.
pub const DEFAULT_POSE: [f64; JOINTS] = [
    0.1, 0.9, -1.8, -0.1, 0.9, -1.8, 0.1, 0.9, -1.8, -0.1, 0.9, -1.8,
];
/// The trunk's height in the default pose (m), where an episode starts.
pub const DEFAULT_HEIGHT: f64 = 0.278;

/// A joint's position target is `DEFAULT_POSE + ACTION_SCALE * action` (`action_scale`); the
/// actuators clamp it to the joint's range.
pub const ACTION_SCALE: f64 = 0.5;
/// The position actuators' stiffness (N·m/rad, `Kp`) and the joints' damping (N·m·s/rad,
/// `Kd`).
pub const KP: f64 = 35.0;
pub const KD: f64 = 0.5;

/// Each episode's command: forward and sideways speed (m/s, in the trunk's frame) and yaw rate
/// (rad/s), each drawn from U(−a, a) (`command_config.a`).
pub const COMMAND_RANGE: [f64; 3] = [1.5, 0.8, 1.2];

/// Where each part of the observation (float32) starts, and its length:
/// the IMU's angular velocity (rad/s, trunk frame, 3), gravity's direction in the trunk's
/// frame (unit vector, 3), the joint angles minus `DEFAULT_POSE` (12), the joint velocities
/// (rad/s, 12), the action applied at this step (12; zeros after a reset), the command (3).
pub const GYRO: usize = 0;
pub const GRAVITY: usize = 3;
pub const JOINT_ANGLES: usize = 6;
pub const JOINT_VELOCITIES: usize = JOINT_ANGLES + JOINTS;
pub const LAST_ACTION: usize = JOINT_VELOCITIES + JOINTS;
pub const COMMAND: usize = LAST_ACTION + JOINTS;
pub const OBSERVATION_LEN: usize = COMMAND + 3;
/// The action: one offset per joint in [−1, 1], in joint order.
pub const ACTION_LEN: usize = JOINTS;

/// The observation's element names, for the space's labels.
pub(crate) const OBSERVATION_LABELS: [&str; OBSERVATION_LEN] = [
    "gyro x",
    "gyro y",
    "gyro z",
    "gravity x",
    "gravity y",
    "gravity z",
    "FR hip angle",
    "FR thigh angle",
    "FR knee angle",
    "FL hip angle",
    "FL thigh angle",
    "FL knee angle",
    "RR hip angle",
    "RR thigh angle",
    "RR knee angle",
    "RL hip angle",
    "RL thigh angle",
    "RL knee angle",
    "FR hip velocity",
    "FR thigh velocity",
    "FR knee velocity",
    "FL hip velocity",
    "FL thigh velocity",
    "FL knee velocity",
    "RR hip velocity",
    "RR thigh velocity",
    "RR knee velocity",
    "RL hip velocity",
    "RL thigh velocity",
    "RL knee velocity",
    "FR hip action",
    "FR thigh action",
    "FR knee action",
    "FL hip action",
    "FL thigh action",
    "FL knee action",
    "RR hip action",
    "RR thigh action",
    "RR knee action",
    "RL hip action",
    "RL thigh action",
    "RL knee action",
    "command vx",
    "command vy",
    "command yaw rate",
];

/// The action's element names (the model's actuators).
pub(crate) const ACTION_LABELS: [&str; ACTION_LEN] = [
    "FR hip", "FR thigh", "FR knee", "FL hip", "FL thigh", "FL knee", "RR hip", "RR thigh",
    "RR knee", "RL hip", "RL thigh", "RL knee",
];
