//! `ale bench step` runs a real `ale serve` child process and drives sequential CartPole Step
//! round trips at it through the client crate, then measures the floor those round trips sit
//! on: a 1-byte TCP ping-pong between two processes. Each is run with both processes pinned to
//! one CPU, pinned to different CPUs, and unpinned.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use ale_client::policy::{CartPoleHeuristic, Policy};
use ale_sim::Tensor;
use anyhow::{Context, bail};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Placement {
    /// Client and server pinned to the same CPU.
    SameCpu,
    /// Client and server pinned to different CPUs.
    CrossCpu,
    /// Left to the scheduler.
    Unpinned,
}

impl Placement {
    /// (server CPU, client CPU)
    fn cpus(self) -> Option<(usize, usize)> {
        match self {
            Placement::SameCpu => Some((0, 0)),
            Placement::CrossCpu => Some((0, 1)),
            Placement::Unpinned => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Placement::SameCpu => "same CPU",
            Placement::CrossCpu => "different CPUs",
            Placement::Unpinned => "unpinned",
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct StepArgs {
    /// Measured round trips per placement.
    #[arg(long, default_value_t = 20_000)]
    pub steps: usize,
    /// Unmeasured round trips first.
    #[arg(long, default_value_t = 2_000)]
    pub warmup: usize,
    /// Placements to measure [default: all three].
    #[arg(long, value_enum)]
    pub placement: Vec<Placement>,
    /// Worker threads of the server under test (`ale serve --threads`).
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,
}

/// Latencies of one measurement.
pub(super) struct Stats {
    pub(super) rate: f64,
    p50: Duration,
    p99: Duration,
}

impl Stats {
    fn from(mut latencies: Vec<Duration>, wall: Duration) -> Stats {
        latencies.sort_unstable();
        let at =
            |q: f64| latencies[((latencies.len() as f64 * q) as usize).min(latencies.len() - 1)];
        Stats {
            rate: latencies.len() as f64 / wall.as_secs_f64(),
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

fn cpu_count() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Pins the calling thread (and threads it starts later) to `cpu`, or to every CPU.
fn pin_current_thread(cpu: Option<usize>) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write within it; sched_setaffinity
    // reads `size_of::<cpu_set_t>()` bytes from a valid reference.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        match cpu {
            Some(c) => libc::CPU_SET(c, &mut set),
            None => (0..cpu_count()).for_each(|c| libc::CPU_SET(c, &mut set)),
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Starts `ale serve` on a free port over `state_dir`, with `extra` flags, pinned to `cpu`;
/// returns it with its agent endpoint.
pub(super) fn spawn_serve(
    state_dir: &Path,
    extra: &[&str],
    cpu: Option<usize>,
) -> anyhow::Result<(Child, String)> {
    let state = state_dir.to_string_lossy();
    let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--state-dir", &state];
    args.extend_from_slice(extra);
    spawn_self(
        &args,
        cpu,
        ale_harness::evaluator_process::ready::AGENT.trim(),
    )
}

/// Starts `ale ARGS…` pinned to `cpu` and returns it with the first stdout line that starts
/// with `marker` (minus the marker).
pub(super) fn spawn_self(
    args: &[&str],
    cpu: Option<usize>,
    marker: &str,
) -> anyhow::Result<(Child, String)> {
    let exe = std::env::current_exe()?;
    let mut command = Command::new(exe);
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // SAFETY: only an async-signal-safe syscall runs between fork and exec.
    unsafe {
        command.pre_exec(move || pin_current_thread(cpu));
    }
    let mut child = command.spawn().context("cannot start a child `ale`")?;
    let stdout = child.stdout.take().context("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref() {
        if let Some(rest) = line?.trim_start().strip_prefix(marker) {
            let value = rest.trim().to_string();
            // Keep draining stdout so the child never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return Ok((child, value));
        }
    }
    let _ = child.kill();
    bail!(
        "the child `ale {}` exited before printing {marker:?}",
        args.join(" ")
    )
}

pub(super) fn stop(mut child: Child) {
    // SAFETY: signalling our own child by pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    if child.wait().is_err() {
        let _ = child.kill();
    }
}

pub(super) fn measure_steps(endpoint: &str, steps: usize, warmup: usize) -> anyhow::Result<Stats> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = ale_client::Client::connect(endpoint).await?;
        let mut env = client.create("cartpole-balance").await?;
        let mut policy = CartPoleHeuristic::default();
        let mut observation = env.reset(Some(0)).await?.observation;
        let mut latencies = Vec::with_capacity(steps);
        let mut action: Tensor;
        let mut wall = Instant::now();
        for i in 0..warmup + steps {
            if i == warmup {
                wall = Instant::now();
            }
            action = policy.act(&observation);
            let t0 = Instant::now();
            let step = env.step(&action).await?;
            if i >= warmup {
                latencies.push(t0.elapsed());
            }
            observation = if step.is_done() {
                env.reset(None).await?.observation
            } else {
                step.observation
            };
        }
        Ok(Stats::from(latencies, wall.elapsed()))
    })
}

fn measure_floor(addr: &str, steps: usize, warmup: usize) -> anyhow::Result<Stats> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let mut byte = [0u8; 1];
    let mut latencies = Vec::with_capacity(steps);
    let mut wall = Instant::now();
    for i in 0..warmup + steps {
        if i == warmup {
            wall = Instant::now();
        }
        let t0 = Instant::now();
        stream.write_all(&byte)?;
        stream.read_exact(&mut byte)?;
        if i >= warmup {
            latencies.push(t0.elapsed());
        }
    }
    Ok(Stats::from(latencies, wall.elapsed()))
}

pub(super) fn pong(listen: SocketAddr) -> anyhow::Result<ExitCode> {
    let listener = TcpListener::bind(listen)?;
    println!("pong: {}", listener.local_addr()?);
    std::io::stdout().flush()?;
    let (mut stream, _) = listener.accept()?;
    stream.set_nodelay(true)?;
    let mut byte = [0u8; 1];
    while stream.read_exact(&mut byte).is_ok() {
        stream.write_all(&byte)?;
    }
    Ok(ExitCode::SUCCESS)
}

fn us(d: Duration) -> String {
    format!("{:.0} µs", d.as_secs_f64() * 1e6)
}

pub(super) fn bench_step(args: StepArgs) -> anyhow::Result<ExitCode> {
    let placements = if args.placement.is_empty() {
        vec![Placement::SameCpu, Placement::CrossCpu, Placement::Unpinned]
    } else {
        args.placement.clone()
    };
    if cpu_count() < 2 && placements.contains(&Placement::CrossCpu) {
        bail!("the different-CPUs placement needs at least 2 CPUs; pass --placement same-cpu");
    }
    let state_dir: PathBuf = std::env::temp_dir().join(format!("ale-bench-{}", std::process::id()));
    let threads = args.server_threads.to_string();
    println!(
        "Step round trips: CartPole, one client, {} measured after {} warm-up; server threads: {}",
        args.steps, args.warmup, args.server_threads
    );
    println!();
    println!("| placement | gRPC Step/s | p50 | p99 | TCP floor rt/s | p50 | p99 | floor ÷ Step |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for placement in placements {
        let (server_cpu, client_cpu) = match placement.cpus() {
            Some((s, c)) => (Some(s), Some(c)),
            None => (None, None),
        };
        let (server, endpoint) = spawn_serve(&state_dir, &["--threads", &threads], server_cpu)?;
        pin_current_thread(client_cpu)?;
        let step = measure_steps(&endpoint, args.steps, args.warmup);
        stop(server);
        let step = step?;
        let (pong, addr) = spawn_self(&["bench", "pong"], server_cpu, "pong:")?;
        let floor = measure_floor(&addr, args.steps, args.warmup);
        stop(pong);
        let floor = floor?;
        pin_current_thread(None)?;
        println!(
            "| {} | {:.0} | {} | {} | {:.0} | {} | {} | {:.2}× |",
            placement.name(),
            step.rate,
            us(step.p50),
            us(step.p99),
            floor.rate,
            us(floor.p50),
            us(floor.p99),
            floor.rate / step.rate
        );
    }
    let _ = std::fs::remove_dir_all(&state_dir);
    Ok(ExitCode::SUCCESS)
}
