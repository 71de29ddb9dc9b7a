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
