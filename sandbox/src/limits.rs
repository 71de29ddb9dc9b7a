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

/// A size as the flags take it and show it: parsed by [`parse_bytes`], shown the way a flag
/// is written (`8G`, `512M`, or bytes), so that a default is shown from its constant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteSize(pub u64);

impl std::fmt::Display for ByteSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bytes = self.0;
        for (shift, unit) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
            if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
                return write!(f, "{}{unit}", bytes >> shift);
            }
        }
        write!(f, "{bytes}")
    }
}

impl std::str::FromStr for ByteSize {
    type Err = String;
    fn from_str(text: &str) -> Result<ByteSize, String> {
        parse_bytes(text).map(ByteSize)
    }
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
/// (one core for the whole session), or [`DEFAULT_CPU_SECONDS_WITHOUT_BUDGET`] for a task
/// without one (`None`, or a budget of 0, which the task format also reads as none).
pub fn default_cpu_seconds(time_budget_seconds: Option<u64>) -> u64 {
    time_budget_seconds
        .filter(|&s| s > 0)
        .unwrap_or(DEFAULT_CPU_SECONDS_WITHOUT_BUDGET)
}

/// What the sandbox's processes use at one moment, summed by the watchdog.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// Anonymous and shared-memory resident memory (`RssAnon + RssShmem`), in bytes.
    pub memory_bytes: u64,
    /// Tasks: processes and their threads.
    pub tasks: u64,
    /// CPU time of the sandbox's processes, living and ended ([`CpuLedger`]), in clock ticks.
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

/// One process as the watchdog reads it, from `/proc/<pid>/stat` and `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessSample {
    pub pid: u32,
    pub ppid: u32,
    /// When it started, in clock ticks after boot: with the pid, names one process even
    /// after its pid is reused.
    pub start_ticks: u64,
    /// `RssAnon + RssShmem`: its private memory and the shared memory it maps (a
    /// `MAP_SHARED | MAP_ANONYMOUS` region, SysV or POSIX shared memory). Memory shared by
    /// several processes is counted in each, which errs on the safe side.
    pub memory_bytes: u64,
    pub threads: u64,
    /// Its own CPU time (`utime + stime`), dead threads included; 0 for PID 1, whose own time
    /// is the watchdog's.
    pub own_ticks: u64,
    /// The CPU time of the children it waited for, theirs included (`cutime + cstime`).
    pub reaped_ticks: u64,
}

