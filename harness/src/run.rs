//! An official run: create the official env over the harness channel, then either hand it to
//! an agent process (an interactive task) or copy a submission into the evaluator's submission
//! dir and submit it (a batch task); follow the session, read the authoritative result, verify
//! the trajectory, score, and leave `report.json` and the harness's own chained log in the run
//! folder. Both kinds end the same way.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::time::{Duration, Instant};

use ale_proto::keys::SigningKey;
use std::os::unix::fs::OpenOptionsExt;

use ale_proto::layout::{self, AGENT_LOG_FILE, REPORT_FILE, UNIX_SCHEME};
use ale_proto::private_files::{check_private_dir, create_private_file};
use ale_proto::records::{EvalResultRecord, EvalStatus};
use ale_proto::trajectory::{ChainWriter, EventKind, HARNESS_LOG_FILE, Level, TRAJECTORY_FILE};
use ale_proto::{EnvHandle, RunId, SessionId, TaskSpec};

use crate::agent::{Agent, AgentLaunch};
use crate::channel::{HarnessChannel, OfficialEnv};
use crate::error::{HarnessError, Unverified};
use crate::evaluator_process::{EvaluatorHandle, attach_or_start};
use crate::log::{HarnessStarted, ResultRead};
use crate::report::{Report, TaskSummary, Timings};
use crate::sandbox::{self, SandboxOptions, SandboxRecord};
use crate::scoring::{Faithfulness, score};
use crate::verify::{RecordKeys, verify_harness_log, verify_trajectory};
use ale_proto::keys::{KeyRole, load_or_create_signing_key, read_public_key};

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
/// the evaluator reported it): the budget plus [`BUDGET_GRACE`]. `None`: no budget (0), or one
/// so long that this clock cannot represent its end, which is then never reached.
fn overrun_deadline(started: Instant, budget_seconds: u64) -> Option<Instant> {
    if budget_seconds == 0 {
        return None;
    }
    started
        .checked_add(Duration::from_secs(budget_seconds))?
        .checked_add(BUDGET_GRACE)
}

