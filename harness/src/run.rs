//! An official run: create the official env over the harness channel, then either hand it to
//! an agent process (an interactive task) or copy a submission into the evaluator's submission
//! dir and submit it (a batch task); follow the session, read the authoritative result, verify
//! the trajectory, score, and leave `report.json` and the harness's own chained log in the run
//! folder. Both kinds end the same way.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use ale_records::signing_keys::SigningKey;
use std::os::unix::fs::OpenOptionsExt;

use ale_proto::eval::{EvalResultRecord, EvalStatus};
use ale_proto::{EnvHandle, RunId, SessionId, TaskSpec};
use ale_records::layout::{self, AGENT_LOG_FILE, REPORT_FILE, UNIX_SCHEME};
use ale_records::private_files::{check_private_dir, create_private_file};
use ale_records::trajectory::{ChainWriter, EventKind, HARNESS_LOG_FILE, Level, TRAJECTORY_FILE};

use crate::agent::{Agent, AgentLaunch, AgentStart};
use crate::channel::{BatchRunState, HarnessChannel, OfficialEnv};
use crate::error::{HarnessError, Unverified};
use crate::evaluator_process::{EvaluatorHandle, attach_or_start};
use crate::harness_log::{HarnessStarted, ResultRead};
use crate::report::{Report, TaskSummary, Timings};
use crate::reserve::reserve_space;
use crate::scoring::{Faithfulness, score};
use crate::verify::{RecordKeys, verify_harness_log, verify_trajectory};
use ale_records::signing_keys::{KeyRole, load_or_create_signing_key, read_public_key};
use ale_sandbox::{SandboxOptions, SandboxRecord};

/// How long an agent may run past the session's time budget before the harness ends the
/// session itself; covers start-up and the last RPCs in flight.
pub const BUDGET_GRACE: Duration = Duration::from_secs(30);
/// How long a finished agent gets to exit on its own before it is killed.
pub const EXIT_GRACE: Duration = Duration::from_secs(5);

#[derive(Debug, Clone)]
pub struct RunOptions {
    pub task_id: String,
    /// The evaluator's state dir: its harness socket and run folders are there.
    pub state_dir: PathBuf,
    /// The `ale` executable, to start an evaluator when none serves the state dir.
    pub ale_exe: PathBuf,
    /// The agent channel URL handed to the agent; by default the one the evaluator recorded.
    pub endpoint: Option<String>,
    /// Program and arguments of the agent (an interactive task).
    pub agent_command: Vec<String>,
    /// The folder holding a batch task's submission (its contract's entrypoint file).
    pub submission: Option<PathBuf>,
    pub poll_interval: Duration,
    /// A faithfulness verdict file, for reproduction-genre tasks.
    pub faithfulness: Option<PathBuf>,
    /// How the agent is confined.
    pub sandbox: SandboxOptions,
    /// What the run is called and tagged with, in its signed log ([`RunLabels::check`]ed).
    pub labels: RunLabels,
    /// The built-in policy `agent_command` plays (`--policy`), if it is one: refused up front
    /// on a batch task, whose evaluator takes a submitted file and no steps.
    pub builtin_policy: Option<String>,
    /// The task's named evaluation seed set to play (`--seed-set`), instead of fresh hidden
    /// seeds.
    pub seed_set: Option<String>,
    /// Whether the agent's output is echoed on the harness's standard error (it always goes
    /// into the run's `agent.log`).
    pub agent_output: crate::agent::AgentOutput,
    /// A folder of task configs for the evaluator the harness starts (`ale serve
    /// --tasks-dir`); refused when an evaluator already serves the state dir.
    pub tasks_dir: Option<PathBuf>,
}

/// Unicode's invisible format characters a name could use to look like another on screen
/// (bidirectional overrides and isolates, zero-width characters, the byte-order mark).
fn is_format_char(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2069}' | '\u{FEFF}')
}

/// A run's name and tags, as a person gives them to tell runs apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunLabels {
    pub name: Option<String>,
    pub tags: Vec<String>,
}

/// The longest name a run can be given, in characters.
pub const MAX_NAME_CHARS: usize = 80;
/// The most tags a run can carry, and the longest tag.
pub const MAX_TAGS: usize = 16;
pub const MAX_TAG_CHARS: usize = 32;

impl RunLabels {
    /// Refuses what a table, a CSV file or a terminal would show wrong: an empty or overlong
    /// name, control characters, too many tags, a tag that is not `[A-Za-z0-9._:-]+`.
    pub fn check(&self) -> Result<(), String> {
        if let Some(name) = &self.name {
            let chars = name.chars().count();
            if name.trim().is_empty() || chars > MAX_NAME_CHARS {
                return Err(format!(
                    "a run's name has 1 to {MAX_NAME_CHARS} characters (got {chars})"
                ));
            }
            if name.chars().any(|c| c.is_control() || is_format_char(c)) {
                return Err(
                    "a run's name cannot hold control or bidirectional-format characters".into(),
                );
            }
        }
        if self.tags.len() > MAX_TAGS {
            return Err(format!(
                "a run carries at most {MAX_TAGS} tags (got {})",
                self.tags.len()
            ));
        }
        for tag in &self.tags {
            let fine = (1..=MAX_TAG_CHARS).contains(&tag.chars().count())
                && tag
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-'));
            if !fine {
                return Err(format!(
                    "tag {tag:?}: a tag has 1 to {MAX_TAG_CHARS} of A-Z a-z 0-9 . _ : -"
                ));
            }
        }
        Ok(())
    }
}

