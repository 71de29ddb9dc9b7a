//! What an agent may use: memory, tasks (processes and threads), CPU time, file sizes and open
//! files. The data lives here with the pure functions over it; the launcher applies the
//! rlimits and runs the watchdog (`watchdog` below) in the sandbox's PID 1, and the harness
//! puts the sandbox in a cgroup of its own where it can ([`super::cgroup`]).
//!
//! Two ways of enforcing the totals, chosen per machine ([`Enforcement`]):
//! * **cgroup v2**: the sandbox is in a child cgroup with `memory.max`, `pids.max` and
//!   `memory.oom.group = 1`; the kernel bounds the whole sandbox and the harness reads
//!   `memory.events` / `pids.events` to name the limit.
//! * **rlimits**: `RLIMIT_AS` bounds each process's address space, `RLIMIT_NPROC` the tasks of
//!   the agent's uid in its own user namespace (the sandbox's alone), and the watchdog in PID 1
//!   sums the resident memory and the tasks of every sandbox process every
//!   [`WATCH_INTERVAL_MS`] and kills the sandbox when a sum reaches its limit.
//!
//! Either way the watchdog sums CPU time, and `RLIMIT_FSIZE`, `RLIMIT_NOFILE` and
//! `RLIMIT_CORE = 0` apply to every agent process.

use serde::{Deserialize, Serialize};

/// The agent's memory unless `--agent-memory` says otherwise.
pub const DEFAULT_MEMORY_BYTES: u64 = 8 << 30;
/// The agent's tasks (processes and threads, its PID 1 included) unless `--agent-pids` says
/// otherwise.
pub const DEFAULT_TASKS: u64 = 512;
/// The CPU time of an agent whose task has no time budget, unless `--agent-cpu-seconds` says
/// otherwise; a task with a budget gives its agent that many CPU seconds.
pub const DEFAULT_CPU_SECONDS_WITHOUT_BUDGET: u64 = 3600;
/// The open files of each agent process (`RLIMIT_NOFILE`).
pub const OPEN_FILES: u64 = 4096;
/// The largest file an agent process may write (`RLIMIT_FSIZE`) when the harness is root and
/// every other writable place it has is a sized tmpfs (or the operator's `--workdir`).
pub const FILE_BYTES_AS_ROOT: u64 = 4 << 30;
/// Room above the submission cap for the largest file an unprivileged harness's agent may
/// write: its submission folder is then a plain folder on the state dir's disk.
pub const FILE_BYTES_SLACK: u64 = 1 << 20;
/// The largest submission file the harness copies, and the largest policy file any loader
/// reads (`ale_policy::MAX_FILE_BYTES`).
pub const MAX_SUBMISSION_BYTES: u64 = 256 << 20;
/// How often the watchdog sums the sandbox's use, in milliseconds.
pub const WATCH_INTERVAL_MS: u64 = 50;

/// The limits of one agent, decided by the harness and carried in the launch spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentLimits {
    /// Memory of the whole sandbox, in bytes.
    pub memory_bytes: u64,
    /// Tasks (processes and threads) of the whole sandbox.
    pub tasks: u64,
    /// CPU time of the whole sandbox, in seconds; `None`: unbounded (the session's time budget
    /// still ends the run).
    pub cpu_seconds: Option<u64>,
    /// The largest file one process may write.
    pub file_bytes: u64,
    /// Open files per process.
    pub open_files: u64,
    pub enforcement: Enforcement,
}

/// How the totals are enforced on this machine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Enforcement {
    /// A cgroup v2 of the sandbox's own bounds memory and tasks.
    CgroupV2,
    /// Per-process rlimits and PID 1's watchdog.
    Rlimits,
}

/// Which limit stopped an agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitHit {
    Memory,
    Processes,
    CpuTime,
    FileSize,
}

