//! Gymnasium's MuJoCo envs (the v5 versions of Gymnasium 1.4.0, with their default arguments),
//! step for step, on MuJoCo 3.17.0 through [`ale_mujoco`].
//!
//! Each env is Gymnasium's `MujocoEnv` plus its own rules: the same model file (embedded from
//! `assets/`, Gymnasium's MIT licence beside them), frame skip, reset noise drawn with NumPy's
//! `default_rng(seed)` ([`ale_sim::numpy_rng`]) in Gymnasium's order, observation layout,
//! reward terms in Gymnasium's dtypes, termination and `TimeLimit` truncation. Actions reach
//! MuJoCo unclipped, as in Gymnasium (MuJoCo clamps the controls of limited actuators itself;
//! the control cost sees the action as given).
//!
//! MuJoCo is optional: without the `mujoco` feature the entries are still in the catalog, so
//! tasks on them are listed, and building one answers [`ale_sim::SimError::Backend`] saying
//! how to get the library.
//!
//! ```
//! let catalog = ale_sims_mujoco::catalog();
//! let entry = catalog.find("Hopper-v5").unwrap();
//! match entry.build_plain(entry.default_max_steps()) {
//!     Ok(mut sim) => {
//!         sim.reset(7).unwrap();
//!         assert_eq!(sim.observation().len(), 11);
//!     }
//!     Err(e) => assert!(e.to_string().contains("scripts/fetch-mujoco"), "{e}"),
//! }
//! ```

mod cost;
mod env;
mod envs;
mod registry;
mod sim;
mod view;

/// Time spent in `mj_step`, for benchmarks (see [`ale_mujoco::timing`]).
pub use ale_mujoco::timing;
pub use registry::{ENV_IDS, add_to, catalog};
pub use sim::GymnasiumMujoco;
