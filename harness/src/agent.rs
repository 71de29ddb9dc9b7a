//! The agent process: launched in a sandbox (or, with `--sandbox none`, in its own process
//! group) with an allow-listed environment, its output kept in the run folder, and stopped
//! with everything it started when the run is over — however the run ends, since dropping an
//! `Agent` kills it.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use ale_proto::{EnvHandle, RunId};
use tokio::process::{Child, Command};

use crate::error::HarnessError;
use ale_sandbox::cgroup::{HostCgroupFs, RunCgroup};
use ale_sandbox::{
    AgentLimits, Enforcement, LaunchSpec, LimitHit, PinnedPath, SandboxMode, SandboxOptions,
    UserIds,
};

/// The most of an agent's output `agent.log` keeps; the rest is counted and dropped. The log
/// is the agent's own words, for diagnosis, not a record: its whole cap is reserved on the
/// state dir's disk for every run at once ([`AGENT_LOG_RESERVE`]), so it is kept small.
pub const AGENT_LOG_LIMIT: u64 = 4 << 20;
/// What `agent.log` reserves on the state dir's disk when its run starts: its cap and a page
/// for the harness's closing line about what was dropped. What is not used goes back when the
/// agent's output ends.
pub const AGENT_LOG_RESERVE: u64 = AGENT_LOG_LIMIT + 4096;
/// How long a sandbox gets to come down after it is told to.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

/// Where an agent's output goes besides `agent.log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AgentOutput {
    /// Also onto the harness's standard error, control characters neutralised.
    #[default]
    Echoed,
    /// Into `agent.log` alone: the harness's terminal shows a progress bar that the agent's
    /// lines would break.
    LogOnly,
}

/// What an agent's sandbox is built from ([`launch_spec`]).
pub struct AgentLaunch<'a> {
    pub command: &'a [String],
    pub handle: &'a EnvHandle,
    pub sandbox: &'a SandboxOptions,
    /// The evaluator's agent socket (bind-mounted into a sandbox).
    pub agent_socket: &'a Path,
    /// For a batch task: the evaluator's submission folder, the one place the agent may write
    /// (bind-mounted into a sandbox).
    pub submission_dir: Option<&'a Path>,
    /// Host folders a sandboxed agent must not see, nor be given a path into (the state dir);
    /// users' homes are hidden too, but a working directory or program may be bound from them.
    pub hidden: &'a [PathBuf],
    /// When the harness is root: the user the agent runs as (the run's own uid, or the
    /// operator's `--agent-user`).
    pub agent_user: Option<UserIds>,
    /// What a sandboxed agent may use.
    pub limits: AgentLimits,
}

/// Everything needed to start an agent for one official run: its sandbox, and what the run
/// gives it besides.
pub struct AgentStart<'a> {
    pub launch: AgentLaunch<'a>,
    /// The `ale` executable, which runs the sandbox launcher.
    pub ale_exe: &'a Path,
    /// The agent channel URL for an unsandboxed agent.
    pub unsandboxed_endpoint: &'a str,
    /// Where the agent's output goes (created new).
    pub log: &'a Path,
    /// With [`Enforcement::CgroupV2`]: the delegated cgroup the sandbox's own is made in.
    pub cgroup_parent: Option<&'a Path>,
    /// The run, which names the sandbox's cgroup.
    pub run_id: &'a RunId,
    /// Whether the agent's output is echoed on the harness's standard error.
    pub output: AgentOutput,
}

pub struct Agent {
    child: Child,
    sandboxed: bool,
    pgid: Option<i32>,
    /// The launcher's report of the limit that stopped the agent.
    report: Option<std::fs::File>,
    /// The sandbox's cgroup, with [`Enforcement::CgroupV2`].
    cgroup: Option<RunCgroup>,
    limits: AgentLimits,
    /// The limit that stopped the agent, once known.
    stopped_by: Option<LimitHit>,
    /// Fires when the log copier has drained the agent's output (it gives back the log's
    /// unused reservation then).
    log_done: Option<tokio::sync::oneshot::Receiver<()>>,
}

