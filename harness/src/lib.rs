//! The harness: the trusted side of an official evaluation. It creates the official env over
//! the evaluator's private Unix socket, hands the env to an agent process, and reads the
//! authoritative result over that same private channel — never through the agent.

mod agent;
pub mod channel;
mod error;
pub mod run;

pub use error::HarnessError;
pub use run::{RunOptions, RunOutcome, run_interactive};
