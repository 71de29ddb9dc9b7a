//! `ale bench batch`: env-steps per second of the batch pipeline on all cores, through the real
//! evaluator in-process, beside the interactive path's Step round trips on CartPole.
//!
//! Each case writes a policy file into the evaluator's submission dir, creates the official
//! env of one of the bench's own task variants (many episodes, no step budget), submits it and
//! polls until the run has finished; its steps/s is the run's total steps over the wall time
//! from the submit to the finish. Runs repeat until the case has run for `--seconds`.
//!
//! The uniform-random policy is not a file format: the bench's evaluator reads policies with
//! a loader of its own that plays it for a marker file and hands every other file to the
//! evaluator's loader. `ale serve` has no such loader.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use ale_server::batch::policy::{self, Policy};
use ale_server::{BatchOptions, Channel, Evaluator, Limits, TaskRegistry};
use ale_sim::{Space, Tensor};
use anyhow::{Context, bail};
use safetensors::{Dtype, tensor::TensorView};

#[derive(clap::Args, Debug)]
pub struct BatchArgs {
    /// How long each case runs (whole runs, repeated), after one unmeasured run.
    #[arg(long, default_value_t = 3.0)]
    pub seconds: f64,
    /// Episodes per CartPole run (at most 10,000, a task's limit); nav2d and swarm-goals play
    /// a tenth as many.
    #[arg(long, default_value_t = 10_000)]
    pub episodes: u32,
    /// Only the cases whose name contains this (e.g. `random`, `nav2d`).
    #[arg(long)]
    pub only: Option<String>,
    /// Measured Step round trips of the interactive path.
    #[arg(long, default_value_t = 20_000)]
    pub interactive_steps: usize,
    /// A Python interpreter that imports `envpool`: its Ant-v5 (64 envs, a thread per core,
    /// random actions) is measured in the same run, beside the batch pipeline's Ant.
    #[arg(long, value_name = "PYTHON")]
    pub envpool: Option<PathBuf>,
}

/// The submitted bytes that the bench's loader plays as a uniform-random policy.
const RANDOM_POLICY: &[u8] = b"ale bench: uniform-random policy";
const ENTRYPOINT: &str = "policy.safetensors";

