//! What a task is, as agents, the console, the harness and the evaluator see it: the domain
//! form of `pb::TaskMetadata`, decoded once at the wire boundary so no caller reads raw enum
//! integers or optional sub-messages, and encoded at the evaluator's edge. A new field every
//! process sees is written in [`TaskSpec`] and in its two conversions here.

use ale_sim::Space;
use serde::{Deserialize, Serialize};

use crate::convert::WireError;
use crate::eval::{Direction, Genre, UnknownEnum, direction_from_pb};
use crate::pb;

/// How the official episodes of a task are played.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskMode {
    /// The agent drives the official episodes live with `Reset`/`Step`.
    #[default]
    Interactive,
    /// The agent submits a policy file; the evaluator rolls it out itself.
    Batch,
}

impl TaskMode {
    /// The word the console and the CLI show: `interactive` or `batch`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskMode::Interactive => "interactive",
            TaskMode::Batch => "batch",
        }
    }
}

impl std::fmt::Display for TaskMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task's headline metric and how it is scored.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricSpec {
    pub name: String,
    pub direction: Direction,
    /// The value a score of 1.0 corresponds to; always > 0.
    pub target: f64,
    /// The largest normalised score.
    pub cap: f64,
    /// The value a failed rollout counts as.
    pub failure_value: f64,
    /// What the per-episode value is, e.g. "episode return".
    pub description: String,
}

/// A zero-target safety metric: any positive value multiplies the score by `penalty_factor`.
#[derive(Debug, Clone, PartialEq)]
pub struct SafetyMetricSpec {
    pub name: String,
    pub penalty_factor: f64,
    pub description: String,
}

/// Limits on one eval session; `None` is no limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Budgets {
    pub max_total_steps: Option<u64>,
    pub time_budget_seconds: Option<u64>,
}

/// Where and in what form a batch task expects its submission.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubmissionContract {
    pub submission_path: String,
    pub entrypoint: String,
    pub format: String,
    pub notes: String,
}

/// One task an evaluator hosts.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskSpec {
    pub id: String,
    pub title: String,
    pub description: String,
    /// The simulator id, e.g. `CartPole-v1`.
    pub sim: String,
    pub mode: TaskMode,
    pub genre: Genre,
    pub metric: MetricSpec,
    pub episodes_per_eval: u32,
    pub max_steps_per_episode: u32,
    pub budgets: Budgets,
    pub safety_metrics: Vec<SafetyMetricSpec>,
    /// Set for batch tasks only.
    pub submission_contract: Option<SubmissionContract>,
    pub observation_space: Space,
    pub action_space: Space,
    /// Its named evaluation seed sets: official runs on one set play the same hidden seeds.
    pub seed_sets: Vec<String>,
}

impl TaskSpec {
    pub fn is_batch(&self) -> bool {
        self.mode == TaskMode::Batch
    }
}

fn mode_from_pb(raw: i32) -> Result<TaskMode, UnknownEnum> {
    match pb::TaskMode::try_from(raw) {
        Ok(pb::TaskMode::Interactive) => Ok(TaskMode::Interactive),
        Ok(pb::TaskMode::Batch) => Ok(TaskMode::Batch),
        _ => Err(UnknownEnum {
            field: "mode",
            value: raw,
        }),
    }
}

fn genre_from_pb(raw: i32) -> Result<Genre, UnknownEnum> {
    match pb::TaskGenre::try_from(raw) {
        Ok(pb::TaskGenre::Open) => Ok(Genre::Open),
        Ok(pb::TaskGenre::Reproduction) => Ok(Genre::Reproduction),
        _ => Err(UnknownEnum {
            field: "genre",
            value: raw,
        }),
    }
}

fn mode_to_pb(mode: TaskMode) -> pb::TaskMode {
    match mode {
        TaskMode::Interactive => pb::TaskMode::Interactive,
        TaskMode::Batch => pb::TaskMode::Batch,
    }
}

