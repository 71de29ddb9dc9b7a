//! Task configs (TOML) and the registry of tasks the evaluator hosts.
//!
//! A task names a simulator, how its official evaluation runs (episodes, budgets) and how the
//! result is measured. The defaults are embedded from `server/tasks/*.toml`; a directory of
//! further TOML files may add or replace tasks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ale_proto::TaskSpec;
use ale_proto::convert::WireError;
use ale_proto::eval::{Direction, Genre};
use ale_proto::task_spec::{Budgets, MetricSpec, SafetyMetricSpec, SubmissionContract, TaskMode};
use ale_sim::{Counter, Holder, Sim, SimCatalog, SimConfig, SimEntry, SimError, Space};
use serde::Deserialize;

use crate::error::Error;

macro_rules! embed {
    ($file:literal) => {
        ($file, include_str!(concat!("../tasks/", $file)))
    };
}

/// The tasks compiled into the evaluator: `(file name, contents)`. Each names a sim of the
/// binary's catalog (`ale_tui::sim_catalog`, checked in its tests).
pub const EMBEDDED: &[(&str, &str)] = &[
    embed!("acrobot-swingup.toml"),
    embed!("ant-walk.toml"),
    embed!("cartpole-balance.toml"),
    embed!("go1-joystick.toml"),
    embed!("halfcheetah-run.toml"),
    embed!("hopper-hop.toml"),
    embed!("humanoid-standup.toml"),
    embed!("humanoid-walk.toml"),
    embed!("inverted-double-pendulum.toml"),
    embed!("inverted-pendulum.toml"),
    embed!("mountaincar-continuous.toml"),
    embed!("mountaincar-sarsa-reproduction.toml"),
    embed!("mountaincar.toml"),
    embed!("nav2d-barn.toml"),
    embed!("pendulum-swingup.toml"),
    embed!("pusher-push.toml"),
    embed!("reacher-mujoco.toml"),
    embed!("reacher-reach.toml"),
    embed!("swarm-goals.toml"),
    embed!("swimmer-swim.toml"),
    embed!("walker2d-walk.toml"),
];

/// Bounds on a task file's numbers, checked at load. They are far beyond any real task and
/// near enough that everything computed from them (deadlines, step counts, scores) stays in
/// range: a task file cannot make the evaluator overflow.
pub mod bounds {
    /// `eval.episodes`: 1 to this.
    pub const MAX_EPISODES: u32 = 10_000;
    /// `eval.max_steps_per_episode`: 1 to this.
    pub const MAX_STEPS_PER_EPISODE: u32 = 10_000_000;
    /// `eval.max_total_steps`: 0 (no limit) to this.
    pub const MAX_TOTAL_STEPS: u64 = 1_000_000_000_000;
    /// `eval.time_budget_seconds`: 0 (no limit) to this, 7 days.
    pub const MAX_TIME_BUDGET_SECONDS: u64 = 7 * 24 * 60 * 60;
    /// `eval.seed_sets`: at most this many names.
    pub const MAX_SEED_SETS: usize = 32;
    /// `metric.target` (> 0) and `metric.failure_value` (>= 0): finite, at most this.
    pub const MAX_METRIC_VALUE: f64 = 1e12;
    /// `metric.cap` (> 0): at most this.
    pub const MAX_CAP: f64 = 100.0;
}

/// A task file's `mode`: the file's words for [`TaskMode`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Interactive,
    Batch,
}

/// What one rollout contributes to the metric.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EpisodeMetric {
    /// The sum of rewards.
    Return,
    /// The sum of rewards, negated: for tasks whose rewards are costs.
    NegatedReturn,
    /// The sum of rewards, or 0 if it is negative.
    PositiveReturn,
    /// The number of steps taken.
    Steps,
    /// The final value of one of the sim's episode counters (`{ counter = "success" }`).
    Counter(String),
}

impl EpisodeMetric {
    /// The per-episode value of a rollout that ran to its end.
    pub fn measure(&self, episode_return: f64, steps: u64, counters: &[Counter]) -> f64 {
        match self {
            EpisodeMetric::Return => episode_return,
            EpisodeMetric::NegatedReturn => -episode_return,
            EpisodeMetric::PositiveReturn => episode_return.max(0.0),
            EpisodeMetric::Steps => steps as f64,
            EpisodeMetric::Counter(name) => counter(counters, name),
        }
    }
}