/// Reads one process. `None` if `stat` is not a process's (a zombie's `status` has no memory
/// lines: it holds none).
pub fn process_sample(pid: u32, stat: &str, status: &str) -> Option<ProcessSample> {
    // The command name, in parentheses, may hold anything: the fields start after the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_ascii_whitespace().collect();
    // After the name: state(0) ppid(1) … utime(11) stime(12) cutime(13) cstime(14) …
    // num_threads(17) itrealvalue(18) starttime(19).
    let field = |i: usize| fields.get(i).and_then(|f| f.parse::<u64>().ok());
    let (utime, stime, cutime, cstime) = (field(11)?, field(12)?, field(13)?, field(14)?);
    let kib = |key: &str| -> u64 {
        status
            .lines()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix(':'))
            .and_then(|value| value.split_ascii_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    Some(ProcessSample {
        pid,
        ppid: u32::try_from(field(1)?).ok()?,
        start_ticks: field(19)?,
        memory_bytes: (kib("RssAnon") + kib("RssShmem")).saturating_mul(1024),
        threads: field(17)?,
        own_ticks: if pid == 1 { 0 } else { utime + stime },
        reaped_ticks: cutime + cstime,
    })
}

/// The sandbox's CPU time across the watchdog's rounds, ended processes included.
///
/// A process's time is its own plus that of the children it waited for, so the living
/// processes' sum holds every process that ended and was waited for by one of them (or by
/// PID 1, which waits for every orphan). A child that its parent never waits for (`SIGCHLD`
/// ignored, or `SA_NOCLDWAIT`) is reaped by the kernel and its time lands nowhere: the ledger
/// keeps each process's last sample, and when a process is gone, its time is counted as lost
/// unless its parent's waited-for time has risen by as much since (then the parent holds it,
/// and counting it again would charge it twice). What is still missed: the CPU time a
/// never-waited-for process used after its last sample (at most one round), and processes that
/// lived and ended between two rounds unwaited-for. Whatever cannot be told apart is counted.
#[derive(Debug, Default)]
pub struct CpuLedger {
    /// The processes of the last round, by (pid, start time).
    living: std::collections::BTreeMap<(u32, u64), Tracked>,
    /// The time of ended processes that no living process's waited-for time holds.
    lost_ticks: u64,
}

#[derive(Debug, Clone, Copy)]
struct Tracked {
    sample: ProcessSample,
    /// The rise of `reaped_ticks` in this round.
    risen_ticks: u64,
    /// The rise of `reaped_ticks` no ended child has been matched with yet, from this round
    /// and the last (a child read just before it ended and was waited for shows in its
    /// parent's time in the same round).
    unmatched_ticks: u64,
}

impl CpuLedger {
    /// Takes one round's samples and returns the sandbox's CPU time so far, in clock ticks.
    pub fn round(&mut self, samples: &[ProcessSample]) -> u64 {
        let mut now: std::collections::BTreeMap<(u32, u64), Tracked> = samples
            .iter()
            .map(|s| {
                let key = (s.pid, s.start_ticks);
                let (risen_ticks, carried) = self.living.get(&key).map_or((0, 0), |before| {
                    (
                        s.reaped_ticks.saturating_sub(before.sample.reaped_ticks),
                        before.unmatched_ticks,
                    )
                });
                let tracked = Tracked {
                    sample: *s,
                    risen_ticks,
                    unmatched_ticks: carried.saturating_add(risen_ticks),
                };
                (key, tracked)
            })
            .collect();
        for (key, ended) in &self.living {
            if now.contains_key(key) {
                continue;
            }
            let ticks = ended.sample.own_ticks + ended.sample.reaped_ticks;
            let parent = now
                .values_mut()
                .find(|t| t.sample.pid == ended.sample.ppid && t.unmatched_ticks >= ticks);
            match parent {
                Some(parent) => parent.unmatched_ticks -= ticks,
                None => self.lost_ticks = self.lost_ticks.saturating_add(ticks),
            }
        }
        // What is still unmatched is carried one round, no further: a later child that no one
        // waited for must not hide in time that was counted already.
        for tracked in now.values_mut() {
            tracked.unmatched_ticks = tracked.unmatched_ticks.min(tracked.risen_ticks);
        }
        self.living = now;
        self.living
            .values()
            .map(|t| t.sample.own_ticks + t.sample.reaped_ticks)
            .fold(self.lost_ticks, u64::saturating_add)
    }
}

/// Sums every process in `proc_dir` (the sandbox's own `/proc`, which shows only its
/// processes); the CPU time goes through `ledger`, which remembers the ended ones. Processes
/// are read in the order `/proc` lists them, by pid, so a parent is usually read before its
/// children.
pub fn sandbox_usage(proc_dir: &std::path::Path, ledger: &mut CpuLedger) -> Usage {
    let mut total = Usage::default();
    let mut samples = Vec::new();
    if let Ok(entries) = std::fs::read_dir(proc_dir) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name.to_str().and_then(|n| n.parse::<u32>().ok()) else {
                continue;
            };
            let dir = entry.path();
            // A process that ended between the listing and the read is counted by the ledger.
            let (Ok(stat), Ok(status)) = (
                std::fs::read_to_string(dir.join("stat")),
                std::fs::read_to_string(dir.join("status")),
            ) else {
                continue;
            };
            if let Some(sample) = process_sample(pid, &stat, &status) {
                total.memory_bytes = total.memory_bytes.saturating_add(sample.memory_bytes);
                total.tasks = total.tasks.saturating_add(sample.threads);
                samples.push(sample);
            }
        }
    }
    total.cpu_ticks = ledger.round(&samples);
    total
}

