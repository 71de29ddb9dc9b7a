//! `ale harness …`: official evaluations, scoring, verification and past runs.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use ale_harness::agent::AgentOutput;
use ale_harness::bundle::Bundle;
use ale_harness::leaderboard::Leaderboard;
use ale_harness::preflight::Verdict;
use ale_harness::progress::{ProgressEvent, RunProgress};
use ale_harness::report::{Report, RunEnding};
use ale_harness::run::RunLabels;
use ale_harness::runs::{self, RunFilter, RunRow};
use ale_harness::scoring::{Faithfulness, score};
use ale_harness::verify::{
    RecordKeys, RunVerdict, RunVerification, verify_run_dir, verify_trajectory_file,
};
use ale_harness::{Progress, RunOptions, run_batch, run_interactive};
use ale_proto::eval::Outcome;
use ale_records::signing_keys::{KeyRole, encode_public_key};
use ale_sandbox::limits::ByteSize;
use ale_sandbox::{CpuLimit, Network, SandboxMode, SandboxOptions};
use anyhow::{Context, bail};

use crate::StateDirArg;

const RUN_EXAMPLES: &str = "Examples:
  ale harness run --task cartpole-balance --policy heuristic
  ale harness run --task cartpole-balance -- target/release/examples/cartpole_agent
  ale harness run --task cartpole-balance --expose ~/.pyenv/versions/3.11.7 -- venv/bin/python agent.py
  ale harness run --task mountaincar-sarsa-reproduction --faithfulness verdict.json -- ./my_agent
  ale harness run --task cartpole-balance --policy random --progress json
  ale harness run --task nav2d-barn --submission ./my-submission
  ale harness run --task cartpole-balance --dry-run --workdir . -- python3 agent.py
  ale harness run --task my-task --tasks-dir ./tasks --policy heuristic";

#[derive(clap::Subcommand, Debug)]
pub enum HarnessCommand {
    /// Run an official evaluation: create the official env, hand it to an agent, read, verify
    /// and score the result, and write report.json and plots into the run's folder.
    ///
    /// Talks to the evaluator serving --state-dir; if none does, starts `ale serve` on it for
    /// the run and stops it afterwards.
    #[command(after_help = RUN_EXAMPLES)]
    Run(Box<RunArgs>),
    /// Score an EvalResult: from a trajectory, a run folder or report, or an EvalResult JSON
    /// file (with --task), and print the breakdown.
    #[command(
        after_help = "Examples:\n  ale harness score ~/.local/state/ale/runs/run-…/trajectory.jsonl\n  ale harness score result.json --task cartpole-balance"
    )]
    Score(ScoreArgs),
    /// Verify a trajectory or a run folder: the hash chain, every trusted event, the recorded
    /// result against the per-rollout events, the harness's log; re-derive the score.
    /// Exits non-zero naming the first broken line.
    #[command(
        after_help = "Examples:\n  ale harness verify ~/.local/state/ale/runs/run-…\n  ale harness verify trajectory.jsonl"
    )]
    Verify(VerifyArgs),
    /// List past runs: date, duration, task, name or agent, status, score ± its 95%
    /// interval; filter them, print them as JSON or CSV, or remove (`rm`) one.
    #[command(
        after_help = "Examples:\n  ale harness runs --state-dir /tmp/ale-state\n  ale harness runs --task cartpole-balance --tag paper --csv > runs.csv\n  ale harness runs rm run-3f2a… --archive"
    )]
    Runs(RunsArgs),
    /// The best verified run of each agent on a task, ranked by score with its interval.
    /// Runs whose records do not verify are left out, and listed as such.
    #[command(after_help = "Example:\n  ale harness leaderboard --task cartpole-balance")]
    Leaderboard(LeaderboardArgs),
    /// Write a run's records (trajectory, harness log, report) and the public keys that check
    /// them into one file, optionally encrypted for a recipient's age key. Whoever receives it
    /// re-derives the score with `ale harness verify FILE`; it holds no hidden seed.
    #[command(
        after_help = "Examples:\n  ale harness bundle run-3f2a… -o run.alebundle\n  ale harness bundle run-3f2a… --to age1… -o run.alebundle.age\n  ale harness verify run.alebundle.age --identity key.txt"
    )]
    Bundle(BundleArgs),
    /// Make an age X25519 identity to receive encrypted bundles: writes its secret key to FILE
    /// (0600) and prints its public key (age1…) to give to senders.
    #[command(after_help = "Example:\n  ale harness keygen -o ~/.config/ale/bundle-key.txt")]
    Keygen(KeygenArgs),
}

