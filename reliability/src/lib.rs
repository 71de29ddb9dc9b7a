//! Checks of an `AleEnv` evaluator from outside, over the wire, as any client sees it: ours or
//! a third party's. `docs/reliability.md` records what they measured.
//!
//! - [`conformance`]: the protocol suite behind `ale conformance`; every rule of
//!   `docs/protocol.md` has a case.
//! - [`load`]: the load generator behind `ale load`: many clients, each on its own
//!   connection, stepping practice envs.

pub mod conformance;
pub mod load;
