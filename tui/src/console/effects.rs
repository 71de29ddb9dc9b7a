//! The file work behind the runs view's effects: listing the state dir's runs, verifying a
//! run's records, comparing two runs, exporting plots. Each is a blocking function that
//! returns the message reporting how it went; the event loop runs it off the UI thread.

use std::path::{Path, PathBuf};

use ale_harness::compare::Comparison;
use ale_harness::leaderboard::Leaderboard;
use ale_harness::plot::{PlotData, PlotFormat, PlotOptions, render_compare_file};
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

/// The leaderboard of `task` from the runs in `state_dir`, each verified with its keys.
pub fn rank_runs(state_dir: &Path, task: String) -> Msg {
    Msg::Ranked {
        result: Leaderboard::load(state_dir, &task)
            .map_err(|e| format!("cannot list the runs in {}: {e}", state_dir.display())),
        task,
    }
}

/// Reads `left` and `right` and verifies their records with the public keys of `state_dir`,
/// for the comparison screen.
pub fn compare_runs(state_dir: &Path, left: &Path, right: &Path) -> Msg {
    let keys = RecordKeys::from_state_dir(state_dir);
    Msg::Compared {
        runs: [left.to_path_buf(), right.to_path_buf()],
        result: Comparison::load(left, right, keys.as_ref())
            .map(Box::new)
            .map_err(|e| e.to_string()),
    }
}

/// The last `lines` lines of `run_dir`'s `agent.log`, control characters shown as `?` (the
/// agent wrote them), or why it cannot be read.
pub fn agent_log_tail(run_dir: &Path, lines: usize) -> Result<Vec<String>, String> {
    let path = run_dir.join(ale_records::layout::AGENT_LOG_FILE);
    let bytes = std::fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let all: Vec<&str> = text.lines().collect();
    Ok(all[all.len().saturating_sub(lines)..]
        .iter()
        .map(|line| {
            line.chars()
                .map(|c| if c.is_control() && c != '\t' { '?' } else { c })
                .collect()
        })
        .collect())
}

fn extension(format: PlotFormat) -> &'static str {
    match format {
        PlotFormat::Png => "png",
        PlotFormat::Svg => "svg",
    }
}

fn folder_name(run_dir: &Path) -> String {
    run_dir
        .file_name()
        .map_or("run".into(), |n| n.to_string_lossy().to_string())
}

/// Writes `run_dir`'s plot into `out_dir` as `<run id>.<png|svg>`, as `ale plot` draws it.
pub fn export_plot(run_dir: &Path, format: PlotFormat, out_dir: &Path) -> Msg {
    let path = out_dir.join(format!("{}.{}", folder_name(run_dir), extension(format)));
    let result = PlotData::load(run_dir)
        .and_then(|data| ale_harness::plot::render_file(&data, &path, &PlotOptions::default()))
        .map_err(|e| e.to_string());
    Msg::Exported { path, result }
}

/// Writes the comparison `both` into `out_dir` as `compare-<short id>-<short id>.<png|svg>`,
/// as `ale plot --compare` draws it.
pub fn export_compare_plot(both: &Comparison, format: PlotFormat, out_dir: &Path) -> Msg {
    let name = format!(
        "compare-{}-{}",
        both.left.run_id().short(),
        both.right.run_id().short()
    );
    let path = out_dir.join(format!("{name}.{}", extension(format)));
    let result =
        render_compare_file(both, &path, &PlotOptions::default()).map_err(|e| e.to_string());
    Msg::Exported { path, result }
}

/// `export` into the current directory.
pub fn export_here(export: impl FnOnce(&Path) -> Msg) -> Msg {
    match std::env::current_dir() {
        Ok(here) => export(&here),
        Err(e) => Msg::Exported {
            path: PathBuf::from("."),
            result: Err(format!(
                "cannot find the current directory to write the plot into: {e}"
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_logs_tail_is_its_last_lines_with_controls_shown() {
        let dir = tempfile::tempdir().unwrap();
        assert!(
            agent_log_tail(dir.path(), 3)
                .unwrap_err()
                .contains("agent.log")
        );
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        std::fs::write(
            dir.path().join("agent.log"),
            format!("{text}\x1b[2Jcleared\n"),
        )
        .unwrap();
        assert_eq!(
            agent_log_tail(dir.path(), 3).unwrap(),
            ["line 19", "line 20", "?[2Jcleared"]
        );
    }
}