#[derive(clap::Args, Debug)]
pub struct BundleArgs {
    /// The run: a run id, or a run folder.
    #[arg(value_name = "RUN")]
    pub run: PathBuf,
    /// The file to write [default: RUN_ID.alebundle, or RUN_ID.alebundle.age when encrypted]
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Encrypt the bundle for this age X25519 recipient (age1…; repeatable: any of them can
    /// open it).
    #[arg(long = "to", value_name = "RECIPIENT")]
    pub to: Vec<String>,
    #[command(flatten)]
    pub state_dir: StateDirArg,
}

#[derive(clap::Args, Debug)]
pub struct KeygenArgs {
    /// Where to write the identity (its secret key); refused if the file exists.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProgressStyle {
    /// A bar on a terminal, a line per finished rollout otherwise.
    Auto,
    /// One JSON object per line on stdout: progress updates, then the report.
    Json,
    /// Nothing until the summary.
    None,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The task to evaluate.
    #[arg(long)]
    pub task: String,
    #[command(flatten)]
    pub state_dir: StateDirArg,
    /// The evaluator's harness socket, instead of --state-dir: the state dir is the folder it
    /// is in (the run's records are written there, under runs/).
    #[arg(long, value_name = "PATH", conflicts_with = "state_dir")]
    pub harness_socket: Option<PathBuf>,
    /// With --sandbox none: the agent channel URL handed to the agent [default: the one the
    /// evaluator recorded]. A sandboxed agent always gets the agent socket.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Play with a built-in agent (run as its own process) instead of a command.
    #[arg(long, value_parser = ["random", "heuristic"], conflicts_with_all = ["agent", "submission"])]
    pub policy: Option<String>,
    /// A batch task's submission folder: its contract's entrypoint file (e.g.
    /// policy.safetensors) is copied into the run's own submission folder in the state dir
    /// and submitted; no agent runs.
    #[arg(long, value_name = "DIR", conflicts_with = "agent")]
    pub submission: Option<PathBuf>,
    /// A faithfulness verdict ({"pass": bool, "reason": str}), for reproduction-genre tasks.
    #[arg(long, value_name = "FILE")]
    pub faithfulness: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "auto")]
    pub progress: ProgressStyle,
    /// A name for the run, recorded in its signed log and shown by `runs`, the leaderboard and
    /// the plots (up to 80 characters).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// A tag for the run (repeatable; `runs --tag` filters by it): A-Z a-z 0-9 . _ : -
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Play the task's named evaluation seed set NAME (`ale tasks` lists them)
    /// instead of fresh hidden seeds: runs of different agents on one set are compared
    /// rollout for rollout. The seeds stay hidden; the run records the set's commitment.
    #[arg(long, value_name = "NAME")]
    pub seed_set: Option<String>,
    /// Task configs (*.toml) for the evaluator the harness starts, as `ale serve --tasks-dir`;
    /// refused if an evaluator already serves the state dir (it has its own tasks).
    #[arg(long, value_name = "DIR")]
    pub tasks_dir: Option<PathBuf>,
    /// Check the run's set-up and stop: the task, the agent's program, working directory,
    /// exposed folders and path arguments as the sandbox will show them. Starts no evaluator
    /// and records nothing; exits 0 if every check passed, 1 otherwise.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub sandbox: SandboxArgs,
    /// The agent: program and arguments, after `--`.
    #[arg(last = true, value_name = "AGENT_CMD")]
    pub agent: Vec<String>,
}

/// How the agent is confined: `ale harness run`'s sandbox flags.
#[derive(clap::Args, Debug, Clone)]
pub struct SandboxArgs {
    /// `namespaces`: the agent runs in its own user, mount, PID and network namespaces, sees no
    /// state dir and no other process, and dies with everything it started. `none`: no
    /// sandbox; the run is marked as one the agent could have tampered with.
    #[arg(long, value_enum, default_value = "namespaces")]
    pub sandbox: SandboxChoice,
    /// `none`: offline (the evaluator's agent socket is the only way out). `host`: the host's
    /// network, an explicit opt-out.
    #[arg(long, value_enum, default_value = "none")]
    pub network: NetworkChoice,
    /// The agent's working directory, bind-mounted writable [default: a fresh empty folder in
    /// the sandbox's private /tmp]
    #[arg(long, value_name = "DIR")]
    pub workdir: Option<PathBuf>,
    /// A host folder the agent sees read-only at its own path, inside a hidden home too
    /// (repeatable): the Python installation a venv was made from, say. Refused if it holds
    /// the state dir, a home, a socket or a key.
    #[arg(long, value_name = "DIR")]
    pub expose: Vec<PathBuf>,
    /// When the harness is root: the uids its agents get, one of its own per run (its gid is
    /// the same number), locked in /run/ale-uids across harness processes; uids of accounts,
    /// groups and /etc/subuid ranges are passed over.
    #[arg(
        long,
        value_name = "START-END",
        default_value = ale_sandbox::uids::DEFAULT_AGENT_UIDS,
        value_parser = parse_uid_range
    )]
    pub agent_uids: ale_sandbox::uids::UidRange,
    /// When the harness is root: one user (name or uid) for every agent, in place of a uid of
    /// its own per run from --agent-uids. Runs' agents then share that uid, and can signal and
    /// read each other's files.
    #[arg(long, value_name = "USER")]
    pub agent_user: Option<String>,
    /// The memory of the agent's whole sandbox (K, M, G, T: powers of 1024).
    #[arg(long, value_name = "SIZE", default_value_t = ByteSize(ale_sandbox::limits::DEFAULT_MEMORY_BYTES))]
    pub agent_memory: ByteSize,
    /// The tasks (processes and threads) of the agent's whole sandbox.
    #[arg(long, value_name = "N", default_value_t = ale_sandbox::limits::DEFAULT_TASKS, value_parser = ale_sandbox::limits::parse_tasks)]
    pub agent_pids: u64,
    /// The CPU time of the agent's whole sandbox, or `none` [default: the task's time budget,
    /// one core's worth; 3600 for a task without one]
    #[arg(long, value_name = "SECONDS", value_parser = parse_cpu_limit)]
    pub agent_cpu_seconds: Option<CpuLimit>,
    /// The cgroup v2 folder in which each run's sandbox gets a cgroup of its own (it must
    /// enable the memory and pids controllers for its children) [default: the harness's own
    /// cgroup or the one above it, if delegated to the harness: owned by its user, or, as root,
    /// marked by systemd's `Delegate=yes`]
    #[arg(long, value_name = "DIR")]
    pub cgroup_parent: Option<PathBuf>,
    /// An environment variable for the agent (repeatable). Its environment is otherwise only
    /// ALE_ENDPOINT, ALE_ENV_HANDLE, HOME, PATH, LANG and TERM.
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env_arg)]
    pub env: Vec<(String, String)>,
}

