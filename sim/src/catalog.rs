//! The simulator catalog: every sim an evaluator can host, by id, as a value.
//!
//! The binary builds one [`SimCatalog`] from the crates of sims it links (each adds its own
//! entries) and hands it to the task registry and the evaluator; nothing else names a sim
//! crate. An entry builds its sim from the task's configuration, and may fail: a backend whose
//! library or model file is missing says so and how to get it.

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::block::{SimBlock, SimsBlock};
use crate::draw::Drawing;
use crate::sim::{Sim, SimError};
use crate::space::Space;
use crate::tensor::Tensor;

/// What a task file gives its sim: the step limit, and the sim's own options (the task's
/// `[sim_config]` table; empty when the task has none); and whom the env is for.
#[derive(Debug, Clone, Copy)]
pub struct SimConfig<'a> {
    /// Episodes are truncated after this many steps.
    pub max_steps: u32,
    pub options: &'a Map<String, Value>,
    pub holder: Holder,
}

/// Whom an env is for. A sim that holds something outside the evaluator's process (a hosted
/// sim's host) bounds it per holder, so that no run's practice can take what another run's
/// official rollouts need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Holder {
    /// An official env or a batch run's block.
    Official,
    /// A practice env, of one run's own channel (`scope`) or of the shared channel (`None`).
    Practice { scope: Option<u64> },
}

impl SimConfig<'_> {
    /// Refuses any option: for sims that take none.
    pub fn no_options(&self, id: &str) -> Result<(), SimError> {
        match self.options.keys().next() {
            None => Ok(()),
            Some(key) => Err(SimError::Config(format!(
                "{id} takes no [sim_config] options, and this task gives {key:?}"
            ))),
        }
    }
}

