//! `ale bench`: measurements recorded in docs/performance.md.
//!
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
use ale_sims::Tensor;
use anyhow::{Context, bail};

#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Sequential Step round trips on CartPole over loopback, next to the raw TCP floor.
    Step(StepArgs),
    /// Console auto-play: steps per second through the real gRPC client while the event loop
    /// redraws the practice view.
    Console {
        /// How long to play.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
    /// Agent start-up with and without the sandbox: from spawning a trivial agent (`true`) to
    /// its exit, and the harness's pre-run sandbox probe.
    Sandbox {
        /// Measured starts of each kind.
        #[arg(long, default_value_t = 50)]
        runs: usize,
    },
    /// A 1-byte TCP echo server (the floor's far end); prints its port, serves one client.
    #[command(hide = true)]
    Pong {
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
}

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

pub fn run(command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Step(args) => bench_step(args),
        BenchCommand::Pong { listen } => pong(listen),
        BenchCommand::Console { seconds } => bench_console(seconds),
        BenchCommand::Sandbox { runs } => bench_sandbox(runs),
    }
}

/// Latencies of one measurement.
struct Stats {
    rate: f64,
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

/// Starts `ale ARGS…` pinned to `cpu` and returns it with the first stdout line that starts
/// with `marker` (minus the marker).
fn spawn_self(args: &[&str], cpu: Option<usize>, marker: &str) -> anyhow::Result<(Child, String)> {
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

fn stop(mut child: Child) {
    // SAFETY: signalling our own child by pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    if child.wait().is_err() {
        let _ = child.kill();
    }
}

fn measure_steps(endpoint: &str, steps: usize, warmup: usize) -> anyhow::Result<Stats> {
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

fn pong(listen: SocketAddr) -> anyhow::Result<ExitCode> {
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

fn bench_step(args: StepArgs) -> anyhow::Result<ExitCode> {
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
        let state = state_dir.to_string_lossy().to_string();
        let (server, endpoint) = spawn_self(
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--state-dir",
                &state,
                "--threads",
                &threads,
            ],
            server_cpu,
            ale_harness::evaluator_process::ready::AGENT.trim(),
        )?;
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

fn bench_console(seconds: f64) -> anyhow::Result<ExitCode> {
    use crate::console::app::App;
    use crate::console::message::Msg;
    use crate::console::practice::{Player, SPEEDS};
    use crate::console::seeds::Seeds;
    use crate::console::{Console, event_loop, theme};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let dir = std::env::temp_dir().join(format!("ale-bench-console-{}", std::process::id()));
        let evaluator = ale_server::Evaluator::new(ale_server::TaskRegistry::builtin()?, &dir)?;
        let server = ale_server::serve::start(std::sync::Arc::new(evaluator), "127.0.0.1:0".parse()?).await?;
        let app = App::new(theme::load_all(None)?, 0, crate::console::keys::KeyMap::bundled(), "bench".into(), Seeds::from_clock());
        let mut console = Console::new(app, server.agent_endpoint(), dir.clone(), std::env::current_exe()?);
        // Tasks view → cartpole-balance → practice.
        let cartpole = loop {
            if let Some(i) = console.app.tasks.list.iter().position(|t| t.id == "cartpole-balance") {
                break i;
            }
            match console.next_message().await {
                Some(msg) => console.handle(msg),
                None => bail!("the console's worker stopped"),
            }
        };
        console.app.tasks.cursor = cartpole;
        console.handle(Msg::Key(crossterm::event::KeyEvent::from(crossterm::event::KeyCode::Enter)));
        while console.app.practice.observation.is_none() {
            match console.next_message().await {
                Some(msg) => console.handle(msg),
                None => bail!("the console's worker stopped"),
            }
        }
        console.app.practice.player = Player::Policy(ale_client::policy::PolicyKind::Heuristic);
        console.app.practice.speed = *SPEEDS.last().unwrap_or(&5000);
        console.app.practice.playing = true;
        let mut terminal = Terminal::new(TestBackend::new(160, 48))?;
        let steps_before = console.app.practice.rewards.len();
        let started = Instant::now();
        let duration = Duration::from_secs_f64(seconds);
        let _ = tokio::time::timeout(duration, event_loop(&mut terminal, &mut console, futures::stream::pending())).await;
        let elapsed = started.elapsed().as_secs_f64();
        let steps = console.app.practice.rewards.len() - steps_before;
        println!("| auto-play speed setting | steps/s through gRPC | frames/s (160×48) | mean draw time | episodes |");
        println!("|---:|---:|---:|---:|---:|");
        println!(
            "| {} | {:.0} | {:.1} | {:.2} ms | {} |",
            console.app.practice.speed,
            steps as f64 / elapsed,
            console.frames as f64 / elapsed,
            console.draw_time.as_secs_f64() * 1e3 / console.frames.max(1) as f64,
            console.app.practice.history.len()
        );
        server.shutdown().await;
        let _ = std::fs::remove_dir_all(&dir);
        Ok(ExitCode::SUCCESS)
    })
}

/// Median and 90th percentile of `samples`, in milliseconds.
fn median_p90_ms(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| {
        let i = ((samples.len() as f64 - 1.0) * q).round() as usize;
        samples.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    };
    (at(0.5), at(0.9))
}

fn bench_sandbox(runs: usize) -> anyhow::Result<ExitCode> {
    use ale_harness::sandbox;
    let exe = std::env::current_exe().context("cannot find the ale executable")?;
    let tmp = tempfile_dir()?;
    let state = tmp.join("state");
    std::fs::create_dir(&state)?;
    let socket = state.join("agent.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket)?;
    // The spec the harness would build for an agent `true` on this state dir.
    let command = vec!["true".to_string()];
    let handle = ale_proto::EnvHandle::from_wire("env-bench");
    let hidden = vec![std::fs::canonicalize(&state)?];
    let options = sandbox::SandboxOptions::default();
    let spec = ale_harness::agent::launch_spec(&ale_harness::agent::AgentLaunch {
        command: &command,
        handle: &handle,
        sandbox: &options,
        ale_exe: &exe,
        agent_socket: &socket,
        unsandboxed_endpoint: "",
        submission_dir: None,
        hidden: &hidden,
        log: Path::new(""),
    })?;
    let rt = super::runtime(1)?;
    let (plain, sandboxed, probe) = rt.block_on(async {
        let mut plain = Vec::with_capacity(runs);
        let mut sandboxed = Vec::with_capacity(runs);
        let mut probe = Vec::with_capacity(runs);
        for _ in 0..runs {
            let start = Instant::now();
            let status = tokio::process::Command::new("true")
                .process_group(0)
                .status()
                .await?;
            anyhow::ensure!(status.success(), "true failed");
            plain.push(start.elapsed());

            let start = Instant::now();
            let mut child = sandbox::launcher_command(&exe).spawn()?;
            sandbox::send_spec(&mut child, &spec).await?;
            let status = child.wait().await?;
            anyhow::ensure!(status.success(), "the sandboxed agent failed: {status}");
            sandboxed.push(start.elapsed());

            let start = Instant::now();
            sandbox::probe(&exe, &spec).await?;
            probe.push(start.elapsed());
        }
        Ok::<_, anyhow::Error>((plain, sandboxed, probe))
    })?;
    let _ = std::fs::remove_dir_all(&tmp);
    println!("agent start to exit, {runs} runs each (median / p90):");
    let rows = [
        ("plain process", median_p90_ms(plain)),
        ("sandboxed", median_p90_ms(sandboxed)),
        ("sandbox probe", median_p90_ms(probe)),
    ];
    for (name, (median, p90)) in rows {
        println!("  {name:<14} {median:>7.2} ms  {p90:>7.2} ms");
    }
    let added = (rows[1].1.0 - rows[0].1.0) + rows[2].1.0;
    println!("  a run's start-up gains {added:.2} ms (sandboxed − plain + probe, medians)");
    Ok(ExitCode::SUCCESS)
}

/// A fresh private folder under the system temp dir.
fn tempfile_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let dir = std::env::temp_dir().join(format!("ale-bench-sandbox-{}", std::process::id()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}
