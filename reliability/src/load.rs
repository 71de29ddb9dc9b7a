//! The load generator: `clients` clients, each on a connection of its own, each holding
//! `envs_per_client` practice envs and stepping all of them at once with random valid actions,
//! for `steps` steps each or until a deadline. It reports the step rate, the latency of the
//! Step calls and every failed call; optionally it then holds the envs for a while (to show
//! that many live envs at once) and reads the server's memory.
//!
//! ```no_run
//! # async fn run() {
//! use ale_reliability::load::{LoadOptions, run};
//! let report = run(&LoadOptions {
//!     endpoint: "http://127.0.0.1:50051".into(),
//!     task: "cartpole-balance".into(),
//!     clients: 4,
//!     envs_per_client: 2,
//!     steps: 1000,
//!     duration: None,
//!     hold: None,
//!     server_pid: None,
//! })
//! .await;
//! println!("{report}");
//! # }
//! ```

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ale_client::{Client, Env, Rng};
use tokio::sync::Barrier;

/// What to run.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The agent channel: `http://HOST:PORT` or `unix:///PATH`.
    pub endpoint: String,
    /// The task of every practice env.
    pub task: String,
    /// Clients, each on its own connection.
    pub clients: usize,
    pub envs_per_client: usize,
    /// Steps per env.
    pub steps: u64,
    /// Stop stepping at this time after the start even if steps remain.
    pub duration: Option<Duration>,
    /// Keep every env (and connection) alive this long after stepping.
    pub hold: Option<Duration>,
    /// The server's process id, to read its memory from `/proc/PID/status` (same machine).
    pub server_pid: Option<u32>,
}

/// Step latencies.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Latency {
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

impl Latency {
    /// Nearest-rank percentiles of `samples`; `None` when there are none.
    fn of(mut samples: Vec<Duration>) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        samples.sort_unstable();
        let at = |q: f64| {
            let rank = (q * samples.len() as f64).ceil() as usize;
            samples[rank.clamp(1, samples.len()) - 1]
        };
        Some(Latency {
            p50: at(0.50),
            p99: at(0.99),
            max: *samples.last()?,
        })
    }
}

/// A process's resident memory, from `/proc/PID/status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`, bytes.
    pub rss: u64,
    /// `VmHWM`, the peak resident size since the process started, bytes.
    pub peak: u64,
}

impl Memory {
    /// Reads `VmRSS` and `VmHWM` of process `pid`.
    pub fn of_process(pid: u32) -> Result<Memory, String> {
        let path = PathBuf::from(format!("/proc/{pid}/status"));
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.trim().strip_suffix("kB"))
                .and_then(|kb| kb.trim().parse::<u64>().ok())
                .map(|kb| kb * 1024)
                .ok_or_else(|| format!("{} has no {name} line in kB", path.display()))
        };
        Ok(Memory {
            rss: field("VmRSS:")?,
            peak: field("VmHWM:")?,
        })
    }
}

/// What a run measured.
#[derive(Debug, Clone)]
pub struct LoadReport {
    pub options: LoadOptions,
    /// Practice envs created (and live while stepping and holding).
    pub envs: usize,
    /// Successful Step calls.
    pub steps: u64,
    /// From the moment every client held its envs to the last step.
    pub elapsed: Duration,
    pub latency: Option<Latency>,
    /// The server's memory with every env live, if its pid was given; or why it could not be
    /// read.
    pub server_memory: Option<Result<Memory, String>>,
    /// Calls that failed: connections, CreateEnv, Reset, Step.
    pub errors: u64,
    /// The first failure, for the report.
    pub first_error: Option<String>,
}

impl LoadReport {
    pub fn steps_per_second(&self) -> f64 {
        self.steps as f64 / self.elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1e3)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

/// One line per figure; `errors: N` last but for the first error's text.
impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let o = &self.options;
        writeln!(
            f,
            "clients: {} × {} practice envs of {} ({} live)",
            o.clients, o.envs_per_client, o.task, self.envs
        )?;
        writeln!(
            f,
            "steps: {} in {:.2} s",
            self.steps,
            self.elapsed.as_secs_f64()
        )?;
        writeln!(f, "steps/s: {:.0}", self.steps_per_second())?;
        match &self.latency {
            Some(l) => writeln!(
                f,
                "step latency: p50 {}, p99 {}, max {}",
                ms(l.p50),
                ms(l.p99),
                ms(l.max)
            )?,
            None => writeln!(f, "step latency: no step succeeded")?,
        }
        match &self.server_memory {
            Some(Ok(m)) => writeln!(f, "server rss: {} (peak {})", mb(m.rss), mb(m.peak))?,
            Some(Err(e)) => writeln!(f, "server rss: unknown ({e})")?,
            None => {}
        }
        write!(f, "errors: {}", self.errors)?;
        if let Some(e) = &self.first_error {
            write!(f, "\nfirst error: {e}")?;
        }
        Ok(())
    }
}