/// What the harness knows while a session runs.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub run_id: &'a RunId,
    pub task: &'a TaskSummary,
    pub target: f64,
    pub result: &'a EvalResultRecord,
    pub elapsed: Duration,
}

/// When the harness ends a session that `started` with a time budget of `budget_seconds` (as
/// the evaluator reported it): the budget plus [`BUDGET_GRACE`]. `None`: no budget, or one so
/// long that this clock cannot represent its end, which is then never reached.
fn overrun_deadline(started: Instant, budget_seconds: Option<u64>) -> Option<Instant> {
    started
        .checked_add(Duration::from_secs(budget_seconds?))?
        .checked_add(BUDGET_GRACE)
}

fn describe_exit(status: Option<ExitStatus>, sandboxed: bool) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        None => "killed by the harness".into(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(ale_sandbox::SETUP_FAILED), _) if sandboxed => {
                "never started: the sandbox could not be set up (see agent.log)".into()
            }
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(signal)) => format!("killed by signal {signal}"),
            _ => s.to_string(),
        },
    }
}

/// Runs one official evaluation with an agent (an interactive task, or a batch task whose
/// agent submits its policy) and returns its report (also written to the run folder).
/// `progress` sees each result read while the session runs and the final one.
pub async fn run_interactive(
    options: &RunOptions,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<Report, HarnessError> {
    if options.agent_command.is_empty() {
        return Err(HarnessError::NoAgent);
    }
    if options.endpoint.is_some() && options.sandbox.mode.is_sandboxed() {
        return Err(HarnessError::EndpointWithSandbox);
    }
    with_evaluator(options, async |evaluator| {
        run_with(options, evaluator, &mut progress).await
    })
    .await
}

/// Runs `body` with the evaluator serving the state dir (attached to, or started for the run
/// and stopped after it).
async fn with_evaluator(
    options: &RunOptions,
    body: impl AsyncFnOnce(&EvaluatorHandle) -> Result<Report, HarnessError>,
) -> Result<Report, HarnessError> {
    options.labels.check().map_err(HarnessError::Labels)?;
    let evaluator = attach_or_start(
        &options.state_dir,
        &options.ale_exe,
        options.endpoint.as_deref(),
        options.tasks_dir.as_deref(),
    )
    .await?;
    let outcome = body(&evaluator).await;
    evaluator.stop().await;
    outcome
}

fn task_summary(task: &TaskSpec) -> TaskSummary {
    TaskSummary {
        id: task.id.clone(),
        title: task.title.clone(),
        sim: task.sim.clone(),
        genre: task.genre,
        episodes: task.episodes_per_eval,
        max_total_steps: task.budgets.max_total_steps.unwrap_or(0),
        time_budget_seconds: task.budgets.time_budget_seconds.unwrap_or(0),
    }
}

/// What every official run starts with: the harness channel, the keys its records are signed
/// and checked with, and the clock.
struct Prologue {
    channel: HarnessChannel,
    harness_key: SigningKey,
    keys: RecordKeys,
    started: Instant,
    started_unix_ms: u64,
}

async fn prologue(
    options: &RunOptions,
    evaluator: &EvaluatorHandle,
) -> Result<Prologue, HarnessError> {
    let started = Instant::now();
    let started_unix_ms = ale_records::now_unix_ms();
    let channel = HarnessChannel::connect(&evaluator.harness_socket).await?;
    // The harness signs its log with its own key; the evaluator's public key checks the
    // trajectory's signature. Both live in the state dir, which no agent can reach.
    check_private_dir(&options.state_dir).map_err(HarnessError::NotPrivate)?;
    let harness_key = load_or_create_signing_key(&options.state_dir, KeyRole::Harness)?;
    let keys = RecordKeys {
        evaluator: read_public_key(&options.state_dir.join(KeyRole::Evaluator.public_key_file()))?,
        harness: harness_key.verifying_key(),
    };
    Ok(Prologue {
        channel,
        harness_key,
        keys,
        started,
        started_unix_ms,
    })
}

/// The harness's own log in a run's folder, begun with `harness_started`, and the file the
/// report will be written into ([`RESERVED_REPORT_FILE`], which becomes `report.json` once the
/// run is scored); the disk space both still need is reserved.
struct RunRecords {
    run_dir: PathBuf,
    log: ChainWriter,
    report: std::fs::File,
}

/// The report's file while the run is going, with its space reserved: `report.json` appears
/// only whole, as a hard link to it (no new data blocks needed), so an evaluator and `runs`
/// never see an empty report.
const RESERVED_REPORT_FILE: &str = ".report.json.reserved";

impl Drop for RunRecords {
    fn drop(&mut self) {
        // Written and linked, or the run failed: either way the reservation is done with.
        let _ = std::fs::remove_file(self.run_dir.join(RESERVED_REPORT_FILE));
    }
}

/// What the harness log's remaining events (`result_read`, `run_scored`) take at most.
const LOG_EVENTS_RESERVE: u64 = 64 << 10;

/// What `report.json` takes at most for a run of `episodes` rollouts: the fixed part (texts of
/// a few KiB: the task's title, the status message) and each rollout's episode and commitment
/// (about 0.5 KiB with a safety metric; `reports_fit_in_their_reservation` measures both).
fn report_reserve(episodes: u32) -> u64 {
    REPORT_RESERVE_BASE + u64::from(episodes) * REPORT_RESERVE_PER_ROLLOUT
}

const REPORT_RESERVE_BASE: u64 = 32 << 10;
const REPORT_RESERVE_PER_ROLLOUT: u64 = 1 << 10;

/// Opens the harness's log in the run folder of `started.run_id`, writes `started` to it, and
/// reserves what the rest of the run's records need (its log's last events and a report of
/// `episodes` rollouts).
fn open_records(
    state_dir: &Path,
    started: &HarnessStarted,
    episodes: u32,
) -> Result<RunRecords, HarnessError> {
    let run_dir = layout::run_dir(state_dir, &started.run_id);
    // The harness writes into the evaluator's run folder only when the whole way there is
    // private to this user and goes through no link.
    for dir in [
        state_dir.to_path_buf(),
        layout::runs_dir(state_dir),
        run_dir.clone(),
    ] {
        check_private_dir(&dir).map_err(HarnessError::NotPrivate)?;
    }
    let records_err = |cause| HarnessError::Records {
        path: run_dir.clone(),
        cause,
    };
    let log_path = run_dir.join(HARNESS_LOG_FILE);
    let mut log = ChainWriter::create(&log_path, Level::Harness).map_err(records_err)?;
    log.append(EventKind::HarnessStarted, started)
        .map_err(records_err)?;
    log.sync().map_err(records_err)?;
    // The reservation goes on a second descriptor of the same file: the space is the file's.
    let log_file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&log_path)
        .map_err(records_err)?;
    reserve_space(&log_file, &log_path, LOG_EVENTS_RESERVE)?;
    let report_path = run_dir.join(RESERVED_REPORT_FILE);
    let report = create_private_file(&report_path, 0o600).map_err(|e| records_err(e.into()))?;
    let records = RunRecords {
        run_dir,
        log,
        report,
    };
    reserve_space(&records.report, &report_path, report_reserve(episodes))?;
    Ok(records)
}

