//! `ale`: the ALE console and its command-line tools in one binary.

use clap::{Parser, Subcommand};

use ale_tui::{cli, console};

#[derive(Parser)]
#[command(
    name = "ale",
    version,
    about = "ALE Robotics evaluator, harness and console",
    long_about = "ALE Robotics evaluator, harness and console.\n\nWith no subcommand, opens the console on an embedded evaluator (or the one given with --connect)."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    console: console::ConsoleArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run an evaluator: the agent channel on TCP, the harness channel on the state dir's harness.sock.
    Serve(Box<cli::serve::ServeArgs>),
    /// Official evaluations: create the official env, hand it to an agent, read the result.
    #[command(subcommand)]
    Harness(cli::harness::HarnessCommand),
    /// List the tasks an evaluator hosts.
    Tasks(cli::tasks::TasksArgs),
    /// The bundled simulators; check Gymnasium parity fixtures.
    #[command(subcommand)]
    Sims(cli::sims::SimsCommand),
    /// A whole official evaluation in one command: evaluator, harness and agent.
    Demo(cli::demo::DemoArgs),
    /// Plot a run (per-rollout metric, running mean and its band, mean and its interval, target,
    /// safety), or compare two, as PNG or SVG.
    Plot(cli::plot::PlotArgs),
    /// A built-in agent for an official env (run by `ale harness run --policy`).
    Agent(cli::agent::AgentArgs),
    /// Measure the evaluator.
    #[command(subcommand)]
    Bench(cli::bench::BenchCommand),
    /// Check an evaluator (ours or another) against the protocol: a line per case, the counts last.
    Conformance(cli::conformance::ConformanceArgs),
    /// Load an evaluator with many clients stepping practice envs; report steps/s, latency, errors.
    Load(cli::load::LoadArgs),
    /// The agent sandbox's launcher, run by the harness (not for direct use).
    #[command(name = ale_sandbox::LAUNCHER_SUBCOMMAND, hide = true)]
    SandboxExec,
}

/// Whether `command` only reads files and prints (see SIGPIPE in [`main`]).
fn prints_only(command: &Command) -> bool {
    use cli::harness::HarnessCommand as H;
    matches!(
        command,
        Command::Harness(H::Runs(_) | H::Verify(_) | H::Leaderboard(_) | H::Score(_))
    )
}

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Some(Command::SandboxExec) = &cli.command {
        // Before any thread exists: the launcher creates user namespaces.
        ale_sandbox::launcher_main();
    }
    let Some(command) = cli.command else {
        cli::init_logging("off");
        return match console::run(cli.console) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e:#}");
                std::process::ExitCode::FAILURE
            }
        };
    };
    if prints_only(&command) {
        // A listing piped into `head` ends quietly when the pipe closes, as a Unix tool's
        // does, rather than with a panic at the next line it prints. Only for commands that
        // read files and print: one that talks to an evaluator over a socket keeps SIGPIPE
        // ignored, so that a peer gone away is an error it reports, not a silent death.
        // SAFETY: called before any thread exists; SIG_DFL is a valid disposition.
        unsafe {
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        }
    }
    // Only a server's own log is news by default; the other commands report in their output.
    cli::init_logging(if matches!(command, Command::Serve(_)) {
        "info"
    } else {
        "warn"
    });
    let result = match command {
        Command::Serve(args) => cli::serve::run(*args),
        Command::Harness(cmd) => cli::harness::run(cmd),
        Command::Tasks(args) => cli::tasks::run(args),
        Command::Sims(cmd) => cli::sims::run(cmd),
        Command::Demo(args) => cli::demo::run(args),
        Command::Plot(args) => cli::plot::run(args),
        Command::Agent(args) => cli::agent::run(args),
        Command::Bench(cmd) => cli::bench::run(cmd),
        Command::Conformance(args) => cli::conformance::run(args),
        Command::Load(args) => cli::load::run(args),
        Command::SandboxExec => unreachable!("handled before logging starts"),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
