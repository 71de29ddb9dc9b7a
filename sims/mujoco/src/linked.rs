//! The wrapper over mujoco-rs (the `mujoco` feature).

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Once};

use mujoco_rs::prelude::{MjData, MjModel, MjtGeomBase, MjtJoint, MjtObjBase, MjtTrn};

use crate::{Error, Geom, GeomShape, Joint, JointKind};

/// Sends MuJoCo's messages to the `log` crate (target `mujoco`), once per process, before the
/// first model compiles. MuJoCo's own default prints warnings to stdout and appends them to a
/// MUJOCO_LOG.TXT in the working directory. Errors (`mju_error`) still end the process, with
/// exit code 1, as MuJoCo requires.
fn route_mujoco_log() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: no other thread is in MuJoCo while this runs. Only this crate calls into
        // mujoco-rs, every call goes through a Model, and every Model constructor comes through
        // here first; `call_once` holds back any other thread until the hook is in place.
        unsafe { mujoco_rs::logging::install_logging_hook() };
    });
}

/// Drops the parsed XML that `mj_loadXML` keeps for `mj_saveLastXML` (which this crate never
/// calls), so that the last model compiled is not held twice for the life of the process.
fn free_last_xml() {
    // SAFETY: no arguments; MuJoCo guards the kept model with a lock of its own, and nothing
    // here holds a pointer into it.
    unsafe { mujoco_rs::mujoco_c::mj_freeLastXML() };
}

pub(crate) fn library_version() -> Option<&'static str> {
    Some(mujoco_rs::mujoco_version())
}

/// A compiled model (`mjModel`), shared by the [`Data`] made from it.
#[derive(Debug, Clone)]
pub struct Model {
    inner: Arc<MjModel>,
}

impl Model {
    /// Compiles an MJCF model given as text. Assets it names by file (meshes, textures)
    /// cannot be found from text: load such a model with [`Model::from_xml_file`].
    pub fn from_xml(xml: &str) -> Result<Model, Error> {
        route_mujoco_log();
        let inner = MjModel::from_xml_string(xml).map_err(|e| Error::Model(e.to_string()));
        free_last_xml();
        let inner = inner?;
        Ok(Model {
            inner: Arc::new(inner),
        })
    }

    /// Compiles an MJCF file; the files it names are found relative to it.
    pub fn from_xml_file(path: &Path) -> Result<Model, Error> {
        route_mujoco_log();
        let inner = MjModel::from_xml(path).map_err(|e| Error::Model(e.to_string()));
        free_last_xml();
        let inner = inner?;
        Ok(Model {
            inner: Arc::new(inner),
        })
    }

    /// Number of generalized coordinates, the length of [`Data::qpos`].
    pub fn nq(&self) -> usize {
        self.inner.nq() as usize
    }

    /// Number of degrees of freedom, the length of [`Data::qvel`].
    pub fn nv(&self) -> usize {
        self.inner.nv() as usize
    }

    /// Number of controls, the length of [`Data::ctrl_mut`].
    pub fn nu(&self) -> usize {
        self.inner.nu() as usize
    }

    /// Number of bodies, the world (body 0) included.
    pub fn nbody(&self) -> usize {
        self.inner.ffi().nbody as usize
    }

    /// Seconds of simulated time per [`Data::step`].
    pub fn timestep(&self) -> f64 {
        self.inner.ffi().opt.timestep
    }

    /// The default pose (`qpos0`), where [`Data::new`] and [`Data::reset`] put the model.
    pub fn qpos0(&self) -> &[f64] {
        self.inner.qpos0()
    }

    /// Each body's mass (`body_mass`), indexed by body id; the world's is 0.
    pub fn body_mass(&self) -> &[f64] {
        self.inner.body_mass()
    }

    /// Each actuator's `[low, high]` control range (`actuator_ctrlrange`).
    pub fn ctrl_range(&self) -> &[[f64; 2]] {
        self.inner.actuator_ctrlrange()
    }

    /// The id of the body named `name`, if the model has one.
    pub fn body_id(&self, name: &str) -> Option<usize> {
        self.id_of(MjtObjBase::mjOBJ_BODY, name)
    }

    /// The id of the site named `name`, if the model has one.
    pub fn site_id(&self, name: &str) -> Option<usize> {
        self.id_of(MjtObjBase::mjOBJ_SITE, name)
    }

    /// The id of the geom named `name`, if the model has one.
    pub fn geom_id(&self, name: &str) -> Option<usize> {
        self.id_of(MjtObjBase::mjOBJ_GEOM, name)
    }

    /// Where the values of the sensor named `name` lie in [`Data::sensordata`]
    /// (`sensor_adr` up to `sensor_adr + sensor_dim`), if the model has such a sensor.
    pub fn sensor(&self, name: &str) -> Option<Range<usize>> {
        let id = self.id_of(MjtObjBase::mjOBJ_SENSOR, name)?;
        let start = self.inner.sensor_adr()[id] as usize;
        Some(start..start + self.inner.sensor_dim()[id] as usize)
    }

