//! The runs view: past runs in the state dir; open one to read its report and plot, verify its
//! records, export its plot; mark two runs of one task and compare them side by side.

mod compare;
mod draw;

pub use draw::draw;

use std::path::{Path, PathBuf};

use ale_harness::compare::{Comparison, DifferentTasks};
use ale_harness::leaderboard::Leaderboard;
use ale_harness::plot::PlotFormat;
use ale_harness::runs::{RunEntry, RunSummary};
use ale_proto::RunId;

use super::bindings::Command;
use super::message::{Effect, Shown, Verification};
use super::outcome::Outcome;

#[derive(Debug, Default)]
pub struct Runs {
    pub entries: Vec<RunEntry>,
    pub cursor: usize,
    /// The run shown, an index into `entries`.
    pub open: Option<usize>,
    /// Why the runs could not be listed, the last time they were asked for.
    pub error: Option<String>,
    /// The last verification.
    pub verification: Option<Verification>,
    /// The run folders marked for comparison, oldest first: two at most, the first shown on
    /// the left.
    pub marked: Vec<PathBuf>,
    /// The comparison shown in place of the list, once its runs are read.
    pub comparison: Option<Shown<Comparison>>,
    /// The runs being read for a comparison: what a late answer must match to be shown.
    pub comparing: Option<[PathBuf; 2]>,
    /// The leaderboard shown in place of the list.
    pub leaderboard: Option<Leaderboard>,
    /// The task whose leaderboard is being made: what a late answer must match.
    pub ranking: Option<String>,
}

/// How many runs a comparison takes.
const COMPARED: usize = 2;

/// The task a listed run is of, if it can be read.
fn task_of(entry: &RunEntry) -> Option<&str> {
    match &entry.summary {
        RunSummary::Reported(report) => Some(&report.task.id),
        RunSummary::Unreported { task_id, .. } => Some(task_id),
        RunSummary::Unreadable(_) => None,
    }
}

impl Runs {
    fn selected_dir(&self) -> Option<&Path> {
        self.entries.get(self.cursor).map(|r| r.dir.as_path())
    }

    fn entry(&self, dir: &Path) -> Option<&RunEntry> {
        self.entries.iter().find(|e| e.dir == dir)
    }

    /// Where `dir` stands among the marks: 1 (left), 2 (right), or not marked.
    pub fn mark_of(&self, dir: &Path) -> Option<usize> {
        self.marked.iter().position(|d| d == dir).map(|i| i + 1)
    }

    /// Two marked runs of different tasks: the library decides, from what the list knows of
    /// their tasks.
    fn different_tasks(&self, left: &Path, right: &Path) -> Option<DifferentTasks> {
        let (left, right) = (self.entry(left)?, self.entry(right)?);
        DifferentTasks::between(
            &RunId::from_wire(left.run_id.clone()),
            task_of(left)?,
            &RunId::from_wire(right.run_id.clone()),
            task_of(right)?,
        )
        .err()
    }

    /// Marks the selected run, or unmarks it; a third mark replaces the oldest.
    fn toggle_mark(&mut self) -> Vec<Outcome> {
        let Some(entry) = self.entries.get(self.cursor) else {
            return Vec::new();
        };
        let (dir, run_id) = (entry.dir.clone(), entry.run_id.clone());
        // A comparison being read is of the marks as they were: it is not shown any more.
        self.comparing = None;
        if let Some(i) = self.marked.iter().position(|d| *d == dir) {
            self.marked.remove(i);
            return vec![Outcome::say(format!("unmarked {run_id}"))];
        }
        // Two at most: the oldest mark goes, and the note says which run lost it.
        let dropped = (self.marked.len() == COMPARED).then(|| self.marked.remove(0));
        let dropped = dropped
            .and_then(|d| {
                self.entry(&d)
                    .map(|e| format!(" (run {} unmarked: two at most)", e.run_id))
            })
            .unwrap_or_default();
        self.marked.push(dir);
        match self.marked.as_slice() {
            [left, right] => match self.different_tasks(left, right) {
                Some(refusal) => vec![Outcome::warn(refusal_note(&refusal))],
                None => vec![Outcome::say(format!(
                    "marked {run_id}{dropped}: two runs marked, ready to compare"
                ))],
            },
            _ => vec![Outcome::say(format!(
                "marked {run_id}: mark a second run of the same task to compare them"
            ))],
        }
    }

    /// Asks for the marked runs to be read and compared, if two of one task are marked.
    fn compare(&mut self) -> Vec<Outcome> {
        let [left, right] = self.marked.as_slice() else {
            return vec![Outcome::warn(format!(
                "{} of {COMPARED} runs marked: mark two runs of one task to compare them",
                self.marked.len()
            ))];
        };
        if let Some(refusal) = self.different_tasks(left, right) {
            return vec![Outcome::warn(refusal_note(&refusal))];
        }
        let runs = [left.clone(), right.clone()];
        if self.comparing.as_ref() == Some(&runs) {
            return vec![Outcome::say("still reading and verifying both runs…")];
        }
        self.comparing = Some(runs);
        let effect = Effect::CompareRuns {
            left: left.clone(),
            right: right.clone(),
        };
        vec![
            Outcome::say("reading and verifying both runs…"),
            effect.into(),
        ]
    }

    /// A key while the comparison is shown.
    fn on_comparison_command(&mut self, command: Command) -> Vec<Outcome> {
        match (command, self.comparison.as_ref()) {
            (Command::Back, _) => self.comparison = None,
            (Command::ExportPng | Command::ExportSvg, Some(both)) => {
                let effect = Effect::ExportComparePlot {
                    both: both.clone(),
                    format: export_format(command),
                };
                return vec![effect.into()];
            }
            _ => {}
        }
        Vec::new()
    }

