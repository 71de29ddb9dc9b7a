//! The runs recorded in a state dir, newest first.

use std::path::{Path, PathBuf};

use ale_records::layout::{self, INTERRUPTED_FILE};
use ale_records::trajectory::TRAJECTORY_FILE;

use crate::report::Report;
use crate::stats::Interval;
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

/// One run as `ale harness runs` lists it (a table row, a JSON object, a CSV line).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunRow {
    pub run_id: String,
    pub name: Option<String>,
    pub tags: Vec<String>,
    pub task: String,
    pub status: String,
    /// When it started (UTC, `2026-12-03 10:36:27`); for a run without a report, when its
    /// folder last changed.
    pub started: String,
    pub duration_seconds: Option<f64>,
    /// The agent in a few words ([`Report::agent_label`] without the name).
    pub agent: String,
    pub metric_name: Option<String>,
    pub value: Option<f64>,
    pub score: Option<f64>,
    pub score_ci: Option<Interval>,
    pub value_ci: Option<Interval>,
    /// The sandbox in words, or the unsandboxed warning.
    pub sandbox: Option<String>,
    /// Why the run has no score, when it has none.
    pub note: Option<String>,
}

impl RunRow {
    pub fn of(entry: &RunEntry) -> RunRow {
        let modified_ms = entry
            .modified
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let blank = |task: String, status: String, note: Option<String>| RunRow {
            run_id: entry.run_id.clone(),
            name: None,
            tags: Vec::new(),
            task,
            status,
            started: format_utc(modified_ms),
            duration_seconds: None,
            agent: "-".into(),
            metric_name: None,
            value: None,
            score: None,
            score_ci: None,
            value_ci: None,
            sandbox: None,
            note,
        };
        match &entry.summary {
            RunSummary::Reported(r) => RunRow {
                run_id: entry.run_id.clone(),
                name: r.name.clone(),
                tags: r.tags.clone(),
                task: r.task.id.clone(),
                status: r.status.to_string(),
                started: format_utc(r.timings.started_unix_ms),
                duration_seconds: Some(r.timings.duration_seconds),
                agent: crate::report::agent_label(&r.agent.command),
                metric_name: Some(r.score.metric_name.clone()),
                value: Some(r.value),
                score: Some(r.score.score),
                score_ci: r.statistics.as_ref().map(|s| s.score_ci),
                value_ci: r.statistics.as_ref().map(|s| s.metric.mean_ci),
                sandbox: Some(r.sandbox.describe()),
                note: None,
            },
            RunSummary::Unreported { task_id, status } => blank(
                task_id.clone(),
                status.clone(),
                Some("no report: the harness did not finish this run".into()),
            ),
            RunSummary::Unreadable(why) => {
                blank("-".into(), "unreadable".into(), Some(why.clone()))
            }
        }
    }
}

/// Which runs a listing keeps.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only runs of this task.
    pub task: Option<String>,
    /// Only runs carrying every one of these tags.
    pub tags: Vec<String>,
    /// Only runs whose name holds this text (any case).
    pub name: Option<String>,
}

impl RunFilter {
    pub fn keeps(&self, row: &RunRow) -> bool {
        self.task.as_ref().is_none_or(|t| &row.task == t)
            && self.tags.iter().all(|t| row.tags.contains(t))
            && self.name.as_ref().is_none_or(|n| {
                row.name
                    .as_ref()
                    .is_some_and(|name| name.to_lowercase().contains(&n.to_lowercase()))
            })
    }
}

/// The runs as CSV (RFC 4180: a header line, fields quoted where they hold a comma, a quote or
/// a line break).
pub fn to_csv(rows: &[RunRow]) -> String {
    fn field(text: &str) -> String {
        // A cell a spreadsheet would run as a formula gets a leading apostrophe.
        let text = &if text.starts_with(['=', '+', '-', '@']) && text.parse::<f64>().is_err() {
            format!("'{text}")
        } else {
            text.to_string()
        };
        if text.contains([',', '"', '\n', '\r']) {
            format!("\"{}\"", text.replace('"', "\"\""))
        } else {
            text.to_string()
        }
    }
    let number = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
    let mut out = String::from(
        "run_id,name,tags,task,status,started_utc,duration_seconds,agent,metric,value,value_ci_low,value_ci_high,score,score_ci_low,score_ci_high,sandbox,note\n",
    );
    for r in rows {
        let line = [
            field(&r.run_id),
            field(r.name.as_deref().unwrap_or("")),
            field(&r.tags.join(" ")),
            field(&r.task),
            field(&r.status),
            field(&r.started),
            number(r.duration_seconds),
            field(&r.agent),
            field(r.metric_name.as_deref().unwrap_or("")),
            number(r.value),
            number(r.value_ci.map(|c| c.low)),
            number(r.value_ci.map(|c| c.high)),
            number(r.score),
            number(r.score_ci.map(|c| c.low)),
            number(r.score_ci.map(|c| c.high)),
            field(r.sandbox.as_deref().unwrap_or("")),
            field(r.note.as_deref().unwrap_or("")),
        ];
        out.push_str(&line.join(","));
        out.push('\n');
    }
    out
}

