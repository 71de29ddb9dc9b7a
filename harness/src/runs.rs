//! The runs recorded in a state dir, newest first.

use std::path::{Path, PathBuf};

use ale_proto::layout::{self, INTERRUPTED_FILE};
use ale_proto::trajectory::TRAJECTORY_FILE;

use crate::report::Report;
use crate::verify::verify_trajectory;

/// One run folder and what is known of it.
#[derive(Debug, Clone)]
pub struct RunEntry {
    pub dir: PathBuf,
    pub run_id: String,
    /// Modification time of the folder, for ordering.
    pub modified: std::time::SystemTime,
    pub summary: RunSummary,
}

#[derive(Debug, Clone)]
pub enum RunSummary {
    /// The harness finished it and wrote a report.
    Reported(Box<Report>),
    /// No report (the harness did not finish); what the trajectory says.
    Unreported { task_id: String, status: String },
    /// Neither a report nor a readable trajectory.
    Unreadable(String),
}

/// Every run under `<state_dir>/runs`, newest first.
pub fn list(state_dir: &Path) -> std::io::Result<Vec<RunEntry>> {
    let dir = layout::runs_dir(state_dir);
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut runs = Vec::new();
    for entry in entries {
        let entry = entry?;
        if !entry.file_type()?.is_dir() {
            continue;
        }
        let path = entry.path();
        let modified = entry.metadata()?.modified()?;
        runs.push(RunEntry {
            run_id: entry.file_name().to_string_lossy().to_string(),
            summary: summarize(&path),
            dir: path,
            modified,
        });
    }
    runs.sort_by_key(|r| std::cmp::Reverse(r.modified));
    Ok(runs)
}

fn summarize(dir: &Path) -> RunSummary {
    if let Ok(report) = Report::read(dir) {
        return RunSummary::Reported(Box::new(report));
    }
    match std::fs::read_to_string(dir.join(TRAJECTORY_FILE)) {
        Err(e) => RunSummary::Unreadable(format!("no report and no trajectory: {e}")),
        Ok(text) if dir.join(INTERRUPTED_FILE).exists() => {
            // Its whole lines say which task; `verify` judges the record (a torn line breaks it).
            let whole = text.rfind('\n').map_or(0, |newline| newline + 1);
            let torn = if whole < text.len() {
                ", torn last line"
            } else {
                ""
            };
            match verify_trajectory(&text[..whole]) {
                Err(e) => RunSummary::Unreadable(format!("trajectory does not verify: {e}")),
                Ok(v) => RunSummary::Unreported {
                    task_id: v.run.task_id,
                    status: format!("interrupted{torn}"),
                },
            }
        }
        Ok(text) => match verify_trajectory(&text) {
            Err(e) => RunSummary::Unreadable(format!("trajectory does not verify: {e}")),
            Ok(v) => RunSummary::Unreported {
                task_id: v.run.task_id,
                status: match v.result {
                    Some(r) => format!("{} (not scored)", r.status),
                    None => "unfinished".into(),
                },
            },
        },
    }
}