type Build = dyn Fn(&SimConfig<'_>) -> Result<Box<dyn Sim>, SimError> + Send + Sync;
type Draw = dyn Fn(&Tensor) -> Drawing + Send + Sync;
type BuildMap = dyn Fn(u32) -> Box<dyn MapView> + Send + Sync;

/// A sim that can draw its whole scene, not just what its observation shows: the operator's
/// map of a practice env. The console keeps a replica of such a sim beside a practice env,
/// resets it with the env's seed and steps it with the env's actions (a sim is a pure function
/// of its seed and actions), and draws [`MapView::map`] for as long as the replica's
/// observations equal the evaluator's. Never used for an official run, whose seeds are hidden.
pub trait MapView: Sim {
    /// The whole scene as the sim holds it now.
    fn map(&self) -> Drawing;
}
type BuildBlock =
    dyn Fn(&SimConfig<'_>, usize) -> Result<Box<dyn SimBlock>, SimError> + Send + Sync;

/// One sim the catalog can build.
pub struct SimEntry {
    id: &'static str,
    default_max_steps: u32,
    gymnasium_parity: bool,
    counters: &'static [&'static str],
    batch: bool,
    process_hosted: bool,
    build: Box<Build>,
    build_block: Option<Box<BuildBlock>>,
    draw: Option<Box<Draw>>,
    map: Option<Box<BuildMap>>,
    spaces: Option<DeclaredSpaces>,
}

/// The observation and action spaces an entry's sim has, known without building it.
#[derive(Debug, Clone, PartialEq)]
pub struct DeclaredSpaces {
    pub observation: Space,
    pub action: Space,
}

impl fmt::Debug for SimEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimEntry")
            .field("id", &self.id)
            .field("default_max_steps", &self.default_max_steps)
            .field("gymnasium_parity", &self.gymnasium_parity)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

impl SimEntry {
    /// An entry for sim `id`, built by `build`; truncated after `default_max_steps` steps
    /// when a task does not set its own limit. Not batch-capable, no parity, no counters and
    /// no drawing until said otherwise.
    pub fn new(
        id: &'static str,
        default_max_steps: u32,
        build: impl Fn(&SimConfig<'_>) -> Result<Box<dyn Sim>, SimError> + Send + Sync + 'static,
    ) -> SimEntry {
        SimEntry {
            id,
            default_max_steps,
            gymnasium_parity: false,
            counters: &[],
            batch: false,
            process_hosted: false,
            build: Box::new(build),
            build_block: None,
            draw: None,
            map: None,
            spaces: None,
        }
    }

    /// Episodes match a Gymnasium env step for step: its parity fixtures apply.
    pub fn gymnasium_parity(mut self) -> SimEntry {
        self.gymnasium_parity = true;
        self
    }

    /// The names of the episode counters the sim reports, in order.
    pub fn counters(mut self, counters: &'static [&'static str]) -> SimEntry {
        self.counters = counters;
        self
    }

    /// The sim is cheap enough to step in the evaluator's batch pool (no process of its own,
    /// no blocking I/O, bounded memory per env).
    pub fn batch(mut self) -> SimEntry {
        self.batch = true;
        self
    }

    /// How a block of `n` envs is built, where it steps them otherwise than one by one (a
    /// hosted sim: a block in one message to its host).
    pub fn block_with(
        mut self,
        build: impl Fn(&SimConfig<'_>, usize) -> Result<Box<dyn SimBlock>, SimError>
        + Send
        + Sync
        + 'static,
    ) -> SimEntry {
        self.build_block = Some(Box::new(build));
        self
    }

    /// A block of `n` (at least 1) fresh envs for `config`, as the batch pipeline plays them.
    pub fn build_block(
        &self,
        config: &SimConfig<'_>,
        n: usize,
    ) -> Result<Box<dyn SimBlock>, SimError> {
        let n = n.max(1);
        match &self.build_block {
            Some(build) => build(config, n),
            None => {
                let sims = (0..n)
                    .map(|_| self.build(config))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Box::new(SimsBlock::new(sims)))
            }
        }
    }

    /// The sim runs in a host process: its calls wait on another process, up to a timeout.
    pub fn process_hosted(mut self) -> SimEntry {
        self.process_hosted = true;
        self
    }

    pub fn is_process_hosted(&self) -> bool {
        self.process_hosted
    }

    /// The sim's spaces, for listing its tasks with them where it cannot be built (its
    /// backend missing from this build). They must be the built sim's own.
    pub fn spaces(mut self, observation: Space, action: Space) -> SimEntry {
        self.spaces = Some(DeclaredSpaces {
            observation,
            action,
        });
        self
    }

    /// How the console draws the scene from an observation.
    pub fn draw_with(
        mut self,
        draw: impl Fn(&Tensor) -> Drawing + Send + Sync + 'static,
    ) -> SimEntry {
        self.draw = Some(Box::new(draw));
        self
    }

    /// How the console builds a replica of the sim, truncated after a given number of steps,
    /// to draw a practice env's whole scene (see [`MapView`]).
    pub fn map_with(
        mut self,
        build: impl Fn(u32) -> Box<dyn MapView> + Send + Sync + 'static,
    ) -> SimEntry {
        self.map = Some(Box::new(build));
        self
    }

    pub fn id(&self) -> &'static str {
        self.id
    }

    /// Gymnasium's `max_episode_steps` for this env, used when a task does not set its own.
    pub fn default_max_steps(&self) -> u32 {
        self.default_max_steps
    }

    pub fn has_gymnasium_parity(&self) -> bool {
        self.gymnasium_parity
    }

    pub fn counter_names(&self) -> &'static [&'static str] {
        self.counters
    }

    /// Whether batch tasks may run this sim in the evaluator's batch pool.
    pub fn is_batch_capable(&self) -> bool {
        self.batch
    }

    /// The spaces declared with [`SimEntry::spaces`].
    pub fn declared_spaces(&self) -> Option<&DeclaredSpaces> {
        self.spaces.as_ref()
    }

    /// A fresh sim for `config`.
    pub fn build(&self, config: &SimConfig<'_>) -> Result<Box<dyn Sim>, SimError> {
        (self.build)(config)
    }

    /// A fresh sim with no options, truncated after `max_steps` steps.
    pub fn build_plain(&self, max_steps: u32) -> Result<Box<dyn Sim>, SimError> {
        self.build(&SimConfig {
            max_steps,
            options: &Map::new(),
            holder: Holder::Official,
        })
    }

    /// A picture of the scene as far as `observation` shows it, if the sim draws one.
    pub fn draw(&self, observation: &Tensor) -> Option<Drawing> {
        self.draw.as_ref().map(|draw| draw(observation))
    }

    /// A fresh replica that draws the whole scene, if the sim offers one ([`MapView`]).
    pub fn map_replica(&self, max_steps: u32) -> Option<Box<dyn MapView>> {
        self.map.as_ref().map(|build| build(max_steps))
    }
}