/// What a case submits.
#[derive(Clone, Copy)]
enum Submitted {
    Random,
    /// A tanh MLP with these layer widths and random weights.
    Mlp(&'static [usize]),
    /// A 4-64-64-2 tanh MLP that balances the pole ([`Layers::balancing`]).
    BalancingMlp,
}

struct Case {
    name: &'static str,
    task: &'static str,
    submitted: Submitted,
    /// Robots per env, for robot-steps/s.
    robots: Option<u64>,
    /// The Gymnasium MuJoCo env the task runs, whose own stepping is measured beside it.
    mujoco: Option<&'static str>,
}

const CASES: [Case; 7] = [
    Case {
        name: "CartPole, uniform-random policy",
        task: "bench-cartpole",
        submitted: Submitted::Random,
        robots: None,
        mujoco: None,
    },
    Case {
        name: "CartPole, MLP 4-64-64-2 tanh, random weights",
        task: "bench-cartpole",
        submitted: Submitted::Mlp(&[4, 64, 64, 2]),
        robots: None,
        mujoco: None,
    },
    Case {
        name: "CartPole, MLP 4-64-64-2 tanh, balancing",
        task: "bench-cartpole",
        submitted: Submitted::BalancingMlp,
        robots: None,
        mujoco: None,
    },
    Case {
        name: "nav2d-barn, MLP 36-64-64-2 tanh",
        task: "bench-nav2d",
        submitted: Submitted::Mlp(&[36, 64, 64, 2]),
        robots: None,
        mujoco: None,
    },
    Case {
        name: "swarm-goals, per-robot MLP 26-64-64-2 tanh",
        task: "bench-swarm",
        submitted: Submitted::Mlp(&[26, 64, 64, 2]),
        robots: Some(16),
        mujoco: None,
    },
    Case {
        name: "Ant-v5 (MuJoCo), MLP 105-64-64-8 tanh, random weights",
        task: "bench-ant",
        submitted: Submitted::Mlp(&[105, 64, 64, 8]),
        robots: None,
        mujoco: Some("Ant-v5"),
    },
    Case {
        name: "Hopper-v5 (MuJoCo), MLP 11-64-64-3 tanh, random weights",
        task: "bench-hopper",
        submitted: Submitted::Mlp(&[11, 64, 64, 3]),
        robots: None,
        mujoco: Some("Hopper-v5"),
    },
];

/// The bench's task variants: the official tasks' sims and metrics, many episodes, no step
/// budget, a time budget that never ends a run.
fn task_files(cartpole_episodes: u32) -> Vec<(String, String)> {
    let other_episodes = (cartpole_episodes / 10).max(1);
    let submission = "[submission]\nsubmission_path = \"/run/ale/submission\"\n\
                      entrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n";
    let task = |id: &str,
                sim: &str,
                metric: &str,
                direction: &str,
                failure: f64,
                episodes: u32,
                steps: u32,
                safety: &str| {
        format!(
            "id = \"{id}\"\ntitle = \"{id}\"\ndescription = \"ale bench batch\"\nsim = \"{sim}\"\n\
             mode = \"batch\"\ngenre = \"open\"\n\n[metric]\nname = \"bench\"\n\
             episode_metric = {metric}\ndescription = \"bench\"\ndirection = \"{direction}\"\n\
             target = 1.0\ncap = 1.5\nfailure_value = {failure:?}\n\n[eval]\n\
             episodes = {episodes}\nmax_steps_per_episode = {steps}\ntime_budget_seconds = 86400\n\n\
             {safety}{submission}"
        )
    };
    vec![
        (
            "bench-cartpole.toml".into(),
            task(
                "bench-cartpole",
                "CartPole-v1",
                "\"return\"",
                "higher_is_better",
                0.0,
                cartpole_episodes,
                500,
                "",
            ),
        ),
        (
            "bench-nav2d.toml".into(),
            task(
                "bench-nav2d",
                "nav2d",
                "{ counter = \"time_to_goal\" }",
                "lower_is_better",
                50.0,
                other_episodes,
                500,
                "[[safety]]\nname = \"collisions\"\ncounter = \"collisions\"\npenalty_factor = 0.5\ndescription = \"bench\"\n\n",
            ),
        ),
        (
            "bench-ant.toml".into(),
            task(
                "bench-ant",
                "Ant-v5",
                "\"return\"",
                "higher_is_better",
                0.0,
                // Two blocks of 64 (one per core) of 200-step episodes.
                (cartpole_episodes / 78).max(1),
                200,
                "",
            ),
        ),
        (
            "bench-hopper.toml".into(),
            task(
                "bench-hopper",
                "Hopper-v5",
                "\"return\"",
                "higher_is_better",
                0.0,
                (cartpole_episodes / 8).max(1),
                1000,
                "",
            ),
        ),
        (
            "bench-swarm.toml".into(),
            task(
                "bench-swarm",
                "swarm2d",
                "{ counter = \"success_fraction\" }",
                "higher_is_better",
                0.0,
                other_episodes,
                300,
                "[[safety]]\nname = \"contacts\"\ncounter = \"contacts\"\npenalty_factor = 0.8\ndescription = \"bench\"\n\n",
            ),
        ),
    ]
}

/// Uniform random actions of a Discrete space, each row drawn independently.
struct UniformRandom {
    obs_dim: usize,
    n: u64,
    start: i64,
    rng: ale_sim::Rng,
}

impl Policy for UniformRandom {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn encode(&self, obs: &Tensor, row: &mut [f32]) -> Result<(), String> {
        // Gathered like any policy's rows, so the pipeline's per-step work is all there.
        let values = obs.as_f32().ok_or("the observation is not float32")?;
        row.copy_from_slice(values);
        Ok(())
    }

    fn blank_actions(&self, n: usize) -> Vec<Tensor> {
        vec![Tensor::scalar_i64(self.start); n]
    }

