//! The runs view: past runs in the state dir; open one to read its report and plot, verify its
//! records, export its plot.

mod draw;

pub use draw::draw;

use std::path::Path;

use ale_harness::plot::PlotFormat;
use ale_harness::runs::RunEntry;

use super::app::Outcome;
use super::keys::Command;
use super::message::{Effect, Verification};

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
}

impl Runs {
    fn selected_dir(&self) -> Option<&Path> {
        self.entries.get(self.cursor).map(|r| r.dir.as_path())
    }

    /// A click on the list's `row`.
    pub fn click(&mut self, row: usize) {
        if row < self.entries.len() {
            self.cursor = row;
        }
    }

    pub fn on_command(&mut self, command: Command) -> Vec<Outcome> {
        let n = self.entries.len();
        match command {
            Command::Up => self.cursor = self.cursor.saturating_sub(1),
            Command::Down => self.cursor = (self.cursor + 1).min(n.saturating_sub(1)),
            Command::Open if n > 0 => self.open = Some(self.cursor),
            Command::Back => self.open = None,
            Command::Refresh => return vec![Effect::LoadRuns.into()],
            Command::Verify => {
                if let Some(dir) = self.selected_dir() {
                    let effect = Effect::VerifyRun(dir.to_path_buf());
                    self.verification = None;
                    return vec![Outcome::say("verifying…"), effect.into()];
                }
            }
            Command::ExportPng | Command::ExportSvg => {
                if let Some(run_dir) = self.selected_dir() {
                    let format = if command == Command::ExportPng {
                        PlotFormat::Png
                    } else {
                        PlotFormat::Svg
                    };
                    let run_dir = run_dir.to_path_buf();
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

    pub fn on_exported(&mut self, path: &Path, result: Result<(), String>) -> Vec<Outcome> {
        match result {
            Ok(()) => vec![Outcome::say(format!("plot written to {}", path.display()))],
            Err(e) => vec![Outcome::warn(e)],
        }
    }
}
