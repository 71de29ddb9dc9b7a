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

/// Shared agent-channel connections that must fit beside the reserve for the runs' share of
/// connections to be kept whole; below it each run's share is lowered instead.
pub const MIN_SHARED_AGENT_CONNECTIONS: usize = 16;

/// The most connections each run's channel may hold, `wanted` or fewer, such that the reserve
/// for every official env's share (and the harness's) leaves room under `limit` for
/// [`MIN_SHARED_AGENT_CONNECTIONS`]; `None` if not even one connection a run fits.
pub fn run_connections_that_fit(
    limit: u64,
    harness_connections: usize,
    official_envs: usize,
    wanted: usize,
) -> Option<usize> {
    let fits = |run_connections| {
        reserved_fds(harness_connections, official_envs, run_connections)
            .saturating_add(MIN_SHARED_AGENT_CONNECTIONS as u64)
            <= limit
    };
    if fits(wanted) {
        return Some(wanted);
    }
    // The largest share that fits: `fits` only turns false as the share grows.
    let (mut low, mut high) = (0usize, wanted);
    while low < high {
        let mid = low + (high - low).div_ceil(2);
        if fits(mid) { low = mid } else { high = mid - 1 }
    }
    (low >= 1).then_some(low)
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
    fn a_low_limit_lowers_each_runs_connections_before_it_refuses() {
        // Roomy: the share asked for.
        assert_eq!(run_connections_that_fit(20_000, 64, 256, 16), Some(16));
        // A hard limit of 4,096: 256 runs of 16 do not fit, 256 runs of 13 do.
        let fitted = run_connections_that_fit(4096, 64, 256, 16).unwrap();
        assert_eq!(fitted, 13);
        assert!(reserved_fds(64, 256, fitted) + 16 <= 4096);
        assert!(reserved_fds(64, 256, fitted + 1) + 16 > 4096);
        // Not even one connection a run: refused.
        assert_eq!(run_connections_that_fit(800, 64, 256, 16), None);
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
