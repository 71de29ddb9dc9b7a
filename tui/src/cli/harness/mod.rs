//! `ale harness …`: official evaluations, scoring, verification and past runs. The arguments
//! and the dispatch are here; each group of subcommands is a module: `run.rs`, `score.rs`,
//! `verify.rs`, `runs.rs` (`runs`, `runs rm`, `leaderboard`) and `bundle.rs` (`bundle`,
//! `keygen`).

mod bundle;
mod run;
mod runs;
mod score;
mod verify;

use std::path::PathBuf;
use std::process::ExitCode;

use ale_sandbox::limits::ByteSize;
use ale_sandbox::{CpuLimit, Network, SandboxMode, SandboxOptions};

use crate::StateDirArg;

pub use run::builtin_agent;

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
        HarnessCommand::Run(args) => run::run_official(*args),
        HarnessCommand::Score(args) => score::score_file(args),
        HarnessCommand::Verify(args) => verify::verify_path(&args),
        HarnessCommand::Runs(args) => match args.action {
            Some(RunsAction::Rm(rm)) => runs::remove_runs(&rm),
            None => runs::list_runs(&args),
        },
        HarnessCommand::Leaderboard(args) => runs::leaderboard(&args),
        HarnessCommand::Bundle(args) => bundle::write_bundle(&args),
        HarnessCommand::Keygen(args) => bundle::keygen(&args),
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