/// The value of the counter `name` (0 if the sim has none by that name).
pub fn counter(counters: &[Counter], name: &str) -> f64 {
    counters
        .iter()
        .find(|c| c.name == name)
        .map_or(0.0, |c| c.value)
}

/// A task file's `[metric]` table: the task's [`MetricSpec`] and its per-episode measure.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct MetricConfig {
    name: String,
    episode_metric: EpisodeMetric,
    #[serde(default)]
    description: String,
    direction: Direction,
    target: f64,
    #[serde(default = "default_cap")]
    cap: f64,
    /// The per-episode value a failed rollout counts as: the task's worst outcome.
    failure_value: f64,
}

fn default_cap() -> f64 {
    ale_proto::eval::DEFAULT_CAP
}

/// A task file's `[eval]` table: how many rollouts an evaluation plays, and its budgets.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvalConfig {
    episodes: u32,
    max_steps_per_episode: u32,
    /// 0 means no limit.
    #[serde(default)]
    max_total_steps: u64,
    /// 0 means no limit.
    #[serde(default)]
    time_budget_seconds: u64,
    /// Named evaluation seed sets: an official run may ask to play one
    /// (`CreateEnvRequest.seed_set`), so that runs of different agents are paired rollout
    /// for rollout. Names are `a-z 0-9 . _ -`, at most [`bounds::MAX_SEED_SETS`].
    #[serde(default)]
    seed_sets: Vec<String>,
}

/// One of a task file's `[[safety]]` tables: a [`SafetyMetricSpec`] and the counter it sums.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct SafetyConfig {
    name: String,
    /// The sim counter whose per-episode values are summed into this metric.
    counter: String,
    penalty_factor: f64,
    #[serde(default)]
    description: String,
}

/// A task file's `[submission]` table: a batch task's [`SubmissionContract`].
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct SubmissionConfig {
    submission_path: String,
    entrypoint: String,
    format: String,
    #[serde(default)]
    notes: String,
}

/// A batch run reads exactly one file, its entrypoint, inside the submission dir: the name must
/// be a plain file name, so it can never reach outside that dir.
pub fn check_entrypoint(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(format!(
            "must be a plain file name inside the submission dir (no '/', not '.' or '..', not empty), got {name:?}"
        ));
    }
    Ok(())
}

/// A task file as it states the task; [`Task::from_toml`] validates it and makes it a [`Task`].
/// serde's messages call it `Task`, as the file's readers do.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename = "Task")]
struct TaskFile {
    id: String,
    title: String,
    #[serde(default)]
    description: String,
    /// The sim as the task file names it: a catalog id, or a `[sim]` table for a sim hosted in
    /// a process of its own.
    #[serde(rename = "sim")]
    sim_source: SimSource,
    /// The sim's own options (`[sim_config]`).
    #[serde(default)]
    sim_config: serde_json::Map<String, serde_json::Value>,
    mode: Mode,
    genre: Genre,
    metric: MetricConfig,
    eval: EvalConfig,
    #[serde(default)]
    safety: Vec<SafetyConfig>,
    submission: Option<SubmissionConfig>,
}

/// What a task file's `sim` says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
enum SimSource {
    /// `sim = "CartPole-v1"`: a sim of the catalog.
    Catalog(String),
    /// `[sim] kind = "process" ...`: a sim hosted in a process of its own.
    Hosted(serde_json::Map<String, serde_json::Value>),
}

/// One task: what every process sees of it (its [`TaskSpec`]) and what the evaluator alone
/// holds (how a rollout is measured, the counters behind its safety metrics, the sim's options
/// and catalog entry). A new field every process sees is written in [`TaskSpec`] and its wire
/// conversion (`ale_proto::task_spec`), then filled here from the task file.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    /// The task as every process sees it. Its spaces are those of the sim built when the task
    /// was loaded (a sim's spaces do not depend on the episode, so listing such a task builds
    /// no sim); where none could be built then they are empty, and [`Task::spec`] finds them.
    pub(crate) spec: TaskSpec,
    /// What one rollout contributes to the metric.
    pub episode_metric: EpisodeMetric,
    /// The sim counter whose per-episode values are summed into each of `spec`'s safety
    /// metrics, in their order.
    pub safety_counters: Vec<String>,
    /// The sim's own options (`[sim_config]`), handed to its catalog entry when it is built.
    pub sim_config: serde_json::Map<String, serde_json::Value>,
    /// The catalog entry the task file's `sim` names, found when the task is loaded.
    entry: SimHandle,
}

