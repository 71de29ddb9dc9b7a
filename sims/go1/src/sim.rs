//! go1-joystick-flat as a [`Sim`]: Playground's `Joystick` step and reset over one state of the
//! shared scene.

use ale_mujoco::Data;
use ale_sim::{
    BoxSpace, Counter, DType, EpisodeClock, Rng, Sim, SimError, Space, SpaceError, Tensor,
    Transition,
};

use crate::layout::{
    ACTION_LABELS, ACTION_LEN, ACTION_SCALE, COMMAND, COMMAND_RANGE, DEFAULT_HEIGHT, DEFAULT_POSE,
    GRAVITY, GYRO, ID, JOINT_ANGLES, JOINT_VELOCITIES, JOINTS, LAST_ACTION, OBSERVATION_LABELS,
    OBSERVATION_LEN, SUBSTEPS,
};
use crate::rewards::{self, Readings};
use crate::scene::{self, Scene};

/// The episode counters, in order: `falls` (1 once the trunk has turned upside down, which
/// ends the episode) and `tracking_lin_vel` (the sum of Playground's `tracking_lin_vel` term
/// over the steps taken, divided by the episode's step limit: at the end of an episode, the
/// mean per step, with the steps a fall forfeits counted as 0).
pub const COUNTERS: [&str; 2] = ["falls", "tracking_lin_vel"];

/// `reset`'s draws: the trunk's x and y offset (m) and yaw (rad), and its initial velocity.
const RESET_XY: f64 = 0.5;
// Playground's literal, a little short of π.
#[allow(clippy::approx_constant)]
const RESET_YAW: f64 = 3.14;
const RESET_VELOCITY: f64 = 0.5;

/// The spaces: a float32 observation of `OBSERVATION_LEN` and `ACTION_LEN` offsets in [−1, 1].
pub(crate) fn spaces() -> (Space, Space) {
    let observation = BoxSpace::uniform(
        vec![OBSERVATION_LEN],
        DType::F32,
        f64::NEG_INFINITY,
        f64::INFINITY,
    )
    .with_labels(&OBSERVATION_LABELS);
    let action =
        BoxSpace::uniform(vec![ACTION_LEN], DType::F32, -1.0, 1.0).with_labels(&ACTION_LABELS);
    (Space::Box(observation), Space::Box(action))
}

/// What Playground keeps of each foot between steps (`feet_air_time`, `last_contact`,
/// `swing_peak`).
#[derive(Debug, Clone, Copy, Default)]
struct Feet {
    air_time: [f64; 4],
    last_contact: [bool; 4],
    swing_peak: [f64; 4],
}

/// The Unitree Go1 following a velocity command on flat ground: one state of the shared scene.
///
/// `reset_to_state` takes `qpos` (19: trunk position, orientation quaternion, the 12 joint
/// angles), `qvel` (18) and the command (3), 40 numbers.
pub struct Go1Joystick {
    scene: &'static Scene,
    data: Data,
    observation_space: Space,
    action_space: Space,
    observation: Tensor,
    clock: EpisodeClock,
    command: [f64; 3],
    /// The action applied at the latest step (`last_act`); zeros after a reset.
    last_action: [f32; ACTION_LEN],
    feet: Feet,
    tracking_lin_vel_sum: f64,
    counters: [Counter; 2],
}

impl std::fmt::Debug for Go1Joystick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Go1Joystick")
            .field("command", &self.command)
            .field("clock", &self.clock)
            .finish_non_exhaustive()
    }
}

fn vec3(values: &[f64]) -> [f64; 3] {
    [values[0], values[1], values[2]]
}

impl Go1Joystick {
    /// A sim truncated after `max_steps` steps. Fails with [`SimError::Backend`] when MuJoCo
    /// is not built in or the Go1 model is not where it is looked for.
    pub fn new(max_steps: u32) -> Result<Go1Joystick, SimError> {
        let scene = scene::scene()?;
        let (observation_space, action_space) = spaces();
        Ok(Go1Joystick {
            scene,
            data: Data::new(&scene.model),
            observation_space,
            action_space,
            observation: Tensor::zeros(vec![OBSERVATION_LEN], DType::F32),
            clock: EpisodeClock::new(max_steps),
            command: [0.0; 3],
            last_action: [0.0; ACTION_LEN],
            feet: Feet::default(),
            tracking_lin_vel_sum: 0.0,
            counters: COUNTERS.map(|name| Counter { name, value: 0.0 }),
        })
    }

