//! MuJoCo, the C library (3.17.0), behind a thin wrapper. This is the one crate of the project
//! that names `mujoco-rs`: the rest goes through [`Model`] and [`Data`], so a change of binding
//! crate stays in here.
//!
//! MuJoCo is optional. Without the `mujoco` feature (the default) the crate has the same API
//! and no library behind it: [`AVAILABLE`] is false and [`Model::from_xml`] answers
//! [`Error::NotBuilt`], so the project builds and runs everything else with no libmujoco. With
//! the feature, the library must be where `scripts/fetch-mujoco` puts it (see `build.rs`), and
//! binaries find it at run time through their run path.

#[cfg_attr(feature = "mujoco", path = "linked.rs")]
#[cfg_attr(not(feature = "mujoco"), path = "absent.rs")]
mod imp;

pub mod draw;
pub mod timing;

pub use imp::{Data, Model};

/// The MuJoCo release this crate binds.
pub const MUJOCO_VERSION: &str = "3.17.0";

/// Whether MuJoCo is built in (the `mujoco` feature).
pub const AVAILABLE: bool = cfg!(feature = "mujoco");

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error(
        "MuJoCo is not built in: run scripts/fetch-mujoco, then build with the `mujoco` feature"
    )]
    NotBuilt,
    #[error("MuJoCo rejected the model: {0}")]
    Model(String),
}

/// The version string of the MuJoCo library linked in, as it reports itself at run time;
/// `None` when MuJoCo is not built in.
pub fn library_version() -> Option<&'static str> {
    imp::library_version()
}

/// A geom's shape (`mjtGeom`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeomShape {
    Plane,
    HeightField,
    Sphere,
    Capsule,
    Ellipsoid,
    Cylinder,
    Box,
    Mesh,
    /// A signed distance field, or a type this crate does not know.
    Other,
}

/// What the model says of one geom: its shape and sizes (`geom_size`, whose meaning depends on
/// the shape), its body, its visibility group, its colour and its bounding box in its own frame
/// (`geom_aabb`: centre, then half-sizes).
#[derive(Debug, Clone, PartialEq)]
pub struct Geom {
    pub name: Option<String>,
    pub shape: GeomShape,
    pub size: [f64; 3],
    pub body: usize,
    pub group: i32,
    pub rgba: [f32; 4],
    pub aabb: [f64; 6],
}

/// A joint's kind (`mjtJoint`), which says how many positions and velocities it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JointKind {
    /// Position (3) then orientation quaternion (4); six velocities.
    Free,
    /// A quaternion (4); three velocities.
    Ball,
    Slide,
    Hinge,
}

impl JointKind {
    /// The names of the joint's positions and of its velocities, after the joint's own name.
    pub fn coordinates(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            JointKind::Free => (
                &["x", "y", "z", "qw", "qx", "qy", "qz"],
                &["vx", "vy", "vz", "wx", "wy", "wz"],
            ),
            JointKind::Ball => (&["qw", "qx", "qy", "qz"], &["wx", "wy", "wz"]),
            JointKind::Slide | JointKind::Hinge => (&[""], &[""]),
        }
    }
}

/// One joint of the model: its name, kind, and where its numbers start in `qpos` and `qvel`.
#[derive(Debug, Clone, PartialEq)]
pub struct Joint {
    pub name: String,
    pub kind: JointKind,
    pub qpos_adr: usize,
    pub dof_adr: usize,
}

/// A name for each element of `qpos` and of `qvel`, from the joints': a hinge's or a slide's
/// own name, and the joint's name with a coordinate for a free or a ball joint
/// (`root.z`, `root.qw`, `root.vx`). A joint without a name is called `joint<i>`.
pub fn coordinate_labels(nq: usize, nv: usize, joints: &[Joint]) -> (Vec<String>, Vec<String>) {
    let mut qpos = vec![String::new(); nq];
    let mut qvel = vec![String::new(); nv];
    for joint in joints {
        let (positions, velocities) = joint.kind.coordinates();
        let named = |coordinate: &str| {
            if coordinate.is_empty() {
                joint.name.clone()
            } else {
                format!("{}.{coordinate}", joint.name)
            }
        };
        for (k, c) in positions.iter().enumerate() {
            if let Some(slot) = qpos.get_mut(joint.qpos_adr + k) {
                *slot = named(c);
            }
        }
        for (k, c) in velocities.iter().enumerate() {
            if let Some(slot) = qvel.get_mut(joint.dof_adr + k) {
                *slot = named(c);
            }
        }
    }
    (qpos, qvel)
}