/// What one env's stepping came to.
#[derive(Default)]
struct Tally {
    latencies: Vec<Duration>,
    errors: u64,
    first_error: Option<String>,
}

impl Tally {
    fn error(&mut self, what: impl fmt::Display) {
        self.errors += 1;
        self.first_error.get_or_insert_with(|| what.to_string());
    }

    fn merge(&mut self, other: Tally) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

/// Steps `env` with random valid actions until `steps` or `deadline`; a new episode begins
/// whenever one ends. The first failed call ends its stepping.
async fn drive(mut env: Env, seed: u64, steps: u64, deadline: Option<Instant>) -> (Env, Tally) {
    let mut tally = Tally {
        latencies: Vec::with_capacity(usize::try_from(steps).unwrap_or(0).min(1 << 20)),
        ..Tally::default()
    };
    let space = env.spec().action_space.clone();
    let mut rng = Rng::new(seed);
    if let Err(e) = env.reset(Some(seed)).await {
        tally.error(format!("Reset: {e}"));
        return (env, tally);
    }
    for _ in 0..steps {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let action = space.sample(&mut rng);
        let start = Instant::now();
        match env.step(&action).await {
            Ok(step) => {
                tally.latencies.push(start.elapsed());
                if step.is_done()
                    && let Err(e) = env.reset(None).await
                {
                    tally.error(format!("Reset: {e}"));
                    break;
                }
            }
            Err(e) => {
                tally.error(format!("Step: {e}"));
                break;
            }
        }
    }
    (env, tally)
}

/// One client: its connection, its envs, created before `ready` lets every client step.
async fn client(
    options: Arc<LoadOptions>,
    index: usize,
    ready: Arc<Barrier>,
    start: Arc<tokio::sync::OnceCell<Instant>>,
) -> (Vec<Env>, Tally) {
    let mut tally = Tally::default();
    let mut envs = Vec::with_capacity(options.envs_per_client);
    match Client::connect(&options.endpoint).await {
        Ok(connection) => {
            for _ in 0..options.envs_per_client {
                match connection.create(&options.task).await {
                    Ok(env) => envs.push(env),
                    Err(e) => tally.error(format!("CreateEnv: {e}")),
                }
            }
        }
        Err(e) => tally.error(e),
    }
    ready.wait().await;
    let start = *start.get_or_init(|| async { Instant::now() }).await;
    let deadline = options.duration.map(|d| start + d);
    let first_seed = (index * options.envs_per_client) as u64;
    let driven = envs
        .into_iter()
        .enumerate()
        .map(|(i, env)| tokio::spawn(drive(env, first_seed + i as u64, options.steps, deadline)));
    let mut kept = Vec::with_capacity(options.envs_per_client);
    for handle in driven.collect::<Vec<_>>() {
        match handle.await {
            Ok((env, t)) => {
                kept.push(env);
                tally.merge(t);
            }
            Err(e) => tally.error(format!("an env's task failed: {e}")),
        }
    }
    (kept, tally)
}

/// Runs the load and reports what it measured.
pub async fn run(options: &LoadOptions) -> LoadReport {
    let shared = Arc::new(options.clone());
    let ready = Arc::new(Barrier::new(options.clients));
    let start = Arc::new(tokio::sync::OnceCell::new());
    let clients: Vec<_> = (0..options.clients)
        .map(|i| tokio::spawn(client(shared.clone(), i, ready.clone(), start.clone())))
        .collect();
    let mut tally = Tally::default();
    let mut live = Vec::new();
    for handle in clients {
        match handle.await {
            Ok((envs, t)) => {
                live.extend(envs);
                tally.merge(t);
            }
            Err(e) => tally.error(format!("a client's task failed: {e}")),
        }
    }
    let elapsed = start.get().map(Instant::elapsed).unwrap_or_default();
    let steps = tally.latencies.len() as u64;
    let server_memory = options.server_pid.map(Memory::of_process);
    if let Some(hold) = options.hold {
        tokio::time::sleep(hold).await;
    }
    LoadReport {
        options: options.clone(),
        envs: live.len(),
        steps,
        elapsed,
        latency: Latency::of(tally.latencies),
        server_memory,
        errors: tally.errors,
        first_error: tally.first_error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let l = Latency::of(samples).unwrap();
        assert_eq!(l.p50, Duration::from_millis(50));
        assert_eq!(l.p99, Duration::from_millis(99));
        assert_eq!(l.max, Duration::from_millis(100));
        assert_eq!(Latency::of(Vec::new()), None);
        let one = Latency::of(vec![Duration::from_millis(3)]).unwrap();
        assert_eq!(
            (one.p50, one.max),
            (Duration::from_millis(3), Duration::from_millis(3))
        );
    }

    #[test]
    fn memory_is_read_from_proc() {
        let m = Memory::of_process(std::process::id()).unwrap();
        assert!(m.rss > 0 && m.peak >= m.rss, "{m:?}");
        assert!(Memory::of_process(u32::MAX).is_err());
    }
}
