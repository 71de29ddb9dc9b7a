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
