//! The vocabulary every simulator behind the ALE evaluator speaks, and nothing of any one sim:
//! [`Tensor`] and [`Space`], the [`Sim`] trait and its episode bookkeeping, the seeded
//! generators ([`Rng`], and [`numpy_rng`], NumPy's `default_rng(seed)` bit for bit, which
//! Gymnasium seeds its envs with), NumPy's float32 `sin`/`cos` ([`numpy_trig`]), drawing descriptions ([`draw`]), action decoding
//! ([`action`]), bounded echoes of client input ([`Echo`]), Gymnasium parity fixtures
//! ([`parity`]), and the [`SimCatalog`] the binary fills from the crates of sims it links.
//! Pure computation: no I/O, no async, no gRPC, but for `draw_fixture` (the `draw-fixture`
//! feature), which tests of the crates of sims use to write the Python drawing fixtures.

pub mod action;
pub mod alloc_count;
pub mod block;
pub mod catalog;
pub mod draw;
#[cfg(feature = "draw-fixture")]
pub mod draw_fixture;
pub mod echo;
pub mod numpy_rng;
pub mod numpy_trig;
pub mod parity;
pub mod rng;
pub mod sim;
pub mod space;
pub mod tensor;

pub use block::{SimBlock, SimsBlock};
pub use catalog::{DeclaredSpaces, DuplicateSim, Holder, MapView, SimCatalog, SimConfig, SimEntry};
pub use draw::{Drawing, Role, Shape, Viewport};
pub use echo::{ECHO_LIMIT, Echo};
pub use rng::Rng;
pub use sim::{Counter, EpisodeClock, EpisodeRng, Sim, SimError, Transition, state_array};
pub use space::{BoxSpace, DiscreteSpace, InvalidSpace, MultiDiscreteSpace, Space, SpaceError};
pub use tensor::{DType, ShapeMismatch, Tensor, TensorData};
