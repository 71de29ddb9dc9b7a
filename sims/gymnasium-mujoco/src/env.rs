//! What every env shares, Gymnasium's `MujocoEnv` ([`Physics`], [`EnvSpec`]), and what each
//! adds to it ([`Rules`]).

use std::sync::OnceLock;

use ale_mujoco::{Data, Model};
use ale_sim::numpy_rng::Generator;
use ale_sim::{BoxSpace, DType, SimError, Space};

use crate::view::View;

/// One of Gymnasium's MuJoCo envs as `gymnasium.make(id)` makes it with default arguments.
pub(crate) struct EnvSpec {
    pub id: &'static str,
    /// The model file, as Gymnasium ships it.
    pub xml: &'static str,
    /// MuJoCo steps per env step.
    pub frame_skip: u32,
    /// The `max_episode_steps` of Gymnasium's registration (its `TimeLimit`).
    pub max_episode_steps: u32,
    /// The observation's length and the action's, with the action's bound (every actuator's
    /// control range is `[-bound, bound]` in these models): the spaces as listed where MuJoCo
    /// is not built in. Tests check them against the compiled model.
    pub observation_len: usize,
    pub action_len: usize,
    pub action_bound: f32,
    /// The env's rules for its compiled model.
    pub rules: fn(&Model) -> Box<dyn Rules>,
    /// How the env is drawn and its values labelled.
    pub view: View,
    /// The model compiled from `xml` on first use, shared by every sim of this env.
    pub model: OnceLock<Result<Model, ale_mujoco::Error>>,
}

impl EnvSpec {
    /// The spaces declared by `observation_len`, `action_len` and `action_bound`.
    pub fn declared_spaces(&self) -> (Space, Space) {
        let observation = BoxSpace::uniform(
            vec![self.observation_len],
            DType::F64,
            f64::NEG_INFINITY,
            f64::INFINITY,
        );
        let bound = f64::from(self.action_bound);
        let action = BoxSpace::uniform(vec![self.action_len], DType::F32, -bound, bound);
        (Space::Box(observation), Space::Box(action))
    }

    /// The shared compiled model, or why there is none.
    pub fn model(&self) -> Result<&Model, SimError> {
        match self.model.get_or_init(|| Model::from_xml(self.xml)) {
            Ok(model) => Ok(model),
            Err(ale_mujoco::Error::NotBuilt) => Err(SimError::Backend(format!(
                "{} runs on MuJoCo, which this build lacks: run scripts/fetch-mujoco, then \
                 build with `--features mujoco` (e.g. `cargo run --release --features mujoco`)",
                self.id
            ))),
            Err(e) => Err(SimError::Backend(format!("{}: {e}", self.id))),
        }
    }
}

/// What one step of an env's rules produced, before the time limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Scored {
    pub reward: f64,
    pub terminated: bool,
}

/// One draw of noise per element, added to it: `x + np_random.uniform(low=-s, high=s,
/// size=len(x))` or `x + s * np_random.standard_normal(len(x))`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Draw {
    Uniform(f64),
    Normal(f64),
}

impl Draw {
    pub fn add_to(self, rng: &mut Generator, values: &mut [f64]) {
        match self {
            Draw::Uniform(scale) => {
                for v in values {
                    *v += rng.uniform(-scale, scale);
                }
            }
            Draw::Normal(scale) => {
                for v in values {
                    *v += scale * rng.standard_normal();
                }
            }
        }
    }
}

/// The usual `reset_model`: noise drawn for the positions first, then for the velocities.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Noise {
    pub qpos: Draw,
    pub qvel: Draw,
}

impl Noise {
    pub fn add_to(self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]) {
        self.qpos.add_to(rng, qpos);
        self.qvel.add_to(rng, qvel);
    }
}

/// What a Gymnasium env class adds to `MujocoEnv` beside its constants: its observation and
/// how it scores a step. Methods mirror the class's, in its arithmetic.
pub(crate) trait Rules: Send + Sync {
    /// The observation's length on `model`.
    fn observation_len(&self, model: &Model) -> usize;
    /// `reset_model`'s draws from `rng`, in Gymnasium's order, which turn the default pose
    /// `qpos` and the zero velocities `qvel` into the episode's initial state.
    fn perturb(&self, rng: &mut Generator, qpos: &mut [f64], qvel: &mut [f64]);
    /// `_get_obs`.
    fn observe(&self, data: &Data, out: &mut [f64]);
    /// `step` but for the observation: runs the simulation and scores it.
    fn step(&self, physics: &mut Physics, action: &[f32]) -> Scored;
}

/// `MujocoEnv` around one state of a shared model.
#[derive(Debug)]
pub(crate) struct Physics {
    data: Data,
    frame_skip: u32,
    dt: f64,
    /// Where a reset builds its initial state.
    qpos: Vec<f64>,
    qvel: Vec<f64>,
}

impl Physics {
    pub fn new(model: &Model, frame_skip: u32) -> Physics {
        Physics {
            data: Data::new(model),
            frame_skip,
            // `model.opt.timestep * self.frame_skip`, a float64 product.
            dt: model.timestep() * f64::from(frame_skip),
            qpos: vec![0.0; model.nq()],
            qvel: vec![0.0; model.nv()],
        }
    }

    pub fn data(&self) -> &Data {
        &self.data
    }

    /// Seconds of simulated time per env step (`dt`).
    pub fn dt(&self) -> f64 {
        self.dt
    }

    /// `do_simulation(action, frame_skip)`: the action becomes the controls as it is (MuJoCo
    /// clamps a limited actuator's control itself), `frame_skip` calls of `mj_step`, then
    /// `mj_rnePostConstraint` so that body forces are current.
    pub fn do_simulation(&mut self, action: &[f32]) {
        self.step_only(action);
        self.data.rne_post_constraint();
    }

    /// The controls, then `frame_skip` calls of `mj_step`: `do_simulation` without the body
    /// forces.
    pub fn step_only(&mut self, action: &[f32]) {
        for (ctrl, a) in self.data.ctrl_mut().iter_mut().zip(action) {
            *ctrl = f64::from(*a);
        }
        for _ in 0..self.frame_skip {
            self.data.step();
        }
    }

    /// `reset`: `mj_resetData`, then `reset_model`: `set_state` (which ends with
    /// `mj_forward`) of the default state as `rules` perturb it with draws from `rng`.
    pub fn reset_perturbed(&mut self, rules: &dyn Rules, rng: &mut Generator) {
        self.data.reset();
        self.qpos.copy_from_slice(self.data.qpos());
        self.qvel.copy_from_slice(self.data.qvel());
        rules.perturb(rng, &mut self.qpos, &mut self.qvel);
        self.data.qpos_mut().copy_from_slice(&self.qpos);
        self.data.qvel_mut().copy_from_slice(&self.qvel);
        self.data.forward();
    }

    /// `mj_resetData`, then `set_state(qpos, qvel)`. The lengths are the model's.
    pub fn reset_to(&mut self, qpos: &[f64], qvel: &[f64]) {
        self.data.reset();
        self.data.qpos_mut().copy_from_slice(qpos);
        self.data.qvel_mut().copy_from_slice(qvel);
        self.data.forward();
    }
}

/// `np.clip(x, -limit, limit)`; NaN stays NaN.
pub(crate) fn clip(x: f64, limit: f64) -> f64 {
    x.clamp(-limit, limit)
}