fn parse_cpu_limit(text: &str) -> Result<CpuLimit, String> {
    Ok(match ale_sandbox::limits::parse_cpu_seconds(text)? {
        Some(seconds) => CpuLimit::Seconds(seconds),
        None => CpuLimit::Unbounded,
    })
}

fn parse_uid_range(text: &str) -> Result<ale_sandbox::uids::UidRange, String> {
    text.parse()
}

fn parse_env_arg(pair: &str) -> Result<(String, String), String> {
    ale_sandbox::parse_env_pair(pair).map_err(|e| e.to_string())
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum SandboxChoice {
    Namespaces,
    None,
}

#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetworkChoice {
    None,
    Host,
}

impl SandboxArgs {
    pub fn options(&self) -> SandboxOptions {
        SandboxOptions {
            mode: match self.sandbox {
                SandboxChoice::Namespaces => SandboxMode::Namespaces,
                SandboxChoice::None => SandboxMode::None,
            },
            network: match self.network {
                NetworkChoice::None => Network::None,
                NetworkChoice::Host => Network::Host,
            },
            workdir: self.workdir.clone(),
            expose: self.expose.clone(),
            agent_user: self.agent_user.clone(),
            agent_uids: self.agent_uids,
            extra_env: self.env.clone(),
            memory_bytes: self.agent_memory.0,
            tasks: self.agent_pids,
            cpu: self.agent_cpu_seconds.unwrap_or(CpuLimit::TaskBudget),
            cgroup_parent: self.cgroup_parent.clone(),
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct ScoreArgs {
    /// A trajectory.jsonl, a run folder, a report.json, or an EvalResult JSON file.
    pub file: PathBuf,
    /// The task, when FILE is a bare EvalResult.
    #[arg(long)]
    pub task: Option<String>,
    /// A faithfulness verdict file, for reproduction-genre tasks.
    #[arg(long, value_name = "FILE")]
    pub faithfulness: Option<PathBuf>,
    /// Print the breakdown as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// A run folder, a trajectory.jsonl, a bundle (`ale harness bundle`), or a run id (looked
    /// up in --state-dir, or the
    /// default state dir).
    #[arg(value_name = "RUN")]
    pub path: PathBuf,
    /// The evaluator's public key: a file (like evaluator.pub) or 64 hex characters
    /// [default: from the state dir]
    #[arg(long, value_name = "KEY")]
    pub evaluator_key: Option<String>,
    /// The harness's public key: a file (like harness.pub) or 64 hex characters
    /// [default: from the state dir]
    #[arg(long, value_name = "KEY")]
    pub harness_key: Option<String>,
    /// The state dir whose public keys to check with [default: the one the run folder is in]
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Print the verdict as JSON: {"verdict": "verified", …} or {"verdict": "broken", "path",
    /// "reason"} (the shape is in docs/harness.md).
    #[arg(long)]
    pub json: bool,
    /// For an encrypted bundle: the age identity file holding its recipient's secret key
    /// (`ale harness keygen` makes one).
    #[arg(long, value_name = "FILE")]
    pub identity: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub action: Option<RunsAction>,
    #[command(flatten)]
    pub state_dir: StateDirArg,
    /// Only runs of this task.
    #[arg(long)]
    pub task: Option<String>,
    /// Only runs with this tag (repeatable: every one given).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Only runs whose name holds this text (any case).
    #[arg(long, value_name = "TEXT")]
    pub name: Option<String>,
    /// Print the runs as a JSON array.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print the runs as CSV, with a header line.
    #[arg(long)]
    pub csv: bool,
}

#[derive(clap::Subcommand, Debug)]
pub enum RunsAction {
    /// Remove a run's folder (its records, report, plots and agent log), or with --archive
    /// move it to STATE_DIR/archive/runs, out of the listings.
    Rm(RmArgs),
}

#[derive(clap::Args, Debug)]
pub struct RmArgs {
    /// Runs: a run id, or a run folder in the state dir.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,
    /// Move the runs to STATE_DIR/archive/runs instead of deleting them.
    #[arg(long)]
    pub archive: bool,
    /// Also a run with no report and no finished session (it may still be running).
    #[arg(long)]
    pub force: bool,
    #[command(flatten)]
    pub state_dir: StateDirArg,
}

#[derive(clap::Args, Debug)]
pub struct LeaderboardArgs {
    /// The task whose runs to rank.
    #[arg(long)]
    pub task: String,
    #[command(flatten)]
    pub state_dir: StateDirArg,
    /// Print the board as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(command: HarnessCommand) -> anyhow::Result<ExitCode> {
    match command {
        HarnessCommand::Run(args) => run_official(*args),
        HarnessCommand::Score(args) => score_file(args),
        HarnessCommand::Verify(args) => verify_path(&args),
        HarnessCommand::Runs(args) => match args.action {
            Some(RunsAction::Rm(rm)) => remove_runs(&rm),
            None => list_runs(&args),
        },
        HarnessCommand::Leaderboard(args) => leaderboard(&args),
        HarnessCommand::Bundle(args) => write_bundle(&args),
        HarnessCommand::Keygen(args) => keygen(&args),
    }
}

/// The command line of a built-in agent: this executable's `agent` subcommand.
pub fn builtin_agent(policy: &str) -> anyhow::Result<Vec<String>> {
    let exe = std::env::current_exe().context("cannot find the ale executable")?;
    Ok(vec![
        exe.to_string_lossy().to_string(),
        "agent".into(),
        "--policy".into(),
        policy.into(),
    ])
}

fn run_official(args: RunArgs) -> anyhow::Result<ExitCode> {
    let agent_command = match (&args.policy, args.agent.is_empty(), &args.submission) {
        (_, _, Some(_)) => Vec::new(),
        (Some(policy), _, None) => builtin_agent(policy)?,
        (None, false, None) => args.agent.clone(),
        (None, true, None) => bail!(
            "give an agent: --policy random|heuristic, or a command after `--` \
             (a batch task: --submission DIR)"
        ),
    };
    let state_dir = match &args.harness_socket {
        Some(socket) => {
            anyhow::ensure!(
                socket
                    .file_name()
                    .is_some_and(|n| n == ale_records::layout::HARNESS_SOCKET),
                "{} is not an evaluator's harness socket (expected a path ending in {})",
                socket.display(),
                ale_records::layout::HARNESS_SOCKET
            );
            socket.parent().map(Path::to_path_buf).unwrap_or_default()
        }
        None => args.state_dir.resolve(),
    };
    let display = ProgressDisplay::new(args.progress);
    let options = RunOptions {
        task_id: args.task.clone(),
        state_dir,
        ale_exe: std::env::current_exe().context("cannot find the ale executable")?,
        endpoint: args.endpoint.clone(),
        agent_command,
        submission: args.submission.clone(),
        poll_interval: Duration::from_millis(100),
        faithfulness: args.faithfulness.clone(),
        sandbox: args.sandbox.options(),
        labels: RunLabels {
            name: args.name.clone(),
            tags: args.tags.clone(),
        },
        builtin_policy: args.policy.clone(),
        seed_set: args.seed_set.clone(),
        // A bar redrawn in place would be broken by the agent's lines: they go to agent.log.
        agent_output: if display.bar {
            AgentOutput::LogOnly
        } else {
            AgentOutput::Echoed
        },
        tasks_dir: args.tasks_dir.clone(),
    };
    let mut preflight = ale_harness::preflight::check(&options);
    preflight.checks.insert(
        0,
        task_check(&args.task, args.tasks_dir.as_deref(), &options.state_dir),
    );
    if args.dry_run {
        println!(
            "Dry run of {} (nothing started, nothing recorded)",
            args.task
        );
        let rows: Vec<(String, String)> = preflight
            .checks
            .iter()
            .map(|c| (c.what.clone(), format!("{}: {}", c.verdict, c.detail)))
            .collect();
        print_table(&rows);
        return Ok(if preflight.is_fine() {
            println!("Every check passed.");
            ExitCode::SUCCESS
        } else {
            println!("Fix the checks above that are not ok before the run.");
            ExitCode::FAILURE
        });
    }
    if let Some(failed) = preflight
        .checks
        .iter()
        .find(|c| c.what == "task" && c.verdict == Verdict::Failed)
    {
        bail!("{}", failed.detail);
    }
    // The agent runs anyway (a path may be meant for its own /tmp); the operator is told.
    for warning in preflight.warnings() {
        eprintln!("warning: {}", warning.detail);
    }
    let mut display = display;
    let rt = super::runtime(1)?;
    // Ctrl-C or SIGTERM (the console's cancel) abandons the run: dropping it kills the agent's
    // process group and any evaluator this harness started.
    let report = rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            report = async {
                if options.submission.is_some() {
                    run_batch(&options, |p| display.update(p)).await
                } else {
                    run_interactive(&options, |p| display.update(p)).await
                }
            } => Ok(report?),
            _ = tokio::signal::ctrl_c() => bail!("cancelled; the agent was stopped"),
            _ = term.recv() => bail!("cancelled; the agent was stopped"),
        }
    })?;
    display.finish();
    let run_dir = ale_records::layout::run_dir(&options.state_dir, &report.run_id);
    if args.progress == ProgressStyle::Json {
        let event = ProgressEvent::Report {
            run_dir: run_dir.clone(),
            report: Box::new(report.clone()),
        };
        println!("{}", event.to_line());
    } else {
        print_summary(&report, &run_dir);
    }
    let ending = report.ending();
    if ending != RunEnding::Played && args.progress != ProgressStyle::Json {
        eprintln!("error: {ending} (exit code {})", ending.exit_code());
    }
    Ok(ExitCode::from(ending.exit_code()))
}

/// Whether `task` is one the evaluator will have: a built-in task, or one in `tasks_dir`
/// (which must load). An evaluator already serving the state dir has the tasks it was started
/// with: a task this binary does not know is left to it (the run itself finds out).
fn task_check(
    task: &str,
    tasks_dir: Option<&Path>,
    state_dir: &Path,
) -> ale_harness::preflight::Check {
    use ale_harness::preflight::Check;
    let catalog = crate::sim_catalog();
    let (registry, source) = match tasks_dir {
        Some(dir) => (
            ale_server::TaskRegistry::with_dir(dir, catalog),
            format!("the built-in tasks and {}", dir.display()),
        ),
        None => (
            ale_server::TaskRegistry::builtin(catalog),
            "the built-in tasks".to_string(),
        ),
    };
    let (verdict, detail) = match registry {
        Err(e) => (Verdict::Failed, format!("cannot load {source}: {e:#}")),
        Ok(registry) if registry.get(task).is_some() => {
            (Verdict::Ok, format!("{task}, one of {source}"))
        }
        Ok(_)
            if ale_harness::evaluator_process::socket_is_live(
                &ale_records::layout::harness_socket(state_dir),
            ) =>
        {
            (
                Verdict::Ok,
                format!(
                    "{task}: not one of {source}; the evaluator serving {} has its own tasks",
                    state_dir.display()
                ),
            )
        }
        Ok(registry) => {
            let ids = registry.ids();
            (
                Verdict::Failed,
                format!(
                    "no task {task} in {source}; the tasks are: {} (an evaluator already \
                     serving the state dir may have others)",
                    ids.join(", ")
                ),
            )
        }
    };
    Check {
        what: "task".into(),
        verdict,
        detail,
    }
}

/// Shows a run's progress as the chosen style.
struct ProgressDisplay {
    style: ProgressStyle,
    bar: bool,
    announced: usize,
}

impl ProgressDisplay {
    fn new(style: ProgressStyle) -> Self {
        ProgressDisplay {
            style,
            bar: style == ProgressStyle::Auto && std::io::stderr().is_terminal(),
            announced: 0,
        }
    }

