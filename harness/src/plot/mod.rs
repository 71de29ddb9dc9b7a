//! Plots of a run, fit for a report or a paper: the per-rollout metric as bars (failed rollouts
//! marked), the running mean with its 95% band, the run's mean with its bootstrap interval at
//! the right end, the target line behind the bars, and the task's safety counters in a panel
//! below (when it has any); or two runs of one task side by side ([`render_compare_file`]).
//! PNG or SVG, chosen by the file's extension, at the size and resolution [`PlotOptions`] asks
//! for. PNG text is drawn with a proportional font compiled into the binary (Ubuntu Light), so
//! nothing is needed from the system; an SVG names that font first, then common sans-serif
//! faces.
//!
//! In two parts:
//! - `data.rs`: [`PlotData`], what a plot shows (a run's rollouts, their running mean, the
//!   mean's interval, the target, the labels, the y range and how its numbers are written),
//!   from a report or a verified trajectory; it draws nothing;
//! - `render.rs`: drawing it with plotters, or drawing a [`crate::compare::Comparison`] of two
//!   runs, into PNG or SVG: sizes, colours, fonts, the layout of charts and legend.
//!
//! - `error.rs`: [`PlotError`], why a plot could not be read, drawn or written.
//!
//! A comparison holds each run's [`PlotData`], so [`crate::compare`] stands between the two:
//! it uses the data (and the error), and the rendering uses it.

pub(crate) mod data;
pub(crate) mod error;
mod render;

pub use data::PlotData;
pub use error::PlotError;
pub use render::{
    BASE_DPI, DEFAULT_HEIGHT, DEFAULT_WIDTH, PLOT_FILES, PixelRect, PlotFormat, PlotLayout,
    PlotOptions, compare_layout, layout, render_bytes, render_compare_bytes, render_compare_file,
    render_file, write_run_plots,
};
