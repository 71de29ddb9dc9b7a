//! How an env is seen: its pose read back from an observation, a camera, and a label for
//! each element of its observation and action. The console's practice view and the Python
//! client's `render()` draw from the observation alone (see [`ale_sim::draw`]): the pose is
//! the positions the observation shows, the coordinates it leaves out (a walker's x) at the
//! model's default, placed by forward kinematics on a scratch `MjData` of the env's model.

use std::cell::RefCell;

use ale_mujoco::draw::{Camera, Scene, default_role, read_finite, unavailable};
use ale_mujoco::{Data, Geom, Model};
use ale_sim::{Drawing, Role, Tensor};

use crate::env::EnvSpec;

/// What an env's [`EnvSpec`] says of how it is seen.
pub(crate) struct View {
    pub camera: Camera,
    /// Writes the positions `observation` shows into `qpos`, which holds the model's default
    /// pose; `observation` has the env's observation length.
    pub pose: fn(observation: &[f64], qpos: &mut [f64]),
    /// The observation's labels on the compiled model, one per element.
    pub labels: fn(model: &Model) -> Vec<String>,
}

/// `qpos[skip..]` from the observation's start: `_get_obs` beginning with
/// `qpos.flat[skip:]`.
pub(crate) fn positions_after(skip: usize, observation: &[f64], qpos: &mut [f64]) {
    let shown = qpos.len().saturating_sub(skip);
    qpos[skip..].copy_from_slice(&observation[..shown]);
}

/// The labels of an observation that is `qpos[skip..]` then `qvel`, then `extra`.
pub(crate) fn positions_then_velocities(model: &Model, skip: usize) -> Vec<String> {
    let (qpos, qvel) = ale_mujoco::coordinate_labels(model.nq(), model.nv(), &model.joints());
    qpos.into_iter()
        .skip(skip)
        .chain(qvel.into_iter().map(|name| format!("vel {name}")))
        .collect()
}

/// `{what} {body}.{key}` for each of `keys` of each body from `first` on.
fn per_body_labels(model: &Model, first: usize, what: &str, keys: &[&str]) -> Vec<String> {
    (first..model.nbody())
        .flat_map(|body| {
            let name = model
                .body_name(body)
                .map_or_else(|| format!("body{body}"), str::to_owned);
            keys.iter().map(move |k| format!("{what} {name}.{k}"))
        })
        .collect()
}

/// The labels of each body's six numbers of `cfrc_ext`, from body `first` on.
pub(crate) fn body_force_labels(model: &Model, first: usize) -> Vec<String> {
    per_body_labels(model, first, "cfrc", &["tx", "ty", "tz", "fx", "fy", "fz"])
}

/// The labels of each body's ten numbers of `cinert`, from body `first` on: the inertia's
/// six terms, the mass times the offset of the subtree's centre of mass, the mass.
pub(crate) fn body_inertia_labels(model: &Model, first: usize) -> Vec<String> {
    let keys = [
        "ixx", "iyy", "izz", "ixy", "ixz", "iyz", "mx", "my", "mz", "m",
    ];
    per_body_labels(model, first, "cinert", &keys)
}

/// The labels of each body's six numbers of `cvel`, rotation then translation, from body
/// `first` on.
pub(crate) fn body_velocity_labels(model: &Model, first: usize) -> Vec<String> {
    per_body_labels(model, first, "cvel", &["wx", "wy", "wz", "vx", "vy", "vz"])
}

/// The labels of `qfrc_actuator[first..]`, after the velocities they act on.
pub(crate) fn actuator_force_labels(model: &Model, first: usize) -> Vec<String> {
    let (_, qvel) = ale_mujoco::coordinate_labels(model.nq(), model.nv(), &model.joints());
    qvel.into_iter()
        .skip(first)
        .map(|name| format!("actuator force {name}"))
        .collect()
}

/// A geom's role: [`default_role`]'s, except that a geom on a body named for a goal or a
/// target is the goal, as a geom so named is (Pusher's goal is an unnamed geom on its `goal`
/// body).
fn role(model: &Model, geom: &Geom, track: usize) -> Option<Role> {
    let role = default_role(geom, track)?;
    let on_goal = model
        .body_name(geom.body)
        .is_some_and(|name| name.contains("goal") || name.contains("target"));
    Some(if on_goal && role != Role::Ground {
        Role::Goal
    } else {
        role
    })
}

/// The action's labels: the actuators' names.
pub(crate) fn action_labels(model: &Model) -> Vec<String> {
    model.actuator_names()
}

/// A scratch state of one env's model, per thread, for drawing.
struct Scratch {
    id: &'static str,
    scene: Scene,
    data: Data,
    qpos: Vec<f64>,
    observation: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Vec<Scratch>> = const { RefCell::new(Vec::new()) };
}

/// The picture of `spec`'s env in the pose `observation` shows. An element missing from it
/// or not finite reads as 0, so drawing never fails; without MuJoCo the picture only says so.
pub(crate) fn draw(spec: &'static EnvSpec, observation: &Tensor) -> Drawing {
    let model = match spec.model() {
        Ok(model) => model,
        Err(e) => return unavailable(&e.to_string()),
    };
    SCRATCH.with_borrow_mut(|scratches| {
        let at = match scratches.iter().position(|s| s.id == spec.id) {
            Some(at) => at,
            None => {
                scratches.push(Scratch {
                    id: spec.id,
                    scene: Scene::with_roles(model, spec.view.camera, |geom| {
                        role(model, geom, spec.view.camera.track)
                    }),
                    data: Data::new(model),
                    qpos: vec![0.0; model.nq()],
                    observation: vec![0.0; spec.observation_len],
                });
                scratches.len() - 1
            }
        };
        let s = &mut scratches[at];
        read_finite(observation, &mut s.observation);
        s.qpos.copy_from_slice(model.qpos0());
        (spec.view.pose)(&s.observation, &mut s.qpos);
        s.data.qpos_mut().copy_from_slice(&s.qpos);
        s.data.kinematics();
        s.scene.draw(&s.data)
    })
}
