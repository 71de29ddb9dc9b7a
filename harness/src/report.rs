//! `report.json`: what the harness concluded about one official run. See docs/harness.md.
//!
//! Data: the report and its parts, the pure functions over them (how the run ended, the agent
//! in a few words, its statistics), and the file they are read from and written to. It builds
//! on the score's breakdown ([`crate::scoring`]) and the statistics ([`crate::stats`]) alone;
//! a report is concluded from a run's verified records by `Report::from_records`, in the verify
//! module, above this one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ale_proto::RunId;
use ale_proto::eval::{EpisodeRecord, EvalStatus, Genre};
use ale_records::event_data::SeedSetRecord;
use ale_records::layout::REPORT_FILE;
use ale_records::private_files::create_private_file;
use serde::{Deserialize, Serialize};

use crate::scoring::{Breakdown, ScoringRules};
use crate::stats::{Interval, Summary, seed_for};
use ale_sandbox::SandboxRecord;

/// Why `report.json` cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot read {}: {cause}", .path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{} is not a report: {cause}", .path.display())]
    Malformed {
        path: PathBuf,
        cause: serde_json::Error,
    },
}

impl ReportError {
    /// Whether there is no report at all (rather than one that cannot be used).
    pub fn is_missing(&self) -> bool {
        matches!(self, ReportError::Read { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound)
    }
}

/// Bumped when a field changes meaning. Version 3 added `statistics`; `verify` still checks
/// a version-2 report (without them) against its records.
pub const REPORT_VERSION: u32 = 3;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub report_version: u32,
    pub run_id: RunId,
    /// The run's name and tags, as its signed log records them (`ale harness run --name`,
    /// `--tag`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// The evaluation seed set the run was played on (its name and commitment, from the
    /// signed `run_started`); none for fresh hidden seeds. Two runs with equal commitments
    /// played the same seeds, rollout for rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed_set: Option<SeedSetRecord>,
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
    /// The metric's spread and intervals, and the score's interval (none in a version-2
    /// report).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub statistics: Option<RunStatistics>,
    pub episodes: Vec<EpisodeRecord>,
    pub seed_commitments: Vec<String>,
    pub safety: BTreeMap<String, f64>,
    pub total_steps: u64,
    pub trajectory: RecordSummary,
    pub harness_log: RecordSummary,
    /// The public keys whose signatures close the trajectory and the harness log.
    pub keys: RecordKeysSummary,
    pub timings: Timings,
    pub versions: Versions,
}

/// A command line in a few words: `policy heuristic` for `ale agent --policy heuristic`,
/// `submission` for none, else the program's file name and its first argument's, if any
/// (`python agent.py`).
pub fn agent_label(command: &[String]) -> String {
    let base = |s: &String| {
        Path::new(s)
            .file_name()
            .map_or(s.clone(), |n| n.to_string_lossy().to_string())
    };
    match command {
        [] => "submission".into(),
        [program, sub, flag, policy]
            if base(program) == "ale" && sub == "agent" && flag == "--policy" =>
        {
            format!("policy {policy}")
        }
        [program] => base(program),
        [program, first, ..] => format!("{} {}", base(program), base(first)),
    }
}

/// How a run ended, as its exit code tells a script: whether it played every planned rollout
/// and, if not, why. `ale harness run` exits with [`RunEnding::exit_code`]; a run that ended
/// with no report at all (the harness or the evaluator failed) exits 1, a usage error 2.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunEnding {
    /// Every planned rollout was played (exit 0).
    Played,
    /// The agent was gone before its rollouts were played: it exited, crashed, or was
    /// stopped by one of its limits (exit 3).
    AgentEndedEarly,
    /// A batch run's submission could not be played: its file could not be read or loaded,
    /// or its policy failed mid-run (exit 3, the agent's side as well).
    SubmissionRefused,
    /// The session's step or time budget ran out first (exit 4).
    BudgetExceeded,
    /// A rollout ended because the sim failed, not the agent (exit 5).
    SimFault,
    /// The evaluator ended the run itself: it shut down or failed (exit 6).
    EvaluatorEnded,
}

