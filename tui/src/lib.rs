//! The `ale` binary's parts: the console and the headless subcommands.

pub mod cli;
pub mod console;

use std::path::PathBuf;

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
