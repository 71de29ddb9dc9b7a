//! The file work behind the runs view's effects: listing the state dir's runs, verifying a
//! run's records, exporting a run's plot. Each is a blocking function that returns the message
//! reporting how it went; the event loop runs it off the UI thread.

use std::path::{Path, PathBuf};

use ale_harness::plot::{PlotData, PlotFormat};
use ale_harness::verify::{RecordKeys, verify_run_dir};

use super::message::{Msg, Verification};

/// The runs in `state_dir`, newest first.
pub fn list_runs(state_dir: &Path) -> Msg {
    Msg::Runs(ale_harness::runs::list(state_dir).map_err(|e| {
        format!(
            "cannot list the runs in {}: {e}; check that the state dir is readable (--state-dir)",
            state_dir.display()
        )
    }))
}

/// Verifies `run_dir`'s records with the public keys of `state_dir`, as `ale harness verify`
/// does.
pub fn verify_run(state_dir: &Path, run_dir: PathBuf) -> Msg {
    let result = RecordKeys::from_state_dir(state_dir)
        .map_err(|e| e.to_string())
        .and_then(|keys| verify_run_dir(&run_dir, &keys).map_err(|e| e.to_string()))
        .map(Box::new);
    Msg::Verified(Verification { run_dir, result })
}

/// Writes `run_dir`'s plot into `out_dir` as `<run id>.<png|svg>`, as `ale plot` draws it.
pub fn export_plot(run_dir: &Path, format: PlotFormat, out_dir: &Path) -> Msg {
    let name = run_dir
        .file_name()
        .map_or("run".into(), |n| n.to_string_lossy().to_string());
    let extension = match format {
        PlotFormat::Png => "png",
        PlotFormat::Svg => "svg",
    };
    let path = out_dir.join(format!("{name}.{extension}"));
    let result = PlotData::load(run_dir)
        .and_then(|data| ale_harness::plot::render_file(&data, &path))
        .map_err(|e| e.to_string());
    Msg::Exported { path, result }
}

/// [`export_plot`] into the current directory.
pub fn export_plot_here(run_dir: &Path, format: PlotFormat) -> Msg {
    match std::env::current_dir() {
        Ok(here) => export_plot(run_dir, format, &here),
        Err(e) => Msg::Exported {
            path: PathBuf::from("."),
            result: Err(format!(
                "cannot find the current directory to write the plot into: {e}"
            )),
        },
    }
}