/// `agent.log` with its room reserved: what is unused goes back when this is dropped (by the
/// copier once the agent's output ends, or by a launch that failed before it started).
struct ReservedLog(Option<std::fs::File>);

impl Drop for ReservedLog {
    fn drop(&mut self) {
        if let Some(file) = self.0.take()
            && let Err(e) = ale_records::disk_space::release_unused_space(&file)
        {
            tracing::warn!(error = %e, "cannot give back the disk reserved for the agent's log");
        }
    }
}

fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        // SAFETY: kill(2) on our child's process group; no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

fn create_log(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(path)
}

/// A dropped-uid agent must be able to write its submission: the folder becomes its own (it
/// sits inside the evaluator's private state dir, which nobody else can traverse).
fn give_submission_dir(spec: &LaunchSpec) -> Result<(), HarnessError> {
    if let (Some(dir), Some(user)) = (&spec.submission_dir, spec.agent_user) {
        std::os::unix::fs::lchown(&dir.path, Some(user.uid), Some(user.gid)).map_err(|cause| {
            HarnessError::Records {
                path: dir.path.clone(),
                cause,
            }
        })?;
    }
    Ok(())
}

/// A sandboxed agent's command as the sandbox will start it: its folders and program checked
/// and pinned, and its path arguments checked against what the agent will see.
#[derive(Debug)]
pub struct CheckedCommand {
    /// The `--workdir`, canonical.
    pub workdir: Option<PinnedPath>,
    /// The `--expose` folders, canonical, each once.
    pub exposed: Vec<PinnedPath>,
    /// The program: a name for the agent's `PATH`, or the path it is started by.
    pub program: PathBuf,
    /// The file bound on its own at `program`, for a program the sandbox would not show.
    pub program_file: Option<PinnedPath>,
    /// The folders the sandbox masks (the homes).
    pub masked: Vec<PathBuf>,
    /// Path arguments the agent will not find as they are (warnings: the run goes on).
    pub hidden_arguments: Vec<ale_sandbox::HiddenArgument>,
}

/// Checks a sandboxed agent's `command` under `options` before anything is launched: the
/// working directory, the exposed folders and the program (errors), and the path arguments
/// (warnings, in [`CheckedCommand::hidden_arguments`]). `hidden` holds the folders the agent
/// must not see (the state dir). `ale harness run --dry-run` reports this and stops.
pub fn check_command(
    command: &[String],
    options: &SandboxOptions,
    hidden: &[PathBuf],
) -> Result<CheckedCommand, HarnessError> {
    let (program, _) = command.split_first().ok_or(HarnessError::NoAgent)?;
    let workdir = options
        .workdir
        .as_deref()
        .map(|dir| ale_sandbox::resolve_workdir(dir, hidden))
        .transpose()?;
    let mut exposed = Vec::with_capacity(options.expose.len());
    for dir in &options.expose {
        let workdir = workdir.as_ref().map(|w| w.path.as_path());
        let dir = ale_sandbox::resolve_exposed(dir, hidden, workdir)?;
        if !exposed.iter().any(|e: &PinnedPath| e.path == dir.path) {
            exposed.push(dir);
        }
    }
    let masked = ale_sandbox::default_hidden_folders();
    let bound: Vec<PathBuf> = exposed
        .iter()
        .chain(&workdir)
        .map(|dir| dir.path.clone())
        .collect();
    let view = ale_sandbox::SandboxView {
        masked: &masked,
        bound: &bound,
    };
    let (program, program_file) = match ale_sandbox::resolve_program(program)? {
        ale_sandbox::AgentProgram::OnPath(name) => (name, None),
        ale_sandbox::AgentProgram::File(file) => {
            let program_file = ale_sandbox::program_binding(&file, hidden, &view)?
                .map(|canonical| {
                    PinnedPath::of(&canonical).map_err(|e| ale_sandbox::SandboxError::Program {
                        path: file.invoked.clone(),
                        problem: e.to_string(),
                    })
                })
                .transpose()?;
            (file.invoked, program_file)
        }
    };
    let hidden_arguments = match std::env::current_dir() {
        Ok(cwd) => ale_sandbox::check_arguments(
            command,
            &cwd,
            workdir.as_ref().map(|w| w.path.as_path()),
            hidden,
            &view,
        ),
        // No working directory to resolve relative arguments against: nothing to say.
        Err(_) => Vec::new(),
    };
    Ok(CheckedCommand {
        workdir,
        exposed,
        program,
        program_file,
        masked,
        hidden_arguments,
    })
}