    fn act(&mut self, _obs: &[f32], n: usize, actions: &mut [Tensor]) -> Result<(), String> {
        for action in &mut actions[..n] {
            let choice = self.start + self.rng.below(self.n) as i64;
            match action.as_i64_mut() {
                Some([value]) => *value = choice,
                _ => *action = Tensor::scalar_i64(choice),
            }
        }
        Ok(())
    }
}

/// The bench evaluator's policy loader: [`RANDOM_POLICY`] is played as uniform-random
/// actions, every other file is read as the evaluator reads it.
fn bench_loader(
    format: &str,
    bytes: &[u8],
    obs: &Space,
    act: &Space,
) -> Result<Box<dyn Policy>, String> {
    if bytes != RANDOM_POLICY {
        return policy::load(format, bytes, obs, act);
    }
    static STREAM: AtomicU64 = AtomicU64::new(1);
    match (obs, act) {
        (Space::Box(obs), Space::Discrete(act)) => Ok(Box::new(UniformRandom {
            obs_dim: obs.shape.iter().product(),
            n: act.n,
            start: act.start,
            rng: ale_sim::Rng::new(STREAM.fetch_add(1, Ordering::Relaxed)),
        })),
        _ => Err("the bench's random policy needs a Box observation and a Discrete action".into()),
    }
}

/// The layers of an MLP, each a `[out, in]` weight (row-major) and an `[out]` bias.
struct Layers {
    sizes: &'static [usize],
    weights: Vec<Vec<f32>>,
    biases: Vec<Vec<f32>>,
}

impl Layers {
    /// Weights and biases uniform in ±1/√fan-in (PyTorch's default initialisation).
    fn random(sizes: &'static [usize], seed: u64) -> Layers {
        let mut rng = ale_sim::Rng::new(seed);
        let mut layers = Layers {
            sizes,
            weights: Vec::new(),
            biases: Vec::new(),
        };
        for pair in sizes.windows(2) {
            let (inputs, outputs) = (pair[0], pair[1]);
            let bound = 1.0 / (inputs as f64).sqrt();
            let mut values = |count: usize| -> Vec<f32> {
                (0..count)
                    .map(|_| rng.uniform(-bound, bound) as f32)
                    .collect()
            };
            layers.weights.push(values(outputs * inputs));
            layers.biases.push(values(outputs));
        }
        layers
    }

    /// Rewires a random 4-64-64-2 net so that it plays the CartPole heuristic's linear rule
    /// (push right when `gains · obs > 0`): the first four units of each hidden layer carry
    /// the observation scaled into tanh's linear range, the output layer reads only them. The
    /// net costs what any 4-64-64-2 net costs; its episodes last up to 500 steps.
    fn balancing(seed: u64) -> Layers {
        const SCALE: f32 = 0.01;
        let gains = ale_client::policy::CartPoleHeuristic::default().gains;
        let mut layers = Layers::random(&[4, 64, 64, 2], seed);
        for i in 0..4 {
            layers.weights[0][i * 4..(i + 1) * 4].fill(0.0);
            layers.weights[0][i * 4 + i] = SCALE;
            layers.biases[0][i] = 0.0;
            layers.weights[1][i * 64..(i + 1) * 64].fill(0.0);
            layers.weights[1][i * 64 + i] = 1.0;
            layers.biases[1][i] = 0.0;
        }
        layers.weights[2].fill(0.0);
        for (i, gain) in gains.iter().enumerate() {
            layers.weights[2][64 + i] = gain / SCALE;
        }
        layers.biases[2].fill(0.0);
        layers
    }