    fn update(&mut self, p: Progress<'_>) {
        let r = p.result;
        let done = r.episodes.iter().filter(|e| e.outcome.is_played()).count();
        let current = r.episodes.iter().find(|e| e.outcome == Outcome::InProgress);
        match self.style {
            ProgressStyle::None => {}
            ProgressStyle::Json => {
                let line = ProgressEvent::Progress(RunProgress::from(&p)).to_line();
                println!("{line}");
                let _ = std::io::stdout().flush();
            }
            ProgressStyle::Auto if self.bar => {
                let planned = r.episodes.len().max(1);
                let width = 24;
                let filled = done * width / planned;
                let current = current.map_or(String::new(), |e| {
                    format!(" · current return {:.1}", e.episode_return)
                });
                eprint!(
                    "\r{} [{}{}] {done}/{planned}{current} · mean {:.2} · {:.1} s   ",
                    p.task.id,
                    "█".repeat(filled),
                    "░".repeat(width - filled),
                    r.value,
                    p.elapsed.as_secs_f64()
                );
            }
            ProgressStyle::Auto => {
                for e in r
                    .episodes
                    .iter()
                    .filter(|e| e.outcome.is_played())
                    .skip(self.announced)
                {
                    eprintln!(
                        "rollout {}/{}: {:?}, {} = {:.2} in {} steps",
                        e.index + 1,
                        r.episodes.len(),
                        e.outcome,
                        r.metric_name,
                        e.metric,
                        e.steps
                    );
                }
                self.announced = done;
            }
        }
    }

