//! The harness: the trusted side of an official evaluation. It creates the official env over
//! the evaluator's private Unix socket, hands the env to an agent process, reads the
//! authoritative result over that same private channel — never through the agent — then
//! verifies the evaluator's trajectory, scores the run and leaves a report.
//!
//! - [`run::run_interactive`]: one official run, end to end.
//! - [`scoring`]: the scoring rules, with a breakdown of every factor.
//! - [`verify`]: checking a trajectory and the harness's own log.
//! - [`report`]: `report.json`; [`plot`]: its plots; [`runs`]: past runs.

pub mod agent;
pub mod channel;
mod error;
pub mod evaluator;
pub mod log;
pub mod plot;
pub mod progress;
pub mod report;
pub mod run;
pub mod runs;
pub mod sandbox;
pub mod scoring;
pub mod verify;

pub use error::HarnessError;
pub use report::Report;
pub use run::{Progress, RunOptions, run_interactive};
