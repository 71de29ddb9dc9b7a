//! The simulators behind the ALE evaluator, and the domain types they speak: [`Tensor`],
//! [`Space`] and the [`Sim`] trait. Pure computation: no I/O, no async, no gRPC.

pub mod cartpole;
mod registry;
mod rng;
mod sim;
mod space;
mod tensor;

pub use registry::{SIMS, SimInfo, find};
pub use rng::Rng;
pub use sim::{EpisodeClock, Sim, SimError, Transition};
pub use space::{BoxSpace, DiscreteSpace, InvalidSpace, MultiDiscreteSpace, Space, SpaceError};
pub use tensor::{DType, ShapeMismatch, Tensor, TensorData};
