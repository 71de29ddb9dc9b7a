//! The `ale` binary's parts: the console and the headless subcommands.

pub mod cli;
pub mod console;

use std::path::PathBuf;

/// Every sim this binary hosts, built once: the one place that names the crates of sims. The
/// task registry, the evaluator and the console's drawings all take it from here.
pub fn sim_catalog() -> &'static ale_sim::SimCatalog {
    static CATALOG: std::sync::OnceLock<ale_sim::SimCatalog> = std::sync::OnceLock::new();
    CATALOG.get_or_init(|| {
        let mut catalog = ale_sims::catalog();
        // Listed with or without MuJoCo built in (the `mujoco` feature): without it, creating
        // one of these envs says how to get the library.
        ale_sims_mujoco::add_to(&mut catalog).expect("the crates of sims have distinct ids");
        ale_sims_go1::add_to(&mut catalog).expect("the crates of sims have distinct ids");
        catalog
    })
}

/// How an evaluator runs the sims task files host in processes of their own.
#[derive(clap::Args, Debug, Clone)]
pub struct SimHostArgs {
    /// Sim host processes running at once for official rollouts (a process-hosted sim's official env, or a batch block, holds one).
    #[arg(long, value_name = "N", default_value_t = ale_sims_remote::DEFAULT_MAX_HOSTS)]
    pub max_sim_hosts: usize,
    /// Sim host processes running at once for practice envs, apart from the official ones.
    #[arg(long, value_name = "N", default_value_t = ale_sims_remote::DEFAULT_MAX_PRACTICE_HOSTS)]
    pub max_practice_sim_hosts: usize,
    /// Sim host processes one run's practice envs (or the shared agent channel's) may hold at once.
    #[arg(long, value_name = "N", default_value_t = ale_sims_remote::DEFAULT_MAX_RUN_PRACTICE_HOSTS)]
    pub max_run_practice_sim_hosts: usize,
    /// Seconds a sim host may sit unused before it is stopped (its env starts a fresh one at its next reset).
    #[arg(long, value_name = "SECS", default_value_t = ale_sims_remote::DEFAULT_IDLE_LIMIT.as_secs())]
    pub sim_host_idle: u64,
    /// How sim hosts run: `isolated` (no network, the state dir hidden, no capabilities) or `plain` (a child process that sees what the evaluator sees).
    #[arg(long, value_name = "MODE", default_value = "isolated")]
    pub sim_host_isolation: SimHostIsolation,
}

/// `--sim-host-isolation`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimHostIsolation {
    Isolated,
    Plain,
}

impl Default for SimHostArgs {
    fn default() -> Self {
        SimHostArgs {
            max_sim_hosts: ale_sims_remote::DEFAULT_MAX_HOSTS,
            max_practice_sim_hosts: ale_sims_remote::DEFAULT_MAX_PRACTICE_HOSTS,
            max_run_practice_sim_hosts: ale_sims_remote::DEFAULT_MAX_RUN_PRACTICE_HOSTS,
            sim_host_idle: ale_sims_remote::DEFAULT_IDLE_LIMIT.as_secs(),
            sim_host_isolation: SimHostIsolation::Isolated,
        }
    }
}

/// The catalog of an evaluator on `state_dir`: [`sim_catalog`], and the sims task files host in
/// processes of their own, started as `hosts` says (isolated ones never see `state_dir`).
pub fn hosting_catalog(state_dir: &std::path::Path, hosts: &SimHostArgs) -> ale_sim::SimCatalog {
    let launcher: std::sync::Arc<dyn ale_sims_remote::Launcher> = match hosts.sim_host_isolation {
        SimHostIsolation::Isolated => {
            std::sync::Arc::new(ale_sims_remote::IsolatedLauncher::hiding(vec![
                state_dir.to_path_buf(),
            ]))
        }
        SimHostIsolation::Plain => std::sync::Arc::new(ale_sims_remote::PlainLauncher),
    };
    let policy = ale_sims_remote::HostPolicy {
        launcher,
        slots: ale_sims_remote::HostSlots::new(ale_sims_remote::HostLimits {
            official: hosts.max_sim_hosts,
            practice: hosts.max_practice_sim_hosts,
            practice_per_run: hosts.max_run_practice_sim_hosts,
        }),
        idle_limit: std::time::Duration::from_secs(hosts.sim_host_idle.max(1)),
    };
    let mut catalog = sim_catalog().clone();
    let isolated = hosts.sim_host_isolation == SimHostIsolation::Isolated;
    catalog.host_processes_with(move |task, table| {
        // Hosts run as this process's uid: they must not reach its files through /proc.
        if isolated && let Err(e) = ale_sims_remote::protect_evaluator() {
            return Err(ale_sim::SimError::Config(format!(
                "cannot make the evaluator non-dumpable, which isolated sim hosts need: {e}"
            )));
        }
        ale_sims_remote::hosted_entry(&policy, task, table)
    });
    catalog
}

/// `--state-dir`, shared by every subcommand that touches evaluator state.
#[derive(clap::Args, Debug, Clone)]
pub struct StateDirArg {
    /// The evaluator's state directory [default: $XDG_STATE_HOME/ale or ~/.local/state/ale]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl StateDirArg {
    pub fn resolve(&self) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(ale_server::state_dir::default_state_dir)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_embedded_task_names_a_sim_of_the_binary() {
        for (file, text) in ale_server::task::EMBEDDED {
            ale_server::Task::from_toml(file, text, super::sim_catalog())
                .unwrap_or_else(|e| panic!("{e}"));
        }
        let registry = ale_server::TaskRegistry::builtin(super::sim_catalog()).unwrap();
        assert_eq!(registry.ids().len(), ale_server::task::EMBEDDED.len());
    }
}