impl LimitHit {
    /// One byte on the launcher's report pipe.
    pub fn code(self) -> u8 {
        match self {
            LimitHit::Memory => b'm',
            LimitHit::Processes => b'p',
            LimitHit::CpuTime => b'c',
            LimitHit::FileSize => b'f',
        }
    }

    pub fn from_code(code: u8) -> Option<LimitHit> {
        Some(match code {
            b'm' => LimitHit::Memory,
            b'p' => LimitHit::Processes,
            b'c' => LimitHit::CpuTime,
            b'f' => LimitHit::FileSize,
            _ => return None,
        })
    }

    /// How a run's records name the stop: "agent stopped: memory limit 8 GiB".
    pub fn describe(self, limits: &AgentLimits) -> String {
        let what = match self {
            LimitHit::Memory => format!("memory limit {}", format_bytes(limits.memory_bytes)),
            LimitHit::Processes => format!("process limit {}", limits.tasks),
            LimitHit::CpuTime => match limits.cpu_seconds {
                Some(s) => format!("CPU time limit {s} s"),
                None => "CPU time limit".into(),
            },
            LimitHit::FileSize => format!("file size limit {}", format_bytes(limits.file_bytes)),
        };
        format!("agent stopped: {what}")
    }
}

/// `bytes` the way the flags take it: "8 GiB", "512 MiB", "1000 bytes".
pub fn format_bytes(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    if bytes >= 1 << 30 {
        return format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30));
    }
    if bytes >= 1 << 20 {
        return format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20));
    }
    format!("{bytes} bytes")
}

/// Parses a size flag: a number of bytes with an optional binary suffix, `K`, `M`, `G` or `T`
/// (`KiB`… and `KB`… mean the same), e.g. `8G`, `512M`, `1073741824`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let digits_end = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, suffix) = trimmed.split_at(digits_end);
    let bad = || {
        format!(
            "{text:?}: expected a size such as 8G, 512M or 1073741824 (bytes; K, M, G, T are powers of 1024)"
        )
    };
    let number: u64 = digits.parse().map_err(|_| bad())?;
    let shift = match suffix.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 0,
        "K" | "KB" | "KIB" => 10,
        "M" | "MB" | "MIB" => 20,
        "G" | "GB" | "GIB" => 30,
        "T" | "TB" | "TIB" => 40,
        _ => return Err(bad()),
    };
    let bytes = number.checked_mul(1 << shift).ok_or_else(bad)?;
    if bytes < 16 << 20 {
        return Err(format!("{text:?}: at least 16M, or no agent could start"));
    }
    Ok(bytes)
}

/// Parses `--agent-pids`: at least 8 (the agent, its PID 1 and a few threads).
pub fn parse_tasks(text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if (8..=4_194_304).contains(&n) => Ok(n),
        _ => Err(format!(
            "{text:?}: expected a number of tasks from 8 to 4194304"
        )),
    }
}

/// Parses `--agent-cpu-seconds`: a number of seconds (at least 1), or `none`.
pub fn parse_cpu_seconds(text: &str) -> Result<Option<u64>, String> {
    let text = text.trim();
    if text == "none" {
        return Ok(None);
    }
    match text.parse::<u64>() {
        Ok(n) if n >= 1 => Ok(Some(n)),
        _ => Err(format!(
            "{text:?}: expected a number of CPU seconds (at least 1), or `none`"
        )),
    }
}

/// The CPU time an agent gets unless told otherwise: its task's time budget in CPU seconds
/// (one core for the whole session), or [`DEFAULT_CPU_SECONDS_WITHOUT_BUDGET`].
pub fn default_cpu_seconds(time_budget_seconds: u64) -> u64 {
    if time_budget_seconds == 0 {
        DEFAULT_CPU_SECONDS_WITHOUT_BUDGET
    } else {
        time_budget_seconds
    }
}

/// What the sandbox's processes use at one moment, summed by the watchdog.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Private (anonymous) resident memory, in bytes.
    pub memory_bytes: u64,
    /// Tasks: processes and their threads.
    pub tasks: u64,
    /// CPU time of the living processes and of the ended ones their parents reaped, in clock
    /// ticks.
    pub cpu_ticks: u64,
}

