//! The open-file limit: raised to its hard limit at start, and shared so that the harness
//! channel always has file descriptors left however many agents connect.

use nix::sys::resource::{Resource, getrlimit, setrlimit};

/// File descriptors kept for what is neither a connection nor an official env's trajectory:
/// the listeners, the state dir's files, batch submissions being read, the runtime, stdio.
pub const BASELINE_FDS: u64 = 128;

/// The open-file limit in force after trying to raise the soft limit to the hard one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenFileLimit {
    pub soft: u64,
    pub hard: u64,
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit (many systems start processes at a soft
/// 1,024). If raising fails, that is logged and the limit in force is answered: the agent cap
/// is then fitted under it. Fails only if the limit cannot be read.
pub fn raise_open_file_limit() -> Result<OpenFileLimit, nix::Error> {
    let (soft, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    if soft >= hard {
        return Ok(OpenFileLimit { soft, hard });
    }
    match setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
        Ok(()) => Ok(OpenFileLimit { soft: hard, hard }),
        Err(e) => {
            tracing::warn!(soft, hard, error = %e, "cannot raise the open-file limit");
            Ok(OpenFileLimit { soft, hard })
        }
    }
}

/// The file descriptors set aside for everything but the shared agent channel's connections:
/// one per harness connection; per official env its open trajectory, its own agent socket and
/// that socket's `run_connections`; and [`BASELINE_FDS`].
pub fn reserved_fds(
    harness_connections: usize,
    official_envs: usize,
    run_connections: usize,
) -> u64 {
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    let per_run = count(run_connections).saturating_add(2);
    count(harness_connections)
        .saturating_add(count(official_envs).saturating_mul(per_run))
        .saturating_add(BASELINE_FDS)
}

/// How many of `wanted` agent connections fit under `limit` open files beside `reserved`.
pub fn agent_connections_that_fit(limit: u64, reserved: u64, wanted: usize) -> usize {
    let room = usize::try_from(limit.saturating_sub(reserved)).unwrap_or(usize::MAX);
    wanted.min(room)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_get_what_is_left_after_the_reserve() {
        let reserved = reserved_fds(64, 256, 16);
        assert_eq!(reserved, 64 + 256 * 18 + 128);
        assert_eq!(agent_connections_that_fit(8192, reserved, 256), 256);
        assert_eq!(
            agent_connections_that_fit(reserved + 152, reserved, 256),
            152
        );
        assert_eq!(agent_connections_that_fit(4000, reserved, 256), 0);
    }

    #[test]
    fn the_soft_limit_ends_at_the_hard_limit() {
        let limit = raise_open_file_limit().unwrap();
        assert_eq!(limit.soft, limit.hard);
        assert_eq!(
            getrlimit(Resource::RLIMIT_NOFILE).unwrap(),
            (limit.soft, limit.hard)
        );
    }
}
