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
use crate::sandbox::cgroup::{HostCgroupFs, RunCgroup};
use crate::sandbox::{
    self, AgentLimits, Enforcement, LaunchSpec, LimitHit, PinnedPath, SandboxMode, SandboxOptions,
    UserIds,
};

/// The most of an agent's output `agent.log` keeps; the rest is counted and dropped.
pub const AGENT_LOG_LIMIT: u64 = 16 << 20;
/// How long a sandbox gets to come down after it is told to.
const STOP_TIMEOUT: Duration = Duration::from_secs(10);

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
    /// Fires when the log copier has drained the agent's output (or given up).
    log_done: Option<tokio::sync::oneshot::Receiver<()>>,
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

/// The launch spec of a sandboxed agent. Every folder and the program are checked here, before
/// anything is launched, and pinned: the launcher binds what was checked, or nothing.
pub fn launch_spec(launch: &AgentLaunch<'_>) -> Result<LaunchSpec, HarnessError> {
    let (program, _) = launch.command.split_first().ok_or(HarnessError::NoAgent)?;
    let options = launch.sandbox;
    let agent_user = launch.agent_user;
    if sandbox::running_as_root() && agent_user.is_none_or(|u| u.uid == 0) {
        return Err(sandbox::SandboxError::Unavailable(
            "the harness runs as root and has no other user for the agent (an agent may not \
             run as root)"
                .into(),
        )
        .into());
    }
    let workdir = options
        .workdir
        .as_deref()
        .map(|dir| sandbox::resolve_workdir(dir, launch.hidden))
        .transpose()?;
    let mut exposed = Vec::with_capacity(options.expose.len());
    for dir in &options.expose {
        let workdir = workdir.as_ref().map(|w| w.path.as_path());
        let dir = sandbox::resolve_exposed(dir, launch.hidden, workdir)?;
        if !exposed.iter().any(|e: &PinnedPath| e.path == dir.path) {
            exposed.push(dir);
        }
    }
    let masked = sandbox::default_hidden_folders();
    let (program, program_file) = match sandbox::resolve_program(program)? {
        sandbox::AgentProgram::OnPath(name) => (name, None),
        sandbox::AgentProgram::File(file) => {
            let bound: Vec<PathBuf> = exposed
                .iter()
                .chain(&workdir)
                .map(|dir| dir.path.clone())
                .collect();
            let view = sandbox::SandboxView {
                masked: &masked,
                bound: &bound,
            };
            let program_file = sandbox::program_binding(&file, launch.hidden, &view)?
                .map(|canonical| {
                    PinnedPath::of(&canonical).map_err(|e| sandbox::SandboxError::Program {
                        path: file.invoked.clone(),
                        problem: e.to_string(),
                    })
                })
                .transpose()?;
            (file.invoked, program_file)
        }
    };
    let endpoint = format!("unix://{}", sandbox::SANDBOX_AGENT_SOCKET);
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
        env: sandbox::agent_environment(
            &endpoint,
            launch.handle.as_str(),
            submission_dir
                .as_ref()
                .map(|_| sandbox::SANDBOX_SUBMISSION_DIR),
            Some(sandbox::SANDBOX_HOME),
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
        tmp_bytes: sandbox::DEFAULT_TMP_BYTES,
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

/// Copies the agent's output into its log as it is, and onto the harness's stderr with
/// control characters neutralised, up to [`AGENT_LOG_LIMIT`] bytes.
fn copy_log(mut from: std::io::PipeReader, mut to: std::fs::File) {
    let mut buf = vec![0u8; 64 * 1024];
    let mut kept: u64 = 0;
    let mut dropped: u64 = 0;
    // A UTF-8 sequence cut by the end of one read, carried into the next for the terminal copy.
    let mut partial: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let room = AGENT_LOG_LIMIT.saturating_sub(kept) as usize;
        let keep = n.min(room);
        if keep > 0 {
            if to.write_all(&buf[..keep]).is_err() {
                break;
            }
            partial.extend_from_slice(&buf[..keep]);
            let whole = match std::str::from_utf8(&partial) {
                Err(e) if e.error_len().is_none() => e.valid_up_to(),
                _ => partial.len(),
            };
            let _ = std::io::stderr().write_all(&printable(&partial[..whole]));
            partial.drain(..whole);
        }
        kept += keep as u64;
        dropped += (n - keep) as u64;
    }
    let _ = std::io::stderr().write_all(&printable(&partial));
    if dropped > 0 {
        let _ = writeln!(
            to,
            "\n[ale harness: {dropped} more bytes of agent output were dropped; the log keeps {AGENT_LOG_LIMIT}]"
        );
    }
    let _ = to.sync_all();
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
        let log = create_log(start.log).map_err(|cause| HarnessError::Records {
            path: start.log.to_path_buf(),
            cause,
        })?;
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
            let mut command = sandbox::launcher_command(start.ale_exe);
            if let Some(w) = &report_w {
                use std::os::fd::AsRawFd;
                let fd = w.as_raw_fd();
                // SAFETY: only dup2(2), async-signal-safe, between fork and exec.
                unsafe {
                    command.pre_exec(move || {
                        // The pipe may be descriptor 3 already: then only its close-on-exec
                        // flag goes.
                        let done = if fd == sandbox::LIMIT_REPORT_FD {
                            libc::fcntl(fd, libc::F_SETFD, 0)
                        } else {
                            libc::dup2(fd, sandbox::LIMIT_REPORT_FD)
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
                .envs(sandbox::agent_environment(
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
            sandbox::send_spec(&mut child, spec)
                .await
                .map_err(launch_err)?;
        }
        let (done, log_done) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("agent-log".into())
            .spawn(move || {
                copy_log(reader, log);
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
}