    /// This episode's command: forward and sideways speed (m/s), yaw rate (rad/s).
    pub fn command(&self) -> [f64; 3] {
        self.command
    }

    /// The current positions (`qpos`).
    pub fn qpos(&self) -> &[f64] {
        self.data.qpos()
    }

    /// The current velocities (`qvel`).
    pub fn qvel(&self) -> &[f64] {
        self.data.qvel()
    }

    /// The values of sensor `range` (see `Sensors`).
    fn sensor(&self, range: &std::ops::Range<usize>) -> [f64; 3] {
        vec3(&self.data.sensordata()[range.clone()])
    }

    /// `get_upvector(data)[-1] < 0`: the trunk is upside down.
    fn has_fallen(&self) -> bool {
        self.sensor(&self.scene.sensors.upvector)[2] < 0.0
    }

    /// `_get_obs`'s `state` without Playground's noise and its leading local linear velocity.
    fn observe(&mut self) {
        let gyro = self.sensor(&self.scene.sensors.gyro);
        // get_gravity: site_xmat[imu].T @ [0, 0, -1], minus the matrix's bottom row.
        let xmat = self.data.site_xmat(self.scene.imu);
        let gravity = [-xmat[6], -xmat[7], -xmat[8]];
        let (qpos, qvel) = (self.data.qpos(), self.data.qvel());
        let out = self
            .observation
            .as_f32_mut()
            .expect("the observation is float32");
        for i in 0..3 {
            out[GYRO + i] = gyro[i] as f32;
            out[GRAVITY + i] = gravity[i] as f32;
            out[COMMAND + i] = self.command[i] as f32;
        }
        for j in 0..JOINTS {
            out[JOINT_ANGLES + j] = (qpos[7 + j] - DEFAULT_POSE[j]) as f32;
            out[JOINT_VELOCITIES + j] = qvel[6 + j] as f32;
        }
        out[LAST_ACTION..LAST_ACTION + ACTION_LEN].copy_from_slice(&self.last_action);
    }

    /// Starts an episode at `qpos`, `qvel` with `command`, the controls at the default pose.
    fn start(&mut self, command: [f64; 3]) {
        for (ctrl, target) in self.data.ctrl_mut().iter_mut().zip(DEFAULT_POSE) {
            *ctrl = target;
        }
        self.data.forward();
        self.command = command;
        self.last_action = [0.0; ACTION_LEN];
        self.feet = Feet::default();
        self.tracking_lin_vel_sum = 0.0;
        for c in &mut self.counters {
            c.value = 0.0;
        }
        self.observe();
        self.clock.reset();
    }

    /// The float32 elements of `action`, which must be of the action space's shape and finite
    /// (not necessarily within its bounds: the actuators clamp the targets to the joints'
    /// ranges).
    fn decode<'a>(&self, action: &'a Tensor) -> Result<&'a [f32], SpaceError> {
        ale_sim::action::box_f32_slice(&self.action_space, action, ACTION_LEN)
    }
}