/// What the watchdog checks in each round; what the cgroup bounds is not checked twice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Watched {
    pub memory_bytes: Option<u64>,
    pub tasks: Option<u64>,
    pub cpu_seconds: Option<u64>,
}

impl Watched {
    pub fn of(limits: &AgentLimits) -> Watched {
        let rlimits = limits.enforcement == Enforcement::Rlimits;
        Watched {
            memory_bytes: rlimits.then_some(limits.memory_bytes),
            tasks: rlimits.then_some(limits.tasks),
            cpu_seconds: limits.cpu_seconds,
        }
    }

    /// The limit `usage` has reached, if any; memory first (it is the one that hurts the
    /// machine), then tasks, then CPU time.
    pub fn exceeded(&self, usage: &Usage, ticks_per_second: u64) -> Option<LimitHit> {
        if self
            .memory_bytes
            .is_some_and(|max| usage.memory_bytes >= max)
        {
            return Some(LimitHit::Memory);
        }
        if self.tasks.is_some_and(|max| usage.tasks >= max) {
            return Some(LimitHit::Processes);
        }
        if self
            .cpu_seconds
            .is_some_and(|max| usage.cpu_ticks >= max.saturating_mul(ticks_per_second.max(1)))
        {
            return Some(LimitHit::CpuTime);
        }
        None
    }
}

/// One process's share, from its `/proc/<pid>/stat` and `/proc/<pid>/statm`. `own_time`: count
/// the process's own CPU time (PID 1's is the watchdog's, not the agent's; what it reaped is).
pub fn process_usage(stat: &str, statm: &str, page_size: u64, own_time: bool) -> Option<Usage> {
    // The command name, in parentheses, may hold anything: the fields start after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_ascii_whitespace().collect();
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14) …
    // num_threads(17).
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let (utime, stime, cutime, cstime) = (field(11)?, field(12)?, field(13)?, field(14)?);
    let threads = field(17)?;
    let mut pages = statm
        .split_ascii_whitespace()
        .map(|f| f.parse::<u64>().ok());
    let (_size, resident, shared) = (pages.next()??, pages.next()??, pages.next()??);
    let own = if own_time { utime + stime } else { 0 };
    Some(Usage {
        memory_bytes: resident.saturating_sub(shared).saturating_mul(page_size),
        tasks: threads,
        cpu_ticks: own + cutime + cstime,
    })
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, other: Usage) {
        self.memory_bytes = self.memory_bytes.saturating_add(other.memory_bytes);
        self.tasks = self.tasks.saturating_add(other.tasks);
        self.cpu_ticks = self.cpu_ticks.saturating_add(other.cpu_ticks);
    }
}