/// A task's catalog entry, and whether the sim it built when the task was loaded gave the
/// task's spaces; tasks compare by the sim's id, which their spec already holds.
#[derive(Debug, Clone, Default)]
struct SimHandle {
    entry: Option<Arc<SimEntry>>,
    built_at_load: bool,
}

impl PartialEq for SimHandle {
    fn eq(&self, _: &SimHandle) -> bool {
        true
    }
}

/// The spaces of a task whose sim has not been built: none is known yet.
fn unknown_space() -> Space {
    Space::Dict(Vec::new())
}

/// 0 is "no limit" in a task file.
fn limit(raw: u64) -> Option<u64> {
    (raw != 0).then_some(raw)
}

/// A task file that cannot be used. The message names the file and the offending key.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    #[error("{file}: {cause}")]
    Parse {
        file: String,
        cause: Box<toml::de::Error>,
    },
    #[error("{file}: `{key}` {problem}")]
    Invalid {
        file: String,
        key: &'static str,
        problem: String,
    },
    #[error("{file}: task id {id:?} is already defined by {other}")]
    Duplicate {
        file: String,
        id: String,
        other: String,
    },
    #[error("cannot read task directory {dir}: {cause}")]
    Io { dir: PathBuf, cause: std::io::Error },
}

impl Task {
    /// Parses and validates one task file; its sim must be in `catalog`.
    pub fn from_toml(file: &str, text: &str, catalog: &SimCatalog) -> Result<Task, TaskError> {
        let stated: TaskFile = toml::from_str(text).map_err(|e| TaskError::Parse {
            file: file.to_string(),
            cause: Box::new(e),
        })?;
        let entry = stated.validate(file, catalog)?;
        let mut task = stated.into_task(entry);
        // The sim's own check of `[sim_config]`. A backend that cannot run here (its library
        // missing) leaves the task listed; creating an env of it then says what is missing.
        match task.build_sim() {
            Ok(sim) => {
                task.spec.observation_space = sim.observation_space().clone();
                task.spec.action_space = sim.action_space().clone();
                task.entry.built_at_load = true;
                Ok(task)
            }
            Err(SimError::Backend(_)) => Ok(task),
            Err(problem) => Err(TaskError::Invalid {
                file: file.to_string(),
                key: "sim_config",
                problem: problem.to_string(),
            }),
        }
    }

    /// A fresh sim for this task: its catalog entry built with the task's step limit and
    /// `[sim_config]`. Fails where the sim's backend cannot run (a missing library or model).
    pub fn build_sim(&self) -> Result<Box<dyn Sim>, SimError> {
        self.build_sim_for(Holder::Official)
    }

    /// A fresh sim for this task, for `holder`.
    pub fn build_sim_for(&self, holder: Holder) -> Result<Box<dyn Sim>, SimError> {
        let entry = self.entry.entry.as_ref().ok_or_else(|| {
            SimError::Backend(format!(
                "task {} was not loaded against a catalog",
                self.spec.id
            ))
        })?;
        entry.build(&SimConfig {
            max_steps: self.spec.max_steps_per_episode,
            options: &self.sim_config,
            holder,
        })
    }

    /// A block of `n` fresh envs for this task, as the batch pipeline plays them.
    pub fn build_block(&self, n: usize) -> Result<Box<dyn ale_sim::SimBlock>, SimError> {
        self.build_block_for(n, Holder::Official)
    }

    /// A block of `n` fresh envs for this task, for `holder` (a practice vector env's sub-envs).
    pub fn build_block_for(
        &self,
        n: usize,
        holder: Holder,
    ) -> Result<Box<dyn ale_sim::SimBlock>, SimError> {
        let entry = self.entry.entry.as_ref().ok_or_else(|| {
            SimError::Backend(format!(
                "task {} was not loaded against a catalog",
                self.spec.id
            ))
        })?;
        entry.build_block(
            &SimConfig {
                max_steps: self.spec.max_steps_per_episode,
                options: &self.sim_config,
                holder,
            },
            n,
        )
    }