    /// Each joint's `[low, high]` range (`jnt_range`; `[0, 0]` for an unlimited joint).
    pub fn joint_range(&self) -> &[[f64; 2]] {
        self.inner.jnt_range()
    }

    // Parameters changed after compiling, as Python's `model.dof_damping[:] = ...` does. They
    // change this Model only: a Data made from it earlier keeps the model it was made with
    // (copy on write), so set them before making any Data.

    /// Each degree of freedom's damping coefficient (`dof_damping`), for changing.
    pub fn dof_damping_mut(&mut self) -> &mut [f64] {
        Arc::make_mut(&mut self.inner).dof_damping_mut()
    }

    /// Each actuator's gain parameters (`actuator_gainprm`), for changing: a position
    /// actuator's `kp` is element 0.
    pub fn actuator_gainprm_mut(&mut self) -> &mut [[f64; 10]] {
        let model = Arc::make_mut(&mut self.inner);
        // SAFETY: mujoco-rs marks this accessor unsafe because MuJoCo reads some gain
        // parameters of some actuator kinds as indices; the caller's values are plain gains of
        // position actuators, which MuJoCo only multiplies.
        unsafe { model.actuator_gainprm_mut() }
    }

    /// Each actuator's bias parameters (`actuator_biasprm`), for changing: a position
    /// actuator's bias is `biasprm[1] * qpos + biasprm[2] * qvel`, that is `-kp` and `-kv`.
    pub fn actuator_biasprm_mut(&mut self) -> &mut [[f64; 10]] {
        Arc::make_mut(&mut self.inner).actuator_biasprm_mut()
    }

    fn id_of(&self, kind: MjtObjBase, name: &str) -> Option<usize> {
        // mujoco-rs panics on a NUL inside the name; no object is named so.
        if name.contains('\0') {
            return None;
        }
        self.inner.name_to_id(kind, name)
    }
}

/// The simulation state of one [`Model`] (`mjData`).
#[derive(Debug)]
pub struct Data {
    inner: MjData<Arc<MjModel>>,
}

impl Data {
    /// A fresh state of `model`: its default pose at rest, at time 0.
    pub fn new(model: &Model) -> Data {
        Data {
            inner: MjData::new(Arc::clone(&model.inner)),
        }
    }

    /// Advances the simulation by one timestep (`mj_step`).
    pub fn step(&mut self) {
        crate::timing::timed(|| self.inner.step());
    }

    /// Computes the constraint and external forces on each body of the current state
    /// (`mj_rnePostConstraint`: `cacc`, `cfrc_int`, `cfrc_ext`), which `mj_step` leaves stale
    /// unless the model has a force sensor.
    pub fn rne_post_constraint(&mut self) {
        self.inner.rne_post_constraint();
    }

    /// Computes the derived quantities of the current state without advancing (`mj_forward`).
    pub fn forward(&mut self) {
        self.inner.forward();
    }

    /// Back to the model's default state (`mj_resetData`).
    pub fn reset(&mut self) {
        self.inner.reset();
    }

    /// Simulated time in seconds.
    pub fn time(&self) -> f64 {
        self.inner.time()
    }

    pub fn qpos(&self) -> &[f64] {
        self.inner.qpos()
    }

    pub fn qpos_mut(&mut self) -> &mut [f64] {
        self.inner.qpos_mut()
    }

    pub fn qvel(&self) -> &[f64] {
        self.inner.qvel()
    }

    pub fn qvel_mut(&mut self) -> &mut [f64] {
        self.inner.qvel_mut()
    }

    /// The controls, one per actuator, as set (MuJoCo clamps a limited actuator's control
    /// where it uses it, not here).
    pub fn ctrl(&self) -> &[f64] {
        self.inner.ctrl()
    }

    pub fn ctrl_mut(&mut self) -> &mut [f64] {
        self.inner.ctrl_mut()
    }

    /// Every sensor's values, in the model's order (`sensordata`; find one with
    /// [`Model::sensor`]). Current after [`Data::step`] or [`Data::forward`].
    pub fn sensordata(&self) -> &[f64] {
        self.inner.sensordata()
    }

    /// The force of each actuator (`actuator_force`).
    pub fn actuator_force(&self) -> &[f64] {
        self.inner.actuator_force()
    }

    /// The world orientation of site `id`, a row-major 3×3 rotation (`site_xmat`): its columns
    /// are the site's axes. Panics if there is no such site.
    pub fn site_xmat(&self, id: usize) -> [f64; 9] {
        self.inner.site_xmat()[id]
    }

    /// The world position of body `id`'s frame (`xpos`). Panics if there is no such body.
    pub fn body_xpos(&self, id: usize) -> [f64; 3] {
        self.inner.xpos()[id]
    }

    /// The world position of each body's centre of mass (`xipos`), indexed by body id.
    pub fn xipos(&self) -> &[[f64; 3]] {
        self.inner.xipos()
    }

    /// Each body's inertia about its subtree's centre of mass, with its mass, in MuJoCo's
    /// ten-number layout (`cinert`), indexed by body id.
    pub fn cinert(&self) -> &[[f64; 10]] {
        self.inner.cinert()
    }