/// How every run ends once the authoritative `result` is read: `result_read` in the log, the
/// trajectory verified and checked against `result`, the score signed, the report and plots.
fn conclude(
    options: &RunOptions,
    prologue: &Prologue,
    mut records: RunRecords,
    result: &EvalResultRecord,
    read: ResultRead,
) -> Result<Report, HarnessError> {
    let run_dir = records.run_dir.clone();
    let records_err = |cause| HarnessError::Records {
        path: run_dir.clone(),
        cause,
    };
    records
        .log
        .append(EventKind::ResultRead, &read)
        .map_err(records_err)?;

    // The record on disk must say what the evaluator said over the wire.
    let trajectory_text =
        std::fs::read_to_string(run_dir.join(TRAJECTORY_FILE)).map_err(records_err)?;
    let verified = verify_trajectory(&trajectory_text).map_err(Unverified::Trajectory)?;
    verified
        .check_signature(&prologue.keys.evaluator)
        .map_err(Unverified::from)?;
    match &verified.result {
        Some(on_disk) if on_disk == result => {}
        Some(_) => return Err(Unverified::DiffersFromWire.into()),
        None => return Err(Unverified::Unfinished.into()),
    }
    let faithfulness = options
        .faithfulness
        .as_deref()
        .map_or(Faithfulness::Missing, Faithfulness::read);
    let breakdown = score(
        &verified.rules(),
        Some(result.value),
        &result.safety,
        &faithfulness,
    );
    records
        .log
        .append_signed(EventKind::RunScored, &breakdown, &prologue.harness_key)
        .map_err(records_err)?;
    records.log.sync().map_err(records_err)?;
    // The log as written must verify against the trajectory it read, as any checker will do.
    let log_text = std::fs::read_to_string(run_dir.join(HARNESS_LOG_FILE)).map_err(records_err)?;
    let verified_log =
        verify_harness_log(&log_text, &verified.head).map_err(Unverified::HarnessLog)?;
    verified_log
        .check_signature(&prologue.keys.harness)
        .map_err(Unverified::from)?;

    // The report says exactly what the two signed records say, as `verify` will rebuild it.
    let timings = Timings {
        started_unix_ms: prologue.started_unix_ms,
        finished_unix_ms: ale_records::now_unix_ms(),
        duration_seconds: prologue.started.elapsed().as_secs_f64(),
    };
    let report = Report::from_records(&verified, &verified_log, &prologue.keys, timings)
        .map_err(Unverified::from)?;
    report
        .write_into(&mut records.report)
        .and_then(|()| {
            // Never over an existing report.json (EEXIST), and no data to write: the blocks
            // are the reserved file's.
            std::fs::hard_link(
                run_dir.join(RESERVED_REPORT_FILE),
                run_dir.join(REPORT_FILE),
            )
        })
        .map_err(records_err)?;
    // Both records are whole: what was set aside for them and not used goes back to the disk.
    for released in [
        ale_records::disk_space::release_unused_space(&records.report),
        records.log.release_reserve(),
    ] {
        if let Err(e) = released {
            tracing::warn!(run_dir = %run_dir.display(), error = %e, "cannot give back the disk reserved for the run's records");
        }
    }
    match crate::plot::write_run_plots(&run_dir, &report) {
        Ok(()) => {}
        // The plots are drawn from the records, which are whole: a full disk costs only them.
        Err(e) if e.is_out_of_space() => {
            tracing::warn!(run_dir = %run_dir.display(), error = %e, "the run's plots were not written: no space left; draw them later with `ale plot`");
        }
        Err(e) => return Err(e.into()),
    }
    Ok(report)
}

