//! The harness: the trusted side of an official evaluation. It creates the official env over
//! the evaluator's private Unix socket, hands the env to an agent process, reads the
//! authoritative result over that same private channel — never through the agent — then
//! verifies the evaluator's trajectory, scores the run and leaves a report.
//!
//! Read bottom-up: each layer uses only the layers below it.
//! - Data: [`report`] (`report.json`: the report and its parts, how a run ended), [`scoring`]
//!   (the scoring rules, the formula, a breakdown of every factor), [`stats`] (the mean's and
//!   IQM's bootstrap intervals, comparisons of two runs), [`harness_log`] (the events of the
//!   harness's own signed log, `harness.jsonl`).
//! - [`verify`]: checking a trajectory and the harness log, concluding the report they add up
//!   to, checking a run folder.
//! - On both, the plots: [`plot`]'s data (what a plot shows), [`compare`] (two runs of one
//!   task side by side, each with its plot's data), [`plot`]'s rendering (PNG and SVG, of one
//!   run or of a comparison).
//! - Reading past runs: [`runs`] (the run list), [`leaderboard`], [`score_file`] (scoring
//!   whatever file `ale harness score` is given), [`bundle`] (a run in one file, for a reviewer).
//! - Making a run: [`run::run_interactive`], [`run::run_batch`]: one official run, end to end,
//!   over the harness [`channel`], with its [`agent`]; [`evaluator_process`] (attaching to the
//!   evaluator serving a state dir, or starting one), [`preflight`] (a run's set-up checked
//!   before it starts), [`progress`] (what the console reads of a run under way). Its error,
//!   `HarnessError` (`error.rs`), sits at this top layer: it names the failures of every layer
//!   below (an evaluator that did not start, records that do not verify, a plot not written).

pub mod agent;
pub mod bundle;
pub mod channel;
pub mod compare;
mod error;
pub mod evaluator_process;
pub mod harness_log;
pub mod leaderboard;
pub mod plot;
pub mod preflight;
pub mod progress;
pub mod report;
mod reserve;
pub mod run;
pub mod runs;
pub mod score_file;
pub mod scoring;
pub mod stats;
pub mod verify;

pub use error::HarnessError;
pub use report::Report;
pub use run::{Progress, RunOptions, run_batch, run_interactive};