/// The launch spec of a sandboxed agent. Every folder and the program are checked here, before
/// anything is launched, and pinned: the launcher binds what was checked, or nothing.
pub fn launch_spec(launch: &AgentLaunch<'_>) -> Result<LaunchSpec, HarnessError> {
    let options = launch.sandbox;
    let agent_user = launch.agent_user;
    if ale_sandbox::running_as_root() && agent_user.is_none_or(|u| u.uid == 0) {
        return Err(ale_sandbox::SandboxError::Unavailable(
            "the harness runs as root and has no other user for the agent (an agent may not \
             run as root)"
                .into(),
        )
        .into());
    }
    let CheckedCommand {
        workdir,
        exposed,
        program,
        program_file,
        masked,
        ..
    } = check_command(launch.command, options, launch.hidden)?;
    let endpoint = format!("unix://{}", ale_sandbox::SANDBOX_AGENT_SOCKET);
    let agent_socket = std::fs::canonicalize(launch.agent_socket)
        .and_then(|socket| PinnedPath::of(&socket))
        .map_err(|cause| HarnessError::AgentSocket {
            socket: launch.agent_socket.to_path_buf(),
            cause,
        })?;
    let submission_dir = launch
        .submission_dir
        .map(|dir| {
            std::fs::canonicalize(dir)
                .and_then(|dir| PinnedPath::of(&dir))
                .map_err(|cause| HarnessError::Records {
                    path: dir.to_path_buf(),
                    cause,
                })
        })
        .transpose()?;
    // argv[0] names the program as it is started: Python finds its venv from it, and the
    // agent's working directory is not the harness's, against which a relative path was given.
    let mut args = launch.command.to_vec();
    if let (Some(first), Some(invoked)) = (args.first_mut(), program.to_str())
        && program.is_absolute()
    {
        *first = invoked.to_string();
    }
    let mut hidden = launch.hidden.to_vec();
    hidden.extend(masked);
    Ok(LaunchSpec {
        program,
        program_file,
        args,
        env: ale_sandbox::agent_environment(
            &endpoint,
            launch.handle.as_str(),
            submission_dir
                .as_ref()
                .map(|_| ale_sandbox::SANDBOX_SUBMISSION_DIR),
            Some(ale_sandbox::SANDBOX_HOME),
            &options.extra_env,
        ),
        workdir,
        exposed,
        agent_socket,
        submission_dir,
        hidden,
        parent_pid: std::process::id(),
        agent_user,
        network: options.network,
        tmp_bytes: ale_sandbox::DEFAULT_TMP_BYTES,
        limits: launch.limits,
        report_pipe: false,
        probe: false,
    })
}

/// `bytes` as text with every control character but newline and tab (C0, DEL and the 8-bit C1
/// controls alike) replaced by `?`, so that an agent cannot drive the operator's terminal
/// (clear it, retitle it, write the clipboard). Invalid UTF-8 becomes U+FFFD.
fn printable(bytes: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(bytes)
        .chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '?'
            } else {
                c
            }
        })
        .collect::<String>()
        .into_bytes()
}