impl RunEnding {
    pub fn exit_code(self) -> u8 {
        match self {
            RunEnding::Played => 0,
            RunEnding::AgentEndedEarly | RunEnding::SubmissionRefused => 3,
            RunEnding::BudgetExceeded => 4,
            RunEnding::SimFault => 5,
            RunEnding::EvaluatorEnded => 6,
        }
    }
}

impl std::fmt::Display for RunEnding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RunEnding::Played => "every planned rollout was played",
            RunEnding::AgentEndedEarly => "the agent ended before its rollouts were played",
            RunEnding::SubmissionRefused => {
                "the submission could not be played (the report's status says why)"
            }
            RunEnding::BudgetExceeded => {
                "the session's budget ran out before its rollouts were played"
            }
            RunEnding::SimFault => "a rollout ended because the sim failed",
            RunEnding::EvaluatorEnded => {
                "the evaluator ended the run: it shut down or failed (the report's status says why)"
            }
        })
    }
}

/// A run's statistics: computed from its rollouts' metrics alone, so `verify` recomputes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunStatistics {
    /// The per-rollout metric (every planned rollout, failures at the task's failure value:
    /// the rollouts `value` is the mean of).
    pub metric: Summary,
    /// The score's formula applied to both ends of the metric mean's interval.
    pub score_ci: Interval,
}

impl RunStatistics {
    /// The statistics of `episodes` scored by `score`, resampled with a generator seeded from
    /// `run_id`.
    pub fn of(run_id: &RunId, episodes: &[EpisodeRecord], score: &Breakdown) -> RunStatistics {
        let metrics: Vec<f64> = episodes.iter().map(|e| e.metric).collect();
        let metric = Summary::of(&metrics, seed_for(&[run_id.as_str()]));
        let score_ci = Interval::between(
            score.score_at(metric.mean_ci.low),
            score.score_at(metric.mean_ci.high),
        );
        RunStatistics { metric, score_ci }
    }
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

/// How an agent that ended well ended ([`AgentSummary::exit`]).
pub const EXITED_CLEANLY: &str = "exited with status 0";

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

impl AgentSummary {
    /// Whether an agent ran and ended badly: gone before its session finished, or ended other
    /// than with status 0 (killed, crashed, stopped by a limit).
    pub fn failed(&self) -> bool {
        !self.command.is_empty() && (self.left_early || self.exit != EXITED_CLEANLY)
    }
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

/// Public keys as 64 hex characters each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordKeysSummary {
    pub evaluator: String,
    pub harness: String,
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
    /// The agent in a few words, as listings, leaderboards and legends name it: the run's
    /// `--name` if it has one; else `policy heuristic` for a built-in agent, `submission` when
    /// no agent ran, or the command's program and script (`python agent.py`).
    pub fn agent_label(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        agent_label(&self.agent.command)
    }

    /// The rules the report was scored under, as its breakdown restates them.
    pub fn scoring_rules(&self) -> ScoringRules {
        let s = &self.score;
        ScoringRules::new(
            &s.metric_name,
            s.direction,
            s.target,
            s.cap,
            s.penalties
                .iter()
                .map(|p| (p.name.clone(), p.penalty_factor)),
            self.task.genre,
        )
    }

