//! Task configs (TOML) and the registry of tasks the evaluator hosts.
//!
//! A task names a simulator, how its official evaluation runs (episodes, budgets) and how the
//! result is measured. The defaults are embedded from `server/tasks/*.toml`; a directory of
//! further TOML files may add or replace tasks.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use ale_proto::eval::{Direction, Genre};
use ale_proto::pb;
use ale_sim::{Counter, Holder, Sim, SimCatalog, SimConfig, SimEntry, SimError};
use serde::Deserialize;

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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricConfig {
    pub name: String,
    pub episode_metric: EpisodeMetric,
    #[serde(default)]
    pub description: String,
    pub direction: Direction,
    pub target: f64,
    #[serde(default = "default_cap")]
    pub cap: f64,
    /// The per-episode value a failed rollout counts as: the task's worst outcome.
    pub failure_value: f64,
}

fn default_cap() -> f64 {
    ale_proto::eval::DEFAULT_CAP
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    pub episodes: u32,
    pub max_steps_per_episode: u32,
    /// 0 means no limit.
    #[serde(default)]
    pub max_total_steps: u64,
    /// 0 means no limit.
    #[serde(default)]
    pub time_budget_seconds: u64,
    /// Named evaluation seed sets: an official run may ask to play one
    /// (`CreateEnvRequest.seed_set`), so that runs of different agents are paired rollout
    /// for rollout. Names are `a-z 0-9 . _ -`, at most [`bounds::MAX_SEED_SETS`].
    #[serde(default)]
    pub seed_sets: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SafetyConfig {
    pub name: String,
    /// The sim counter whose per-episode values are summed into this metric.
    pub counter: String,
    pub penalty_factor: f64,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SubmissionConfig {
    pub submission_path: String,
    pub entrypoint: String,
    pub format: String,
    #[serde(default)]
    pub notes: String,
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

/// One task, as its TOML file states it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: String,
    pub title: String,
    #[serde(default)]
    pub description: String,
    /// The sim as the task file names it: a catalog id, or a `[sim]` table for a sim hosted in
    /// a process of its own.
    #[serde(rename = "sim")]
    sim_source: SimSource,
    /// The sim's id: the catalog's, or the hosted sim's (`gymnasium:<EnvId>`,
    /// `process:<program>`).
    #[serde(skip)]
    pub sim: String,
    /// The sim's own options (`[sim_config]`), handed to its catalog entry when it is built.
    #[serde(default)]
    pub sim_config: serde_json::Map<String, serde_json::Value>,
    /// The catalog entry `sim` names, found when the task is loaded.
    #[serde(skip)]
    entry: SimHandle,
    pub mode: Mode,
    pub genre: Genre,
    pub metric: MetricConfig,
    pub eval: EvalConfig,
    #[serde(default)]
    pub safety: Vec<SafetyConfig>,
    pub submission: Option<SubmissionConfig>,
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

impl Default for SimSource {
    fn default() -> Self {
        SimSource::Catalog(String::new())
    }
}

/// A task's catalog entry, and the spaces of the sim it built when the task was loaded (a sim's
/// spaces do not depend on the episode, so listing such a task builds no sim); tasks compare
/// by the sim's id, which the `sim` field already holds.
#[derive(Debug, Clone, Default)]
struct SimHandle {
    entry: Option<Arc<SimEntry>>,
    spaces: Option<Arc<WireSpaces>>,
}

/// A sim's observation and action spaces as the wire carries them.
#[derive(Debug, Clone)]
struct WireSpaces {
    observation: pb::Space,
    action: pb::Space,
}

impl WireSpaces {
    fn of(sim: &dyn Sim) -> WireSpaces {
        WireSpaces {
            observation: pb::Space::from(sim.observation_space()),
            action: pb::Space::from(sim.action_space()),
        }
    }
}

impl PartialEq for SimHandle {
    fn eq(&self, _: &SimHandle) -> bool {
        true
    }
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
        let mut task: Task = toml::from_str(text).map_err(|e| TaskError::Parse {
            file: file.to_string(),
            cause: Box::new(e),
        })?;
        let entry = task.validate(file, catalog)?;
        task.sim = entry.id().to_string();
        task.entry = SimHandle {
            entry: Some(entry),
            spaces: None,
        };
        // The sim's own check of `[sim_config]`. A backend that cannot run here (its library
        // missing) leaves the task listed; creating an env of it then says what is missing.
        match task.build_sim() {
            Ok(sim) => {
                task.entry.spaces = Some(Arc::new(WireSpaces::of(sim.as_ref())));
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
            SimError::Backend(format!("task {} was not loaded against a catalog", self.id))
        })?;
        entry.build(&SimConfig {
            max_steps: self.eval.max_steps_per_episode,
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
            SimError::Backend(format!("task {} was not loaded against a catalog", self.id))
        })?;
        entry.build_block(
            &SimConfig {
                max_steps: self.eval.max_steps_per_episode,
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

    /// The task as a client past the wire sees it: its metadata, decoded as a client would.
    pub fn spec(&self) -> Result<ale_proto::TaskSpec, ale_proto::convert::WireError> {
        ale_proto::TaskSpec::try_from(self.metadata())
    }

    /// The task's metadata as the wire carries it.
    pub fn metadata(&self) -> pb::TaskMetadata {
        // Its spaces do not depend on the episode: those of the sim built at load, else of a
        // sim built now. A sim whose backend cannot run here has those its entry declares, or
        // none.
        let built = match &self.entry.spaces {
            Some(spaces) => Ok(spaces.as_ref().clone()),
            None => self.build_sim().map(|sim| WireSpaces::of(sim.as_ref())),
        };
        let spaces = match built {
            Ok(spaces) => Some((spaces.observation, spaces.action)),
            Err(_) => self
                .entry
                .entry
                .as_ref()
                .and_then(|entry| entry.declared_spaces())
                .map(|s| (pb::Space::from(&s.observation), pb::Space::from(&s.action))),
        };
        let (observation_space, action_space) = spaces.unzip();
        pb::TaskMetadata {
            observation_space,
            action_space,
            id: self.id.clone(),
            title: self.title.clone(),
            description: self.description.clone(),
            sim: self.sim.clone(),
            mode: match self.mode {
                Mode::Interactive => pb::TaskMode::Interactive,
                Mode::Batch => pb::TaskMode::Batch,
            } as i32,
            genre: match self.genre {
                Genre::Open => pb::TaskGenre::Open,
                Genre::Reproduction => pb::TaskGenre::Reproduction,
            } as i32,
            metric: Some(pb::Metric {
                name: self.metric.name.clone(),
                direction: pb::Direction::from(self.metric.direction) as i32,
                target: self.metric.target,
                cap: self.metric.cap,
                failure_value: self.metric.failure_value,
                description: self.metric.description.clone(),
            }),
            episodes_per_eval: self.eval.episodes,
            max_steps_per_episode: self.eval.max_steps_per_episode,
            budgets: Some(pb::Budgets {
                max_total_steps: self.eval.max_total_steps,
                time_budget_seconds: self.eval.time_budget_seconds,
            }),
            safety_metrics: self
                .safety
                .iter()
                .map(|s| pb::SafetyMetric {
                    name: s.name.clone(),
                    penalty_factor: s.penalty_factor,
                    description: s.description.clone(),
                })
                .collect(),
            submission_contract: self.submission.as_ref().map(|s| pb::SubmissionContract {
                submission_path: s.submission_path.clone(),
                entrypoint: s.entrypoint.clone(),
                format: s.format.clone(),
                notes: s.notes.clone(),
            }),
            seed_sets: self.eval.seed_sets.clone(),
        }
    }
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
        if let Some(other) = origin.get(&task.id) {
            return Err(TaskError::Duplicate {
                file: file.to_string(),
                id: task.id,
                other: other.clone(),
            });
        }
        if self.tasks.contains_key(&task.id) && !may_replace_builtin {
            return Err(TaskError::Duplicate {
                file: file.to_string(),
                id: task.id,
                other: "a built-in task".into(),
            });
        }
        origin.insert(task.id.clone(), file.to_string());
        self.tasks.insert(task.id.clone(), Arc::new(task));
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
        let cartpole = registry.get("cartpole-balance").unwrap();
        assert_eq!(cartpole.metric.target, 475.0);
        assert_eq!(cartpole.eval.episodes, 20);
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
            let spec = task.spec().unwrap_or_else(|e| panic!("{}: {e}", task.id));
            assert_eq!(spec.id, task.id);
            assert_eq!(spec.metric.direction, task.metric.direction);
            assert_eq!(spec.genre, task.genre);
            assert_eq!(spec.is_batch(), task.mode == Mode::Batch, "{}", task.id);
            assert_eq!(spec.submission_contract.is_some(), spec.is_batch());
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
        assert_eq!(registry.get("cartpole-balance").unwrap().eval.episodes, 3);
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
