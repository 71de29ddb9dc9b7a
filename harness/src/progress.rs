//! What `ale harness run --progress json` prints, one JSON object a line: the contract between
//! a harness process and whoever follows it (the console). Both sides use these types; no one
//! reads the lines by string key.

use std::path::PathBuf;

use ale_proto::RunId;
use ale_proto::eval::{Direction, EvalStatus, Outcome};
use serde::{Deserialize, Serialize};

use crate::report::Report;
use crate::run::Progress;

/// One line of `--progress json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ProgressEvent {
    /// The session as the harness last read it.
    Progress(RunProgress),
    /// The run's report, the last line.
    Report {
        run_dir: PathBuf,
        report: Box<Report>,
    },
}

/// Where a running session stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunProgress {
    pub run_id: RunId,
    pub task_id: String,
    pub status: EvalStatus,
    /// Rollouts finished so far.
    pub done: usize,
    pub planned: usize,
    /// The rollout being played, if any.
    pub current: Option<CurrentRollout>,
    /// The metric of each finished rollout, in order.
    pub episode_metrics: Vec<f64>,
    /// The running value of the metric.
    pub value: f64,
    /// The task's target; absent when the evaluator named none.
    pub target: Option<f64>,
    pub metric_name: String,
    pub direction: Direction,
    pub total_steps: u64,
    /// 0: no step budget.
    pub max_total_steps: u64,
    pub elapsed_seconds: f64,
    /// 0: no time budget.
    pub time_budget_seconds: u64,
}

/// The rollout in play.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CurrentRollout {
    pub index: u32,
    pub steps: u64,
    #[serde(rename = "return")]
    pub episode_return: f64,
}

impl From<&Progress<'_>> for RunProgress {
    fn from(p: &Progress<'_>) -> RunProgress {
        let r = p.result;
        let episode_metrics: Vec<f64> = r
            .episodes
            .iter()
            .filter(|e| e.outcome.is_played())
            .map(|e| e.metric)
            .collect();
        RunProgress {
            run_id: p.run_id.clone(),
            task_id: p.task.id.clone(),
            status: r.status,
            done: episode_metrics.len(),
            planned: r.episodes.len(),
            current: r
                .episodes
                .iter()
                .find(|e| e.outcome == Outcome::InProgress)
                .map(|e| CurrentRollout {
                    index: e.index,
                    steps: e.steps,
                    episode_return: e.episode_return,
                }),
            episode_metrics,
            value: r.value,
            target: p.target.is_finite().then_some(p.target),
            metric_name: r.metric_name.clone(),
            direction: r.direction,
            total_steps: r.total_steps,
            max_total_steps: p.task.max_total_steps,
            elapsed_seconds: p.elapsed.as_secs_f64(),
            time_budget_seconds: p.task.time_budget_seconds,
        }
    }
}

impl ProgressEvent {
    /// The event as one line (without the newline).
    pub fn to_line(&self) -> String {
        // Plain data with finite numbers: it always serializes.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a line; `None` for anything else the harness printed.
    pub fn parse(line: &str) -> Option<ProgressEvent> {
        serde_json::from_str(line).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_progress_line_round_trips_and_other_lines_are_not_events() {
        let progress = ProgressEvent::Progress(RunProgress {
            run_id: RunId::from_wire("run-1"),
            task_id: "cartpole-balance".into(),
            status: EvalStatus::Running,
            done: 1,
            planned: 20,
            current: Some(CurrentRollout {
                index: 1,
                steps: 12,
                episode_return: 12.0,
            }),
            episode_metrics: vec![500.0],
            value: 500.0,
            target: Some(475.0),
            metric_name: "mean_return".into(),
            direction: Direction::HigherIsBetter,
            total_steps: 512,
            max_total_steps: 0,
            elapsed_seconds: 1.5,
            time_budget_seconds: 600,
        });
        let line = progress.to_line();
        assert!(line.starts_with(r#"{"event":"progress","#), "{line}");
        assert!(line.contains(r#""return":12.0"#), "{line}");
        assert_eq!(ProgressEvent::parse(&line), Some(progress));
        assert_eq!(ProgressEvent::parse("rollout 1/20: Completed"), None);
        assert_eq!(ProgressEvent::parse(r#"{"event":"progress"}"#), None);
    }
}
