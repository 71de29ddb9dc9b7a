//! `report.json`: what the harness concluded about one official run. See docs/harness.md.

use std::collections::BTreeMap;
use std::path::Path;

use ale_proto::RunId;
use ale_proto::layout::REPORT_FILE;
use ale_proto::records::{EpisodeRecord, EvalStatus, Genre};
use serde::{Deserialize, Serialize};

use crate::sandbox::SandboxRecord;
use crate::scoring::Breakdown;

/// Bumped when a field changes meaning.
pub const REPORT_VERSION: u32 = 2;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub report_version: u32,
    pub run_id: RunId,
    pub task: TaskSummary,
    pub status: EvalStatus,
    /// Why the session ended, in words (the evaluator's, plus the harness's if it ended it).
    pub status_message: String,
    pub agent: AgentSummary,
    /// How the agent was confined (also in the signed harness log).
    pub sandbox: SandboxRecord,
    /// The measured metric (the score's breakdown repeats it with the target).
    pub value: f64,
    pub score: Breakdown,
    pub episodes: Vec<EpisodeRecord>,
    pub seed_commitments: Vec<String>,
    pub safety: BTreeMap<String, f64>,
    pub total_steps: u64,
    pub trajectory: RecordSummary,
    pub harness_log: RecordSummary,
    pub timings: Timings,
    pub versions: Versions,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskSummary {
    pub id: String,
    pub title: String,
    pub sim: String,
    pub genre: Genre,
    pub episodes: u32,
    pub max_total_steps: u64,
    pub time_budget_seconds: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSummary {
    pub command: Vec<String>,
    /// How the agent process ended, e.g. "exited with status 0", "killed by signal 9".
    pub exit: String,
    /// Whether the agent was gone before its session finished.
    pub left_early: bool,
    /// Its output, in the run folder.
    pub log: String,
}

/// A chained record file and where its chain ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordSummary {
    /// The file name inside the run folder.
    pub file: String,
    pub head: String,
    pub events: usize,
    pub verified: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timings {
    pub started_unix_ms: u64,
    pub finished_unix_ms: u64,
    pub duration_seconds: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Versions {
    pub harness: String,
    pub evaluator: String,
}

impl Report {
    /// Writes `report.json` into `run_dir` (0600).
    pub fn write(&self, run_dir: &Path) -> std::io::Result<()> {
        use std::io::Write;
        use std::os::unix::fs::OpenOptionsExt;
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(run_dir.join(REPORT_FILE))?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()
    }

    /// Reads `report.json` from `run_dir`.
    pub fn read(run_dir: &Path) -> Result<Report, String> {
        let path = run_dir.join(REPORT_FILE);
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        serde_json::from_str(&text).map_err(|e| format!("{} is not a report: {e}", path.display()))
    }
}