fn genre_to_pb(genre: Genre) -> pb::TaskGenre {
    match genre {
        Genre::Open => pb::TaskGenre::Open,
        Genre::Reproduction => pb::TaskGenre::Reproduction,
    }
}

/// 0 is "no limit" on the wire.
fn limit(raw: u64) -> Option<u64> {
    (raw != 0).then_some(raw)
}

impl TryFrom<pb::TaskMetadata> for TaskSpec {
    type Error = WireError;

    fn try_from(t: pb::TaskMetadata) -> Result<Self, WireError> {
        let metric = t.metric.ok_or(WireError::Missing("task.metric"))?;
        let budgets = t.budgets.unwrap_or_default();
        let space =
            |s: Option<pb::Space>, field| Space::try_from(s.ok_or(WireError::Missing(field))?);
        Ok(TaskSpec {
            observation_space: space(t.observation_space, "task.observation_space")?,
            action_space: space(t.action_space, "task.action_space")?,
            id: t.id,
            title: t.title,
            description: t.description,
            sim: t.sim,
            mode: mode_from_pb(t.mode)?,
            genre: genre_from_pb(t.genre)?,
            metric: MetricSpec {
                name: metric.name,
                direction: direction_from_pb(metric.direction)?,
                target: metric.target,
                cap: metric.cap,
                failure_value: metric.failure_value,
                description: metric.description,
            },
            episodes_per_eval: t.episodes_per_eval,
            max_steps_per_episode: t.max_steps_per_episode,
            budgets: Budgets {
                max_total_steps: limit(budgets.max_total_steps),
                time_budget_seconds: limit(budgets.time_budget_seconds),
            },
            safety_metrics: t
                .safety_metrics
                .into_iter()
                .map(|s| SafetyMetricSpec {
                    name: s.name,
                    penalty_factor: s.penalty_factor,
                    description: s.description,
                })
                .collect(),
            submission_contract: t.submission_contract.map(|c| SubmissionContract {
                submission_path: c.submission_path,
                entrypoint: c.entrypoint,
                format: c.format,
                notes: c.notes,
            }),
            seed_sets: t.seed_sets,
        })
    }
}