/// `2026-12-03 10:36:27` (UTC) for milliseconds since the Unix epoch.
pub fn format_utc(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Why a run cannot be removed or archived.
#[derive(Debug, thiserror::Error)]
pub enum RemoveError {
    #[error("{} is not a run folder in {}", .0.display(), .1.display())]
    NotARun(PathBuf, PathBuf),
    #[error(
        "{0} has no report and no finished session: it may still be running (pass --force to \
         remove it anyway)"
    )]
    MaybeRunning(String),
    #[error("cannot {action} {}: {cause}", .path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// The folder archived runs are moved into: `<state>/archive/runs`.
pub fn archive_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("archive").join(layout::RUNS_DIR)
}

/// Removes the run folder `dir` of `state_dir` (or, with `archive`, moves it into
/// [`archive_dir`], where listings no longer see it). A run that has neither a report nor a
/// finished or interrupted session is refused unless `force`: it may be in progress.
pub fn remove(
    state_dir: &Path,
    dir: &Path,
    archive: bool,
    force: bool,
) -> Result<PathBuf, RemoveError> {
    let runs = layout::runs_dir(state_dir);
    let not_a_run = || RemoveError::NotARun(dir.to_path_buf(), runs.clone());
    // "runs/run-x/" and "runs/run-x/." name what a link "run-x" leads to: refused, so that only
    // the entry itself is ever looked at.
    let text = dir.as_os_str().as_encoded_bytes();
    if text.ends_with(b"/") || text.ends_with(b"/.") || text.ends_with(b"/..") {
        return Err(not_a_run());
    }
    let name = dir.file_name().ok_or_else(not_a_run)?;
    let canonical_runs = std::fs::canonicalize(&runs).map_err(|_| not_a_run())?;
    let parent = dir
        .parent()
        .and_then(|p| std::fs::canonicalize(p).ok())
        .ok_or_else(not_a_run)?;
    if parent != canonical_runs {
        return Err(not_a_run());
    }
    // From here on, the entry in the canonical runs folder, never the path as given (one of
    // whose folders could be swapped for a link meanwhile).
    let dir = &canonical_runs.join(name);
    let meta = std::fs::symlink_metadata(dir).map_err(|_| not_a_run())?;
    if !meta.is_dir() {
        return Err(not_a_run());
    }
    let run_id = name.to_string_lossy().to_string();
    if !force {
        let finished = match summarize(dir) {
            RunSummary::Reported(_) => true,
            RunSummary::Unreported { status, .. } => status != "unfinished",
            RunSummary::Unreadable(_) => false,
        };
        if !finished {
            return Err(RemoveError::MaybeRunning(run_id));
        }
    }
    let io = |action, path: &Path| {
        let path = path.to_path_buf();
        move |cause| RemoveError::Io {
            action,
            path,
            cause,
        }
    };
    if archive {
        let into = archive_dir(state_dir);
        std::fs::create_dir_all(&into).map_err(io("create", &into))?;
        let to = into.join(name);
        std::fs::rename(dir, &to).map_err(io("archive", dir))?;
        Ok(to)
    } else {
        std::fs::remove_dir_all(dir).map_err(io("remove", dir))?;
        Ok(dir.to_path_buf())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_utc() {
        assert_eq!(format_utc(0), "1970-01-01 00:00:00");
        // 2026-12-03 10:36:27 UTC
        assert_eq!(format_utc(1_796_294_187_000), "2026-12-03 10:36:27");
        assert_eq!(format_utc(951_782_400_000), "2000-02-29 00:00:00");
    }

    fn row(name: Option<&str>, tags: &[&str], task: &str) -> RunRow {
        RunRow {
            run_id: "run-1".into(),
            name: name.map(str::to_string),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            task: task.into(),
            status: "completed".into(),
            started: format_utc(0),
            duration_seconds: Some(1.5),
            agent: "python agent.py".into(),
            metric_name: Some("mean_return".into()),
            value: Some(500.0),
            score: Some(1.05),
            score_ci: Some(Interval {
                low: 1.0,
                high: 1.1,
            }),
            value_ci: None,
            sandbox: Some("sandboxed (offline)".into()),
            note: None,
        }
    }

    #[test]
    fn filters_keep_what_they_name() {
        let r = row(Some("PPO, seed 3"), &["paper", "v2"], "cartpole-balance");
        assert!(RunFilter::default().keeps(&r));
        let by = |task: Option<&str>, tags: &[&str], name: Option<&str>| RunFilter {
            task: task.map(str::to_string),
            tags: tags.iter().map(|t| t.to_string()).collect(),
            name: name.map(str::to_string),
        };
        assert!(by(Some("cartpole-balance"), &["paper"], Some("ppo")).keeps(&r));
        assert!(!by(Some("acrobot-swingup"), &[], None).keeps(&r));
        assert!(!by(None, &["paper", "v3"], None).keeps(&r));
        assert!(!by(None, &[], Some("sac")).keeps(&r));
        assert!(!by(None, &[], Some("ppo")).keeps(&row(None, &[], "cartpole-balance")));
    }

    #[test]
    fn csv_quotes_what_needs_it() {
        let text = to_csv(&[row(Some("PPO, \"best\""), &["a", "b"], "cartpole-balance")]);
        let mut lines = text.lines();
        assert!(lines.next().unwrap().starts_with("run_id,name,tags,task"));
        assert_eq!(
            lines.next().unwrap(),
            "run-1,\"PPO, \"\"best\"\"\",a b,cartpole-balance,completed,1970-01-01 00:00:00,1.5,\
             python agent.py,mean_return,500,,,1.05,1,1.1,sandboxed (offline),"
        );
    }

    #[test]
    fn only_finished_run_folders_are_removed_or_archived() {
        let state = tempfile::tempdir().unwrap();
        let runs = layout::runs_dir(state.path());
        std::fs::create_dir_all(&runs).unwrap();
        // Not a run: the state dir itself, a folder elsewhere.
        let elsewhere = tempfile::tempdir().unwrap();
        assert!(matches!(
            remove(state.path(), elsewhere.path(), false, true),
            Err(RemoveError::NotARun(..))
        ));
        assert!(matches!(
            remove(state.path(), &runs, false, true),
            Err(RemoveError::NotARun(..))
        ));
        // A link in the runs folder, even named with a trailing slash, is never followed.
        let victim = elsewhere.path().join("victim");
        std::fs::create_dir(&victim).unwrap();
        std::fs::write(victim.join("data.txt"), "keep").unwrap();
        let link = runs.join("run-link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        for named in [
            link.clone(),
            runs.join("run-link/"),
            runs.join("run-link/."),
        ] {
            assert!(
                matches!(
                    remove(state.path(), &named, false, true),
                    Err(RemoveError::NotARun(..))
                ),
                "{}",
                named.display()
            );
        }
        assert!(victim.join("data.txt").is_file());
        std::fs::remove_file(&link).unwrap();
        // A run whose session has not finished is refused without --force.
        let running = runs.join("run-running");
        std::fs::create_dir(&running).unwrap();
        std::fs::write(running.join(TRAJECTORY_FILE), "").unwrap();
        let e = remove(state.path(), &running, false, false).unwrap_err();
        assert!(matches!(e, RemoveError::MaybeRunning(_)), "{e}");
        assert!(running.is_dir());
        // Archived: moved out of the listing, kept whole.
        let to = remove(state.path(), &running, true, true).unwrap();
        assert_eq!(to, archive_dir(state.path()).join("run-running"));
        assert!(to.join(TRAJECTORY_FILE).is_file() && !running.exists());
        // A reported run goes without --force.
        let done = runs.join("run-done");
        std::fs::create_dir(&done).unwrap();
        crate::report::tests::sample().write(&done).unwrap();
        remove(state.path(), &done, false, false).unwrap();
        assert!(!done.exists());
        assert!(list(state.path()).unwrap().is_empty());
    }
}