    /// Each body's com-based velocity, rotation then translation (`cvel`), indexed by body id.
    pub fn cvel(&self) -> &[[f64; 6]] {
        self.inner.cvel()
    }

    /// The world position of site `id` (`site_xpos`). Panics if there is no such site.
    pub fn site_xpos(&self, id: usize) -> [f64; 3] {
        self.inner.site_xpos()[id]
    }

    /// The external force on each body, as a com-based (torque, force) pair (`cfrc_ext`),
    /// indexed by body id; current after [`Data::rne_post_constraint`].
    pub fn cfrc_ext(&self) -> &[[f64; 6]] {
        self.inner.cfrc_ext()
    }

    /// The actuators' force in joint space (`qfrc_actuator`), one per degree of freedom.
    pub fn qfrc_actuator(&self) -> &[f64] {
        self.inner.qfrc_actuator()
    }

    /// The generalized constraint force (`qfrc_constraint`), one per degree of freedom.
    pub fn qfrc_constraint(&self) -> &[f64] {
        self.inner.qfrc_constraint()
    }
}

impl Model {
    /// Every geom of the model, in id order.
    pub fn geoms(&self) -> Vec<Geom> {
        let m = &self.inner;
        (0..m.ffi().ngeom as usize)
            .map(|i| Geom {
                name: m.id_to_name(MjtObjBase::mjOBJ_GEOM, i).map(str::to_owned),
                shape: match m.geom_type()[i] {
                    MjtGeomBase::mjGEOM_PLANE => GeomShape::Plane,
                    MjtGeomBase::mjGEOM_HFIELD => GeomShape::HeightField,
                    MjtGeomBase::mjGEOM_SPHERE => GeomShape::Sphere,
                    MjtGeomBase::mjGEOM_CAPSULE => GeomShape::Capsule,
                    MjtGeomBase::mjGEOM_ELLIPSOID => GeomShape::Ellipsoid,
                    MjtGeomBase::mjGEOM_CYLINDER => GeomShape::Cylinder,
                    MjtGeomBase::mjGEOM_BOX => GeomShape::Box,
                    MjtGeomBase::mjGEOM_MESH => GeomShape::Mesh,
                    _ => GeomShape::Other,
                },
                size: m.geom_size()[i],
                body: m.geom_bodyid()[i] as usize,
                group: m.geom_group()[i],
                rgba: m.geom_rgba()[i],
                aabb: m.geom_aabb()[i],
            })
            .collect()
    }

    /// Every joint of the model, in id order.
    pub fn joints(&self) -> Vec<Joint> {
        let m = &self.inner;
        (0..m.ffi().njnt as usize)
            .map(|i| Joint {
                name: m
                    .id_to_name(MjtObjBase::mjOBJ_JOINT, i)
                    .map_or_else(|| format!("joint{i}"), str::to_owned),
                kind: match m.jnt_type()[i] {
                    MjtJoint::mjJNT_FREE => JointKind::Free,
                    MjtJoint::mjJNT_BALL => JointKind::Ball,
                    MjtJoint::mjJNT_SLIDE => JointKind::Slide,
                    _ => JointKind::Hinge,
                },
                qpos_adr: m.jnt_qposadr()[i] as usize,
                dof_adr: m.jnt_dofadr()[i] as usize,
            })
            .collect()
    }

    /// Each actuator's name, in id order; an unnamed one is called after the joint it drives,
    /// else `actuator<i>`.
    pub fn actuator_names(&self) -> Vec<String> {
        let m = &self.inner;
        (0..self.nu())
            .map(|i| {
                if let Some(name) = m.id_to_name(MjtObjBase::mjOBJ_ACTUATOR, i) {
                    return name.to_owned();
                }
                let joint = (m.actuator_trntype()[i] == MjtTrn::mjTRN_JOINT)
                    .then(|| usize::try_from(m.actuator_trnid()[i][0]).ok())
                    .flatten()
                    .and_then(|j| m.id_to_name(MjtObjBase::mjOBJ_JOINT, j));
                joint.map_or_else(|| format!("actuator{i}"), str::to_owned)
            })
            .collect()
    }

    /// The name of body `id`, if it has one.
    pub fn body_name(&self, id: usize) -> Option<&str> {
        if id >= self.nbody() {
            return None;
        }
        self.inner.id_to_name(MjtObjBase::mjOBJ_BODY, id)
    }
}

impl Data {
    /// Places every body, geom and site for the current positions (`mj_kinematics`), with
    /// nothing else computed: enough to draw a pose.
    pub fn kinematics(&mut self) {
        self.inner.kinematics();
    }

    /// The world position of geom `id` (`geom_xpos`). Panics if there is no such geom.
    pub fn geom_xpos(&self, id: usize) -> [f64; 3] {
        self.inner.geom_xpos()[id]
    }

    /// The world orientation of geom `id`, a row-major 3×3 rotation (`geom_xmat`): its
    /// columns are the geom's axes. Panics if there is no such geom.
    pub fn geom_xmat(&self, id: usize) -> [f64; 9] {
        self.inner.geom_xmat()[id]
    }
}
