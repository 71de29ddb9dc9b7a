//! Official runs from the console: `ale harness run --progress json` as a child process. The
//! console reads only what that process prints; it never asks the evaluator for a result.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc::UnboundedSender;

use super::eval::Agent;
use super::message::{HarnessEvent, HarnessExit, Msg};

/// The console's working directory, if an agent may be given it: not inside the state dir and
/// not holding it.
fn workdir_for_commands(state_dir: &Path) -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?.canonicalize().ok()?;
    let state = state_dir
        .canonicalize()
        .unwrap_or_else(|_| state_dir.to_path_buf());
    (!cwd.starts_with(&state) && !state.starts_with(&cwd)).then_some(cwd)
}

/// The arguments of `ale harness run` for `task_id` on `state_dir` with `agent`.
pub fn harness_args(state_dir: &Path, task_id: &str, agent: &Agent) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "harness",
        "run",
        "--task",
        task_id,
        "--progress",
        "json",
        "--state-dir",
    ]
    .map(OsString::from)
    .to_vec();
    args.push(state_dir.into());
    match agent {
        Agent::Policy(kind) => {
            args.extend(["--policy", kind.name()].map(OsString::from));
        }
        Agent::Command(command) => {
            // A command typed in the console runs where the console was started, as it would
            // in a shell, unless that folder holds the state dir the agent must not see; or in
            // the folder typed for it.
            let workdir = command
                .workdir
                .clone()
                .or_else(|| workdir_for_commands(state_dir));
            if let Some(dir) = workdir {
                args.extend(["--workdir".into(), dir.into()]);
            }
            for dir in &command.expose {
                args.extend(["--expose".into(), dir.into()]);
            }
            args.extend(["--", "sh", "-c"].map(OsString::from));
            args.push(command.line.clone().into());
        }
        Agent::Submission(dir) => {
            args.extend(["--submission".into(), dir.into()]);
        }
    }
    args
}

/// Starts `ale harness run` for `task_id` on `state_dir`; its output and exit arrive as
/// messages. Returns the process id, for [`cancel`].
pub fn start(
    ale_exe: &Path,
    state_dir: &Path,
    task_id: &str,
    agent: &Agent,
    events: UnboundedSender<Msg>,
) -> std::io::Result<u32> {
    let mut command = Command::new(ale_exe);
    command.args(harness_args(state_dir, task_id, agent));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let pid = child.id().unwrap_or(0);
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    tokio::spawn(async move {
        // Everything the harness printed is delivered before the news that it exited.
        tokio::join!(
            forward(stdout, events.clone(), HarnessEvent::from_stdout_line),
            forward(stderr, events.clone(), |l| HarnessEvent::Output(
                l.to_string()
            )),
        );
        let (success, description) = match child.wait().await {
            Ok(s) => (s.success(), s.to_string()),
            Err(e) => (false, e.to_string()),
        };
        let _ = events.send(Msg::Harness(HarnessEvent::Exited(HarnessExit {
            success,
            description,
        })));
    });
    Ok(pid)
}

async fn forward(
    stream: Option<impl tokio::io::AsyncRead + Unpin>,
    events: UnboundedSender<Msg>,
    read: fn(&str) -> HarnessEvent,
) {
    let Some(stream) = stream else { return };
    let mut lines = BufReader::new(stream).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let _ = events.send(Msg::Harness(read(&line)));
    }
}

/// Asks the harness `pid` to stop (SIGTERM: it kills its agent's process group and exits).
pub fn cancel(pid: u32) {
    if pid > 0 {
        // SAFETY: signalling our own child process.
        unsafe {
            libc::kill(pid as i32, libc::SIGTERM);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::eval::AgentCommand;

    #[test]
    fn a_commands_folders_become_the_harness_flags() {
        let agent = Agent::Command(AgentCommand {
            line: "python3 agent.py".into(),
            workdir: Some("/srv/agent".into()),
            expose: vec!["/opt/py".into(), "/data".into()],
        });
        let args: Vec<String> = harness_args(Path::new("/state"), "cartpole-balance", &agent)
            .iter()
            .map(|a| a.to_string_lossy().to_string())
            .collect();
        let tail = [
            "--workdir",
            "/srv/agent",
            "--expose",
            "/opt/py",
            "--expose",
            "/data",
            "--",
            "sh",
            "-c",
            "python3 agent.py",
        ];
        assert_eq!(args[args.len() - tail.len()..], tail, "{args:?}");
    }
}