    /// How the run ended (its exit code's meaning).
    pub fn ending(&self) -> RunEnding {
        let played_all = self.episodes.iter().all(|e| e.outcome.is_played());
        if self.status == EvalStatus::EvaluatorEnded {
            RunEnding::EvaluatorEnded
        } else if self
            .episodes
            .iter()
            .any(|e| e.outcome == ale_proto::eval::Outcome::SimFault)
        {
            RunEnding::SimFault
        } else if self.status == EvalStatus::BudgetExceeded {
            RunEnding::BudgetExceeded
        } else if self.status == EvalStatus::Completed && played_all {
            RunEnding::Played
        } else if self.status == EvalStatus::EndedEarly && !self.agent.left_early {
            // The harness ends a session only when its agent is gone (and says so); a session
            // the agent's side ended otherwise is a batch run whose submission was refused.
            RunEnding::SubmissionRefused
        } else {
            RunEnding::AgentEndedEarly
        }
    }

    /// The statistics for people, a `(label, text)` row each: the metric's spread and IQM,
    /// and the 95% intervals of its mean and of the score. Nothing for a version-2 report.
    pub fn statistics_lines(&self) -> Vec<(String, String)> {
        let Some(stats) = &self.statistics else {
            return Vec::new();
        };
        let m = &stats.metric;
        vec![
            (
                "spread".into(),
                format!(
                    "std {:.4} · IQM {:.4} [{:.4}, {:.4}] over {} rollouts",
                    m.std, m.iqm, m.iqm_ci.low, m.iqm_ci.high, m.n
                ),
            ),
            (
                "95% interval".into(),
                format!(
                    "{} [{:.4}, {:.4}] · score [{:.4}, {:.4}] ({}, {} resamples)",
                    self.score.metric_name,
                    m.mean_ci.low,
                    m.mean_ci.high,
                    stats.score_ci.low,
                    stats.score_ci.high,
                    m.method.bootstrap,
                    m.method.resamples
                ),
            ),
        ]
    }

    /// Writes `report.json` into `run_dir` (0600), once: a file or link already there is an
    /// error, never overwritten or followed.
    pub fn write(&self, run_dir: &Path) -> std::io::Result<()> {
        use std::io::Write;
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        let mut file = create_private_file(&run_dir.join(REPORT_FILE), 0o600)?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()
    }

    /// Writes the report into `file`, made empty (with its space reserved) when the run
    /// started.
    pub fn write_into(&self, file: &mut std::fs::File) -> std::io::Result<()> {
        use std::io::Write;
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        file.write_all(text.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()
    }

    /// Reads `report.json` from `run_dir`.
    pub fn read(run_dir: &Path) -> Result<Report, ReportError> {
        let path = run_dir.join(REPORT_FILE);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(cause) => return Err(ReportError::Read { path, cause }),
        };
        Self::parse(&path, &text)
    }

