//! `ale bench vector`: env-steps per second of a practice vector env through the Rust
//! client (one `Step` for all N sub-envs), for each N, over TCP and over the agent socket, with
//! the evaluator stepping vectors where their calls arrive, on its vector threads, or as it
//! chooses by default (the crossover between the two).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use ale_client::{AutoresetMode, VecReset};
use ale_sim::{Space, Tensor, TensorData};
use anyhow::Context;

use super::step::{spawn_serve, stop};

#[derive(clap::Args, Debug)]
pub struct VectorArgs {
    /// Sub-envs per vector env, one measurement each.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 16, 64, 256, 1024, 4096])]
    pub num_envs: Vec<u32>,
    /// Seconds of stepping per measurement.
    #[arg(long, default_value_t = 2.0)]
    pub seconds: f64,
    /// The task (its action space must be Discrete or a Box).
    #[arg(long, default_value = "cartpole-balance")]
    pub task: String,
    /// Runtime worker threads of the server under test (`ale serve --threads`).
    #[arg(long, default_value_t = 1)]
    pub server_threads: usize,
    /// Only the evaluator's default placement (no inline-only and threads-only rows).
    #[arg(long)]
    pub default_only: bool,
}

/// Where the evaluator steps vectors: `ale serve --vector-inline-us`.
fn placements() -> [(&'static str, String); 3] {
    let default = ale_server::Limits::default().vector_inline_work.as_micros();
    [
        ("default", default.to_string()),
        ("always inline", u64::MAX.to_string()),
        ("always on the vector threads", "0".to_string()),
    ]
}

pub(super) fn bench_vector(args: VectorArgs) -> anyhow::Result<ExitCode> {
    let state_dir: PathBuf =
        std::env::temp_dir().join(format!("ale-bench-vector-{}", std::process::id()));
    let threads = args.server_threads.to_string();
    // Every vector is held until the bench ends (there is no call to drop one): room for
    // one of each size on each transport.
    let all: u64 = args.num_envs.iter().map(|&n| u64::from(n.max(1))).sum();
    let cap = (2 * all + 16).to_string();
    println!(
        "Vector env: {} through the Rust blocking client, {} s a measurement; server threads: {}",
        args.task, args.seconds, args.server_threads
    );
    println!();
    println!("| placement | transport | N | Step/s | env-steps/s | µs/Step |");
    println!("|---|---|---:|---:|---:|---:|");
    let all_placements = placements();
    let placements = if args.default_only {
        &all_placements[..1]
    } else {
        &all_placements[..]
    };
    for (name, inline_us) in placements {
        let (server, endpoint) = spawn_serve(
            &state_dir,
            &[
                "--threads",
                &threads,
                "--vector-inline-us",
                inline_us,
                "--max-practice-envs",
                &cap,
                "--max-practice-envs-per-connection",
                &cap,
            ],
            None,
        )?;
        let socket = format!(
            "unix://{}",
            ale_records::layout::agent_socket(&state_dir).display()
        );
        let measured = (|| -> anyhow::Result<()> {
            for (transport, at) in [("TCP", endpoint.as_str()), ("agent socket", &socket)] {
                for &n in &args.num_envs {
                    let (steps, wall) = measure(at, &args.task, n, args.seconds)?;
                    let rate = steps as f64 / wall.as_secs_f64();
                    println!(
                        "| {name} | {transport} | {n} | {rate:.0} | {:.0} | {:.1} |",
                        rate * f64::from(n),
                        1e6 / rate
                    );
                }
            }
            Ok(())
        })();
        stop(server);
        measured?;
    }
    let _ = std::fs::remove_dir_all(&state_dir);
    Ok(ExitCode::SUCCESS)
}

/// Steps a vector env of `n` sub-envs for `seconds` after a short warm-up; (Steps, wall).
fn measure(endpoint: &str, task: &str, n: u32, seconds: f64) -> anyhow::Result<(u64, Duration)> {
    let client = ale_client::blocking::Client::connect(endpoint)?;
    let mut envs = client
        .create_vec(task, n, AutoresetMode::NextStep)
        .with_context(|| format!("a vector env of {n}"))?;
    envs.reset(VecReset::seeded(0))?;
    let actions = actions(&envs.spec().action_space, n as usize)?;
    let warmup = Instant::now();
    while warmup.elapsed() < Duration::from_millis(200) {
        envs.step(&actions)?;
    }
    let limit = Duration::from_secs_f64(seconds);
    let started = Instant::now();
    let mut steps = 0;
    while started.elapsed() < limit {
        envs.step(&actions)?;
        steps += 1;
    }
    Ok((steps, started.elapsed()))
}

/// One fixed action per sub-env: 1 (or the space's start) for a Discrete space, the middle of
/// the bounds for a Box.
fn actions(space: &Space, n: usize) -> anyhow::Result<Tensor> {
    let tensor = match space {
        Space::Discrete(d) => Tensor::new(vec![n], TensorData::I64(vec![d.start + 1; n]))?,
        Space::Box(b) => {
            let one: Vec<f32> = b
                .low
                .iter()
                .zip(&b.high)
                .map(|(l, h)| {
                    let middle = (l + h) / 2.0;
                    if middle.is_finite() {
                        middle as f32
                    } else {
                        0.0
                    }
                })
                .collect();
            let mut shape = vec![n];
            shape.extend(&b.shape);
            let data = (0..n).flat_map(|_| one.iter().copied()).collect();
            Tensor::new(shape, TensorData::F32(data))?
        }
        other => anyhow::bail!("the bench sends Discrete or float32 Box actions, not {other}"),
    };
    Ok(tensor)
}
