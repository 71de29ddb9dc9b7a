//! How an env is seen: its pose read back from an observation, a camera, and a label for
//! each element of its observation and action. The console's practice view and the Python
//! client's `render()` draw from the observation alone (see [`ale_sim::draw`]): the pose is
//! the positions the observation shows, the coordinates it leaves out (a walker's x) at the
//! model's default, placed by forward kinematics on a scratch `MjData` of the env's model.

use std::cell::RefCell;

use ale_mujoco::draw::{Camera, Scene};
use ale_mujoco::{Data, Model};
use ale_sim::{Drawing, Role, Shape, Tensor, Viewport};

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

/// The labels of each body's six numbers of `cfrc_ext`, from body `first` on.
pub(crate) fn body_force_labels(model: &Model, first: usize) -> Vec<String> {
    (first..model.nbody())
        .flat_map(|body| {
            let name = model
                .body_name(body)
                .map_or_else(|| format!("body{body}"), str::to_owned);
            ["tx", "ty", "tz", "fx", "fy", "fz"].map(|k| format!("cfrc {name}.{k}"))
        })
        .collect()
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
                    scene: Scene::new(model, spec.view.camera),
                    data: Data::new(model),
                    qpos: vec![0.0; model.nq()],
                    observation: vec![0.0; spec.observation_len],
                });
                scratches.len() - 1
            }
        };
        let s = &mut scratches[at];
        for (i, o) in s.observation.iter_mut().enumerate() {
            *o = observation
                .data()
                .get_f64(i)
                .filter(|v| v.is_finite())
                .unwrap_or(0.0);
        }
        s.qpos.copy_from_slice(model.qpos0());
        (spec.view.pose)(&s.observation, &mut s.qpos);
        s.data.qpos_mut().copy_from_slice(&s.qpos);
        s.data.kinematics();
        s.scene.draw(&s.data)
    })
}

fn unavailable(why: &str) -> Drawing {
    let mut drawing = Drawing::new(Viewport {
        x_min: -1.0,
        x_max: 1.0,
        y_min: -1.0,
        y_max: 1.0,
    });
    drawing.shapes.push(Shape::Label {
        at: (-0.9, 0.0),
        text: why.to_owned(),
        role: Role::Hazard,
    });
    drawing
}