    /// The task's catalog entry.
    pub fn sim_entry(&self) -> Option<&Arc<SimEntry>> {
        self.entry.entry.as_ref()
    }

    /// The task as every process sees it, its spaces included. They do not depend on the
    /// episode: those of the sim built at load, else of a sim built now. A sim whose backend
    /// cannot run here has those its entry declares; without them the task has no whole spec,
    /// as a client would find (the wire then lists it without spaces).
    pub fn spec(&self) -> Result<TaskSpec, WireError> {
        if self.entry.built_at_load {
            return Ok(self.spec.clone());
        }
        let spaces = match self.build_sim() {
            Ok(sim) => Some((sim.observation_space().clone(), sim.action_space().clone())),
            Err(_) => self
                .entry
                .entry
                .as_ref()
                .and_then(|entry| entry.declared_spaces())
                .map(|s| (s.observation.clone(), s.action.clone())),
        };
        let (observation_space, action_space) =
            spaces.ok_or(WireError::Missing("task.observation_space"))?;
        Ok(TaskSpec {
            observation_space,
            action_space,
            ..self.spec.clone()
        })
    }

    /// `spec.budgets.max_total_steps` as a task file and `run_started` state it: 0 is no limit.
    pub fn max_total_steps(&self) -> u64 {
        self.spec.budgets.max_total_steps.unwrap_or(0)
    }

    /// `spec.budgets.time_budget_seconds` as a task file and `run_started` state it: 0 is no
    /// limit.
    pub fn time_budget_seconds(&self) -> u64 {
        self.spec.budgets.time_budget_seconds.unwrap_or(0)
    }
}

impl TaskFile {
    /// The task this file states, on the catalog entry `validate` found.
    fn into_task(self, entry: Arc<SimEntry>) -> Task {
        let TaskFile {
            id,
            title,
            description,
            sim_source: _,
            sim_config,
            mode,
            genre,
            metric,
            eval,
            safety,
            submission,
        } = self;
        Task {
            spec: TaskSpec {
                id,
                title,
                description,
                sim: entry.id().to_string(),
                mode: match mode {
                    Mode::Interactive => TaskMode::Interactive,
                    Mode::Batch => TaskMode::Batch,
                },
                genre,
                metric: MetricSpec {
                    name: metric.name,
                    direction: metric.direction,
                    target: metric.target,
                    cap: metric.cap,
                    failure_value: metric.failure_value,
                    description: metric.description,
                },
                episodes_per_eval: eval.episodes,
                max_steps_per_episode: eval.max_steps_per_episode,
                budgets: Budgets {
                    max_total_steps: limit(eval.max_total_steps),
                    time_budget_seconds: limit(eval.time_budget_seconds),
                },
                safety_metrics: safety
                    .iter()
                    .map(|s| SafetyMetricSpec {
                        name: s.name.clone(),
                        penalty_factor: s.penalty_factor,
                        description: s.description.clone(),
                    })
                    .collect(),
                submission_contract: submission.map(|s| SubmissionContract {
                    submission_path: s.submission_path,
                    entrypoint: s.entrypoint,
                    format: s.format,
                    notes: s.notes,
                }),
                observation_space: unknown_space(),
                action_space: unknown_space(),
                seed_sets: eval.seed_sets,
            },
            episode_metric: metric.episode_metric,
            safety_counters: safety.into_iter().map(|s| s.counter).collect(),
            sim_config,
            entry: SimHandle {
                entry: Some(entry),
                built_at_load: false,
            },
        }
    }

