//! The catalog entries of process-hosted sims: one per task file that names one.

use std::sync::Arc;
use std::time::Duration;

use ale_sim::{Holder, SimEntry, SimError};
use serde_json::{Map, Value};

use crate::block::RemoteBlock;
use crate::config::HostedSimConfig;
use crate::process::{HostSlots, Launcher};
use crate::sim::{Hosted, RemoteSim, start_host};

/// The step limit of a hosted env whose host names none and whose task sets none.
pub const DEFAULT_MAX_STEPS: u32 = 1000;

/// How an evaluator runs its sim hosts: how they start, how many may run, how long one may
/// idle.
#[derive(Debug, Clone)]
pub struct HostPolicy {
    pub launcher: Arc<dyn Launcher>,
    pub slots: Arc<HostSlots>,
    pub idle_limit: Duration,
}

/// The default number of hosts one evaluator runs at once for official rollouts.
pub const DEFAULT_MAX_HOSTS: usize = 32;
/// The default number of hosts one evaluator runs at once for practice envs.
pub const DEFAULT_MAX_PRACTICE_HOSTS: usize = 64;
/// The default number of hosts one run's practice envs (or the shared channel's) hold at once.
pub const DEFAULT_MAX_RUN_PRACTICE_HOSTS: usize = 8;
/// The default time a host may sit unused before it is stopped.
pub const DEFAULT_IDLE_LIMIT: Duration = Duration::from_secs(60);

/// Makes the entry of the hosted sim a task's `[sim]` table describes: reads the table, starts
/// one host to learn its spec (spaces, counters, step limit), and stops it. Each env built
/// from the entry starts a host of its own at its first reset.
pub fn hosted_entry(
    policy: &HostPolicy,
    task: &str,
    table: &Map<String, Value>,
) -> Result<SimEntry, SimError> {
    let config = HostedSimConfig::from_table(table).map_err(SimError::Config)?;
    let (host, spec) = start_host(
        &config,
        policy.launcher.as_ref(),
        &policy.slots,
        Holder::Official,
        policy.idle_limit,
    )
    .map_err(|e| {
        SimError::Config(format!(
            "the sim {} ({}) of task {task} could not be started: {e}",
            config.name,
            describe_command(&config)
        ))
    })?;
    drop(host);
    // Made once per task file loaded: the catalog's ids and counter names are `'static`.
    let id: &'static str = Box::leak(config.name.clone().into_boxed_str());
    let counter_names: &'static [&'static str] = Box::leak(
        spec.counters
            .iter()
            .map(|c| &*Box::leak(c.clone().into_boxed_str()))
            .collect::<Vec<&'static str>>()
            .into_boxed_slice(),
    );
    let default_max_steps = match spec.max_episode_steps {
        0 => DEFAULT_MAX_STEPS,
        n => n,
    };
    let (observation, action) = (spec.observation_space.clone(), spec.action_space.clone());
    tracing::info!(task, sim = id, host = %spec.host, confinement = %policy.launcher.describe(), "hosted sim ready");
    let batch = config.batch;
    let hosted = Arc::new(Hosted {
        id,
        config,
        launcher: policy.launcher.clone(),
        slots: policy.slots.clone(),
        idle_limit: policy.idle_limit,
        spec,
        counter_names,
    });
    let for_blocks = hosted.clone();
    let entry = SimEntry::new(id, default_max_steps, move |config| {
        config.no_options(id)?;
        Ok(Box::new(RemoteSim::new(
            hosted.clone(),
            config.max_steps,
            config.holder,
        )))
    })
    .block_with(move |config, n| {
        config.no_options(id)?;
        Ok(Box::new(RemoteBlock::new(
            for_blocks.clone(),
            config.max_steps,
            n,
            config.holder,
        )))
    })
    .counters(counter_names)
    .spaces(observation, action)
    .process_hosted();
    Ok(if batch { entry.batch() } else { entry })
}

fn describe_command(config: &HostedSimConfig) -> String {
    std::iter::once(config.command.program.as_str())
        .chain(config.command.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ")
}
