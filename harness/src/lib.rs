//! The harness: the trusted side of an official evaluation. It creates the official env over
//! the evaluator's private Unix socket, hands the env to an agent process, reads the
//! authoritative result over that same private channel — never through the agent — then
//! verifies the evaluator's trajectory, scores the run and leaves a report.
//!
//! - [`run::run_interactive`], [`run::run_batch`]: one official run, end to end.
//! - [`scoring`]: the scoring rules, with a breakdown of every factor.
//! - [`verify`]: checking a trajectory and the harness's own log.
//! - [`score_file`]: scoring whatever file `ale harness score` is given.
//! - [`stats`]: the mean's and IQM's bootstrap intervals, comparisons of two runs.
//! - [`report`]: `report.json`; [`plot`]: its plots; [`runs`]: past runs; [`compare`]: two
//!   runs of one task side by side.
//! - [`evaluator_process`]: attaching to the evaluator serving a state dir, or starting one.

pub mod agent;
pub mod bundle;
pub mod channel;
pub mod compare;
mod error;
pub mod evaluator_process;
pub mod leaderboard;
pub mod harness_log;
pub mod plot;
pub mod preflight;
pub mod progress;
pub mod report;
pub mod run;
pub mod runs;
pub mod score_file;
pub mod scoring;
pub mod stats;
pub mod verify;

pub use error::HarnessError;
pub use report::Report;
pub use run::{Progress, RunOptions, run_batch, run_interactive};