    fn validate(&self, file: &str, catalog: &SimCatalog) -> Result<Arc<SimEntry>, TaskError> {
        let invalid = |key, problem: String| TaskError::Invalid {
            file: file.to_string(),
            key,
            problem,
        };
        if self.id.is_empty()
            || !self
                .id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(invalid(
                "id",
                format!(
                    "must be non-empty letters, digits and '-', got {:?}",
                    self.id
                ),
            ));
        }
        let sim = match &self.sim_source {
            SimSource::Catalog(id) => catalog.find(id).cloned().ok_or_else(|| {
                invalid(
                    "sim",
                    format!(
                        "{id:?} is not in this evaluator's simulator catalog; known: {}",
                        catalog.ids().join(", ")
                    ),
                )
            })?,
            SimSource::Hosted(table) => catalog
                .hosted_entry(&self.id, table)
                .map_err(|e| invalid("sim", e.to_string()))?,
        };
        let counters = sim.counter_names();
        let has_counter = |name: &str| counters.contains(&name);
        let no_counter = |name: &str| {
            format!(
                "{} has no counter {name:?}; it has: {}",
                sim.id(),
                if counters.is_empty() {
                    "none".to_string()
                } else {
                    counters.join(", ")
                }
            )
        };
        if let EpisodeMetric::Counter(name) = &self.metric.episode_metric
            && !has_counter(name)
        {
            return Err(invalid("metric.episode_metric", no_counter(name)));
        }
        self.validate_numbers(file)?;
        for s in &self.safety {
            if !has_counter(&s.counter) {
                return Err(invalid("safety.counter", no_counter(&s.counter)));
            }
        }
        match (self.mode, &self.submission) {
            (Mode::Batch, None) => {
                return Err(invalid("submission", "is required for a batch task".into()));
            }
            (Mode::Interactive, Some(_)) => {
                return Err(invalid("submission", "is only for batch tasks".into()));
            }
            (Mode::Batch, Some(s)) => {
                if let Err(problem) = check_entrypoint(&s.entrypoint) {
                    return Err(invalid("submission.entrypoint", problem));
                }
                if !sim.is_batch_capable() {
                    return Err(invalid(
                        "mode",
                        format!(
                            "{} cannot run in the evaluator's batch pool; make the task \
                             interactive",
                            sim.id()
                        ),
                    ));
                }
            }
            (Mode::Interactive, None) => {}
        }
        Ok(sim)
    }

    /// Every number against [`bounds`], so nothing computed from a task can overflow.
    fn validate_numbers(&self, file: &str) -> Result<(), TaskError> {
        use bounds::*;
        let invalid = |key, problem: String| TaskError::Invalid {
            file: file.to_string(),
            key,
            problem,
        };
        let count = |key, value: u64, min: u64, max: u64, what: &str| {
            if (min..=max).contains(&value) {
                Ok(())
            } else {
                Err(invalid(
                    key,
                    format!("must be within {min}..={max} ({what}), got {value}"),
                ))
            }
        };
        let e = &self.eval;
        count(
            "eval.seed_sets",
            e.seed_sets.len() as u64,
            0,
            MAX_SEED_SETS as u64,
            "named evaluation seed sets",
        )?;
        for (i, name) in e.seed_sets.iter().enumerate() {
            if !ale_records::commitment::is_seed_set_name(name) {
                return Err(invalid(
                    "eval.seed_sets",
                    format!(
                        "names are 1 to 64 of a-z 0-9 . _ - starting with a letter or digit, \
                         got {name:?}"
                    ),
                ));
            }
            if e.seed_sets[..i].contains(name) {
                return Err(invalid("eval.seed_sets", format!("names {name:?} twice")));
            }
        }
        count(
            "eval.episodes",
            e.episodes.into(),
            1,
            MAX_EPISODES.into(),
            "rollouts in one evaluation",
        )?;
        count(
            "eval.max_steps_per_episode",
            e.max_steps_per_episode.into(),
            1,
            MAX_STEPS_PER_EPISODE.into(),
            "steps before an episode is truncated",
        )?;
        count(
            "eval.max_total_steps",
            e.max_total_steps,
            0,
            MAX_TOTAL_STEPS,
            "0 means no limit",
        )?;
        count(
            "eval.time_budget_seconds",
            e.time_budget_seconds,
            0,
            MAX_TIME_BUDGET_SECONDS,
            "seconds, at most 7 days; 0 means no limit",
        )?;
        let m = &self.metric;
        if !(m.target.is_finite() && m.target > 0.0 && m.target <= MAX_METRIC_VALUE) {
            return Err(invalid(
                "metric.target",
                format!(
                    "must be a finite number > 0 and at most {MAX_METRIC_VALUE:e} (the score is a ratio to it), got {}; state a negative return as a positive quantity instead",
                    m.target
                ),
            ));
        }
        if !(m.cap.is_finite() && m.cap > 0.0 && m.cap <= MAX_CAP) {
            return Err(invalid(
                "metric.cap",
                format!(
                    "must be a finite number > 0 and at most {MAX_CAP} (the largest score, as a multiple of the target), got {}",
                    m.cap
                ),
            ));
        }
        if !(m.failure_value.is_finite()
            && m.failure_value >= 0.0
            && m.failure_value <= MAX_METRIC_VALUE)
        {
            return Err(invalid(
                "metric.failure_value",
                format!(
                    "must be a finite number within [0, {MAX_METRIC_VALUE:e}], got {}",
                    m.failure_value
                ),
            ));
        }
        for s in &self.safety {
            if !(0.0..=1.0).contains(&s.penalty_factor) {
                return Err(invalid(
                    "safety.penalty_factor",
                    format!(
                        "must be within [0, 1], got {} for {:?}",
                        s.penalty_factor, s.name
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// A fresh sim for `task`, for `holder`; a sim that cannot be built is the protocol's
/// `SimUnavailable`.
pub(crate) fn build_sim(task: &Task, holder: Holder) -> Result<Box<dyn Sim>, Error> {
    task.build_sim_for(holder)
        .map_err(|cause| Error::SimUnavailable {
            task: task.spec.id.clone(),
            sim: task.spec.sim.clone(),
            cause: cause.to_string(),
        })
}

/// The tasks this evaluator hosts, by id.
#[derive(Debug, Clone)]
pub struct TaskRegistry {
    tasks: BTreeMap<String, Arc<Task>>,
}

impl TaskRegistry {
    /// The embedded default tasks on the sims of `catalog`. A task whose sim `catalog` lacks
    /// altogether (one from a crate of sims the binary does not link, as in tests on the
    /// bundled sims alone) is left out; a sim that is listed but cannot run here keeps its
    /// task, which says so when an env is created.
    pub fn builtin(catalog: &SimCatalog) -> Result<Self, TaskError> {
        let mut registry = TaskRegistry {
            tasks: BTreeMap::new(),
        };
        let mut origin = BTreeMap::new();
        for (file, text) in EMBEDDED {
            let task = match Task::from_toml(file, text, catalog) {
                Ok(task) => task,
                Err(TaskError::Invalid { key: "sim", .. }) => continue,
                Err(e) => return Err(e),
            };
            registry.insert(file, task, &mut origin, false)?;
        }
        Ok(registry)
    }

    /// The embedded tasks plus every `*.toml` in `dir`; a file there with a built-in task's
    /// id replaces it.
    pub fn with_dir(dir: &Path, catalog: &SimCatalog) -> Result<Self, TaskError> {
        let mut registry = Self::builtin(catalog)?;
        let io = |cause| TaskError::Io {
            dir: dir.to_path_buf(),
            cause,
        };
        let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
            .map_err(io)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        let mut origin = BTreeMap::new();
        for path in files {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path).map_err(io)?;
            registry.insert(
                &name,
                Task::from_toml(&name, &text, catalog)?,
                &mut origin,
                true,
            )?;
        }
        Ok(registry)
    }

    fn insert(
        &mut self,
        file: &str,
        task: Task,
        origin: &mut BTreeMap<String, String>,
        may_replace_builtin: bool,
    ) -> Result<(), TaskError> {
        if let Some(other) = origin.get(&task.spec.id) {
            return Err(TaskError::Duplicate {
                file: file.to_string(),
                id: task.spec.id,
                other: other.clone(),
            });
        }
        if self.tasks.contains_key(&task.spec.id) && !may_replace_builtin {
            return Err(TaskError::Duplicate {
                file: file.to_string(),
                id: task.spec.id,
                other: "a built-in task".into(),
            });
        }
        origin.insert(task.spec.id.clone(), file.to_string());
        self.tasks.insert(task.spec.id.clone(), Arc::new(task));
        Ok(())
    }

    pub fn get(&self, id: &str) -> Option<&Arc<Task>> {
        self.tasks.get(id)
    }

    /// Every task, ordered by id.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Task>> {
        self.tasks.values()
    }

    pub fn ids(&self) -> Vec<&str> {
        self.tasks.keys().map(String::as_str).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_tasks_load() {
        let registry = TaskRegistry::builtin(&ale_sims::catalog()).unwrap();
        let cartpole = &registry.get("cartpole-balance").unwrap().spec;
        assert_eq!(cartpole.metric.target, 475.0);
        assert_eq!(cartpole.episodes_per_eval, 20);
        assert_eq!(cartpole.metric.direction, Direction::HigherIsBetter);
    }

    #[test]
    fn builtin_tasks_on_sims_the_catalog_lacks_are_left_out() {
        let registry = TaskRegistry::builtin(&SimCatalog::new()).unwrap();
        assert!(registry.ids().is_empty(), "{:?}", registry.ids());
        let bundled = TaskRegistry::builtin(&ale_sims::catalog()).unwrap();
        assert!(bundled.get("cartpole-balance").is_some());
    }

    #[test]
    fn every_builtin_task_decodes_as_a_client_sees_it() {
        for task in TaskRegistry::builtin(&ale_sims::catalog()).unwrap().iter() {
            let id = &task.spec.id;
            let spec = task.spec().unwrap_or_else(|e| panic!("{id}: {e}"));
            let decoded = TaskSpec::try_from(crate::service::task_metadata(task))
                .unwrap_or_else(|e| panic!("{id}: {e}"));
            assert_eq!(decoded, spec, "{id}");
            assert_eq!(decoded.id, task.spec.id);
            assert_eq!(decoded.metric.direction, task.spec.metric.direction);
            assert_eq!(decoded.genre, task.spec.genre);
            assert_eq!(
                decoded.is_batch(),
                task.spec.mode == TaskMode::Batch,
                "{id}"
            );
            assert_eq!(decoded.submission_contract.is_some(), decoded.is_batch());
        }
    }

    fn cartpole_with(find: &str, replace: &str) -> String {
        let text = include_str!("../tasks/cartpole-balance.toml");
        assert!(text.contains(find), "{find}");
        text.replace(find, replace)
    }

    #[test]
    fn a_non_positive_target_is_rejected_naming_file_and_key() {
        let text = cartpole_with("target = 475.0", "target = -200.0");
        let err = Task::from_toml("neg.toml", &text, &ale_sims::catalog())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("neg.toml: `metric.target` must be a finite number > 0"),
            "{err}"
        );
    }

    #[test]
    fn unknown_keys_and_sims_are_rejected() {
        let text = cartpole_with("cap = 1.5", "cap = 1.5\ncapp = 2");
        let err = Task::from_toml("typo.toml", &text, &ale_sims::catalog())
            .unwrap_err()
            .to_string();
        assert!(err.contains("typo.toml") && err.contains("capp"), "{err}");
        let text = cartpole_with("sim = \"CartPole-v1\"", "sim = \"CartPole-v9\"");
        let err = Task::from_toml("sim.toml", &text, &ale_sims::catalog())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`sim` \"CartPole-v9\" is not in this evaluator's simulator catalog"),
            "{err}"
        );
    }

    #[test]
    fn a_task_dir_overrides_builtins_but_not_twice() {
        let dir = tempfile::tempdir().unwrap();
        let text = cartpole_with("episodes = 20", "episodes = 3");
        std::fs::write(dir.path().join("a.toml"), &text).unwrap();
        let registry = TaskRegistry::with_dir(dir.path(), &ale_sims::catalog()).unwrap();
        assert_eq!(
            registry
                .get("cartpole-balance")
                .unwrap()
                .spec
                .episodes_per_eval,
            3
        );
        std::fs::write(dir.path().join("b.toml"), &text).unwrap();
        let err = TaskRegistry::with_dir(dir.path(), &ale_sims::catalog())
            .unwrap_err()
            .to_string();
        assert!(err.contains("already defined by"), "{err}");
    }

    /// Asserts that `text` is refused, naming `file` and `key`.
    fn refused(file: &str, text: &str, key: &str) -> String {
        let err = Task::from_toml(file, text, &ale_sims::catalog())
            .err()
            .unwrap_or_else(|| panic!("{key}: accepted"))
            .to_string();
        assert!(
            err.starts_with(&format!("{file}: `{key}` must be")),
            "{err}"
        );
        err
    }

    #[test]
    fn eval_counts_are_bounded_naming_file_and_key() {
        for (find, key, refused_values, accepted_values) in [
            (
                "episodes = 20",
                "eval.episodes",
                &["0", "10001"][..],
                &["1", "10000"][..],
            ),
            (
                "max_steps_per_episode = 500",
                "eval.max_steps_per_episode",
                &["0", "10000001"],
                &["1", "10000000"],
            ),
            (
                "max_total_steps = 10000",
                "eval.max_total_steps",
                &["1000000000001", "9223372036854775807"],
                &["0", "1000000000000"],
            ),
            (
                "time_budget_seconds = 600",
                "eval.time_budget_seconds",
                &["604801", "9223372036854775807"],
                &["0", "604800"],
            ),
        ] {
            let name = key.rsplit('.').next().unwrap();
            for value in refused_values {
                let text = cartpole_with(find, &format!("{name} = {value}"));
                let err = refused("bounds.toml", &text, key);
                assert!(err.ends_with(&format!("got {value}")), "{err}");
            }
            for value in accepted_values {
                let text = cartpole_with(find, &format!("{name} = {value}"));
                Task::from_toml("bounds.toml", &text, &ale_sims::catalog()).unwrap();
            }
        }
    }

    #[test]
    fn metric_numbers_are_finite_and_bounded_naming_file_and_key() {
        for (find, key, refused_values, accepted_values) in [
            (
                "target = 475.0",
                "metric.target",
                &["0.0", "-1.0", "nan", "inf", "1.1e12"][..],
                &["1e-9", "1e12"][..],
            ),
            (
                "cap = 1.5",
                "metric.cap",
                &["0.0", "-1.5", "nan", "inf", "100.5"],
                &["0.01", "100.0"],
            ),
            (
                "failure_value = 0.0",
                "metric.failure_value",
                &["-1.0", "nan", "-inf", "1.1e12"],
                &["0.0", "1e12"],
            ),
        ] {
            let name = key.rsplit('.').next().unwrap();
            for value in refused_values {
                refused(
                    "m.toml",
                    &cartpole_with(find, &format!("{name} = {value}")),
                    key,
                );
            }
            for value in accepted_values {
                Task::from_toml(
                    "m.toml",
                    &cartpole_with(find, &format!("{name} = {value}")),
                    &ale_sims::catalog(),
                )
                .unwrap();
            }
        }
    }

    #[test]
    fn safety_penalty_factors_are_within_zero_and_one_naming_file_and_key() {
        let reacher = include_str!("../tasks/reacher-reach.toml");
        let find = "penalty_factor = 0.8";
        assert!(reacher.contains(find));
        for value in ["-0.1", "1.01", "nan", "inf"] {
            let text = reacher.replace(find, &format!("penalty_factor = {value}"));
            refused("s.toml", &text, "safety.penalty_factor");
        }
        for value in ["0.0", "1.0"] {
            let text = reacher.replace(find, &format!("penalty_factor = {value}"));
            Task::from_toml("s.toml", &text, &ale_sims::catalog()).unwrap();
        }
    }

    #[test]
    fn a_batch_entrypoint_must_be_a_plain_file_name() {
        let text = include_str!("../tasks/nav2d-barn.toml");
        let find = "entrypoint = \"policy.safetensors\"";
        assert!(text.contains(find));
        for bad in [
            "",
            "..",
            ".",
            "../policy.safetensors",
            "sub/policy.safetensors",
            "/etc/passwd",
        ] {
            let text = text.replace(find, &format!("entrypoint = {bad:?}"));
            let err = Task::from_toml("e.toml", &text, &ale_sims::catalog())
                .unwrap_err()
                .to_string();
            assert!(
                err.starts_with("e.toml: `submission.entrypoint` must be a plain file name"),
                "{bad:?}: {err}"
            );
        }
        Task::from_toml(
            "e.toml",
            &text.replace(find, "entrypoint = \"p..t\""),
            &ale_sims::catalog(),
        )
        .unwrap();
    }

    /// Regression: a time budget above what an `Instant` can add made `StartEvalSession`
    /// panic; such a task directory is now refused at load, naming the file and the key.
    #[test]
    fn a_task_dir_with_a_huge_time_budget_is_refused_at_load() {
        let dir = tempfile::tempdir().unwrap();
        let text = cartpole_with(
            "time_budget_seconds = 600",
            "time_budget_seconds = 9223372036854775807",
        );
        let file = dir.path().join("huge.toml");
        std::fs::write(&file, text).unwrap();
        let err = TaskRegistry::with_dir(dir.path(), &ale_sims::catalog())
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(&format!(
                "{}: `eval.time_budget_seconds` must be within 0..=604800",
                file.display()
            )),
            "{err}"
        );
    }
}