    fn finish(&self) {
        if self.bar {
            eprintln!();
        }
    }
}

fn print_table(rows: &[(String, String)]) {
    let width = rows
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    for (k, v) in rows {
        println!("  {k:<width$}  {v}");
    }
}

fn print_summary(report: &Report, run_dir: &Path) {
    let count = |o: Outcome| report.episodes.iter().filter(|e| e.outcome == o).count();
    let mut rows = vec![("run".to_string(), report.run_id.to_string())];
    if let Some(name) = &report.name {
        rows.push(("name".into(), name.clone()));
    }
    if !report.tags.is_empty() {
        rows.push(("tags".into(), report.tags.join(", ")));
    }
    if let Some(set) = &report.seed_set {
        rows.push((
            "seed set".into(),
            format!("{} · commitment {}", set.name, set.commitment),
        ));
    }
    rows.extend([
        (
            "task".into(),
            format!("{} — {}", report.task.id, report.task.title),
        ),
        (
            "status".into(),
            format!("{} — {}", report.status, report.status_message),
        ),
        (
            "agent".into(),
            format!("{} ({})", report.agent.command.join(" "), report.agent.exit),
        ),
        ("sandbox".into(), report.sandbox.describe()),
    ]);
    if let Some(limits) = report.sandbox.describe_limits() {
        rows.push(("limits".into(), limits));
    }
    let sim_faults = match count(Outcome::SimFault) {
        0 => String::new(),
        n => format!(", {n} ended by the sim's fault"),
    };
    rows.extend([(
        "rollouts".into(),
        format!(
            "{} completed, {} aborted, {} over budget, {} not run{sim_faults} · {} steps",
            count(Outcome::Completed),
            count(Outcome::Aborted),
            count(Outcome::BudgetExceeded),
            count(Outcome::NotRun),
            report.total_steps
        ),
    )]);
    rows.extend(report.score.lines());
    rows.extend(report.statistics_lines());
    rows.push((
        "trajectory".into(),
        format!(
            "verified · {} events · head {}",
            report.trajectory.events, report.trajectory.head
        ),
    ));
    rows.push((
        "report".into(),
        run_dir
            .join(ale_records::layout::REPORT_FILE)
            .display()
            .to_string(),
    ));
    if !report.agent.command.is_empty() {
        rows.push((
            "agent log".into(),
            run_dir
                .join(ale_records::layout::AGENT_LOG_FILE)
                .display()
                .to_string(),
        ));
    }
    rows.push((
        "plots".into(),
        run_dir
            .join(ale_harness::plot::PLOT_FILES[0])
            .display()
            .to_string(),
    ));
    println!("Official run");
    print_table(&rows);
}

/// The built-in task catalog, whose rules score a bare EvalResult.
fn builtin_tasks() -> anyhow::Result<Vec<ale_proto::TaskSpec>> {
    let registry = ale_server::TaskRegistry::builtin(crate::sim_catalog())?;
    Ok(registry
        .iter()
        .map(|task| task.spec())
        .collect::<Result<_, _>>()?)
}

fn score_file(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let faithfulness = args
        .faithfulness
        .as_deref()
        .map_or(Faithfulness::Missing, Faithfulness::read);
    let breakdown = ale_harness::score_file::score_file(
        &args.file,
        args.task.as_deref(),
        &builtin_tasks()?,
        &faithfulness,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&breakdown)?);
    } else {
        println!("Score of {}", args.file.display());
        print_table(&breakdown.lines());
    }
    Ok(ExitCode::SUCCESS)
}