    /// A click on the list's `row`.
    pub fn click(&mut self, row: usize) {
        if row < self.entries.len() {
            self.cursor = row;
        }
    }

    pub fn on_command(&mut self, command: Command) -> Vec<Outcome> {
        if self.comparison.is_some() {
            return self.on_comparison_command(command);
        }
        if self.leaderboard.is_some() {
            if command == Command::Back {
                self.leaderboard = None;
            }
            return Vec::new();
        }
        let n = self.entries.len();
        match command {
            Command::Up => self.cursor = self.cursor.saturating_sub(1),
            Command::Down => self.cursor = (self.cursor + 1).min(n.saturating_sub(1)),
            Command::Open if n > 0 => self.open = Some(self.cursor),
            Command::Back => {
                self.open = None;
                self.comparing = None;
            }
            Command::Refresh => return vec![Effect::LoadRuns.into()],
            Command::Mark => return self.toggle_mark(),
            Command::Compare => return self.compare(),
            Command::Leaderboard => {
                return match self.entries.get(self.cursor).and_then(task_of) {
                    Some(task) => {
                        let task = task.to_string();
                        self.rank(task)
                    }
                    None => vec![Outcome::warn(
                        "select a run: its task's leaderboard is shown".to_string(),
                    )],
                };
            }
            Command::Verify => {
                if let Some(dir) = self.selected_dir() {
                    let effect = Effect::VerifyRun(dir.to_path_buf());
                    self.verification = None;
                    return vec![Outcome::say("verifying…"), effect.into()];
                }
            }
            Command::ExportPng | Command::ExportSvg => {
                if let Some(run_dir) = self.selected_dir() {
                    let run_dir = run_dir.to_path_buf();
                    let format = export_format(command);
                    return vec![Effect::ExportPlot { run_dir, format }.into()];
                }
            }
            _ => {}
        }
        Vec::new()
    }

    /// The state dir's runs, listed anew.
    pub fn on_listed(&mut self, listed: Result<Vec<RunEntry>, String>) -> Vec<Outcome> {
        match listed {
            Ok(entries) => {
                self.entries = entries;
                self.error = None;
                // A marked run whose folder is gone cannot be compared any more.
                let listed = &self.entries;
                self.marked.retain(|d| listed.iter().any(|e| e.dir == *d));
                self.cursor = self.cursor.min(self.entries.len().saturating_sub(1));
                Vec::new()
            }
            Err(why) => {
                self.error = Some(why.clone());
                vec![Outcome::warn(why)]
            }
        }
    }

    pub fn on_verified(&mut self, verification: Verification) -> Vec<Outcome> {
        let note = if verification.result.is_ok() {
            Outcome::say("verified: the records agree and their signatures hold")
        } else {
            Outcome::say("verification FAILED")
        };
        self.verification = Some(verification);
        vec![note]
    }

    /// Asks for `task`'s runs to be verified and ranked.
    fn rank(&mut self, task: String) -> Vec<Outcome> {
        self.ranking = Some(task.clone());
        vec![
            Outcome::say(format!("verifying and ranking the runs of {task}…")),
            Effect::LoadLeaderboard { task }.into(),
        ]
    }

    /// The answer to [`Effect::LoadLeaderboard`]: shown if it is still the one asked for.
    pub fn on_ranked(&mut self, task: String, ranked: Result<Leaderboard, String>) -> Vec<Outcome> {
        if self.ranking.as_ref() != Some(&task) {
            return Vec::new();
        }
        self.ranking = None;
        match ranked {
            Ok(board) => {
                let note = format!(
                    "{}: {} agents ranked, {} runs left out as not verified",
                    board.task,
                    board.standings.len(),
                    board.left_out.len()
                );
                self.leaderboard = Some(board);
                vec![Outcome::say(note)]
            }
            Err(why) => vec![Outcome::warn(why)],
        }
    }

    /// The answer to [`Effect::CompareRuns`] for `runs`: shown only if they are still the
    /// ones asked to compare (no Esc, no mark changed meanwhile).
    pub fn on_compared(
        &mut self,
        runs: [PathBuf; 2],
        compared: Result<Box<Comparison>, String>,
    ) -> Vec<Outcome> {
        if self.comparing.as_ref() != Some(&runs) {
            return Vec::new();
        }
        self.comparing = None;
        match compared {
            Ok(both) => {
                let unverified: Vec<String> = both
                    .sides()
                    .iter()
                    .filter(|side| !side.is_verified())
                    .map(|side| side.run_id().to_string())
                    .collect();
                let note = if unverified.is_empty() {
                    Outcome::say(format!("two runs of {}: both verified", both.task_id()))
                } else {
                    Outcome::warn(format!(
                        "two runs of {}: {} not verified (see below)",
                        both.task_id(),
                        unverified.join(" and ")
                    ))
                };
                self.comparison = Some(Shown(std::sync::Arc::new(*both)));
                vec![note]
            }
            Err(why) => vec![Outcome::warn(why)],
        }
    }

    pub fn on_exported(&mut self, path: &Path, result: Result<(), String>) -> Vec<Outcome> {
        match result {
            Ok(()) => vec![Outcome::say(format!("plot written to {}", path.display()))],
            Err(e) => vec![Outcome::warn(e)],
        }
    }
}

/// The library's refusal, short enough for the status line: the marks stand for the runs.
fn refusal_note(refusal: &DifferentTasks) -> String {
    format!(
        "only runs of one task compare: run 1 is of {}, run 2 of {}",
        refusal.left_task, refusal.right_task
    )
}

/// The plot format an export command asks for.
fn export_format(command: Command) -> PlotFormat {
    if command == Command::ExportSvg {
        PlotFormat::Svg
    } else {
        PlotFormat::Png
    }
}
