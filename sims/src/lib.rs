//! The simulators behind the ALE evaluator, and the domain types they speak: [`Tensor`],
//! [`Space`] and the [`Sim`] trait. Pure computation: no I/O, no async, no gRPC.
//!
//! Classic control, step for step as in Gymnasium 1.x: [`cartpole`], [`pendulum`],
//! [`mountain_car`], [`mountain_car_continuous`], [`acrobot`].
//!
//! Robotics sims of this evaluator's own: [`nav2d`] (a differential-drive robot crossing a
//! random obstacle field to a goal with a lidar) and [`reacher2d`] (a two-link arm putting its
//! fingertip on a target), both on rapier2d, and [`swarm2d`] (sixteen robots to their goals at
//! once, observed and acted on one robot per row).
//!
//! NumPy's `default_rng(seed)` bit for bit, the generator Gymnasium seeds its envs' initial
//! states from: [`numpy_rng`].

pub mod acrobot;
pub mod action;
pub mod cartpole;
pub mod draw;
mod echo;
pub mod mountain_car;
pub mod mountain_car_continuous;
pub mod nav2d;
pub mod numpy_rng;
pub mod parity;
pub mod pendulum;
pub mod reacher2d;
mod registry;
mod rng;
mod sim;
mod space;
pub mod swarm2d;
mod tensor;

pub use draw::{Drawing, Role, Shape, Viewport};
pub use echo::{ECHO_LIMIT, Echo};
pub use registry::{SIMS, SimInfo, find};
pub use rng::Rng;
pub use sim::{Counter, EpisodeClock, Sim, SimError, Transition, state_array};
pub use space::{BoxSpace, DiscreteSpace, InvalidSpace, MultiDiscreteSpace, Space, SpaceError};
pub use tensor::{DType, ShapeMismatch, Tensor, TensorData};
