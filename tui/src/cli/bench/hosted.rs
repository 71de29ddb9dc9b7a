//! `ale bench hosted`: what hosting a sim in a process of its own costs, beside the same env
//! stepped in its own Python process. CartPole-v1 throughout: Gymnasium's, served by
//! `python -m ale_client.sim_host`, and the evaluator's own.

use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ale_sim::{Sim, Tensor};
use ale_sims_remote::{
    HostBlock, HostPolicy, HostSlots, HostedSimConfig, IsolatedLauncher, Launcher, PlainLauncher,
};
use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use super::step::{spawn_serve, stop};

#[derive(clap::Args, Debug)]
pub struct HostedArgs {
    /// The Python that hosts Gymnasium's CartPole: it must have `ale_client` and `gymnasium`
    /// (scripts/test-python makes one in target/python-venv).
    #[arg(long, value_name = "PATH", default_value = "python3")]
    pub python: String,
    /// Measured steps of each single-env case.
    #[arg(long, default_value_t = 20_000)]
    pub steps: usize,
    /// Envs on each host in the block cases (and 1, 2 and 4 hosts of them).
    #[arg(long, default_value_t = 64)]
    pub envs_per_host: u32,
    /// Seconds of each block case.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
}

fn table(python: &str) -> Map<String, Value> {
    json!({"kind": "process", "gymnasium": "CartPole-v1", "python": python})
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// The in-process Python figures: µs per `env.step`, and the NumPy vector env's env-steps/s
/// at each size asked.
fn python_reference(
    python: &str,
    steps: usize,
    sizes: &[u32],
    seconds: f64,
) -> anyhow::Result<(f64, Vec<f64>)> {
    let script = format!(
        r#"
import json, time, gymnasium, numpy as np
env = gymnasium.make("CartPole-v1"); env.reset(seed=0)
rng = np.random.default_rng(0); actions = rng.integers(0, 2, {steps}).tolist()
t = time.perf_counter()
for a in actions:
    _, _, te, tr, _ = env.step(a)
    if te or tr: env.reset()
print(json.dumps({{"step_us": (time.perf_counter() - t) / {steps} * 1e6}}))
for n in {sizes:?}:
    v = gymnasium.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
    v.reset(seed=0); k = 0; t = time.perf_counter()
    while time.perf_counter() - t < {seconds}:
        v.step(rng.integers(0, 2, n)); k += n
    print(json.dumps({{"vector_rate": k / (time.perf_counter() - t)}}))
"#
    );
    let out = Command::new(python)
        .args(["-c", &script])
        .output()
        .with_context(|| format!("cannot run {python}"))?;
    if !out.status.success() {
        bail!("{python} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let mut step_us = f64::NAN;
    let mut rates = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let value: Value = serde_json::from_str(line)?;
        if let Some(us) = value["step_us"].as_f64() {
            step_us = us;
        }
        if let Some(rate) = value["vector_rate"].as_f64() {
            rates.push(rate);
        }
    }
    Ok((step_us, rates))
}

fn policy(launcher: Arc<dyn Launcher>, hosts: usize) -> HostPolicy {
    HostPolicy {
        launcher,
        slots: HostSlots::new(ale_sims_remote::HostLimits::all(hosts)),
        idle_limit: Duration::from_secs(3600),
    }
}

/// µs per step of one hosted env, stepped from here (no gRPC).
fn round_trip(
    table: &Map<String, Value>,
    launcher: Arc<dyn Launcher>,
    steps: usize,
    action: impl Fn(usize) -> Tensor,
) -> anyhow::Result<f64> {
    let entry = ale_sims_remote::hosted_entry(&policy(launcher, 2), "bench", table)?;
    let mut sim: Box<dyn Sim> = entry.build_plain(500)?;
    sim.reset(0)?;
    let actions: Vec<Tensor> = (0..steps).map(action).collect();
    let start = Instant::now();
    for action in &actions {
        if sim.step(action)?.is_done() {
            sim.reset(1)?;
        }
    }
    Ok(start.elapsed().as_secs_f64() / steps as f64 * 1e6)
}

/// Env-steps/s of `hosts` hosts of `per_host` envs each, a thread per host.
fn blocks(
    table: &Map<String, Value>,
    hosts: usize,
    per_host: u32,
    seconds: f64,
) -> anyhow::Result<f64> {
    let config = HostedSimConfig::from_table(table).map_err(anyhow::Error::msg)?;
    let policy = policy(Arc::new(PlainLauncher), hosts);
    let mut started = Vec::new();
    for _ in 0..hosts {
        started.push(HostBlock::start(
            &config,
            &policy,
            per_host,
            ale_sim::Holder::Official,
        )?);
    }
    let threads: Vec<_> = started
        .into_iter()
        .enumerate()
        .map(|(h, mut block)| {
            std::thread::spawn(move || -> anyhow::Result<u64> {
                let n = block.len();
                let which: Vec<usize> = (0..n).collect();
                block.reset(
                    &which,
                    &(0..n as u64)
                        .map(|i| i + 1000 * h as u64)
                        .collect::<Vec<_>>(),
                )?;
                let actions: Vec<Tensor> =
                    (0..n).map(|i| Tensor::scalar_i64((i % 2) as i64)).collect();
                let mut steps = 0u64;
                let start = Instant::now();
                while start.elapsed().as_secs_f64() < seconds {
                    let step = block.step(&which, &actions)?;
                    steps += n as u64;
                    if step
                        .terminated
                        .iter()
                        .zip(&step.truncated)
                        .any(|(a, b)| *a || *b)
                    {
                        block.reset(
                            &which,
                            &(0..n as u64).map(|i| i + steps).collect::<Vec<_>>(),
                        )?;
                    }
                }
                Ok(steps)
            })
        })
        .collect();
    let start = Instant::now();
    let mut total = 0;
    for t in threads {
        total += t
            .join()
            .map_err(|_| anyhow::anyhow!("a block thread panicked"))??;
    }
    Ok(total as f64 / start.elapsed().as_secs_f64())
}

/// Practice Step round trips per second through `ale serve` on `task`.
fn grpc_steps(endpoint: &str, task: &str, steps: usize) -> anyhow::Result<f64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(async {
        let client = ale_client::Client::connect(endpoint).await?;
        let mut env = client.create(task).await?;
        env.reset(Some(0)).await?;
        let start = Instant::now();
        for i in 0..steps {
            let step = env.step(&Tensor::scalar_i64((i % 2) as i64)).await?;
            if step.is_done() {
                env.reset(None).await?;
            }
        }
        Ok(steps as f64 / start.elapsed().as_secs_f64())
    })
}

pub(super) fn bench_hosted(args: HostedArgs) -> anyhow::Result<ExitCode> {
    let table = table(&args.python);
    let sizes: Vec<u32> = [1, 2, 4].iter().map(|h| h * args.envs_per_host).collect();
    let (python_us, vector_rates) =
        python_reference(&args.python, args.steps, &sizes, args.seconds)?;
    println!(
        "Hosted CartPole-v1 (Gymnasium, `{} -m ale_client.sim_host`)",
        args.python
    );
    println!();
    println!("| one env, one step | µs/step | over env.step in its own Python |");
    println!("|---|---:|---:|");
    println!("| `env.step` in its own Python process | {python_us:.1} | — |");
    for (name, launcher) in [
        (
            "host round trip, plain process",
            Arc::new(PlainLauncher) as Arc<dyn Launcher>,
        ),
        (
            "host round trip, isolated",
            Arc::new(IsolatedLauncher::hiding(vec![])) as Arc<dyn Launcher>,
        ),
    ] {
        let us = round_trip(&table, launcher, args.steps, |i| {
            Tensor::scalar_i64(((i * 7) % 3 % 2) as i64)
        })?;
        println!("| {name} | {us:.1} | {:+.1} |", us - python_us);
    }
    let rust = json!({"kind": "process", "command": [std::env::current_exe()?.with_file_name("ale-rust-host")]});
    if let Some(rust) = rust.as_object().filter(|_| {
        std::env::current_exe().is_ok_and(|e| e.with_file_name("ale-rust-host").is_file())
    }) {
        let us = round_trip(rust, Arc::new(PlainLauncher), args.steps, |_| {
            Tensor::vector_f32(vec![0.5])
        })?;
        println!("| protocol floor: `ale-rust-host` (PointMass-v0) round trip | {us:.1} | — |");
    }

    // Through the evaluator: a practice Step on the hosted and the native CartPole.
    let dir = std::env::temp_dir().join(format!("ale-bench-hosted-{}", std::process::id()));
    let tasks = dir.join("tasks");
    std::fs::create_dir_all(&tasks)?;
    std::fs::write(
        tasks.join("hosted-cartpole.toml"),
        format!(
            "id = \"hosted-cartpole\"\ntitle = \"hosted\"\nmode = \"interactive\"\ngenre = \"open\"\n\
             [sim]\nkind = \"process\"\ngymnasium = \"CartPole-v1\"\npython = {:?}\n\
             [metric]\nname = \"r\"\nepisode_metric = \"return\"\ndirection = \"higher_is_better\"\n\
             target = 475.0\nfailure_value = 0.0\n[eval]\nepisodes = 1\nmax_steps_per_episode = 500\n",
            args.python
        ),
    )?;
    let tasks_arg = tasks.to_string_lossy().to_string();
    let (server, endpoint) = spawn_serve(&dir.join("state"), &["--tasks-dir", &tasks_arg], None)?;
    let native = grpc_steps(&endpoint, "cartpole-balance", args.steps);
    let hosted = grpc_steps(&endpoint, "hosted-cartpole", args.steps);
    stop(server);
    let _ = std::fs::remove_dir_all(&dir);
    let (native, hosted) = (native?, hosted?);
    println!();
    println!("| practice Step through `ale serve` (Rust client, TCP) | Step/s | µs/Step |");
    println!("|---|---:|---:|");
    println!(
        "| native CartPole (`cartpole-balance`) | {native:.0} | {:.1} |",
        1e6 / native
    );
    println!(
        "| hosted CartPole (`gymnasium = \"CartPole-v1\"`) | {hosted:.0} | {:.1} |",
        1e6 / hosted
    );

    println!();
    println!(
        "| blocks of {} envs per host, one message a step | env-steps/s | Gymnasium's NumPy vector env, same envs, in-process |",
        args.envs_per_host
    );
    println!("|---|---:|---:|");
    for (i, hosts) in [1usize, 2, 4].into_iter().enumerate() {
        let rate = blocks(&table, hosts, args.envs_per_host, args.seconds)?;
        let reference = vector_rates.get(i).copied().unwrap_or(f64::NAN);
        println!(
            "| {hosts} host(s), {} envs | {rate:.0} | {reference:.0} |",
            hosts as u32 * args.envs_per_host
        );
    }
    Ok(ExitCode::SUCCESS)
}
