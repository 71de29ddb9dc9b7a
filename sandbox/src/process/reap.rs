//! PID 1's watch: it reaps every process of the sandbox until the agent ends, and between
//! reaps its watchdog sums what they use against the limits.

use std::path::Path;

use nix::errno::Errno;
use nix::sys::signal::SigSet;
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use super::AgentEnd;
use crate::SETUP_FAILED;
use crate::limits::{LimitHit, Watched};

/// As PID 1: reaps every process that ends until `agent` does; says how it ended. Between
/// reaps the watchdog sums what the sandbox's processes use (its `/proc` shows only them) and,
/// when a sum reaches its limit, kills every one of them and records the limit in `hit`.
pub(super) fn reap_until(
    agent: Pid,
    watched: &Watched,
    sigchld: &SigSet,
    hit: &mut Option<LimitHit>,
) -> AgentEnd {
    use nix::sys::wait::WaitPidFlag;
    let watching =
        watched.memory_bytes.is_some() || watched.tasks.is_some() || watched.cpu_seconds.is_some();
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let mut ledger = crate::limits::CpuLedger::default();
    let interval = std::time::Duration::from_millis(crate::limits::WATCH_INTERVAL_MS);
    let mut next_round = std::time::Instant::now();
    loop {
        // Everything that has ended so far.
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(status) if status.pid() == Some(agent) => {
                    if let Some(end) = AgentEnd::from_wait(status) {
                        return end;
                    }
                }
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => return AgentEnd::Exited(SETUP_FAILED),
            }
        }
        let now = std::time::Instant::now();
        if watching && hit.is_none() && now >= next_round {
            let usage = crate::limits::sandbox_usage(Path::new("/proc"), &mut ledger);
            if let Some(limit) = watched.exceeded(&usage, ticks) {
                *hit = Some(limit);
                // SAFETY: kill(-1) from PID 1 signals every other process of its namespace.
                unsafe {
                    libc::kill(-1, libc::SIGKILL);
                }
            }
            next_round = now + interval;
        }
        let wait = if watching && hit.is_none() {
            next_round.saturating_duration_since(std::time::Instant::now())
        } else {
            std::time::Duration::from_secs(3600)
        };
        let timeout = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        // SAFETY: waits for a blocked signal; the set and the timeout outlive the call.
        unsafe {
            libc::sigtimedwait(sigchld.as_ref(), std::ptr::null_mut(), &timeout);
        }
    }
}