/// Makes the entry of a sim a task file hosts in a process of its own, from the task's `[sim]`
/// table (see `ale-sims-remote`); `task` names the task, for messages.
pub type HostedFactory =
    dyn Fn(&str, &Map<String, Value>) -> Result<SimEntry, SimError> + Send + Sync;

/// Why an entry was not added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the simulator catalog already has a sim named {0}")]
pub struct DuplicateSim(pub &'static str);

/// Every sim an evaluator can host, by id. Cheap to clone: entries are shared.
#[derive(Clone, Default)]
pub struct SimCatalog {
    entries: Vec<Arc<SimEntry>>,
    hosted: Option<Arc<HostedFactory>>,
}

impl fmt::Debug for SimCatalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimCatalog")
            .field("entries", &self.entries)
            .field("hosts_processes", &self.hosted.is_some())
            .finish()
    }
}

impl SimCatalog {
    pub fn new() -> SimCatalog {
        SimCatalog::default()
    }

    /// Adds `entry`; an id already taken is refused.
    pub fn add(&mut self, entry: SimEntry) -> Result<(), DuplicateSim> {
        if self.find(entry.id).is_some() {
            return Err(DuplicateSim(entry.id));
        }
        self.entries.push(Arc::new(entry));
        Ok(())
    }

    /// The entry registered under `id`.
    pub fn find(&self, id: &str) -> Option<&Arc<SimEntry>> {
        self.entries.iter().find(|e| e.id == id)
    }

    /// Every entry, in the order added.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<SimEntry>> {
        self.entries.iter()
    }

    pub fn ids(&self) -> Vec<&'static str> {
        self.entries.iter().map(|e| e.id).collect()
    }

    /// Lets task files host sims in processes of their own (`[sim] kind = "process"`):
    /// `factory` makes each such task's entry.
    pub fn host_processes_with(
        &mut self,
        factory: impl Fn(&str, &Map<String, Value>) -> Result<SimEntry, SimError>
        + Send
        + Sync
        + 'static,
    ) {
        self.hosted = Some(Arc::new(factory));
    }

    /// The entry of the process-hosted sim task `task`'s `[sim]` table describes.
    pub fn hosted_entry(
        &self,
        task: &str,
        table: &Map<String, Value>,
    ) -> Result<Arc<SimEntry>, SimError> {
        let factory = self.hosted.as_ref().ok_or_else(|| {
            SimError::Config(
                "this evaluator hosts no sims in processes of their own (its catalog has no \
                 process launcher); name a sim of the catalog with `sim = \"...\"`"
                    .into(),
            )
        })?;
        factory(task, table).map(Arc::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_builds_fallibly_and_ids_are_unique() {
        let mut catalog = SimCatalog::new();
        catalog
            .add(SimEntry::new("Missing-v0", 10, |_| {
                Err(SimError::Backend("libexample is not here".into()))
            }))
            .unwrap();
        assert_eq!(
            catalog.add(SimEntry::new("Missing-v0", 5, |_| Err(SimError::NotReset))),
            Err(DuplicateSim("Missing-v0"))
        );
        let entry = catalog.find("Missing-v0").unwrap();
        assert_eq!(entry.default_max_steps(), 10);
        assert_eq!(entry.declared_spaces(), None);
        assert!(!entry.is_batch_capable());
        let err = entry.build_plain(10).err().unwrap();
        assert_eq!(err.to_string(), "libexample is not here");
        assert!(catalog.find("Other-v0").is_none());
        let two = Space::Discrete(crate::DiscreteSpace::new(2));
        let declared = SimEntry::new("Declared-v0", 10, |_| Err(SimError::NotReset))
            .spaces(two.clone(), two.clone());
        assert_eq!(
            declared.declared_spaces(),
            Some(&DeclaredSpaces {
                observation: two.clone(),
                action: two
            })
        );
        assert_eq!(catalog.ids(), vec!["Missing-v0"]);
    }

    #[test]
    fn a_sim_without_options_refuses_any() {
        let mut options = Map::new();
        let config = SimConfig {
            max_steps: 1,
            options: &options,
            holder: Holder::Official,
        };
        config.no_options("X-v0").unwrap();
        options.insert("gravity".into(), Value::from(3.0));
        let config = SimConfig {
            max_steps: 1,
            options: &options,
            holder: Holder::Official,
        };
        let err = config.no_options("X-v0").unwrap_err();
        assert!(err.to_string().contains("\"gravity\""), "{err}");
    }
}
