//! The agent process: launched in its own process group with the env handle in its
//! environment, and killed with everything it started when the run is over — however the
//! run ends, since dropping an `Agent` kills its group.

use std::process::ExitStatus;

use ale_proto::{EnvHandle, agent_env};
use tokio::process::{Child, Command};

use crate::error::HarnessError;

pub struct Agent {
    child: Child,
    pgid: Option<i32>,
}

fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        // SAFETY: kill(2) on our child's process group; no memory is touched.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
}

impl Agent {
    /// Starts `command` (program and arguments) for the env `handle` on `endpoint`.
    pub fn launch(
        command: &[String],
        endpoint: &str,
        handle: &EnvHandle,
    ) -> Result<Agent, HarnessError> {
        let (program, args) = command.split_first().ok_or(HarnessError::NoAgent)?;
        let child = Command::new(program)
            .args(args)
            .env(agent_env::ENDPOINT, endpoint)
            .env(agent_env::ENV_HANDLE, handle.as_str())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|cause| HarnessError::Launch {
                command: command.join(" "),
                cause,
            })?;
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        Ok(Agent { child, pgid })
    }

    /// The exit status, if the agent has exited.
    pub fn try_exit(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Kills the agent's whole process group and reaps the agent.
    pub async fn kill(&mut self) -> Option<ExitStatus> {
        kill_group(self.pgid);
        let _ = self.child.start_kill();
        self.child.wait().await.ok()
    }

    /// Waits up to `grace` for the agent to exit on its own, then kills it. Anything it left
    /// running in its group is killed either way.
    pub async fn finish(&mut self, grace: std::time::Duration) -> Option<ExitStatus> {
        match tokio::time::timeout(grace, self.child.wait()).await {
            Ok(status) => {
                kill_group(self.pgid);
                status.ok()
            }
            Err(_) => self.kill().await,
        }
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        kill_group(self.pgid);
    }
}
