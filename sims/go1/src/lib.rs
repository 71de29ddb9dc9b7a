//! A Unitree Go1 quadruped following a joystick command on flat ground, after MuJoCo
//! Playground's `Go1JoystickFlatTerrain` (`mujoco_playground/_src/locomotion/go1/joystick.py`),
//! on MuJoCo 3.17.0 through [`ale_mujoco`].
//!
//! The robot is MuJoCo Menagerie's `unitree_go1` model (BSD-3-Clause), which
//! `scripts/fetch-go1` brings under `target/`; `assets/scene.xml` puts it on a flat floor with
//! the sensors Playground reads, and the sim sets Playground's timestep, PD gains, action
//! scale, episode length, command ranges, reward terms and scales, and its fall test. Each
//! episode's initial perturbation and command are drawn from its seed with [`ale_sim::Rng`].
//! What differs from Playground, and why, is in `docs/sims.md`.
//!
//! The observation and action are described in [`layout`]; the episode counters in
//! [`COUNTERS`].
//!
//! MuJoCo is optional: without the `mujoco` feature the entry is still in the catalog with its
//! spaces, so its tasks are listed, and building it answers [`ale_sim::SimError::Backend`]
//! saying how to get the library; with it, a missing model says to run `scripts/fetch-go1`.
//!
//! ```
//! let catalog = ale_sims_go1::catalog();
//! let entry = catalog.find(ale_sims_go1::layout::ID).unwrap();
//! match entry.build_plain(entry.default_max_steps()) {
//!     Ok(mut sim) => {
//!         sim.reset(7).unwrap();
//!         assert_eq!(sim.observation().len(), ale_sims_go1::layout::OBSERVATION_LEN);
//!     }
//!     Err(e) => assert!(e.to_string().contains("scripts/fetch-"), "{e}"),
//! }
//! ```

pub mod layout;
mod registry;
mod rewards;
mod scene;
mod sim;
pub mod view;

pub use registry::{add_to, catalog};
pub use scene::{ASSETS_ENV, DEFAULT_ASSETS, assets_dir};
pub use sim::{COUNTERS, Go1Joystick};

/// Whether MuJoCo is built in (the `mujoco` feature, or another crate's turning it on for
/// `ale-mujoco`): whether [`Go1Joystick::new`] can succeed at all.
pub const MUJOCO_BUILT_IN: bool = ale_mujoco::AVAILABLE;