/// What [`copy_log`] did with an agent's output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct LogCopied {
    /// Bytes written into the log.
    kept: u64,
    /// Bytes read and not written: past [`AGENT_LOG_LIMIT`], or after the log refused a write.
    dropped: u64,
    /// The error that stopped the writing, if one did.
    failed: Option<std::io::ErrorKind>,
}

/// Writes as much of `bytes` as `to` takes; the bytes written, and the error that stopped it.
fn write_some(to: &mut impl Write, bytes: &[u8]) -> (usize, Option<std::io::Error>) {
    let mut written = 0;
    while written < bytes.len() {
        match to.write(&bytes[written..]) {
            Ok(0) => return (written, Some(std::io::ErrorKind::WriteZero.into())),
            Ok(n) => written += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return (written, Some(e)),
        }
    }
    (written, None)
}

/// Copies the agent's output into its log as it is, and onto `terminal` (the harness's stderr)
/// with control characters neutralised, up to [`AGENT_LOG_LIMIT`] bytes. It reads until the
/// agent's output ends, whatever the log does: past the limit, or once a write into the log
/// fails (a full disk), the rest is read, counted and dropped, so the agent's writes never
/// fail because of its log; the log ends with a line saying what was dropped and why, if
/// that line can still be written (its room is reserved with the log's, [`AGENT_LOG_RESERVE`]).
fn copy_log(mut from: impl Read, to: &mut std::fs::File, mut terminal: impl Write) -> LogCopied {
    let mut buf = vec![0u8; 64 * 1024];
    let mut kept: u64 = 0;
    let mut dropped: u64 = 0;
    let mut failed: Option<std::io::Error> = None;
    // A UTF-8 sequence cut by the end of one read, carried into the next for the terminal copy.
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) => break,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
            Ok(n) => n,
        };
        let room = if failed.is_some() {
            0
        } else {
            usize::try_from(AGENT_LOG_LIMIT.saturating_sub(kept)).unwrap_or(usize::MAX)
        };
        let keep = n.min(room);
        let mut written = 0;
        if keep > 0 {
            let (done, error) = write_some(to, &buf[..keep]);
            written = done;
            failed = error;
            partial.extend_from_slice(&buf[..written]);
            let whole = match std::str::from_utf8(&partial) {
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                _ => partial.len(),
            };
            let _ = terminal.write_all(&printable(&partial[..whole]));
            partial.drain(..whole);
        }
        kept += written as u64;
        dropped += (n - written) as u64;
    }
    let _ = terminal.write_all(&printable(&partial));
    let why = match &failed {
        Some(e) => format!("the log could not be written ({e})"),
        None => format!("the log keeps at most {AGENT_LOG_LIMIT} bytes"),
    };
    if dropped > 0 {
        let _ = writeln!(
            to,
            "\n[ale harness: {dropped} bytes of agent output were dropped: {why}]"
        );
    }
    let _ = to.sync_all();
    LogCopied {
        kept,
        dropped,
        failed: failed.map(|e| e.kind()),
    }
}

