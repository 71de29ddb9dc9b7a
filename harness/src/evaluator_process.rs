//! The evaluator process a run talks to: attach to the one already serving the state dir, or
//! start one for the run (`ale serve` as a child process on a free loopback port) and stop it
//! after.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use ale_records::layout;
use ale_records::private_files::read_private_file;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use ale_records::private_files::PrivateFileError;

/// Why no evaluator could be attached to or started.
#[derive(Debug, thiserror::Error)]
pub enum EvaluatorError {
    #[error(
        "an evaluator serves {} but its agent endpoint file is unusable ({cause})",
        .state_dir.display()
    )]
    EndpointFile {
        state_dir: PathBuf,
        cause: PrivateFileError,
    },
    #[error(
        "{} does not name both agent channels (TCP and Unix socket); the evaluator serving {} \
         is older than this harness: restart it",
        .file.display(),
        .state_dir.display()
    )]
    OldEndpointFile { file: PathBuf, state_dir: PathBuf },
    #[error("cannot start {} serve: {cause}", .exe.display())]
    Start { exe: PathBuf, cause: std::io::Error },
    #[error(
        "the evaluator it started exited before it was ready ({status}); run `ale serve --state-dir {}` to see why",
        .state_dir.display()
    )]
    ExitedEarly { status: String, state_dir: PathBuf },
    #[error("the evaluator it started was not ready within {} s", .timeout.as_secs())]
    NotReady { timeout: Duration },
    #[error(
        "--tasks-dir {}: an evaluator already serves {}, with the tasks it was started with; \
         give --tasks-dir to that `ale serve` instead, or stop it so the harness starts one",
        .tasks_dir.display(),
        .state_dir.display()
    )]
    TasksDirWhileServed {
        tasks_dir: PathBuf,
        state_dir: PathBuf,
    },
}

/// How long a started evaluator may take to come up.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// What `ale serve` prints once it is listening, a line each: the contract between an evaluator
/// and a harness (or anyone) that starts one and waits for it.
pub mod ready {
    /// The first line.
    pub const HEADER: &str = "ale evaluator ready";
    /// Each of the following lines: two spaces, one of these labels, the value.
    pub const AGENT: &str = "agent channel:   ";
    pub const AGENT_SOCKET: &str = "agent socket:    ";
    pub const HARNESS: &str = "harness channel: ";
    pub const EVALUATOR_KEY: &str = "evaluator key:   ";
}

pub struct EvaluatorHandle {
    pub harness_socket: PathBuf,
    /// The agent channel's TCP URL (for unsandboxed agents).
    pub agent_endpoint: String,
    /// The agent channel's Unix socket (bind-mounted into a sandbox).
    pub agent_socket: PathBuf,
    /// Set when this harness started the evaluator; it stops it.
    child: Option<Child>,
}

impl EvaluatorHandle {
    /// Stops an evaluator this harness started (SIGTERM, so it flushes); no-op otherwise.
    pub async fn stop(mut self) {
        if let Some(child) = &mut self.child {
            // A pid that does not fit pid_t would wrap to a negative one, which names a process
            // group (or, at -1, every process); it cannot come from the OS, so it is skipped.
            if let Some(pid) = child.id().and_then(|pid| libc::pid_t::try_from(pid).ok()) {
                // SAFETY: signalling our own child process.
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            if tokio::time::timeout(Duration::from_secs(10), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}

pub fn socket_is_live(socket: &Path) -> bool {
    ale_proto::socket_path::connect(socket).is_ok()
}

/// The agent channel's endpoints as the evaluator serving `state_dir` recorded them.
fn recorded_endpoints(state_dir: &Path) -> Result<layout::AgentEndpoints, EvaluatorError> {
    let file = layout::agent_endpoint_file(state_dir);
    let text = read_private_file(&file)
        .map(|bytes| String::from_utf8_lossy(&bytes).to_string())
        .map_err(|cause| EvaluatorError::EndpointFile {
            state_dir: state_dir.to_path_buf(),
            cause,
        })?;
    layout::AgentEndpoints::parse(&text).ok_or_else(|| EvaluatorError::OldEndpointFile {
        file,
        state_dir: state_dir.to_path_buf(),
    })
}

/// Attaches to the evaluator serving `state_dir`, or starts `ale_exe serve` on it, loading
/// the task configs in `tasks_dir` if given (an evaluator already serving has its own tasks:
/// `tasks_dir` is then refused). `endpoint` overrides the agent channel URL the harness hands
/// to its agent.
pub async fn attach_or_start(
    state_dir: &Path,
    ale_exe: &Path,
    endpoint: Option<&str>,
    tasks_dir: Option<&Path>,
) -> Result<EvaluatorHandle, EvaluatorError> {
    let harness_socket = layout::harness_socket(state_dir);
    if socket_is_live(&harness_socket) {
        if let Some(dir) = tasks_dir {
            return Err(EvaluatorError::TasksDirWhileServed {
                tasks_dir: dir.to_path_buf(),
                state_dir: state_dir.to_path_buf(),
            });
        }
        let recorded = recorded_endpoints(state_dir)?;
        return Ok(EvaluatorHandle {
            harness_socket,
            agent_endpoint: endpoint.map_or(recorded.tcp, str::to_string),
            agent_socket: recorded.unix,
            child: None,
        });
    }
    let mut command = Command::new(ale_exe);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
        .arg(state_dir);
    if let Some(dir) = tasks_dir {
        command.arg("--tasks-dir").arg(dir);
    }
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    // SAFETY: prctl(2) is async-signal-safe. An evaluator started for one run stops (cleanly:
    // SIGTERM ends its sessions) when the harness dies, however it dies.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let start_err = |cause| EvaluatorError::Start {
        exe: ale_exe.to_path_buf(),
        cause,
    };
    let mut child = command.spawn().map_err(start_err)?;
    // Piped above, so it is there.
    let stdout = child.stdout.take().ok_or_else(|| {
        start_err(std::io::Error::other(
            "the evaluator's stdout is not captured",
        ))
    })?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.trim_start().starts_with(ready::AGENT) {
                return Some(());
            }
        }
        None
    };
    match tokio::time::timeout(START_TIMEOUT, ready).await {
        Ok(Some(_)) => {}
        Ok(None) => {
            let status = match child.wait().await {
                Ok(status) => status.to_string(),
                Err(e) => format!("its exit status is unknown: {e}"),
            };
            return Err(EvaluatorError::ExitedEarly {
                status,
                state_dir: state_dir.to_path_buf(),
            });
        }
        Err(_) => {
            let _ = child.kill().await;
            return Err(EvaluatorError::NotReady {
                timeout: START_TIMEOUT,
            });
        }
    };
    // Keep reading so the child never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let recorded = recorded_endpoints(state_dir)?;
    Ok(EvaluatorHandle {
        harness_socket,
        agent_endpoint: endpoint.map_or(recorded.tcp, str::to_string),
        agent_socket: recorded.unix,
        child: Some(child),
    })
}
