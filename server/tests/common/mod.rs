//! A real evaluator on 127.0.0.1 and a private Unix socket, for tests.
#![allow(dead_code)]

pub mod raw_h2;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use ale_proto::pb::{self, ale_env_client::AleEnvClient};
use ale_server::seeds::{HiddenSeed, OsSeeds, SeedSource};
use ale_server::{Evaluator, Limits, RunningServer, TaskRegistry};
use tonic::transport::Channel;

/// Draws from the OS like the real evaluator, and remembers what it drew.
#[derive(Clone, Default)]
pub struct RecordingSeeds(pub Arc<Mutex<Vec<u64>>>);

impl SeedSource for RecordingSeeds {
    fn draw(&self) -> HiddenSeed {
        let seed = OsSeeds.draw();
        self.0.lock().unwrap().push(seed.reveal());
        seed
    }
}

pub struct TestServer {
    pub server: RunningServer,
    pub seeds: RecordingSeeds,
    pub dir: tempfile::TempDir,
}

/// The cartpole task with some lines replaced, as an extra task file.
pub fn cartpole_variant(id: &str, replacements: &[(&str, &str)]) -> String {
    let mut text = include_str!("../../tasks/cartpole-balance.toml")
        .replace("id = \"cartpole-balance\"", &format!("id = \"{id}\""));
    for (from, to) in replacements {
        assert!(text.contains(from), "{from}");
        text = text.replace(from, to);
    }
    text
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(&[], Limits::default()).await
    }

    /// Starts with extra task files `(name, toml)`.
    pub async fn start_with(tasks: &[(&str, String)], limits: Limits) -> TestServer {
        Self::start_with_batch(tasks, limits, ale_server::BatchOptions::default()).await
    }

    /// Starts with the built-in tasks and the listeners' bounds of `options`.
    pub async fn start_serving(options: ale_server::serve::ServeOptions) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let seeds = RecordingSeeds::default();
        let evaluator = Evaluator::with_seed_source(
            TaskRegistry::builtin(&ale_sims::catalog()).unwrap(),
            &dir.path().join("state"),
            Box::new(seeds.clone()),
            Limits::default(),
        )
        .unwrap();
        let state = dir.path().join("state");
        let server = ale_server::serve::start_with(
            Arc::new(evaluator),
            "127.0.0.1:0".parse().unwrap(),
            ale_records::layout::agent_socket(&state),
            options,
        )
        .await
        .unwrap();
        TestServer { server, seeds, dir }
    }

    /// Starts with extra task files and the batch pipeline's options.
    pub async fn start_with_batch(
        tasks: &[(&str, String)],
        limits: Limits,
        batch: ale_server::BatchOptions,
    ) -> TestServer {
        Self::start_in(
            tempfile::tempdir().unwrap(),
            tasks,
            limits,
            batch,
            ale_server::serve::ServeOptions::default(),
        )
        .await
    }

    /// Starts on `dir/state` (made, or left by an earlier server) with extra task files, the
    /// batch pipeline's options and the listeners' bounds.
    pub async fn start_in(
        dir: tempfile::TempDir,
        tasks: &[(&str, String)],
        limits: Limits,
        batch: ale_server::BatchOptions,
        options: ale_server::serve::ServeOptions,
    ) -> TestServer {
        Self::start_on(&ale_sims::catalog(), dir, tasks, limits, batch, options).await
    }

    /// As `start_in`, hosting the sims of `catalog` instead of the bundled ones alone.
    pub async fn start_on(
        catalog: &ale_sim::SimCatalog,
        dir: tempfile::TempDir,
        tasks: &[(&str, String)],
        limits: Limits,
        batch: ale_server::BatchOptions,
        options: ale_server::serve::ServeOptions,
    ) -> TestServer {
        let registry = if tasks.is_empty() {
            TaskRegistry::builtin(catalog).unwrap()
        } else {
            let tasks_dir = dir.path().join("tasks");
            std::fs::create_dir_all(&tasks_dir).unwrap();
            for (name, text) in tasks {
                std::fs::write(tasks_dir.join(name), text).unwrap();
            }
            TaskRegistry::with_dir(&tasks_dir, catalog).unwrap()
        };
        let seeds = RecordingSeeds::default();
        let evaluator = Evaluator::with_options(
            registry,
            &dir.path().join("state"),
            Box::new(seeds.clone()),
            limits,
            &batch,
        )
        .unwrap();
        let state = dir.path().join("state");
        let server = ale_server::serve::start_with(
            Arc::new(evaluator),
            "127.0.0.1:0".parse().unwrap(),
            ale_records::layout::agent_socket(&state),
            options,
        )
        .await
        .unwrap();
        TestServer { server, seeds, dir }
    }

    pub fn endpoint(&self) -> String {
        self.server.agent_endpoint()
    }

    pub fn state_dir(&self) -> PathBuf {
        self.dir.path().join("state")
    }

    pub fn drawn_seeds(&self) -> Vec<u64> {
        self.seeds.0.lock().unwrap().clone()
    }

    /// A raw client on the agent channel (TCP).
    pub async fn agent(&self) -> AleEnvClient<Channel> {
        AleEnvClient::connect(self.endpoint()).await.unwrap()
    }

    /// A raw client on the harness channel (Unix socket).
    pub async fn harness(&self) -> AleEnvClient<Channel> {
        ale_harness::channel::connect(self.server.harness_socket())
            .await
            .unwrap()
    }

    /// Creates an official env over the harness channel: (handle, session id, run id).
    pub async fn official_env(&self, task: &str) -> (String, String, String) {
        let r = self
            .harness()
            .await
            .create_env(pb::CreateEnvRequest {
                task_id: task.into(),
                official: true,
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        assert!(r.official);
        (r.handle, r.session_id, r.run_id)
    }

    /// An official env created over the harness channel and attached through the agent
    /// channel, as an agent launched by a harness would be: (env, session id, run id).
    pub async fn attached_official_env(&self, task: &str) -> (ale_client::Env, String, String) {
        let (handle, session, run_id) = self.official_env(task).await;
        let client = ale_client::Client::connect(&self.endpoint()).await.unwrap();
        let env = client
            .attach(ale_proto::EnvHandle::from_wire(handle))
            .await
            .unwrap();
        (env, session, run_id)
    }

    /// Where the evaluator reads the batch run `run_id`'s submission: its own folder.
    pub fn submission_dir(&self, run_id: &str) -> PathBuf {
        self.server
            .evaluator()
            .run_submission_dir(&ale_proto::RunId::from_wire(run_id))
    }

    /// Where the run `run_id`'s agent reaches the evaluator while the run lasts.
    pub fn run_socket(&self, run_id: &str) -> PathBuf {
        self.server
            .evaluator()
            .run_agent_socket(&ale_proto::RunId::from_wire(run_id))
    }

    /// A raw client on the run `run_id`'s own agent socket.
    pub async fn run_agent(&self, run_id: &str) -> AleEnvClient<Channel> {
        ale_harness::channel::connect(&self.run_socket(run_id))
            .await
            .unwrap()
    }

    pub fn trajectory_path(&self, run_id: &str) -> PathBuf {
        self.state_dir()
            .join("runs")
            .join(run_id)
            .join("trajectory.jsonl")
    }
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

pub fn action(a: i64) -> Option<pb::Tensor> {
    Some(ale_sim::Tensor::scalar_i64(a).into())
}

pub async fn result(h: &mut AleEnvClient<Channel>, session: &str, end: bool) -> pb::EvalResult {
    h.get_eval_result(pb::GetEvalResultRequest {
        session_id: session.into(),
        end_session: end,
    })
    .await
    .unwrap()
    .into_inner()
    .result
    .unwrap()
}

/// Seeds from a fixed sequence, so an evaluation in a test is the same every run.
pub struct SequenceSeeds(std::sync::atomic::AtomicU64);

impl SequenceSeeds {
    pub fn new(start: u64) -> Self {
        SequenceSeeds(std::sync::atomic::AtomicU64::new(start))
    }
}

impl SeedSource for SequenceSeeds {
    fn draw(&self) -> HiddenSeed {
        let n = self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        HiddenSeed::new(ale_sim::Rng::new(n).next_u64())
    }
}

impl TestServer {
    /// The built-in tasks with hidden seeds from a fixed sequence.
    pub async fn start_deterministic(start: u64) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let evaluator = Evaluator::with_seed_source(
            TaskRegistry::builtin(&ale_sims::catalog()).unwrap(),
            &dir.path().join("state"),
            Box::new(SequenceSeeds::new(start)),
            Limits::default(),
        )
        .unwrap();
        let server = ale_server::serve::start(Arc::new(evaluator), "127.0.0.1:0".parse().unwrap())
            .await
            .unwrap();
        TestServer {
            server,
            seeds: RecordingSeeds::default(),
            dir,
        }
    }
}

/// Creates a practice env of `task` over the raw agent client; returns its handle.
pub async fn practice_env(agent: &mut AleEnvClient<Channel>, task: &str) -> String {
    agent
        .create_env(pb::CreateEnvRequest {
            task_id: task.into(),
            official: false,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
        .handle
}

/// Resets `handle` with `seed` over the raw agent client.
pub async fn reset(
    agent: &mut AleEnvClient<Channel>,
    handle: &str,
    seed: Option<u64>,
) -> pb::ResetResponse {
    agent
        .reset(pb::ResetRequest {
            handle: handle.into(),
            seed,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner()
}

// Batch submissions: real policy files (mlp-safetensors) and the two batch RPCs.

/// A safetensors file of float32 tensors `(name, shape, values)` with `metadata`.
pub fn safetensors_file(
    tensors: &[(&str, Vec<usize>, Vec<f32>)],
    metadata: &[(&str, &str)],
) -> Vec<u8> {
    let bytes: Vec<Vec<u8>> = tensors
        .iter()
        .map(|(_, _, v)| v.iter().flat_map(|x| x.to_le_bytes()).collect())
        .collect();
    let views: Vec<(String, safetensors::tensor::TensorView<'_>)> = tensors
        .iter()
        .zip(&bytes)
        .map(|((name, shape, _), b)| {
            let view =
                safetensors::tensor::TensorView::new(safetensors::Dtype::F32, shape.clone(), b)
                    .unwrap();
            (name.to_string(), view)
        })
        .collect();
    let metadata = (!metadata.is_empty()).then(|| {
        metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    });
    safetensors::serialize(views, metadata).unwrap()
}

/// A linear controller for cartpole (an MLP with no hidden layer): output 1 minus output 0 is
/// `gains · observation`, so the argmax pushes right exactly when the gains say so.
pub fn linear_cartpole(gains: [f32; 4]) -> Vec<u8> {
    let mut weight = vec![0.0; 4];
    weight.extend(gains);
    safetensors_file(
        &[
            ("0.weight", vec![2, 4], weight),
            ("0.bias", vec![2], vec![0.0, 0.0]),
        ],
        &[],
    )
}

/// `SubmitBatchEval` of the official env `handle`: the batch run's id.
pub async fn submit(
    client: &mut AleEnvClient<Channel>,
    handle: &str,
) -> Result<String, tonic::Status> {
    client
        .submit_batch_eval(pb::SubmitBatchEvalRequest {
            handle: handle.into(),
        })
        .await
        .map(|r| r.into_inner().batch_id)
}

/// Whether a batch run has ended, either way.
pub fn is_finished(s: &pb::GetBatchEvalStatusResponse) -> bool {
    matches!(
        s.state(),
        pb::BatchState::Succeeded | pb::BatchState::Failed
    )
}