/// A public key given on the command line: a file holding it, or the hex itself.
fn public_key_arg(arg: &str) -> anyhow::Result<ed25519_dalek::VerifyingKey> {
    let path = Path::new(arg);
    if path.exists() {
        return Ok(ale_records::signing_keys::read_public_key(path)?);
    }
    Ok(ale_records::signing_keys::parse_public_key(arg)?)
}

/// Where `verify` takes each public key from: its flag, else the state dir's `.pub` file (the
/// one given, or the one a run folder sits in: `<state>/runs/<run_id>`). Each key is read only
/// when needed.
struct KeySource<'a> {
    args: &'a VerifyArgs,
    state_dir: Option<PathBuf>,
    /// The keys came in the bundle the run was unpacked from.
    bundled: bool,
}

impl<'a> KeySource<'a> {
    /// The keys for the run at `path` (the resolved run argument).
    fn new(args: &'a VerifyArgs, path: &Path) -> Self {
        let state_dir = args.state_dir.clone().or_else(|| {
            let run_dir = if path.is_dir() { path } else { path.parent()? };
            run_dir.parent()?.parent().map(Path::to_path_buf)
        });
        KeySource {
            args,
            state_dir,
            bundled: false,
        }
    }

    /// The keys for a run unpacked from a bundle into the state dir `unpacked`: the flags' or
    /// `--state-dir`'s when given, else those the bundle carries.
    fn bundled(args: &'a VerifyArgs, unpacked: &Path) -> Self {
        KeySource {
            args,
            state_dir: Some(args.state_dir.clone().unwrap_or(unpacked.to_path_buf())),
            bundled: args.state_dir.is_none(),
        }
    }

    /// Whether the key of `role` comes from the bundle being checked, not from the verifier.
    fn unpinned(&self, role: KeyRole) -> bool {
        self.bundled && self.flag(role).1.is_none()
    }

    fn flag(&self, role: KeyRole) -> (&'static str, Option<&String>) {
        match role {
            KeyRole::Evaluator => ("--evaluator-key", self.args.evaluator_key.as_ref()),
            KeyRole::Harness => ("--harness-key", self.args.harness_key.as_ref()),
        }
    }

    /// Where the key of `role` comes from, for the output.
    fn origin(&self, role: KeyRole) -> String {
        match (self.flag(role), &self.args.state_dir) {
            ((flag, Some(_)), _) => flag.to_string(),
            _ if self.bundled => format!(
                "{} shipped in the bundle: only as trustworthy as its sender (pin the keys with \
                 --evaluator-key and --harness-key)",
                role.public_key_file()
            ),
            (_, Some(dir)) => dir.join(role.public_key_file()).display().to_string(),
            _ => format!(
                "{} of the state dir the run is in: only as trustworthy as that folder",
                role.public_key_file()
            ),
        }
    }

    fn key(&self, role: KeyRole) -> anyhow::Result<ed25519_dalek::VerifyingKey> {
        if let (flag, Some(arg)) = self.flag(role) {
            return public_key_arg(arg).with_context(|| flag.to_string());
        }
        let dir = self.state_dir.as_deref().context(
            "no public keys to check the signatures with: pass --evaluator-key and --harness-key, or --state-dir",
        )?;
        let file = dir.join(role.public_key_file());
        ale_records::signing_keys::read_public_key(&file).with_context(|| {
            format!(
                "cannot check signatures: no usable {} (pass --evaluator-key / --harness-key, or --state-dir)",
                file.display()
            )
        })
    }
}