/// The run a harness follows, as its progress reports name it.
struct Followed<'a> {
    run_id: &'a RunId,
    session_id: &'a SessionId,
    summary: &'a TaskSummary,
    target: f64,
    started: Instant,
}

/// The session's result as it stands, `None` until the session has begun; shows it to
/// `progress`. `end_session` ends it first.
async fn read_progress(
    channel: &mut HarnessChannel,
    run: &Followed<'_>,
    end_session: bool,
    progress: &mut impl FnMut(Progress<'_>),
) -> Result<Option<EvalResultRecord>, HarnessError> {
    let record = channel.eval_result(run.session_id, end_session).await?;
    if let Some(record) = &record {
        progress(Progress {
            run_id: run.run_id,
            task: run.summary,
            target: run.target,
            result: record,
            elapsed: run.started.elapsed(),
        });
    }
    Ok(record)
}

async fn run_with(
    options: &RunOptions,
    evaluator: &EvaluatorHandle,
    progress: &mut impl FnMut(Progress<'_>),
) -> Result<Report, HarnessError> {
    let mut prologue = prologue(options, evaluator).await?;
    if let Some(policy) = &options.builtin_policy
        && let Some(task) = prologue.channel.task(&options.task_id).await?
        && task.is_batch()
    {
        return Err(HarnessError::BuiltinOnBatch {
            policy: policy.clone(),
            task: task.id,
        });
    }
    // The state dir is what the agent must never see; the sandbox is tried before any official
    // env exists, so a machine without namespaces refuses cleanly.
    let hidden =
        vec![
            std::fs::canonicalize(&options.state_dir).map_err(|cause| HarnessError::Records {
                path: options.state_dir.clone(),
                cause,
            })?,
        ];
    let sandboxed = options.sandbox.mode.is_sandboxed();
    // As root: the run's own uid (held until the run is over), or the operator's --agent-user.
    let agent_user = ale_sandbox::agent_user_for_run(&options.sandbox)?;
    let (enforcement, cgroup_parent) = if sandboxed {
        ale_sandbox::choose_enforcement(&options.sandbox)?
    } else {
        (ale_sandbox::Enforcement::Rlimits, None)
    };
    let confinement = Confinement {
        hidden,
        agent_user,
        enforcement,
        cgroup_parent,
    };
    if sandboxed {
        // Before any official env exists there is no run's socket yet: the shared one shows
        // that the sandbox can be built, with the agent's user and its program. The probe
        // runs nothing, so the time budget its limits are made for does not matter.
        let probe_handle = EnvHandle::from_wire(String::new());
        let spec = crate::agent::launch_spec(&confinement.launch(
            options,
            &probe_handle,
            &evaluator.agent_socket,
            None,
            ale_sandbox::agent_limits(&options.sandbox, enforcement, None, None),
        ))?;
        ale_sandbox::probe(&options.ale_exe, &spec).await?;
    }
    let env = prologue
        .channel
        .create_official(&options.task_id, options.seed_set.as_deref())
        .await?;
    let session_id = env.session_id.clone();
    let outcome = run_official_env(options, &mut prologue, env, confinement, progress).await;
    end_session_on_error(&mut prologue.channel, &session_id, outcome).await
}

/// How a run's agent is confined, decided before its official env exists.
struct Confinement {
    /// Folders the agent must not see: the state dir.
    hidden: Vec<PathBuf>,
    /// As root, the agent's user, held until the run is over.
    agent_user: Option<ale_sandbox::AgentUser>,
    enforcement: ale_sandbox::Enforcement,
    cgroup_parent: Option<PathBuf>,
}

impl Confinement {
    fn launch<'a>(
        &'a self,
        options: &'a RunOptions,
        handle: &'a EnvHandle,
        agent_socket: &'a Path,
        submission_dir: Option<&'a Path>,
        limits: ale_sandbox::AgentLimits,
    ) -> AgentLaunch<'a> {
        AgentLaunch {
            command: &options.agent_command,
            handle,
            sandbox: &options.sandbox,
            agent_socket,
            submission_dir,
            hidden: &self.hidden,
            agent_user: self.agent_user.as_ref().map(|u| u.ids),
            limits,
        }
    }
}