/// The System V IPC a sandbox may hold, in its own IPC namespace, as `(sysctl, value)` under
/// `/proc/sys`: shared memory of at most the agent's memory in all, in at most
/// [`SHM_SEGMENTS`] segments, and [`MSG_QUEUES`] message queues. A segment that no process
/// maps any more is counted by no process, so the shared memory is a budget beside
/// `--agent-memory`, not inside it.
pub fn ipc_limits(memory_bytes: u64, page_size: u64) -> [(&'static str, u64); 4] {
    [
        ("kernel/shmmax", memory_bytes),
        ("kernel/shmall", memory_bytes / page_size.max(1)),
        ("kernel/shmmni", SHM_SEGMENTS),
        ("kernel/msgmni", MSG_QUEUES),
    ]
}

/// The System V shared memory segments a sandbox may have (`kernel.shmmni`).
pub const SHM_SEGMENTS: u64 = 256;
/// The System V message queues a sandbox may have (`kernel.msgmni`; each holds at most
/// `kernel.msgmnb`, 16 KiB by default, of kernel memory the watchdog does not see).
pub const MSG_QUEUES: u64 = 16;

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
        // What a flag's default shows parses back to it.
        let default = ByteSize(DEFAULT_MEMORY_BYTES);
        assert_eq!(default.to_string(), "8G");
        assert_eq!(default.to_string().parse(), Ok(default));
        assert_eq!(ByteSize((16 << 20) + 1).to_string(), "16777217");
        for bad in ["", "G", "8X", "-1G", "1k", "99999999999999T"] {
            let err = parse_bytes(bad).unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
        assert_eq!(parse_tasks("512"), Ok(512));
        assert!(parse_tasks("0").is_err() && parse_tasks("many").is_err());
        assert_eq!(parse_cpu_seconds("none"), Ok(None));
        assert_eq!(parse_cpu_seconds("600"), Ok(Some(600)));
        assert!(parse_cpu_seconds("0").is_err() && parse_cpu_seconds("1.5").is_err());
        assert_eq!(default_cpu_seconds(Some(600)), 600);
        assert_eq!(
            default_cpu_seconds(None),
            DEFAULT_CPU_SECONDS_WITHOUT_BUDGET
        );
        assert_eq!(
            default_cpu_seconds(Some(0)),
            DEFAULT_CPU_SECONDS_WITHOUT_BUDGET
        );
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
        // utime stime cutime cstime priority nice num_threads itrealvalue starttime …
        let stat = "42 (a) b) 1 2 3) S 7 42 42 0 -1 4194560 100 0 0 0 30 20 5 5 20 0 7 0 \
                    1234 1000000 250 18446744073709551615";
        // Shared anonymous memory is in RssShmem, and counted.
        let status = "Name:\ta\nVmRSS:\t 1200 kB\nRssAnon:\t 800 kB\nRssFile:\t 300 kB\n\
                      RssShmem:\t 100 kB\nThreads:\t7\n";
        let sample = process_sample(42, stat, status).unwrap();
        assert_eq!(
            sample,
            ProcessSample {
                pid: 42,
                ppid: 7,
                start_ticks: 1234,
                memory_bytes: 900 << 10,
                threads: 7,
                own_ticks: 50,
                reaped_ticks: 10,
            }
        );
        // PID 1's own time is the watchdog's; a zombie holds no memory.
        let init = process_sample(1, stat, "Name:\tinit\n").unwrap();
        assert_eq!((init.own_ticks, init.memory_bytes), (0, 0));
        assert_eq!(process_sample(42, "garbage", status), None);
    }

    fn sample(pid: u32, ppid: u32, own: u64, reaped: u64) -> ProcessSample {
        ProcessSample {
            pid,
            ppid,
            start_ticks: u64::from(pid) * 10,
            memory_bytes: 0,
            threads: 1,
            own_ticks: own,
            reaped_ticks: reaped,
        }
    }

    /// A child its parent waited for is in the parent's time, once; one the kernel reaped
    /// (its parent ignores SIGCHLD) is kept from its last sample.
    #[test]
    fn ended_processes_are_counted_once_whoever_reaped_them() {
        let mut ledger = CpuLedger::default();
        assert_eq!(
            ledger.round(&[sample(1, 0, 0, 0), sample(2, 1, 10, 0), sample(3, 2, 40, 0)]),
            50
        );
        // 3 ends and 2 waits for it: its 45 ticks are in 2's waited-for time.
        assert_eq!(
            ledger.round(&[sample(1, 0, 0, 0), sample(2, 1, 12, 45)]),
            57
        );
        // 4 burns, and ends unwaited-for: 2's waited-for time does not rise.
        assert_eq!(
            ledger.round(&[
                sample(1, 0, 0, 0),
                sample(2, 1, 12, 45),
                sample(4, 2, 30, 0)
            ]),
            87
        );
        assert_eq!(
            ledger.round(&[sample(1, 0, 0, 0), sample(2, 1, 12, 45)]),
            87
        );
        // 2 ends, waited for by PID 1: all it held moves to PID 1, counted once.
        assert_eq!(ledger.round(&[sample(1, 0, 0, 58)]), 88);
        // A pid used again by a new process is another process.
        let mut reused = sample(2, 1, 5, 0);
        reused.start_ticks += 1;
        assert_eq!(ledger.round(&[sample(1, 0, 0, 58), reused]), 93);
    }

    /// A child read just before it ended, whose parent waited for it before the parent was
    /// read in the same round, is not charged twice.
    #[test]
    fn a_child_waited_for_during_a_round_is_not_charged_twice() {
        let mut ledger = CpuLedger::default();
        assert_eq!(
            ledger.round(&[sample(1, 0, 0, 0), sample(9, 1, 10, 0), sample(5, 9, 20, 0)]),
            30
        );
        // 5 (read first: a lower pid) at 20 ticks, then waited for by 9 before 9 was read.
        assert_eq!(
            ledger.round(&[
                sample(1, 0, 0, 0),
                sample(5, 9, 20, 0),
                sample(9, 1, 10, 21)
            ]),
            51
        );
        assert_eq!(
            ledger.round(&[sample(1, 0, 0, 0), sample(9, 1, 10, 21)]),
            31
        );
        // The rise is spent: a later child that nobody waits for is counted.
        assert_eq!(
            ledger.round(&[sample(1, 0, 0, 0), sample(9, 1, 10, 21), sample(6, 9, 7, 0)]),
            38
        );
        assert_eq!(
            ledger.round(&[sample(1, 0, 0, 0), sample(9, 1, 10, 21)]),
            38
        );
    }

    #[test]
    fn ipc_is_bounded_by_the_agent_memory() {
        let limits = ipc_limits(256 << 20, 4096);
        assert!(limits.contains(&("kernel/shmall", 65536)));
        assert!(limits.contains(&("kernel/shmmax", 256 << 20)));
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