fn verify_path(args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    let lookup = args
        .state_dir
        .clone()
        .unwrap_or_else(ale_server::state_dir::default_state_dir);
    let mut path = super::run_arg::resolve(&args.path, &lookup)?;
    let mut unpacked = None;
    if path.is_file() {
        let bytes = ale_harness::bundle::read_capped(&path)?;
        if Bundle::looks_like(&bytes) {
            let identity = match &args.identity {
                Some(file) => Some(
                    std::fs::read_to_string(file)
                        .with_context(|| format!("cannot read {}", file.display()))?,
                ),
                None => None,
            };
            let bundle = Bundle::from_bytes(&bytes, identity.as_deref())?;
            let dir = tempfile::Builder::new().prefix("ale-bundle-").tempdir()?;
            path = bundle.unpack(&dir.path().join("state"))?;
            unpacked = Some(dir);
        }
    }
    let path = &path;
    let source = match &unpacked {
        Some(dir) => KeySource::bundled(args, &dir.path().join("state")),
        None => KeySource::new(args, path),
    };
    let evaluator_key = source.key(KeyRole::Evaluator)?;
    let verdict = RunVerdict::from(if path.is_dir() {
        let keys = RecordKeys {
            evaluator: evaluator_key,
            harness: source.key(KeyRole::Harness)?,
        };
        verify_run_dir(path, &keys)
    } else {
        verify_trajectory_file(path, &evaluator_key)
    });
    if args.json {
        println!("{}", serde_json::to_string_pretty(&verdict)?);
    }
    let verified = match verdict {
        RunVerdict::Verified(v) => *v,
        RunVerdict::Broken(e) => {
            if !args.json {
                println!("BROKEN  {e}");
            }
            return Ok(ExitCode::FAILURE);
        }
    };
    if unpacked.is_some() {
        // A bundle stands for a whole run: finished, signed by both sides, reported.
        let whole = verified.trajectory.signature.is_some()
            && verified.harness_log.as_ref().is_some_and(|l| l.is_signed())
            && verified.report.is_some();
        if !whole {
            println!(
                "BROKEN  the bundle holds no whole run: its session is unfinished, a record is \
                 unsigned, or its report is missing"
            );
            return Ok(ExitCode::FAILURE);
        }
    }
    if !args.json {
        println!("Verified {}", path.display());
        print_table(&verification_rows(&verified, &evaluator_key, &source));
    }
    let unpinned: Vec<&str> = [KeyRole::Evaluator, KeyRole::Harness]
        .into_iter()
        .filter(|&role| source.unpinned(role))
        .map(|role| source.flag(role).0)
        .collect();
    if !unpinned.is_empty() {
        eprintln!(
            "NOT PINNED: the records agree with the keys the bundle itself carries, which anyone \
             can make; nothing ties them to an evaluator you trust. Pass {} (the keys you know \
             the evaluator and its harness by), or --state-dir of that evaluator.",
            unpinned.join(" and ")
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

/// What `verify` prints of a verified run, a row each.
fn verification_rows(
    verified: &RunVerification,
    evaluator_key: &ed25519_dalek::VerifyingKey,
    source: &KeySource<'_>,
) -> Vec<(String, String)> {
    let trajectory = &verified.trajectory;
    let mut rows = vec![(
        "trajectory".to_string(),
        format!(
            "ok · {} events · head {}",
            trajectory.events, trajectory.head
        ),
    )];
    if let Some(found) = &verified.interrupted {
        rows.push((
            "interrupted".into(),
            format!(
                "the evaluator stopped before the session finished; its restart found {} events \
                 ending at this head. The session's hidden seeds died with it: it cannot be \
                 resumed, and it has no result or signature",
                found.events
            ),
        ));
    }
    rows.push((
        "evaluator signature".into(),
        if trajectory.signature.is_some() {
            format!(
                "ok · key {} · {}",
                encode_public_key(evaluator_key),
                source.origin(KeyRole::Evaluator)
            )
        } else {
            "none yet: the session has not finished".into()
        },
    ));
    match &trajectory.result {
        Some(r) => {
            rows.push((
                "result".into(),
                format!(
                    "{}, {} = {} over {} rollouts",
                    r.status,
                    r.metric_name,
                    r.value,
                    r.episodes.len()
                ),
            ));
            let b = score(
                &trajectory.rules(),
                Some(r.value),
                &r.safety,
                &Faithfulness::Missing,
            );
            let note = if b.faithfulness.required {
                " (faithfulness not re-checked: no verdict given)"
            } else {
                ""
            };
            rows.push((
                "score".into(),
                format!("{:.4} re-derived from the trajectory{note}", b.score),
            ));
        }
        None => rows.push((
            "result".into(),
            "none yet: the session has not finished".into(),
        )),
    }
    if let Some(log) = &verified.harness_log {
        rows.push((
            "harness log".into(),
            format!("ok · {} events · read the result at this head", log.events),
        ));
        rows.push((
            "harness signature".into(),
            if log.is_signed() {
                format!("ok · {}", source.origin(KeyRole::Harness))
            } else {
                "none yet: the run has not been scored".into()
            },
        ));
        rows.push((
            "agent".into(),
            match verified.sandbox() {
                Some(sandbox) => sandbox.describe(),
                None => "unverified: the harness log is not signed, so what it says of the agent \
                         proves nothing"
                    .into(),
            },
        ));
    }
    if let Some(report) = &verified.report {
        rows.push(("report".into(), "agrees with the signed records".into()));
        rows.extend(report.statistics_lines());
    }
    rows
}

fn list_runs(args: &RunsArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    let entries = runs::list(&state_dir)
        .with_context(|| format!("cannot list runs in {}", state_dir.display()))?;
    let filter = RunFilter {
        task: args.task.clone(),
        tags: args.tags.clone(),
        name: args.name.clone(),
    };
    let rows: Vec<RunRow> = entries
        .iter()
        .map(RunRow::of)
        .filter(|r| filter.keeps(r))
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.csv {
        print!("{}", runs::to_csv(&rows));
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        if entries.is_empty() {
            println!("No runs in {} yet. Try: ale demo", state_dir.display());
        } else {
            println!(
                "None of the {} runs in {} match.",
                entries.len(),
                state_dir.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            let who = match &r.name {
                Some(name) => name.clone(),
                None => r.agent.clone(),
            };
            let score = match (r.score, r.score_ci) {
                (Some(s), Some(ci)) => format!("{s:.3} ± {:.3}", ci.half_width()),
                (Some(s), None) => format!("{s:.3}"),
                _ => "-".into(),
            };
            let duration = r
                .duration_seconds
                .map_or("-".into(), |d| format!("{d:.1} s"));
            let status = match &r.sandbox {
                Some(s) if s.starts_with("unsandboxed") => format!("{} (unsandboxed)", r.status),
                _ => r.status.clone(),
            };
            [
                r.started[..16.min(r.started.len())].to_string(),
                duration,
                r.task.clone(),
                who,
                status,
                score,
                r.run_id.clone(),
            ]
        })
        .collect();
    print_columns(
        &[
            "STARTED (UTC)",
            "TIME",
            "TASK",
            "NAME / AGENT",
            "STATUS",
            "SCORE ± 95%",
            "RUN",
        ],
        &table,
    );
    Ok(ExitCode::SUCCESS)
}

/// A table with a header, each column as wide as its widest cell (the last one unpadded).
fn print_columns<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

fn remove_runs(args: &RmArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    for run in &args.runs {
        let dir = super::run_arg::resolve(run, &state_dir)?;
        let gone = runs::remove(&state_dir, &dir, args.archive, args.force)?;
        if args.archive {
            println!("archived {} to {}", dir.display(), gone.display());
        } else {
            println!("removed {}", gone.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn leaderboard(args: &LeaderboardArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    let board = Leaderboard::load(&state_dir, &args.task)
        .with_context(|| format!("cannot list runs in {}", state_dir.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&board)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Leaderboard of {} (verified, sandboxed runs only; each agent on each seed set apart)",
        board.task
    );
    if board.standings.is_empty() {
        println!("  no verified run of {} yet", board.task);
    } else {
        let rows: Vec<[String; 7]> = board
            .standings
            .iter()
            .map(|s| {
                let ci = |c: Option<ale_harness::stats::Interval>| {
                    c.map_or(String::new(), |c| format!(" [{:.3}, {:.3}]", c.low, c.high))
                };
                [
                    s.rank.to_string(),
                    match &s.seed_set {
                        Some(set) => format!("{} · seed set {set}", s.agent),
                        None => s.agent.clone(),
                    },
                    format!("{:.3}{}", s.score, ci(s.score_ci)),
                    format!("{:.3}{}", s.value, ci(s.value_ci)),
                    format!(
                        "{} · {} run{}",
                        s.rollouts,
                        s.runs,
                        if s.runs == 1 { "" } else { "s" }
                    ),
                    s.started[..16.min(s.started.len())].to_string(),
                    s.run_id.clone(),
                ]
            })
            .collect();
        let metric = board
            .standings
            .first()
            .map_or("METRIC".to_string(), |s| s.metric_name.to_uppercase());
        print_columns(
            &[
                "#",
                "AGENT",
                "SCORE [95%]",
                &format!("{metric} [95%]"),
                "ROLLOUTS · RUNS",
                "STARTED (UTC)",
                "BEST RUN",
            ],
            &rows,
        );
    }
    if !board.left_out.is_empty() {
        println!("Left out, not ranked ({}):", board.left_out.len());
        for l in &board.left_out {
            println!("  {}  {}  {}", l.run_id, l.agent, l.reason);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn write_bundle(args: &BundleArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    let dir = super::run_arg::resolve(&args.run, &state_dir)?;
    // `.` or `runs/run-x/..`: the folder's own name is the run's id.
    let dir =
        std::fs::canonicalize(&dir).with_context(|| format!("cannot read {}", dir.display()))?;
    anyhow::ensure!(
        dir.is_dir(),
        "{} is not a run folder (bundle a run id or a run's folder)",
        dir.display()
    );
    // The keys of the state dir the run is in, as `verify` would take them.
    let keys_dir = dir
        .parent()
        .and_then(Path::parent)
        .map_or(state_dir.clone(), Path::to_path_buf);
    let bundle = Bundle::of_run(&keys_dir, &dir)?;
    let plain = bundle.to_bytes();
    let (bytes, suffix) = if args.to.is_empty() {
        (plain, "alebundle")
    } else {
        (
            ale_harness::bundle::encrypt(&plain, &args.to)?,
            "alebundle.age",
        )
    };
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.{suffix}", bundle.run_id)));
    ale_records::private_files::create_private_file(&output, 0o600)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", output.display()))?
        .write_all(&bytes)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let files: Vec<&str> = bundle.files.keys().map(String::as_str).collect();
    println!(
        "wrote {} ({} bytes{}): {} and the public keys; no hidden seed, no agent log",
        output.display(),
        bytes.len(),
        if args.to.is_empty() {
            String::new()
        } else {
            format!(
                ", encrypted for {} recipient{}",
                args.to.len(),
                if args.to.len() == 1 { "" } else { "s" }
            )
        },
        files.join(", ")
    );
    println!(
        "check it: ale harness verify {}{}",
        output.display(),
        if args.to.is_empty() {
            ""
        } else {
            " --identity KEY_FILE"
        }
    );
    Ok(ExitCode::SUCCESS)
}

fn keygen(args: &KeygenArgs) -> anyhow::Result<ExitCode> {
    let (identity, recipient) = ale_harness::bundle::new_identity();
    ale_records::private_files::create_private_file(&args.output, 0o600)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", args.output.display()))?
        .write_all(identity.as_bytes())
        .with_context(|| format!("cannot write {}", args.output.display()))?;
    println!(
        "wrote the secret key to {} (keep it)",
        args.output.display()
    );
    println!("public key (give it to whoever sends you bundles): {recipient}");
    Ok(ExitCode::SUCCESS)
}