/// Ends the session of a run that failed after its official env was created, so that the
/// evaluator releases at once what the run holds (its submission folder, its agent socket,
/// its reserved disk) rather than when it reclaims the env. A session already over is left
/// as it is by the evaluator; one that cannot be ended (the channel is what failed) is left
/// to the reclaim, with a warning.
async fn end_session_on_error<T>(
    channel: &mut HarnessChannel,
    session_id: &SessionId,
    outcome: Result<T, HarnessError>,
) -> Result<T, HarnessError> {
    if let Err(failed) = &outcome
        && let Err(e) = channel.eval_result(session_id, true).await
    {
        tracing::warn!(%session_id, run_error = %failed, error = %e, "cannot end the failed run's session; the evaluator releases it when it reclaims the env");
    }
    outcome
}

/// The part of [`run_with`] after the official env exists: every error here ends its session
/// ([`end_session_on_error`]).
async fn run_official_env(
    options: &RunOptions,
    prologue: &mut Prologue,
    env: OfficialEnv,
    confinement: Confinement,
    progress: &mut impl FnMut(Progress<'_>),
) -> Result<Report, HarnessError> {
    let started = prologue.started;
    let sandboxed = options.sandbox.mode.is_sandboxed();
    let OfficialEnv {
        handle,
        session_id,
        run_id,
        task,
    } = env;
    // The run's own channel to the evaluator and, for a batch task, its own submission folder
    // (the only host folder the agent may write), both made by the evaluator for this run.
    let agent_socket = layout::run_agent_socket(&options.state_dir, &run_id);
    let batch = task.is_batch();
    let submission_dir = batch
        .then(|| run_submission_dir(&options.state_dir, &run_id))
        .transpose()?;
    let limits = ale_sandbox::agent_limits(
        &options.sandbox,
        confinement.enforcement,
        task.budgets.time_budget_seconds,
        submission_dir.as_deref(),
    );
    let agent_ids = confinement.agent_user.as_ref().map(|u| u.ids);
    let sandbox_record = if sandboxed {
        SandboxRecord {
            mode: options.sandbox.mode,
            network: options.sandbox.network,
            agent_uid: agent_ids.map(|u| u.uid),
            limits: Some(limits),
        }
    } else {
        SandboxRecord {
            mode: options.sandbox.mode,
            network: ale_sandbox::Network::Host,
            agent_uid: None,
            limits: None,
        }
    };
    let unsandboxed_endpoint = options
        .endpoint
        .clone()
        .unwrap_or_else(|| format!("{UNIX_SCHEME}{}", agent_socket.display()));
    let summary = task_summary(&task);
    let target = task.metric.target;
    let records = open_records(
        &options.state_dir,
        &HarnessStarted {
            run_id: run_id.clone(),
            task: summary.clone(),
            agent_command: options.agent_command.clone(),
            agent_endpoint: Some(if sandbox_record.mode.is_sandboxed() {
                format!("{UNIX_SCHEME}{}", ale_sandbox::SANDBOX_AGENT_SOCKET)
            } else {
                unsandboxed_endpoint.clone()
            }),
            sandbox: sandbox_record,
            harness_version: env!("CARGO_PKG_VERSION").into(),
            name: options.labels.name.clone(),
            tags: options.labels.tags.clone(),
        },
        summary.episodes,
    )?;
    tracing::info!(%run_id, task = %summary.id, "official env created; launching the agent");

    let deadline = overrun_deadline(started, task.budgets.time_budget_seconds);
    let followed = Followed {
        run_id: &run_id,
        session_id: &session_id,
        summary: &summary,
        target,
        started,
    };
    let agent_log = records.run_dir.join(AGENT_LOG_FILE);
    let mut agent = Agent::launch(&AgentStart {
        launch: confinement.launch(
            options,
            &handle,
            &agent_socket,
            submission_dir.as_deref(),
            limits,
        ),
        ale_exe: &options.ale_exe,
        unsandboxed_endpoint: &unsandboxed_endpoint,
        log: &agent_log,
        cgroup_parent: confinement.cgroup_parent.as_deref(),
        run_id: &run_id,
        output: options.agent_output,
    })
    .await?;
    // For a batch task: whether the agent has submitted (its session has begun). The batch run
    // then goes on without it; the agent's part ends at `SubmitBatchEval`.
    let mut submitted = false;
    let mut harness_reason: Option<String> = None;
    let result = loop {
        tokio::time::sleep(options.poll_interval).await;
        agent.enforce_limits();
        let mut exited = agent.try_exit();
        let deadline_passed = deadline.is_some_and(|d| Instant::now() >= d);
        if batch && !submitted && (exited.is_some() || deadline_passed) {
            // The agent may have submitted in its last moments: look before ending anything.
            if let Ok(Some(_)) = prologue.channel.eval_result(&session_id, false).await {
                submitted = true;
            }
        }
        if batch && submitted && deadline_passed && exited.is_none() {
            // The agent's time is over; its run plays on in the evaluator, whose budget counts
            // from when the run gets its place among the runs that play at once.
            exited = agent.kill().await.or_else(|| agent.try_exit());
        }
        // A submitted batch run's budget is the evaluator's to keep.
        let overdue = deadline_passed && !(batch && submitted);
        let end_session = overdue || (exited.is_some() && !(batch && submitted));
        let answer = read_progress(&mut prologue.channel, &followed, end_session, progress).await;
        let record = match answer {
            Ok(Some(record)) => {
                submitted = true;
                record
            }
            // The agent has not started the session yet.
            Ok(None) => continue,
            Err(e) => {
                agent.kill().await;
                return Err(e);
            }
        };
        if record.status.is_finished() {
            if end_session && record.status == EvalStatus::EndedEarly {
                // The session was ended here, so the agent had not submitted (a submitted
                // batch run is never ended by the harness).
                let unfinished = if batch {
                    "before submitting"
                } else {
                    "before finishing its session"
                };
                harness_reason = Some(match exited {
                    Some(status) => match agent.stopped_by() {
                        Some(limit) => format!("{limit}, {unfinished}"),
                        None => format!(
                            "the agent {} {unfinished}",
                            describe_exit(Some(status), options.sandbox.mode.is_sandboxed())
                        ),
                    },
                    None if batch => {
                        "the agent did not submit within the session's time budget".into()
                    }
                    None => "the agent overran the session's time budget".into(),
                });
            }
            break record;
        }
    };
    let status = agent.finish(EXIT_GRACE).await;
    let exit = agent
        .stopped_by()
        .unwrap_or_else(|| describe_exit(status, options.sandbox.mode.is_sandboxed()));
    drop(agent);
    // The run's uid is free for another run once its sandbox is gone.
    drop(confinement);
    let read = ResultRead {
        evaluator_head: result.trajectory_head.clone(),
        status: result.status,
        value: result.value,
        status_message: match &harness_reason {
            Some(why) => format!("{}: {why}", result.status_message),
            None => result.status_message.clone(),
        },
        agent_exit: exit,
        left_early: harness_reason.is_some(),
    };
    conclude(options, prologue, records, &result, read)
}

/// Runs one official batch evaluation: the submission folder's entrypoint file is copied into
/// the evaluator's submission dir and submitted over the harness channel; no agent runs. The
/// report is also written to the run folder. `progress` sees each result read while the run
/// plays and the final one.
pub async fn run_batch(
    options: &RunOptions,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<Report, HarnessError> {
    if !options.agent_command.is_empty() {
        return Err(HarnessError::SubmissionWithAgent);
    }
    let Some(submission) = options.submission.as_deref() else {
        return Err(HarnessError::NoSubmission);
    };
    with_evaluator(options, async |evaluator| {
        run_batch_with(options, submission, evaluator, &mut progress).await
    })
    .await
}

/// The submission folder the evaluator made for `run_id` with its official env; its absence
/// (an evaluator that makes none) is an error that says so.
fn run_submission_dir(state_dir: &Path, run_id: &RunId) -> Result<PathBuf, HarnessError> {
    let dir = layout::run_submission_dir(state_dir, run_id);
    match std::fs::symlink_metadata(&dir) {
        Ok(meta) if meta.is_dir() => Ok(dir),
        Ok(_) => Err(HarnessError::NoRunFolder {
            path: dir,
            cause: std::io::Error::other("not a folder"),
        }),
        Err(cause) => Err(HarnessError::NoRunFolder { path: dir, cause }),
    }
}

/// Copies `from` to the run's own submission folder, `<state>/submissions/<run_id>/<entrypoint>`,
/// under a temporary name and then renamed, so the evaluator never reads a half-written file. `from` must be a regular file
/// itself: a link is not followed (the harness may read what the submitter may not: a link
/// to the state dir's key once put the key's first bytes into the signed records), and a
/// hard link to one of the state dir's secret or private keys is refused.
fn copy_submission(
    state_dir: &Path,
    from: &Path,
    entrypoint: &str,
    run_id: &RunId,
) -> Result<(), HarnessError> {
    let err = |cause| HarnessError::Submission {
        path: from.to_path_buf(),
        cause,
    };
    let mut source = open_submission(state_dir, from).map_err(err)?;
    let dir = run_submission_dir(state_dir, run_id)?;
    let partial = dir.join(format!(".{entrypoint}.{run_id}.partial"));
    let mut file = ale_records::private_files::create_private_file(&partial, 0o600)
        .map_err(|e| err(e.into()))?;
    let mut source = std::io::Read::take(&mut source, MAX_SUBMISSION_BYTES + 1);
    let written = std::io::copy(&mut source, &mut file).and_then(|copied| {
        if copied > MAX_SUBMISSION_BYTES {
            return Err(too_large());
        }
        file.sync_all()
    });
    drop(file);
    match written.and_then(|()| std::fs::rename(&partial, dir.join(entrypoint))) {
        Ok(()) => Ok(()),
        Err(cause) => {
            let _ = std::fs::remove_file(&partial);
            Err(err(cause))
        }
    }
}

/// The largest submission the harness copies: the largest policy file any loader reads
/// (`ale_policy::MAX_FILE_BYTES`); an evaluator refuses files over its own, smaller, cap
/// (`ale serve --max-submission-bytes`, 64 MiB by default) when it reads the copy.
const MAX_SUBMISSION_BYTES: u64 = ale_sandbox::limits::MAX_SUBMISSION_BYTES;

fn too_large() -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "it is larger than {MAX_SUBMISSION_BYTES} bytes, more than any policy loader reads"
        ),
    )
}