fn describe_exit(status: Option<ExitStatus>, sandboxed: bool) -> String {
    use std::os::unix::process::ExitStatusExt;
    match status {
        None => "killed by the harness".into(),
        Some(s) => match (s.code(), s.signal()) {
            (Some(sandbox::SETUP_FAILED), _) if sandboxed => {
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
    let evaluator = attach_or_start(
        &options.state_dir,
        &options.ale_exe,
        options.endpoint.as_deref(),
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
    let started_unix_ms = ale_proto::now_unix_ms();
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

/// What `report.json` takes at most for a run of `episodes` rollouts.
fn report_reserve(episodes: u32) -> u64 {
    (32 << 10) + u64::from(episodes) * 1024
}

/// Reserves `len` bytes past the end of `file` without changing its size
/// (`FALLOC_FL_KEEP_SIZE`), so that another run filling the disk cannot make the rest of this
/// run's records unwritable. A filesystem that cannot reserve space at all is let through
/// with a warning; one without the space refuses the run.
fn reserve_space(file: &std::fs::File, path: &Path, len: u64) -> Result<(), HarnessError> {
    use nix::fcntl::{FallocateFlags, fallocate};
    let offset = file
        .metadata()
        .map_err(|cause| HarnessError::Records {
            path: path.to_path_buf(),
            cause,
        })?
        .len();
    let as_off = |n: u64| libc::off_t::try_from(n).unwrap_or(libc::off_t::MAX);
    match fallocate(
        file,
        FallocateFlags::FALLOC_FL_KEEP_SIZE,
        as_off(offset),
        as_off(len),
    ) {
        Ok(()) => Ok(()),
        Err(nix::errno::Errno::EOPNOTSUPP) => {
            tracing::warn!(file = %path.display(), "this filesystem cannot reserve space: a full disk may cut the run's records short");
            Ok(())
        }
        Err(e) => Err(HarnessError::NoRoom {
            path: path.to_path_buf(),
            bytes: len,
            cause: e.into(),
        }),
    }
}

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
        finished_unix_ms: ale_proto::now_unix_ms(),
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
    let started = prologue.started;
    // The state dir is what the agent must never see; the sandbox is tried before any official
    // env exists, so a machine without namespaces refuses cleanly.
    let hidden =
        vec![
            std::fs::canonicalize(&options.state_dir).map_err(|cause| HarnessError::Records {
                path: options.state_dir.clone(),
                cause,
            })?,
        ];
    let probe_handle = EnvHandle::from_wire(String::new());
    let sandboxed = options.sandbox.mode.is_sandboxed();
    // As root: the run's own uid (held until the run is over), or the operator's --agent-user.
    let agent_user = sandbox::agent_user_for_run(&options.sandbox)?;
    let agent_ids = agent_user.as_ref().map(|u| u.ids);
    let (enforcement, cgroup_parent) = if sandboxed {
        sandbox::choose_enforcement()
    } else {
        (sandbox::Enforcement::Rlimits, None)
    };
    let launch = |handle, log, agent_socket, submission_dir, limits, name| AgentLaunch {
        command: &options.agent_command,
        handle,
        sandbox: &options.sandbox,
        ale_exe: &options.ale_exe,
        agent_socket,
        unsandboxed_endpoint: "",
        submission_dir,
        hidden: &hidden,
        log,
        agent_user: agent_ids,
        limits,
        cgroup_parent: cgroup_parent.as_deref(),
        name,
    };
    if sandboxed {
        // Before any official env exists there is no run's socket yet: the shared one shows
        // that the sandbox can be built, with the agent's user and its program.
        let spec = crate::agent::launch_spec(&launch(
            &probe_handle,
            Path::new(""),
            &evaluator.agent_socket,
            None,
            sandbox::agent_limits(&options.sandbox, enforcement, 0),
            "",
        ))?;
        sandbox::probe(&options.ale_exe, &spec).await?;
    }
    let OfficialEnv {
        handle,
        session_id,
        run_id,
        task,
    } = prologue.channel.create_official(&options.task_id).await?;
    // The run's own channel to the evaluator and, for a batch task, its own submission folder
    // (the only host folder the agent may write), both made by the evaluator for this run.
    let agent_socket = layout::run_agent_socket(&options.state_dir, &run_id);
    let batch = task.is_batch();
    let submission_dir = batch
        .then(|| run_submission_dir(&options.state_dir, &run_id))
        .transpose()?;
    let limits = sandbox::agent_limits(
        &options.sandbox,
        enforcement,
        task.budgets.time_budget_seconds.unwrap_or(0),
    );
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
            network: sandbox::Network::Host,
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
                format!("{UNIX_SCHEME}{}", sandbox::SANDBOX_AGENT_SOCKET)
            } else {
                unsandboxed_endpoint.clone()
            }),
            sandbox: sandbox_record,
            harness_version: env!("CARGO_PKG_VERSION").into(),
        },
        summary.episodes,
    )?;
    tracing::info!(%run_id, task = %summary.id, "official env created; launching the agent");

    let deadline = overrun_deadline(started, summary.time_budget_seconds);
    let followed = Followed {
        run_id: &run_id,
        session_id: &session_id,
        summary: &summary,
        target,
        started,
    };
    let agent_log = records.run_dir.join(AGENT_LOG_FILE);
    let mut agent = Agent::launch(&AgentLaunch {
        unsandboxed_endpoint: &unsandboxed_endpoint,
        ..launch(
            &handle,
            &agent_log,
            &agent_socket,
            submission_dir.as_deref(),
            limits,
            run_id.as_str(),
        )
    })
    .await?;
    // For a batch task: whether the agent has submitted (its session has begun). The batch run
    // then goes on without it; the agent's part ends at `SubmitBatchEval`.
    let mut submitted = false;
    let mut harness_reason: Option<String> = None;
    let result = loop {
        tokio::time::sleep(options.poll_interval).await;
        agent.enforce_limits();
        let exited = agent.try_exit();
        let overdue = deadline.is_some_and(|d| Instant::now() >= d);
        if batch && !submitted && exited.is_some() && !overdue {
            // The agent may have submitted in its last moments: look before ending anything.
            if let Ok(Some(_)) = prologue.channel.eval_result(&session_id, false).await {
                submitted = true;
            }
        }
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
                harness_reason = Some(match exited {
                    _ if batch && submitted => {
                        "the batch run overran the session's time budget".into()
                    }
                    Some(status) => match agent.stopped_by() {
                        Some(limit) => format!("{limit}, before finishing its session"),
                        None => format!(
                            "the agent {} before finishing its session",
                            describe_exit(Some(status), options.sandbox.mode.is_sandboxed())
                        ),
                    },
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
    drop(agent_user);
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
    conclude(options, &prologue, records, &result, read)
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
    let mut file = ale_proto::private_files::create_private_file(&partial, 0o600)
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
const MAX_SUBMISSION_BYTES: u64 = sandbox::limits::MAX_SUBMISSION_BYTES;

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
    let started = prologue.started;
    let OfficialEnv {
        handle,
        session_id,
        run_id,
        task,
    } = prologue.channel.create_official(&options.task_id).await?;
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
                mode: sandbox::SandboxMode::None,
                network: sandbox::Network::None,
                agent_uid: None,
                limits: None,
            },
            harness_version: env!("CARGO_PKG_VERSION").into(),
        },
        summary.episodes,
    )?;
    copy_submission(&options.state_dir, &from, &contract.entrypoint, &run_id)?;
    let batch_id = prologue.channel.submit_batch(&handle).await?;
    tracing::info!(%run_id, %batch_id, task = %summary.id, "batch evaluation submitted");

    let deadline = overrun_deadline(started, summary.time_budget_seconds);
    let followed = Followed {
        run_id: &run_id,
        session_id: &session_id,
        summary: &summary,
        target,
        started,
    };
    let mut ended_by_harness = false;
    let result = loop {
        tokio::time::sleep(options.poll_interval).await;
        let overdue = deadline.is_some_and(|d| Instant::now() >= d);
        ended_by_harness |= overdue;
        let record = read_progress(&mut prologue.channel, &followed, overdue, progress).await?;
        if let Some(record) = record.filter(|r| r.status.is_finished()) {
            break record;
        }
    };
    let status = prologue.channel.batch_status(&batch_id).await?;
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
    conclude(options, &prologue, records, &result, read)
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let free = nix::sys::statvfs::statvfs(tmp.path()).unwrap();
        let more = (free.blocks_available() as u64)
            .saturating_mul(free.fragment_size() as u64)
            .saturating_mul(2)
            .max(1 << 30);
        let refused = reserve_space(&file, &path, more).unwrap_err();
        assert!(
            matches!(refused, HarnessError::NoRoom { .. })
                && refused.to_string().contains("refusing to start the run"),
            "{refused}"
        );
    }

    /// Regression: a time budget whose end no `Instant` can hold panicked here.
    #[test]
    fn a_budget_beyond_the_clock_means_no_deadline_not_a_panic() {
        let now = Instant::now();
        assert_eq!(overrun_deadline(now, 0), None);
        assert_eq!(
            overrun_deadline(now, 60),
            Some(now + Duration::from_secs(60) + BUDGET_GRACE)
        );
        assert_eq!(overrun_deadline(now, u64::MAX), None);
        assert_eq!(overrun_deadline(now, i64::MAX as u64), None);
    }
}
