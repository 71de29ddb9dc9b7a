//! `ale demo`: a whole official evaluation in one command. An evaluator runs in this process;
//! a separate harness process (`ale harness run`) creates the official env over the private
//! socket, launches the built-in heuristic agent as a third process, and reports.

use std::process::ExitCode;
use std::sync::Arc;

use ale_server::{Evaluator, TaskRegistry};
use anyhow::Context;

use crate::StateDirArg;

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Where the demo's evaluator keeps its state [default: a new temporary folder, kept so
    /// the run can be inspected; the demo says where when it ends].
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<std::path::PathBuf>,
    /// The task to demonstrate.
    #[arg(long, default_value = "cartpole-balance")]
    pub task: String,
    /// The built-in policy the agent plays.
    #[arg(long, value_parser = ["random", "heuristic"], default_value = "heuristic")]
    pub policy: String,
}

pub fn run(args: DemoArgs) -> anyhow::Result<ExitCode> {
    let (state_dir, temporary) = match args.state_dir.clone() {
        Some(dir) => (dir, false),
        // The evaluator creates it private (0700).
        None => (
            std::env::temp_dir().join(format!("ale-demo-{}", std::process::id())),
            true,
        ),
    };
    let outcome = demo(&args, &state_dir);
    // However the demo ended (an error, Ctrl-C), the folder it made is accounted for.
    if state_dir.exists() {
        let dir = StateDirArg {
            state_dir: Some(state_dir.clone()),
        }
        .resolve();
        if temporary {
            println!(
                "\nThe demo's state dir is kept, so the run can be looked at: {0}\n  \
                 ale harness runs --state-dir {0}\n  ale --state-dir {0}   (the console's runs view)\n\
                 It is a temporary folder: remove it with `rm -r {0}` when done.",
                dir.display()
            );
        } else {
            println!(
                "\nState dir: {0}  (ale harness runs --state-dir {0})",
                dir.display()
            );
        }
    }
    outcome
}

fn demo(args: &DemoArgs, state_dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let evaluator = Evaluator::new(TaskRegistry::builtin(crate::sim_catalog())?, state_dir)
        .with_context(|| format!("cannot prepare {}", state_dir.display()))?;
    let rt = super::runtime(2)?;
    rt.block_on(async move {
        let server = ale_server::serve::start(Arc::new(evaluator), "127.0.0.1:0".parse()?).await?;
        println!(
            "Evaluator on {} (harness socket {})",
            server.agent_endpoint(),
            server.harness_socket().display()
        );
        println!(
            "Starting the harness: ale harness run --task {} --policy {}\n",
            args.task, args.policy
        );
        let mut harness = tokio::process::Command::new(std::env::current_exe()?)
            .args([
                "harness",
                "run",
                "--task",
                &args.task,
                "--policy",
                &args.policy,
                "--state-dir",
            ])
            .arg(state_dir)
            .kill_on_drop(true)
            .spawn()
            .context("cannot start the harness process")?;
        // Ctrl-C reaches the harness too (it stops its agent); the demo waits for it and ends
        // cleanly rather than dying at once.
        let status = tokio::select! {
            status = harness.wait() => status?,
            _ = tokio::signal::ctrl_c() => harness.wait().await?,
        };
        server.shutdown().await;
        Ok(if status.success() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    })
}