impl From<&TaskSpec> for pb::TaskMetadata {
    fn from(t: &TaskSpec) -> Self {
        pb::TaskMetadata {
            observation_space: Some(pb::Space::from(&t.observation_space)),
            action_space: Some(pb::Space::from(&t.action_space)),
            id: t.id.clone(),
            title: t.title.clone(),
            description: t.description.clone(),
            sim: t.sim.clone(),
            mode: mode_to_pb(t.mode) as i32,
            genre: genre_to_pb(t.genre) as i32,
            metric: Some(pb::Metric {
                name: t.metric.name.clone(),
                direction: pb::Direction::from(t.metric.direction) as i32,
                target: t.metric.target,
                cap: t.metric.cap,
                failure_value: t.metric.failure_value,
                description: t.metric.description.clone(),
            }),
            episodes_per_eval: t.episodes_per_eval,
            max_steps_per_episode: t.max_steps_per_episode,
            budgets: Some(pb::Budgets {
                max_total_steps: t.budgets.max_total_steps.unwrap_or(0),
                time_budget_seconds: t.budgets.time_budget_seconds.unwrap_or(0),
            }),
            safety_metrics: t
                .safety_metrics
                .iter()
                .map(|s| pb::SafetyMetric {
                    name: s.name.clone(),
                    penalty_factor: s.penalty_factor,
                    description: s.description.clone(),
                })
                .collect(),
            submission_contract: t
                .submission_contract
                .as_ref()
                .map(|c| pb::SubmissionContract {
                    submission_path: c.submission_path.clone(),
                    entrypoint: c.entrypoint.clone(),
                    format: c.format.clone(),
                    notes: c.notes.clone(),
                }),
            seed_sets: t.seed_sets.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ale_sim::{BoxSpace, DType, DiscreteSpace};

    fn metadata() -> pb::TaskMetadata {
        pb::TaskMetadata {
            id: "t".into(),
            title: "T".into(),
            sim: "CartPole-v1".into(),
            mode: pb::TaskMode::Batch as i32,
            genre: pb::TaskGenre::Reproduction as i32,
            metric: Some(pb::Metric {
                name: "mean_steps".into(),
                direction: pb::Direction::LowerIsBetter as i32,
                target: 10.0,
                cap: 1.5,
                failure_value: 200.0,
                description: "steps".into(),
            }),
            episodes_per_eval: 5,
            max_steps_per_episode: 200,
            budgets: Some(pb::Budgets {
                max_total_steps: 0,
                time_budget_seconds: 60,
            }),
            submission_contract: Some(pb::SubmissionContract {
                submission_path: "submission".into(),
                entrypoint: "policy.safetensors".into(),
                format: "mlp-safetensors".into(),
                notes: String::new(),
            }),
            observation_space: Some(
                (&Space::Box(BoxSpace::uniform(vec![2], DType::F32, -1.0, 1.0))).into(),
            ),
            action_space: Some(
                (&Space::Discrete(DiscreteSpace {
                    n: 3,
                    start: 0,
                    labels: Vec::new(),
                }))
                    .into(),
            ),
            ..Default::default()
        }
    }

    #[test]
    fn metadata_decodes_to_typed_fields() {
        let spec = TaskSpec::try_from(metadata()).unwrap();
        assert_eq!(spec.mode, TaskMode::Batch);
        assert!(spec.is_batch());
        assert_eq!(spec.genre, Genre::Reproduction);
        assert_eq!(spec.metric.direction, Direction::LowerIsBetter);
        assert_eq!(spec.budgets.max_total_steps, None, "0 is no limit");
        assert_eq!(spec.budgets.time_budget_seconds, Some(60));
        assert_eq!(spec.submission_contract.unwrap().format, "mlp-safetensors");
        assert_eq!(
            spec.action_space,
            Space::Discrete(DiscreteSpace {
                n: 3,
                start: 0,
                labels: Vec::new(),
            })
        );
    }

    #[test]
    fn unknown_enums_and_missing_parts_are_refused_with_the_field_named() {
        let mut m = metadata();
        m.mode = 7;
        let e = TaskSpec::try_from(m).unwrap_err().to_string();
        assert!(e.contains("unknown mode value 7"), "{e}");

        let mut m = metadata();
        m.metric.as_mut().unwrap().direction = 0;
        let e = TaskSpec::try_from(m).unwrap_err().to_string();
        assert!(e.contains("direction"), "{e}");

        let mut m = metadata();
        m.metric = None;
        let e = TaskSpec::try_from(m).unwrap_err().to_string();
        assert!(e.contains("task.metric"), "{e}");

        let mut m = metadata();
        m.action_space = None;
        let e = TaskSpec::try_from(m).unwrap_err().to_string();
        assert!(e.contains("task.action_space"), "{e}");
    }

    #[test]
    fn a_spec_encodes_to_the_metadata_it_decodes_from() {
        let mut m = metadata();
        m.description = "d".into();
        m.safety_metrics = vec![pb::SafetyMetric {
            name: "collisions".into(),
            penalty_factor: 0.5,
            description: "hits".into(),
        }];
        m.seed_sets = vec!["a".into(), "b".into()];
        let spec = TaskSpec::try_from(m.clone()).unwrap();
        assert_eq!(pb::TaskMetadata::from(&spec), m);
        let mut interactive = spec;
        interactive.mode = TaskMode::Interactive;
        interactive.genre = Genre::Open;
        interactive.submission_contract = None;
        interactive.budgets = Budgets::default();
        let again = TaskSpec::try_from(pb::TaskMetadata::from(&interactive)).unwrap();
        assert_eq!(again, interactive);
    }
}
