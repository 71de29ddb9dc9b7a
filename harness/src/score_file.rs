//! Scoring a result from a file, whichever of the record formats it is: what
//! `ale harness score FILE` does.
//!
//! - a run folder, or its `report.json`: the report's result under the rules it was scored
//!   under (a folder with no readable report falls back to its trajectory);
//! - a `trajectory.jsonl`: the verified trajectory's result under the rules its `run_started`
//!   event records;
//! - any other file: a bare `EvalResult` as JSON (`value`, optional `safety`, optional
//!   `task_id`), under the rules of its task from the catalog given.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ale_proto::TaskSpec;
use ale_records::layout::REPORT_FILE;
use ale_records::trajectory::TRAJECTORY_FILE;

use crate::report::Report;
use crate::scoring::{Breakdown, Faithfulness, ScoringRules, score};
use crate::verify::{VerifyError, verify_trajectory};

/// Why a file cannot be scored.
#[derive(Debug, thiserror::Error)]
pub enum ScoreFileError {
    #[error("cannot read {}: {cause}", .path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: {cause}", .path.display())]
    Unverified { path: PathBuf, cause: VerifyError },
    #[error("{}: the session has not finished; there is no result to score", .path.display())]
    Unfinished { path: PathBuf },
    #[error("{} is not JSON: {cause}", .path.display())]
    NotJson {
        path: PathBuf,
        cause: serde_json::Error,
    },
    #[error("which task? {} has no task_id; name the task (--task ID)", .path.display())]
    NoTask { path: PathBuf },
    #[error("unknown task {id:?}; known: {}", .known.join(", "))]
    UnknownTask { id: String, known: Vec<String> },
}

/// What a file says is to be scored, and under which rules.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoreInput {
    /// The measured metric; `None` when the file has none (which scores 0, with the reason).
    pub measured: Option<f64>,
    pub safety: BTreeMap<String, f64>,
    pub rules: ScoringRules,
}

/// Reads what `path` holds (see the module docs). `task` names the task of a bare
/// `EvalResult` (overriding its `task_id`); `tasks` is the catalog its rules are looked up in.
pub fn read_score_input(
    path: &Path,
    task: Option<&str>,
    tasks: &[TaskSpec],
) -> Result<ScoreInput, ScoreFileError> {
    let is_report = path.file_name().is_some_and(|n| n == REPORT_FILE);
    if path.is_dir() || is_report {
        let dir = if path.is_dir() {
            path
        } else {
            path.parent().unwrap_or(Path::new("."))
        };
        return match Report::read(dir) {
            Ok(report) => Ok(ScoreInput {
                measured: Some(report.value),
                rules: report.scoring_rules(),
                safety: report.safety,
            }),
            // A run the harness never reported is scored from its trajectory.
            Err(_) => read_trajectory(&dir.join(TRAJECTORY_FILE)),
        };
    }
    if path.extension().is_some_and(|e| e == "jsonl") {
        return read_trajectory(path);
    }
    let text = read(path)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|cause| ScoreFileError::NotJson {
            path: path.to_path_buf(),
            cause,
        })?;
    let task_id = task
        .or_else(|| value.get("task_id").and_then(|t| t.as_str()))
        .ok_or_else(|| ScoreFileError::NoTask {
            path: path.to_path_buf(),
        })?;
    let metadata =
        tasks
            .iter()
            .find(|t| t.id == task_id)
            .ok_or_else(|| ScoreFileError::UnknownTask {
                id: task_id.to_string(),
                known: tasks.iter().map(|t| t.id.clone()).collect(),
            })?;
    let safety = match value.get("safety") {
        None => BTreeMap::new(),
        Some(s) => serde_json::from_value(s.clone()).map_err(|cause| ScoreFileError::NotJson {
            path: path.to_path_buf(),
            cause,
        })?,
    };
    Ok(ScoreInput {
        measured: value.get("value").and_then(|v| v.as_f64()),
        safety,
        rules: ScoringRules::from_task(metadata),
    })
}