/// Opens the submission file `from` for reading, refusing a link, anything but a regular file,
/// a file over [`MAX_SUBMISSION_BYTES`], and a file that is one of the state dir's secret or
/// private keys (by any name).
fn open_submission(state_dir: &Path, from: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let refused =
        |why: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, why.to_string());
    let file = std::fs::OpenOptions::new()
        .read(true)
        // No link is followed, and opening a named pipe does not wait for a writer.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(from)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refused(
                "it is a symbolic link; give the policy file itself (links are not followed, so \
                 a submission cannot name a file its submitter could not read)",
            ),
            _ => e,
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(refused("it is not a regular file"));
    }
    if meta.len() > MAX_SUBMISSION_BYTES {
        return Err(too_large());
    }
    let is_key = [
        layout::SECRET_FILE,
        layout::EVALUATOR_KEY_FILE,
        layout::HARNESS_KEY_FILE,
    ]
    .iter()
    .filter_map(|name| std::fs::symlink_metadata(state_dir.join(name)).ok())
    .any(|key| key.dev() == meta.dev() && key.ino() == meta.ino());
    if is_key {
        return Err(refused(
            "it is one of the evaluator's secret or private keys (a hard link to it)",
        ));
    }
    Ok(file)
}

async fn run_batch_with(
    options: &RunOptions,
    submission: &Path,
    evaluator: &EvaluatorHandle,
    progress: &mut impl FnMut(Progress<'_>),
) -> Result<Report, HarnessError> {
    let mut prologue = prologue(options, evaluator).await?;
    let env = prologue
        .channel
        .create_official(&options.task_id, options.seed_set.as_deref())
        .await?;
    let session_id = env.session_id.clone();
    let outcome = run_batch_env(options, submission, &mut prologue, env, progress).await;
    end_session_on_error(&mut prologue.channel, &session_id, outcome).await
}

/// The part of [`run_batch_with`] after the official env exists: every error here ends its
/// session ([`end_session_on_error`]).
async fn run_batch_env(
    options: &RunOptions,
    submission: &Path,
    prologue: &mut Prologue,
    env: OfficialEnv,
    progress: &mut impl FnMut(Progress<'_>),
) -> Result<Report, HarnessError> {
    let started = prologue.started;
    let OfficialEnv {
        handle,
        session_id,
        run_id,
        task,
    } = env;
    let Some(contract) = task.submission_contract.clone().filter(|_| task.is_batch()) else {
        return Err(HarnessError::WrongMode {
            task: task.id,
            mode: task.mode,
        });
    };
    let summary = task_summary(&task);
    let target = task.metric.target;
    let from = submission.join(&contract.entrypoint);
    let records = open_records(
        &options.state_dir,
        &HarnessStarted {
            run_id: run_id.clone(),
            task: summary.clone(),
            agent_command: Vec::new(),
            agent_endpoint: None,
            // No agent runs: the harness itself hands the submission over.
            sandbox: SandboxRecord {
                mode: ale_sandbox::SandboxMode::NoAgent,
                network: ale_sandbox::Network::None,
                agent_uid: None,
                limits: None,
            },
            harness_version: env!("CARGO_PKG_VERSION").into(),
            name: options.labels.name.clone(),
            tags: options.labels.tags.clone(),
        },
        summary.episodes,
    )?;
    copy_submission(&options.state_dir, &from, &contract.entrypoint, &run_id)?;
    let batch_id = prologue.channel.submit_batch(&handle).await?;
    tracing::info!(%run_id, %batch_id, task = %summary.id, "batch evaluation submitted");

    let followed = Followed {
        run_id: &run_id,
        session_id: &session_id,
        summary: &summary,
        target,
        started,
    };
    // The run may wait in line for a place among the runs that play at once; its budget
    // starts when it leaves the line, and so does this backstop.
    let mut deadline = None;
    let mut ended_by_harness = false;
    let result = loop {
        tokio::time::sleep(options.poll_interval).await;
        if deadline.is_none()
            && prologue.channel.batch_status(&batch_id).await?.state != BatchRunState::Queued
        {
            deadline = Some(overrun_deadline(
                Instant::now(),
                task.budgets.time_budget_seconds,
            ));
        }
        let overdue = deadline.flatten().is_some_and(|d| Instant::now() >= d);
        ended_by_harness |= overdue;
        let record = read_progress(&mut prologue.channel, &followed, overdue, progress).await?;
        if let Some(record) = record.filter(|r| r.status.is_finished()) {
            break record;
        }
    };
    // Only for the report's words: the run's result is already read.
    let status = match prologue.channel.batch_status(&batch_id).await {
        Ok(status) => status.to_string(),
        Err(e) => format!("(its final status could not be read: {e})"),
    };
    let read = ResultRead {
        evaluator_head: result.trajectory_head.clone(),
        status: result.status,
        value: result.value,
        status_message: if ended_by_harness {
            format!(
                "{}: the batch run overran its time budget",
                result.status_message
            )
        } else {
            result.status_message.clone()
        },
        agent_exit: format!(
            "no agent: the harness submitted {}; the batch run {}",
            from.display(),
            status
        ),
        left_early: false,
    };
    conclude(options, prologue, records, &result, read)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clean_exit_is_described_as_the_report_expects() {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            describe_exit(Some(ExitStatus::from_raw(0)), true),
            crate::report::EXITED_CLEANLY
        );
        assert_ne!(
            describe_exit(Some(ExitStatus::from_raw(1 << 8)), true),
            crate::report::EXITED_CLEANLY
        );
    }

    /// The space a run's records still need is reserved without growing the file, and a disk
    /// without it refuses the run, saying so.
    #[test]
    fn records_reserve_their_space_or_refuse_the_run() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join(HARNESS_LOG_FILE);
        std::fs::write(&path, b"{}\n").unwrap();
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        reserve_space(&file, &path, LOG_EVENTS_RESERVE).unwrap();
        let meta = file.metadata().unwrap();
        assert_eq!(meta.len(), 3, "the reservation changed the file's size");
        assert!(
            std::os::unix::fs::MetadataExt::blocks(&meta) * 512 >= LOG_EVENTS_RESERVE,
            "nothing was reserved"
        );
        // A disk without the room refuses: a 1 MiB tmpfs of the test's own, not the machine's
        // disk (reserving past its free space would fill it for everyone meanwhile).
        if !nix::unistd::Uid::effective().is_root() {
            eprintln!("skipped the refusal: a tmpfs of the test's own needs root");
            return;
        }
        let small = tempfile::tempdir().unwrap();
        nix::mount::mount(
            Some("tmpfs"),
            small.path(),
            Some("tmpfs"),
            nix::mount::MsFlags::empty(),
            Some("size=1m"),
        )
        .unwrap();
        let path = small.path().join(HARNESS_LOG_FILE);
        let file = std::fs::File::create(&path).unwrap();
        let refused = reserve_space(&file, &path, 2 << 20);
        drop(file);
        nix::mount::umount2(small.path(), nix::mount::MntFlags::MNT_DETACH).unwrap();
        let refused = refused.unwrap_err();
        assert!(
            matches!(refused, HarnessError::NoRoom { .. })
                && refused.to_string().contains("refusing to start the run"),
            "{refused}"
        );
    }

    /// The reservation holds the largest report a run writes: widest numbers, a safety metric
    /// per rollout (the built-in tasks have at most one), long texts, and an agent command of
    /// 1 KiB (an agent command longer than the base leaves is written into unreserved space).
    #[test]
    fn reports_fit_in_their_reservation() {
        use ale_proto::eval::{EpisodeRecord, Outcome};
        let safety: std::collections::BTreeMap<String, f64> = [(
            "joint_limit_violations".to_string(),
            -1.2345678901234567e-300,
        )]
        .into();
        let worst = |episodes: u32| {
            let mut report = crate::report::tests::sample();
            report.task.title = "T".repeat(256);
            report.task.episodes = episodes;
            report.status_message = "m".repeat(1024);
            report.agent.command = vec!["a".repeat(100); 10];
            report.agent.exit = "e".repeat(256);
            report.safety = safety.clone();
            report.episodes = (0..episodes)
                .map(|index| EpisodeRecord {
                    episode_return: -1.2345678901234567e-300,
                    index,
                    metric: -1.2345678901234567e-300,
                    outcome: Outcome::BudgetExceeded,
                    safety: safety.clone(),
                    seed_commitment: "ff".repeat(32),
                    steps: u64::MAX,
                })
                .collect();
            report.seed_commitments = vec!["ff".repeat(32); episodes as usize];
            report
        };
        let size = |episodes: u32| {
            let tmp = tempfile::tempdir().unwrap();
            let mut file = std::fs::File::create(tmp.path().join("r")).unwrap();
            worst(episodes).write_into(&mut file).unwrap();
            file.metadata().unwrap().len()
        };
        let (base, per_rollout) = (size(0), (size(1000) - size(0)) / 1000);
        assert!(
            base <= REPORT_RESERVE_BASE / 2,
            "the fixed part takes {base} bytes"
        );
        assert!(
            per_rollout <= REPORT_RESERVE_PER_ROLLOUT,
            "a rollout takes {per_rollout} bytes"
        );
        for episodes in [0, 1, 20, 1000, 10_000] {
            assert!(
                size(episodes) <= report_reserve(episodes),
                "{episodes} rollouts"
            );
        }
    }

    /// Regression: a time budget whose end no `Instant` can hold panicked here.
    #[test]
    fn a_budget_beyond_the_clock_means_no_deadline_not_a_panic() {
        let now = Instant::now();
        assert_eq!(overrun_deadline(now, None), None);
        assert_eq!(
            overrun_deadline(now, Some(60)),
            Some(now + Duration::from_secs(60) + BUDGET_GRACE)
        );
        assert_eq!(overrun_deadline(now, Some(u64::MAX)), None);
        assert_eq!(overrun_deadline(now, Some(i64::MAX as u64)), None);
    }
}
