//! The simulators bundled with the ALE evaluator, on the vocabulary of [`ale_sim`]. Pure
//! computation: no I/O, no async, no gRPC.
//!
//! Classic control, step for step as in Gymnasium 1.x: [`cartpole`], [`pendulum`],
//! [`mountain_car`], [`mountain_car_continuous`], [`acrobot`].
//!
//! Robotics sims of this evaluator's own: [`nav2d`] (a differential-drive robot crossing a
//! random obstacle field to a goal with a lidar) and [`reacher2d`] (a two-link arm putting its
//! fingertip on a target), both on rapier2d, and [`swarm2d`] (sixteen robots to their goals at
//! once, observed and acted on one robot per row).
//!
//! [`add_to`] puts their entries in a [`SimCatalog`]; [`catalog`] is a catalog of them alone.

pub mod acrobot;
pub mod cartpole;
pub mod mountain_car;
pub mod mountain_car_continuous;
pub mod nav2d;
pub mod pendulum;
pub mod reacher2d;
mod registry;
pub mod swarm2d;

// The vocabulary, at the paths the sims name it by.
pub(crate) use ale_sim::{Sim, SimCatalog, sim_accessors};
pub(crate) use ale_sim::{action, draw, numpy_rng, numpy_trig, rng, sim, space, tensor};

pub use registry::{add_to, catalog};