    /// The safetensors file, keyed as a PyTorch `nn.Sequential` saves it (0, 2, 4, …), tanh
    /// between layers.
    fn file(&self) -> anyhow::Result<Vec<u8>> {
        let bytes =
            |values: &[f32]| -> Vec<u8> { values.iter().flat_map(|v| v.to_le_bytes()).collect() };
        let mut buffers = Vec::new();
        for (layer, pair) in self.sizes.windows(2).enumerate() {
            let (inputs, outputs) = (pair[0], pair[1]);
            buffers.push((
                format!("{}.weight", 2 * layer),
                vec![outputs, inputs],
                bytes(&self.weights[layer]),
            ));
            buffers.push((
                format!("{}.bias", 2 * layer),
                vec![outputs],
                bytes(&self.biases[layer]),
            ));
        }
        let views = buffers
            .iter()
            .map(|(name, shape, data)| {
                Ok((
                    name.clone(),
                    TensorView::new(Dtype::F32, shape.clone(), data)?,
                ))
            })
            .collect::<Result<Vec<_>, safetensors::SafeTensorError>>()?;
        let metadata = [("activation".to_string(), "tanh".to_string())]
            .into_iter()
            .collect();
        Ok(safetensors::serialize(views, Some(metadata))?)
    }
}

/// What the runs of one case played, all together.
#[derive(Default)]
struct Played {
    runs: u32,
    episodes: u64,
    steps: u64,
    wall: Duration,
}

impl Played {
    fn steps_per_second(&self) -> f64 {
        self.steps as f64 / self.wall.as_secs_f64()
    }
}

/// One official run of `task` on the submission `bytes`, written into the run's own folder:
/// its episodes, its steps and the wall time from the submit to the finish. Its record is
/// deleted afterwards.
fn play_once(evaluator: &Evaluator, task: &str, bytes: &[u8]) -> anyhow::Result<Played> {
    let created = evaluator.create_env(Channel::Harness, None, task, true)?;
    let (session, run_id) = created.official.context("an official env has a session")?;
    std::fs::write(
        evaluator.run_submission_dir(&run_id).join(ENTRYPOINT),
        bytes,
    )?;
    let started = Instant::now();
    let batch = evaluator.submit_batch_eval(Channel::Harness, &created.handle)?;
    let status = loop {
        let status = evaluator.batch_status(Channel::Agent, &batch)?;
        if status.state.is_finished() {
            break status;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    let wall = started.elapsed();
    if status.state != ale_server::BatchState::Succeeded {
        bail!(
            "the bench's run of {task} ended {:?}: {}",
            status.state,
            status.message
        );
    }
    let result = evaluator.eval_result(Channel::Harness, &session, true)?;
    let _ = std::fs::remove_dir_all(ale_records::layout::run_dir(evaluator.state_dir(), &run_id));
    Ok(Played {
        runs: 1,
        episodes: result.episodes.len() as u64,
        steps: result.total_steps,
        wall,
    })
}

/// Runs of `case` until `seconds` have passed, after one unmeasured run.
fn play_case(evaluator: &Evaluator, case: &Case, seconds: f64) -> anyhow::Result<Played> {
    let bytes = match case.submitted {
        Submitted::Random => RANDOM_POLICY.to_vec(),
        Submitted::Mlp(sizes) => Layers::random(sizes, 7).file()?,
        Submitted::BalancingMlp => Layers::balancing(7).file()?,
    };
    play_once(evaluator, case.task, &bytes)?;
    // MuJoCo's time (when measured) counts from the measured runs on.
    let _ = ale_sims_mujoco::timing::take();
    let mut total = Played::default();
    while total.wall.as_secs_f64() < seconds {
        let run = play_once(evaluator, case.task, &bytes)?;
        total.runs += run.runs;
        total.episodes += run.episodes;
        total.steps += run.steps;
        total.wall += run.wall;
    }
    Ok(total)
}

/// EnvPool's Ant-v5, 64 envs on `cores` threads, stepped with uniform-random actions for
/// `seconds` by `python` (which must import `envpool`): env-steps/s.
fn envpool_ant_steps_per_second(python: &Path, cores: usize, seconds: f64) -> anyhow::Result<f64> {
    const SCRIPT: &str = r#"
import sys, time
import numpy as np
import envpool
cores, seconds = int(sys.argv[1]), float(sys.argv[2])
env = envpool.make_gymnasium("Ant-v5", num_envs=64, batch_size=64, num_threads=cores, seed=0)
env.reset()
rng = np.random.default_rng(0)
actions = rng.uniform(-1, 1, (1024, 64, 8)).astype(np.float32)
for k in range(20):
    env.step(actions[k])
steps, k, start = 0, 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    env.step(actions[k % 1024])
    steps += 64
    k += 1
print(steps / (time.perf_counter() - start))
"#;
    let output = std::process::Command::new(python)
        .args(["-c", SCRIPT, &cores.to_string(), &seconds.to_string()])
        .output()
        .with_context(|| format!("cannot run {}", python.display()))?;
    if !output.status.success() {
        bail!(
            "EnvPool's Ant-v5 through {} failed: {}",
            python.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&output.stdout);
    text.trim()
        .parse()
        .with_context(|| format!("EnvPool's bench printed {text:?}"))
}

/// Step round trips on CartPole through the client over loopback to a child `ale serve`, as
/// `ale bench step` measures them unpinned.
fn interactive_steps_per_second(state: &Path, steps: usize) -> anyhow::Result<f64> {
    let state = state.to_string_lossy().to_string();
    let (server, endpoint) = super::step::spawn_self(
        &[
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--state-dir",
            &state,
            "--threads",
            "1",
        ],
        None,
        ale_harness::evaluator_process::ready::AGENT.trim(),
    )?;
    let measured = super::step::measure_steps(&endpoint, steps, steps / 10);
    super::step::stop(server);
    Ok(measured?.rate)
}

pub(super) fn bench_batch(args: BatchArgs) -> anyhow::Result<ExitCode> {
    if !(1..=10_000).contains(&args.episodes) {
        bail!(
            "--episodes must be 1 to 10000 (a task's limit), got {}",
            args.episodes
        );
    }
    let dir: PathBuf = std::env::temp_dir().join(format!("ale-bench-batch-{}", std::process::id()));
    let tasks = dir.join("tasks");
    std::fs::create_dir_all(&tasks)?;
    for (file, text) in task_files(args.episodes) {
        std::fs::write(tasks.join(file), text)?;
    }
    let limits = Limits {
        finished_official_idle: Duration::ZERO,
        ..Limits::default()
    };
    let evaluator = Evaluator::with_policy_loader(
        TaskRegistry::with_dir(&tasks, crate::sim_catalog())?,
        &dir.join("state"),
        Box::new(ale_server::seeds::OsSeeds),
        limits,
        &BatchOptions::default(),
        bench_loader,
    )?;
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "Batch pipeline: {cores} pipeline threads (one per core), blocks of {} envs; each case \
         repeats whole runs for {} s after one unmeasured run",
        BatchOptions::default().block_size,
        args.seconds
    );
    let mujoco = ale_sims_mujoco::GymnasiumMujoco::new("Hopper-v5", 1).is_ok();
    if !mujoco {
        println!("MuJoCo is not built in (build with --features mujoco): no MuJoCo cases");
    }
    let mut rows = Vec::new();
    let cases: Vec<&Case> = CASES
        .iter()
        .filter(|c| {
            args.only
                .as_ref()
                .is_none_or(|o| c.name.contains(o.as_str()))
                && (mujoco || c.mujoco.is_none())
        })
        .collect();
    let mut own_stepping = Vec::new();
    for case in &cases {
        ale_sims_mujoco::timing::measure(case.mujoco.is_some());
        let played = play_case(&evaluator, case, args.seconds)?;
        ale_sims_mujoco::timing::measure(false);
        let (mj_steps, mj_nanos) = ale_sims_mujoco::timing::take();
        if let Some(id) = case.mujoco {
            own_stepping.push((
                id,
                played.steps_per_second(),
                played.wall,
                mj_steps,
                mj_nanos,
            ));
        }
        rows.push(played);
    }
    let envpool = match &args.envpool {
        Some(python) if mujoco => Some(envpool_ant_steps_per_second(python, cores, args.seconds)?),
        _ => None,
    };
    evaluator.shutdown(std::time::Instant::now() + std::time::Duration::from_secs(5));
    drop(evaluator);
    let interactive =
        interactive_steps_per_second(&dir.join("serve-state"), args.interactive_steps);
    let _ = std::fs::remove_dir_all(&dir);
    let interactive = interactive?;
    println!();
    println!(
        "| case | runs | episodes | env-steps | env-steps/s | robot-steps/s | batch ÷ interactive |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (case, played) in cases.iter().zip(&rows) {
        let rate = played.steps_per_second();
        let robots = case
            .robots
            .map_or("".to_string(), |r| thousands(rate * r as f64));
        let ratio = if case.task == "bench-cartpole" {
            format!("{:.0}×", rate / interactive)
        } else {
            String::new()
        };
        println!(
            "| {} | {} | {} | {} | {} | {robots} | {ratio} |",
            case.name,
            played.runs,
            played.episodes,
            played.steps,
            thousands(rate)
        );
    }
    println!(
        "| CartPole, interactive: Step round trips over loopback (heuristic) | | | {} | {} | | 1× |",
        args.interactive_steps,
        thousands(interactive)
    );
    if !own_stepping.is_empty() {
        // The pipeline keeps every core busy, so its CPU time is the wall time × cores; of
        // that, `mj_step`'s share is measured in the same runs, on the same trajectories.
        println!();
        println!(
            "| MuJoCo env | batch env-steps/s | mj_step calls | mj_step µs each | MuJoCo's own stepping alone, env-steps/s | batch cost per step above it |"
        );
        println!("|---|---:|---:|---:|---:|---:|");
        for (id, rate, wall, mj_steps, mj_nanos) in &own_stepping {
            let cpu = wall.as_secs_f64() * cores as f64;
            let mujoco = *mj_nanos as f64 / 1e9;
            let each = mujoco / (*mj_steps).max(1) as f64 * 1e6;
            println!(
                "| {id} | {} | {} | {each:.1} | {} | {:+.1}% |",
                thousands(*rate),
                thousands(*mj_steps as f64),
                thousands(rate * cpu / mujoco),
                (cpu / mujoco - 1.0) * 100.0
            );
        }
    }
    if let Some(envpool) = envpool {
        let ant = cases
            .iter()
            .zip(&rows)
            .find(|(c, _)| c.task == "bench-ant")
            .map(|(_, p)| p.steps_per_second());
        println!();
        println!("| Ant-v5 | env-steps/s | batch ÷ EnvPool |");
        println!("|---|---:|---:|");
        if let Some(ant) = ant {
            println!(
                "| ale batch, MLP 105-64-64-8 | {} | {:.2}× |",
                thousands(ant),
                ant / envpool
            );
        }
        println!(
            "| EnvPool {cores} threads, 64 envs, random actions (no policy) | {} | 1× |",
            thousands(envpool)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// `1234567.8` as `1,234,568`.
fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value);
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
