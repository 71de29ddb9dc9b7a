//! `ale harness …`: official evaluations from the command line.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ale_harness::{RunOptions, run_interactive};

use crate::StateDirArg;

#[derive(clap::Subcommand, Debug)]
pub enum HarnessCommand {
    /// Run an official interactive evaluation with an agent command and print the result as JSON.
    ///
    /// Example: ale harness run --task cartpole-balance -- cargo run -p ale-client --example cartpole_agent
    Run(RunArgs),
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The task to evaluate.
    #[arg(long)]
    pub task: String,
    #[command(flatten)]
    pub state_dir: StateDirArg,
    /// The harness socket [default: <state-dir>/harness.sock]
    #[arg(long, value_name = "PATH")]
    pub harness_socket: Option<PathBuf>,
    /// The agent channel URL handed to the agent as ALE_ENDPOINT.
    #[arg(long, value_name = "URL", default_value = "http://127.0.0.1:50051")]
    pub endpoint: String,
    /// The agent: program and arguments, after `--`.
    #[arg(last = true, required = true, value_name = "AGENT_CMD")]
    pub agent: Vec<String>,
}

pub fn run(command: HarnessCommand) -> anyhow::Result<ExitCode> {
    match command {
        HarnessCommand::Run(args) => run_official(args),
    }
}

fn run_official(args: RunArgs) -> anyhow::Result<ExitCode> {
    let harness_socket = args
        .harness_socket
        .unwrap_or_else(|| ale_server::state_dir::harness_socket(&args.state_dir.resolve()));
    let options = RunOptions {
        task_id: args.task,
        harness_socket,
        agent_endpoint: args.endpoint,
        agent_command: args.agent,
        poll_interval: Duration::from_millis(100),
    };
    let rt = super::runtime(1)?;
    let outcome = rt.block_on(run_interactive(&options, |_| {}))?;
    match outcome.agent_exit {
        Some(status) if status.success() => {}
        Some(status) => eprintln!("note: the agent exited with {status}"),
        None => eprintln!("note: the agent was killed"),
    }
    println!("{}", serde_json::to_string_pretty(&outcome.result)?);
    Ok(ExitCode::SUCCESS)
}