/// Sums every process in `proc_dir` (the sandbox's own `/proc`, which shows only its
/// processes); `init` is PID 1, whose own CPU time is not the agent's.
pub fn sandbox_usage(proc_dir: &std::path::Path, page_size: u64) -> Usage {
    let mut total = Usage::default();
    let Ok(entries) = std::fs::read_dir(proc_dir) else {
        return total;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let dir = entry.path();
        // A process that ended between the listing and the read is simply not counted.
        let (Ok(stat), Ok(statm)) = (
            std::fs::read_to_string(dir.join("stat")),
            std::fs::read_to_string(dir.join("statm")),
        ) else {
            continue;
        };
        if let Some(usage) = process_usage(&stat, &statm, page_size, pid != 1) {
            total += usage;
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> AgentLimits {
        AgentLimits {
            memory_bytes: DEFAULT_MEMORY_BYTES,
            tasks: DEFAULT_TASKS,
            cpu_seconds: Some(600),
            file_bytes: FILE_BYTES_AS_ROOT,
            open_files: OPEN_FILES,
            enforcement: Enforcement::Rlimits,
        }
    }

    #[test]
    fn sizes_parse_with_binary_suffixes_and_bad_ones_are_named() {
        assert_eq!(parse_bytes("8G"), Ok(8 << 30));
        assert_eq!(parse_bytes("512M"), Ok(512 << 20));
        assert_eq!(parse_bytes("2GiB"), Ok(2 << 30));
        assert_eq!(parse_bytes("1073741824"), Ok(1 << 30));
        for bad in ["", "G", "8X", "-1G", "1k", "99999999999999T"] {
            let err = parse_bytes(bad).unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
        assert_eq!(parse_tasks("512"), Ok(512));
        assert!(parse_tasks("0").is_err() && parse_tasks("many").is_err());
        assert_eq!(parse_cpu_seconds("none"), Ok(None));
        assert_eq!(parse_cpu_seconds("600"), Ok(Some(600)));
        assert!(parse_cpu_seconds("0").is_err() && parse_cpu_seconds("1.5").is_err());
        assert_eq!(default_cpu_seconds(600), 600);
        assert_eq!(default_cpu_seconds(0), DEFAULT_CPU_SECONDS_WITHOUT_BUDGET);
    }

    #[test]
    fn a_stop_names_its_limit() {
        let l = limits();
        assert_eq!(
            LimitHit::Memory.describe(&l),
            "agent stopped: memory limit 8 GiB"
        );
        assert_eq!(
            LimitHit::Processes.describe(&l),
            "agent stopped: process limit 512"
        );
        assert_eq!(
            LimitHit::CpuTime.describe(&l),
            "agent stopped: CPU time limit 600 s"
        );
        for hit in [
            LimitHit::Memory,
            LimitHit::Processes,
            LimitHit::CpuTime,
            LimitHit::FileSize,
        ] {
            assert_eq!(LimitHit::from_code(hit.code()), Some(hit));
        }
        assert_eq!(format_bytes(1536 << 20), "1536 MiB");
        assert_eq!(format_bytes(1000), "1000 bytes");
    }

    #[test]
    fn a_process_is_read_from_its_stat_even_with_a_hostile_name() {
        // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
        // utime stime cutime cstime priority nice num_threads …
        let stat = "42 (a) b) 1 2 3) S 1 42 42 0 -1 4194560 100 0 0 0 30 20 5 5 20 0 7 0 \
                    1234 1000000 250 18446744073709551615";
        let statm = "2000 300 100 10 0 500 0";
        let usage = process_usage(stat, statm, 4096, true).unwrap();
        assert_eq!(
            usage,
            Usage {
                memory_bytes: 200 * 4096,
                tasks: 7,
                cpu_ticks: 60,
            }
        );
        // PID 1's own time is the watchdog's.
        assert_eq!(
            process_usage(stat, statm, 4096, false).unwrap().cpu_ticks,
            10
        );
        assert_eq!(process_usage("garbage", statm, 4096, true), None);
    }

    #[test]
    fn the_watchdog_checks_only_what_the_cgroup_does_not() {
        let mut l = limits();
        let over = Usage {
            memory_bytes: 9 << 30,
            tasks: 600,
            cpu_ticks: 601 * 100,
        };
        assert_eq!(Watched::of(&l).exceeded(&over, 100), Some(LimitHit::Memory));
        let tasks_only = Usage {
            memory_bytes: 1 << 20,
            ..over
        };
        assert_eq!(
            Watched::of(&l).exceeded(&tasks_only, 100),
            Some(LimitHit::Processes)
        );
        l.enforcement = Enforcement::CgroupV2;
        assert_eq!(
            Watched::of(&l).exceeded(&over, 100),
            Some(LimitHit::CpuTime)
        );
        l.cpu_seconds = None;
        assert_eq!(Watched::of(&l).exceeded(&over, 100), None);
        assert_eq!(
            Watched::of(&limits()).exceeded(&Usage::default(), 100),
            None
        );
    }
}
