//! The `ale` binary's parts: the console and the headless subcommands.

pub mod cli;
pub mod console;

use std::path::PathBuf;

/// Every sim this binary hosts, built once: the one place that names the crates of sims. The
/// task registry, the evaluator and the console's drawings all take it from here.
pub fn sim_catalog() -> &'static ale_sim::SimCatalog {
    static CATALOG: std::sync::OnceLock<ale_sim::SimCatalog> = std::sync::OnceLock::new();
    CATALOG.get_or_init(ale_sims::catalog)
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