impl Agent {
    /// Starts the agent. Its output goes to `start.log`.
    pub async fn launch(start: &AgentStart<'_>) -> Result<Agent, HarnessError> {
        let launch = &start.launch;
        let (program, args) = launch.command.split_first().ok_or(HarnessError::NoAgent)?;
        let launch_err = |cause| HarnessError::Launch {
            command: launch.command.join(" "),
            cause,
        };
        let log_err = |cause| HarnessError::Records {
            path: start.log.to_path_buf(),
            cause,
        };
        let log = create_log(start.log).map_err(log_err)?;
        // Its whole cap is set aside before the agent starts: another run filling the disk
        // cannot cut this agent's log short, and this agent's log cannot fill it for others.
        crate::reserve::reserve_space(&log, start.log, AGENT_LOG_RESERVE)?;
        // Given back if the launch fails before the copier takes the log over.
        let mut log = ReservedLog(Some(log));
        let (reader, writer) = std::io::pipe().map_err(launch_err)?;
        let sandboxed = launch.sandbox.mode == SandboxMode::Namespaces;
        let mut spec = sandboxed.then(|| launch_spec(launch)).transpose()?;
        if let Some(spec) = &spec {
            give_submission_dir(spec)?;
        }
        // The launcher's report of a limit: the write end becomes its descriptor 3.
        let (report, report_w) = if sandboxed {
            let (r, w) = std::io::pipe().map_err(launch_err)?;
            let r = std::os::fd::OwnedFd::from(r);
            // Read once the launcher is gone; never waited on.
            nix::fcntl::fcntl(
                &r,
                nix::fcntl::FcntlArg::F_SETFL(nix::fcntl::OFlag::O_NONBLOCK),
            )
            .map_err(|e| launch_err(e.into()))?;
            (Some(std::fs::File::from(r)), Some(w))
        } else {
            (None, None)
        };
        if let Some(spec) = &mut spec {
            spec.report_pipe = true;
        }
        // Removed (its tasks killed first) however the launch goes from here: dropping it does.
        let cgroup = match (sandboxed, launch.limits.enforcement, start.cgroup_parent) {
            (true, Enforcement::CgroupV2, Some(parent)) => Some(
                RunCgroup::create(
                    HostCgroupFs,
                    parent,
                    &format!("ale-{}", start.run_id),
                    &launch.limits,
                )
                .map_err(launch_err)?,
            ),
            _ => None,
        };
        let mut command = if sandboxed {
            let mut command = ale_sandbox::launcher_command(start.ale_exe);
            if let Some(w) = &report_w {
                use std::os::fd::AsRawFd;
                let fd = w.as_raw_fd();
                // SAFETY: only dup2(2), async-signal-safe, between fork and exec.
                unsafe {
                    command.pre_exec(move || {
                        // The pipe may be descriptor 3 already: then only its close-on-exec
                        // flag goes.
                        let done = if fd == ale_sandbox::LIMIT_REPORT_FD {
                            libc::fcntl(fd, libc::F_SETFD, 0)
                        } else {
                            libc::dup2(fd, ale_sandbox::LIMIT_REPORT_FD)
                        };
                        if done < 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
            }
            command
        } else {
            let mut command = Command::new(program);
            command
                .args(args)
                .env_clear()
                .envs(ale_sandbox::agent_environment(
                    start.unsandboxed_endpoint,
                    launch.handle.as_str(),
                    launch.submission_dir.and_then(Path::to_str),
                    std::env::var("HOME").ok().as_deref(),
                    &launch.sandbox.extra_env,
                ));
            if let Some(dir) = &launch.sandbox.workdir {
                command.current_dir(dir);
            }
            command
        };
        if !sandboxed {
            command.stdin(Stdio::null());
        }
        let spawned = writer.try_clone().and_then(|out| {
            command
                .stdout(out)
                .stderr(writer)
                .process_group(0)
                .kill_on_drop(true)
                .spawn()
        });
        let mut child = spawned.map_err(launch_err)?;
        // The command holds the pipe's write ends until it is dropped; then the log ends when
        // the agent (and everything that shares its output) is gone.
        drop(command);
        drop(report_w);
        if let (Some(cgroup), Some(pid)) = (&cgroup, child.id()) {
            // Before the launcher reads its spec, so everything it starts is in the cgroup.
            cgroup.add(pid).map_err(launch_err)?;
        }
        if let Some(spec) = &spec {
            ale_sandbox::send_spec(&mut child, spec)
                .await
                .map_err(launch_err)?;
        }
        let (done, log_done) = tokio::sync::oneshot::channel();
        let terminal: Box<dyn Write + Send> = match start.output {
            AgentOutput::Echoed => Box::new(std::io::stderr()),
            AgentOutput::LogOnly => Box::new(std::io::sink()),
        };
        std::thread::Builder::new()
            .name("agent-log".into())
            .spawn(move || {
                if let Some(file) = log.0.as_mut() {
                    copy_log(reader, file, terminal);
                }
                // The unused room goes back when the output ends (the guard's drop).
                drop(log);
                let _ = done.send(());
            })
            .map_err(launch_err)?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        Ok(Agent {
            child,
            sandboxed,
            pgid,
            report,
            cgroup,
            limits: launch.limits,
            stopped_by: None,
            log_done: Some(log_done),
        })
    }

    /// The limit that stopped the agent, as "agent stopped: memory limit 8 GiB", once the agent
    /// is gone; `None` if none did.
    pub fn stopped_by(&mut self) -> Option<String> {
        if self.stopped_by.is_none()
            && let Some(mut report) = self.report.take()
        {
            // The launcher has exited: its pipe holds its byte, or nothing.
            let mut byte = [0u8; 1];
            if let Ok(1) = report.read(&mut byte) {
                self.stopped_by = LimitHit::from_code(byte[0]);
            }
        }
        if self.stopped_by.is_none()
            && let Some(cgroup) = &self.cgroup
        {
            self.stopped_by = cgroup.limit_hit(&self.limits);
        }
        self.stopped_by.map(|hit| hit.describe(&self.limits))
    }

    /// Stops the sandbox once its cgroup refused a fork at `pids.max` or has used its CPU time
    /// (the kernel stops a sandbox out of memory itself). Called at each poll.
    pub fn enforce_limits(&mut self) {
        if self.stopped_by.is_some() {
            return;
        }
        if let Some(cgroup) = &self.cgroup
            && let Some(hit) = cgroup.limit_hit(&self.limits)
        {
            self.stopped_by = Some(hit);
            cgroup.kill();
        }
    }

    /// The exit status, if the agent has exited.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        let status = self.child.try_wait().ok().flatten();
        if status.is_some() && self.sandboxed {
            // The sandbox went with its launcher; its pid and group id may be reused now.
            self.pgid = None;
        }
        status
    }

    /// Stops the agent and everything it started, and waits until they are gone.
    pub async fn kill(&mut self) -> Option<ExitStatus> {
        if self.sandboxed {
            // The launcher kills the sandbox's PID 1 and exits once the namespace is empty.
            if let Some(pid) = self.pgid {
                // SAFETY: signalling our own child.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            if let Ok(status) = tokio::time::timeout(STOP_TIMEOUT, self.child.wait()).await {
                // The launcher has reaped the whole sandbox before it exited.
                self.pgid = None;
                self.finish_log().await;
                return status.ok();
            }
        }
        kill_group(self.pgid);
        let _ = self.child.start_kill();
        let status = self.child.wait().await.ok();
        self.finish_log().await;
        status
    }

    /// Waits up to `grace` for the agent to exit on its own, then stops it. Anything it left
    /// running is killed either way.
    pub async fn finish(&mut self, grace: Duration) -> Option<ExitStatus> {
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => {
                if self.sandboxed {
                    // The sandbox is gone with its launcher; its group id may be reused.
                    self.pgid = None;
                } else {
                    // An unsandboxed agent's children may still hold its group.
                    kill_group(self.pgid);
                }
                self.finish_log().await;
                status.ok()
            }
            Err(_) => self.kill().await,
        }
    }

    /// Waits for the log copier to drain what the agent wrote.
    async fn finish_log(&mut self) {
        if let Some(done) = self.log_done.take() {
            // An unsandboxed agent's escaped children may hold the pipe open: don't wait
            // forever (the copier thread is left to end with them).
            let _ = tokio::time::timeout(Duration::from_secs(2), done).await;
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        if self.sandboxed
            && let Some(pid) = self.pgid
        {
            // SAFETY: signalling our own child; its handler takes the sandbox down.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        kill_group(self.pgid);
        // The cgroup, dropped after this, kills what is left, waits for it and is removed.
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_controls_from_an_agent_are_neutralised() {
        assert_eq!(
            printable(b"ok\tgo\n\x1b]0;title\x07\x1b[2J\x7f"),
            b"ok\tgo\n?]0;title??[2J?".to_vec()
        );
        // 8-bit controls: C1 CSI as UTF-8, and a raw 0x9b byte.
        assert_eq!(printable("a\u{9b}31m".as_bytes()), b"a?31m".to_vec());
        assert_eq!(printable(b"b\x9b31m"), "b\u{fffd}31m".as_bytes().to_vec());
        assert_eq!(printable("é ✓".as_bytes()), "é ✓".as_bytes().to_vec());
    }

    /// Output that ends after `len` bytes, in lines, read a little at a time as a pipe gives it.
    fn output(len: usize) -> impl Read {
        let bytes: Vec<u8> = b"agent says hello\n"
            .iter()
            .copied()
            .cycle()
            .take(len)
            .collect();
        std::io::Cursor::new(bytes)
    }

    #[test]
    fn the_log_keeps_its_cap_and_says_how_much_was_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.log");
        let mut log = create_log(&path).unwrap();
        let total = AGENT_LOG_LIMIT as usize + 12_345;
        let mut terminal = Vec::new();
        let copied = copy_log(output(total), &mut log, &mut terminal);
        assert_eq!(
            copied,
            LogCopied {
                kept: AGENT_LOG_LIMIT,
                dropped: 12_345,
                failed: None
            }
        );
        let written = std::fs::read(&path).unwrap();
        let (kept, note) = written.split_at(AGENT_LOG_LIMIT as usize);
        assert!(kept.starts_with(b"agent says hello\n"));
        assert_eq!(
            String::from_utf8_lossy(note),
            format!(
                "\n[ale harness: 12345 bytes of agent output were dropped: the log keeps at most {AGENT_LOG_LIMIT} bytes]\n"
            )
        );
        assert_eq!(terminal.len(), AGENT_LOG_LIMIT as usize);
    }

    #[test]
    fn a_logs_reservation_goes_back_when_it_is_dropped() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agent.log");
        let file = create_log(&path).unwrap();
        crate::reserve::reserve_space(&file, &path, AGENT_LOG_RESERVE).unwrap();
        let allocated = || std::fs::metadata(&path).unwrap().blocks() * 512;
        if allocated() < AGENT_LOG_RESERVE {
            eprintln!("skipped: this filesystem reserved no space");
            return;
        }
        // As a launch that fails before the copier starts drops it.
        drop(ReservedLog(Some(file)));
        assert_eq!(allocated(), 0);
    }

    #[test]
    fn a_log_that_cannot_be_written_is_still_drained_to_the_end() {
        // /dev/full refuses every write with ENOSPC, as a full disk does: the copier reads on
        // to the end of the agent's output (the agent's writes never fail for its log), and
        // counts all of it as dropped.
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let total = 3 * 64 * 1024 + 7;
        let mut terminal = Vec::new();
        let copied = copy_log(output(total), &mut full, &mut terminal);
        assert_eq!(
            copied,
            LogCopied {
                kept: 0,
                dropped: total as u64,
                failed: Some(std::io::ErrorKind::StorageFull)
            }
        );
        assert!(terminal.is_empty());
    }

    #[test]
    fn an_agent_writing_into_a_pipe_whose_log_is_full_never_sees_a_broken_pipe() {
        // A real pipe, a writer thread well past the pipe's buffer: every write succeeds.
        let (reader, mut writer) = std::io::pipe().unwrap();
        let agent = std::thread::spawn(move || {
            let line = [b'x'; 4096];
            (0..256).try_for_each(|_| writer.write_all(&line))
        });
        let mut full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let copied = copy_log(reader, &mut full, std::io::sink());
        agent.join().unwrap().unwrap();
        assert_eq!(copied.dropped, 256 * 4096);
    }
}