impl Sim for Go1Joystick {
    fn id(&self) -> &'static str {
        ID
    }

    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn observation(&self) -> &Tensor {
        &self.observation
    }

    fn episode_steps(&self) -> u32 {
        self.clock.steps()
    }

    fn counters(&self) -> &[Counter] {
        &self.counters
    }

    /// Playground's `reset` with draws from [`Rng::new(seed)`](Rng), in its order: the
    /// trunk's x and y offsets, its yaw, its six velocities, then the command.
    fn reset(&mut self, seed: u64) -> Result<(), SimError> {
        let mut rng = Rng::new(seed);
        self.data.reset();
        let dx = rng.uniform(-RESET_XY, RESET_XY);
        let dy = rng.uniform(-RESET_XY, RESET_XY);
        let yaw = rng.uniform(-RESET_YAW, RESET_YAW);
        let qpos = self.data.qpos_mut();
        qpos[..7].copy_from_slice(&[
            dx,
            dy,
            DEFAULT_HEIGHT,
            (yaw / 2.0).cos(),
            0.0,
            0.0,
            (yaw / 2.0).sin(),
        ]);
        qpos[7..].copy_from_slice(&DEFAULT_POSE);
        let qvel = self.data.qvel_mut();
        for v in &mut qvel[..6] {
            *v = rng.uniform(-RESET_VELOCITY, RESET_VELOCITY);
        }
        qvel[6..].fill(0.0);
        let command = COMMAND_RANGE.map(|a| rng.uniform(-a, a));
        self.start(command);
        Ok(())
    }

    fn step(&mut self, action: &Tensor) -> Result<Transition, SimError> {
        self.clock.check_can_step()?;
        let action = self.decode(action)?;
        for ((ctrl, target), a) in self
            .data
            .ctrl_mut()
            .iter_mut()
            .zip(DEFAULT_POSE)
            .zip(action)
        {
            *ctrl = target + f64::from(*a) * ACTION_SCALE;
        }
        for _ in 0..SUBSTEPS {
            self.data.step();
        }

        // As Playground reads them: the sensors and sites of the last substep's forward pass,
        // the positions and velocities after it.
        let scene = self.scene;
        let sensordata = self.data.sensordata();
        let contact = scene.sensors.foot_contact.map(|i| sensordata[i] > 0.0);
        let mut first_contact = [false; 4];
        let mut foot_height = [0.0; 4];
        let mut foot_velocity = [[0.0; 3]; 4];
        for foot in 0..4 {
            let landed = contact[foot] || self.feet.last_contact[foot];
            first_contact[foot] = self.feet.air_time[foot] > 0.0 && landed;
            self.feet.air_time[foot] += crate::layout::CTRL_DT;
            foot_height[foot] = self.data.site_xpos(scene.feet[foot])[2];
            self.feet.swing_peak[foot] = self.feet.swing_peak[foot].max(foot_height[foot]);
            foot_velocity[foot] = vec3(&sensordata[scene.sensors.foot_linvel[foot].clone()]);
        }
        let terminated = self.has_fallen();
        let readings = Readings {
            command: self.command,
            local_linvel: self.sensor(&scene.sensors.local_linvel),
            gyro: self.sensor(&scene.sensors.gyro),
            global_linvel: self.sensor(&scene.sensors.global_linvel),
            global_angvel: self.sensor(&scene.sensors.global_angvel),
            upvector: self.sensor(&scene.sensors.upvector),
            joint_angles: &self.data.qpos()[7..],
            joint_velocities: &self.data.qvel()[6..],
            actuator_force: self.data.actuator_force(),
            action,
            last_action: &self.last_action,
            foot_velocity,
            foot_height,
            contact,
            first_contact,
            air_time: self.feet.air_time,
            swing_peak: self.feet.swing_peak,
            terminated,
            soft_limits: &scene.soft_limits,
        };
        let terms = rewards::terms(&readings);

        self.last_action.copy_from_slice(action);
        // A foot on the floor starts its next swing from nothing.
        for (foot, down) in contact.iter().enumerate() {
            if *down {
                self.feet.air_time[foot] = 0.0;
                self.feet.swing_peak[foot] = 0.0;
            }
        }
        self.feet.last_contact = contact;
        self.tracking_lin_vel_sum += terms.tracking_lin_vel;
        self.counters[0].value = if terminated { 1.0 } else { 0.0 };
        self.counters[1].value = self.tracking_lin_vel_sum / f64::from(self.clock.max_steps());
        self.observe();
        let truncated = self.clock.tick(terminated);
        Ok(Transition {
            reward: terms.reward(),
            terminated,
            truncated,
        })
    }

    fn reset_to_state(&mut self, state: &[f64]) -> Result<(), SimError> {
        let (nq, nv) = (7 + JOINTS, 6 + JOINTS);
        if state.len() != nq + nv + 3 {
            return Err(SimError::State(format!(
                "{ID} takes qpos ({nq} numbers), qvel ({nv}) and the command (3), {} in all; \
                 got {}",
                nq + nv + 3,
                state.len()
            )));
        }
        if let Some(i) = state.iter().position(|v| !v.is_finite()) {
            return Err(SimError::State(format!("element {i} is {}", state[i])));
        }
        self.data.reset();
        self.data.qpos_mut().copy_from_slice(&state[..nq]);
        self.data.qvel_mut().copy_from_slice(&state[nq..nq + nv]);
        self.start(vec3(&state[nq + nv..]));
        Ok(())
    }
}