    /// A report from the text of `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Report, ReportError> {
        serde_json::from_str(text).map_err(|cause| ReportError::Malformed {
            path: path.to_path_buf(),
            cause,
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::scoring::{Faithfulness, ScoringRules, score};
    use ale_proto::eval::Direction;
    use std::os::unix::fs::{PermissionsExt, symlink};

    pub(crate) fn sample() -> Report {
        let rules = ScoringRules {
            metric_name: "mean_return".into(),
            direction: Direction::HigherIsBetter,
            target: 475.0,
            cap: 1.5,
            safety: vec![],
            requires_faithfulness: false,
        };
        let chain = RecordSummary {
            file: "trajectory.jsonl".into(),
            head: "00".repeat(32),
            events: 0,
            verified: true,
        };
        Report {
            report_version: REPORT_VERSION,
            run_id: RunId::from_wire("run-test"),
            name: None,
            tags: Vec::new(),
            seed_set: None,
            task: TaskSummary {
                id: "cartpole-balance".into(),
                title: "CartPole".into(),
                sim: "cartpole".into(),
                genre: Genre::Open,
                episodes: 1,
                max_total_steps: 500,
                time_budget_seconds: 60,
            },
            status: EvalStatus::Completed,
            status_message: "completed".into(),
            agent: AgentSummary {
                command: vec!["agent".into()],
                exit: "exited with status 0".into(),
                left_early: false,
                log: "agent.log".into(),
            },
            sandbox: ale_sandbox::SandboxRecord {
                mode: ale_sandbox::SandboxMode::Namespaces,
                network: ale_sandbox::Network::None,
                agent_uid: Some(65534),
                limits: None,
            },
            value: 500.0,
            score: score(
                &rules,
                Some(500.0),
                &BTreeMap::new(),
                &Faithfulness::Missing,
            ),
            statistics: None,
            episodes: vec![],
            seed_commitments: vec![],
            safety: BTreeMap::new(),
            total_steps: 500,
            trajectory: chain.clone(),
            harness_log: chain,
            keys: RecordKeysSummary {
                evaluator: "11".repeat(32),
                harness: "22".repeat(32),
            },
            timings: Timings {
                started_unix_ms: 0,
                finished_unix_ms: 1,
                duration_seconds: 0.001,
            },
            versions: Versions {
                harness: "test".into(),
                evaluator: "test".into(),
            },
        }
    }

    #[test]
    fn a_report_is_written_once_privately_and_never_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let report = sample();
        report.write(tmp.path()).unwrap();
        let path = tmp.path().join(REPORT_FILE);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(Report::read(tmp.path()).unwrap(), report);
        let e = report.write(tmp.path()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists, "{e}");

        let other = tempfile::tempdir().unwrap();
        let target = other.path().join("precious");
        std::fs::write(&target, "keep me").unwrap();
        symlink(&target, other.path().join(REPORT_FILE)).unwrap();
        assert!(report.write(other.path()).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    }

    /// Every ending has its own cause and exit code, read from the report alone.
    #[test]
    fn each_ending_is_told_by_the_report_and_has_its_exit_code() {
        use ale_proto::eval::{EpisodeRecord, Outcome};
        let episode = |outcome| EpisodeRecord {
            index: 0,
            seed_commitment: String::new(),
            outcome,
            steps: 1,
            episode_return: 1.0,
            metric: 1.0,
            safety: BTreeMap::new(),
        };
        let case = |status, outcome, left_early| {
            let mut report = sample();
            report.status = status;
            report.episodes = vec![episode(outcome)];
            report.agent.left_early = left_early;
            report.ending()
        };
        let cases = [
            (
                EvalStatus::Completed,
                Outcome::Completed,
                false,
                RunEnding::Played,
                0,
            ),
            (
                EvalStatus::Completed,
                Outcome::Aborted,
                false,
                RunEnding::Played,
                0,
            ),
            (
                EvalStatus::EndedEarly,
                Outcome::Aborted,
                true,
                RunEnding::AgentEndedEarly,
                3,
            ),
            (
                EvalStatus::EndedEarly,
                Outcome::NotRun,
                false,
                RunEnding::SubmissionRefused,
                3,
            ),
            (
                EvalStatus::BudgetExceeded,
                Outcome::BudgetExceeded,
                false,
                RunEnding::BudgetExceeded,
                4,
            ),
            (
                EvalStatus::EndedEarly,
                Outcome::SimFault,
                true,
                RunEnding::SimFault,
                5,
            ),
            (
                EvalStatus::EvaluatorEnded,
                Outcome::Aborted,
                false,
                RunEnding::EvaluatorEnded,
                6,
            ),
            (
                EvalStatus::EvaluatorEnded,
                Outcome::SimFault,
                false,
                RunEnding::EvaluatorEnded,
                6,
            ),
        ];
        for (status, outcome, left_early, ending, code) in cases {
            let got = case(status, outcome, left_early);
            assert_eq!(
                got, ending,
                "{status:?} {outcome:?} left early {left_early}"
            );
            assert_eq!(got.exit_code(), code, "{got}");
        }
        let causes: std::collections::BTreeSet<String> = cases
            .iter()
            .map(|(_, _, _, ending, _)| ending.to_string())
            .collect();
        assert_eq!(
            causes.len(),
            6,
            "each ending says its own cause: {causes:?}"
        );
    }
}