/// Scores what `path` holds (see [`read_score_input`]) with the faithfulness verdict given.
pub fn score_file(
    path: &Path,
    task: Option<&str>,
    tasks: &[TaskSpec],
    faithfulness: &Faithfulness,
) -> Result<Breakdown, ScoreFileError> {
    let input = read_score_input(path, task, tasks)?;
    Ok(score(
        &input.rules,
        input.measured,
        &input.safety,
        faithfulness,
    ))
}

fn read(path: &Path) -> Result<String, ScoreFileError> {
    std::fs::read_to_string(path).map_err(|cause| ScoreFileError::Read {
        path: path.to_path_buf(),
        cause,
    })
}

fn read_trajectory(path: &Path) -> Result<ScoreInput, ScoreFileError> {
    let verified = verify_trajectory(&read(path)?).map_err(|cause| ScoreFileError::Unverified {
        path: path.to_path_buf(),
        cause,
    })?;
    let rules = verified.rules();
    let result = verified.result.ok_or_else(|| ScoreFileError::Unfinished {
        path: path.to_path_buf(),
    })?;
    Ok(ScoreInput {
        measured: Some(result.value),
        safety: result.safety,
        rules,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(id: &str) -> TaskSpec {
        use ale_proto::eval::{Direction, Genre};
        use ale_proto::task_spec::{Budgets, MetricSpec, SafetyMetricSpec, TaskMode};
        use ale_sim::{DiscreteSpace, Space};
        let space = Space::Discrete(DiscreteSpace {
            n: 2,
            start: 0,
            labels: Vec::new(),
        });
        TaskSpec {
            id: id.into(),
            title: String::new(),
            description: String::new(),
            sim: "CartPole-v1".into(),
            mode: TaskMode::Interactive,
            genre: Genre::Open,
            metric: MetricSpec {
                name: "mean_return".into(),
                direction: Direction::HigherIsBetter,
                target: 100.0,
                cap: 1.5,
                failure_value: 0.0,
                description: String::new(),
            },
            episodes_per_eval: 1,
            max_steps_per_episode: 10,
            budgets: Budgets::default(),
            safety_metrics: vec![SafetyMetricSpec {
                name: "collisions".into(),
                penalty_factor: 0.5,
                description: String::new(),
            }],
            submission_contract: None,
            observation_space: space.clone(),
            action_space: space,
            seed_sets: Vec::new(),
        }
    }

    #[test]
    fn a_bare_result_is_scored_under_its_tasks_rules() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        std::fs::write(
            &path,
            r#"{"task_id": "t", "value": 50.0, "safety": {"collisions": 2.0}}"#,
        )
        .unwrap();
        let b = score_file(&path, None, &[task("t")], &Faithfulness::Missing).unwrap();
        assert_eq!(b.score, 0.25);
        let e = score_file(&path, Some("other"), &[task("t")], &Faithfulness::Missing).unwrap_err();
        assert!(
            matches!(&e, ScoreFileError::UnknownTask { id, known } if id == "other" && known == &["t"]),
            "{e}"
        );
        std::fs::write(&path, r#"{"value": 50.0}"#).unwrap();
        let e = score_file(&path, None, &[task("t")], &Faithfulness::Missing).unwrap_err();
        assert!(matches!(e, ScoreFileError::NoTask { .. }), "{e}");
        std::fs::write(&path, r#"{"value": 50.0, "safety": [1]}"#).unwrap();
        let e = score_file(&path, Some("t"), &[task("t")], &Faithfulness::Missing).unwrap_err();
        assert!(matches!(e, ScoreFileError::NotJson { .. }), "{e}");
    }

    #[test]
    fn a_report_is_scored_under_the_rules_it_states() {
        let dir = tempfile::tempdir().unwrap();
        let report = crate::report::tests::sample();
        report.write(dir.path()).unwrap();
        let input = read_score_input(dir.path(), None, &[]).unwrap();
        assert_eq!(input.measured, Some(report.value));
        assert_eq!(input.rules, report.scoring_rules());
        let same = read_score_input(&dir.path().join(REPORT_FILE), None, &[]).unwrap();
        assert_eq!(same, input);
    }
}
