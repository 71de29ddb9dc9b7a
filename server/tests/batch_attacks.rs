//! Attacks on the batch pipeline by a hostile agent: it holds the official handle, talks on the
//! agent channel, and may write the submission dir at any time. Each test asserts what the
//! evaluator promises (docs/batch.md, docs/harness.md#threat-model).

mod common;

use std::time::{Duration, Instant};

use ale_proto::pb::{self, ale_env_client::AleEnvClient};
use ale_server::{BatchOptions, Limits};
use common::*;
use tonic::Code;
use tonic::transport::Channel;

const ENTRYPOINT: &str = "policy.safetensors";

/// A batch cartpole task `id` with `episodes`, a step budget (0: none) and a time budget.
fn batch_task(id: &str, episodes: u32, max_total_steps: u64, budget_s: u64) -> (String, String) {
    let mut text = cartpole_variant(
        id,
        &[
            ("mode = \"interactive\"", "mode = \"batch\""),
            ("episodes = 20", &format!("episodes = {episodes}")),
            (
                "max_total_steps = 10000",
                &format!("max_total_steps = {max_total_steps}"),
            ),
        ],
    );
    text = text
        .lines()
        .map(|l| {
            if l.starts_with("time_budget_seconds") {
                format!("time_budget_seconds = {budget_s}")
            } else if l.starts_with("max_steps_per_episode") && max_total_steps == 0 {
                // Long episodes: a good policy plays until a budget ends the run.
                "max_steps_per_episode = 1000000".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    text.push_str(
        "\n[submission]\nsubmission_path = \"/run/ale/submission\"\nentrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n",
    );
    (format!("{id}.toml"), text)
}

async fn server(tasks: &[(String, String)], limits: Limits, batch: BatchOptions) -> TestServer {
    let tasks: Vec<(&str, String)> = tasks.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
    TestServer::start_with_batch(&tasks, limits, batch).await
}

async fn submit(client: &mut AleEnvClient<Channel>, handle: &str) -> Result<String, tonic::Status> {
    client
        .submit_batch_eval(pb::SubmitBatchEvalRequest {
            handle: handle.into(),
        })
        .await
        .map(|r| r.into_inner().batch_id)
}

async fn try_status(
    client: &mut AleEnvClient<Channel>,
    batch_id: &str,
) -> Result<pb::GetBatchEvalStatusResponse, tonic::Status> {
    client
        .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
            batch_id: batch_id.into(),
        })
        .await
        .map(|r| r.into_inner())
}

async fn status(
    client: &mut AleEnvClient<Channel>,
    batch_id: &str,
) -> pb::GetBatchEvalStatusResponse {
    try_status(client, batch_id).await.unwrap()
}

fn is_finished(s: &pb::GetBatchEvalStatusResponse) -> bool {
    matches!(
        s.state(),
        pb::BatchState::Succeeded | pb::BatchState::Failed
    )
}

async fn finished_within(
    client: &mut AleEnvClient<Channel>,
    batch_id: &str,
    within: Duration,
) -> pb::GetBatchEvalStatusResponse {
    let start = Instant::now();
    loop {
        let s = status(client, batch_id).await;
        if is_finished(&s) {
            return s;
        }
        assert!(
            start.elapsed() < within,
            "batch run {batch_id} did not finish in {within:?}: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn finished(
    client: &mut AleEnvClient<Channel>,
    batch_id: &str,
) -> pb::GetBatchEvalStatusResponse {
    finished_within(client, batch_id, Duration::from_secs(60)).await
}

/// A safetensors file of float32 tensors.
fn safetensors_file(
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

/// A linear cartpole controller: pushes right when `gains · obs > 0`.
fn linear_cartpole(gains: [f32; 4]) -> Vec<u8> {
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

fn good_policy() -> Vec<u8> {
    linear_cartpole(ale_client::policy::CartPoleHeuristic::default().gains)
}

/// Always pushes left: every episode ends in a few steps.
fn bad_policy() -> Vec<u8> {
    linear_cartpole([0.0, 0.0, 0.0, 0.0])
}

fn write_submission(server: &TestServer, bytes: &[u8]) {
    let path = server.submission_dir().join(ENTRYPOINT);
    let _ = std::fs::remove_file(&path);
    std::fs::write(path, bytes).unwrap();
}

async fn practice_round(server: &TestServer, task: &str) -> Duration {
    let start = Instant::now();
    let mut agent = server.agent().await;
    let handle = practice_env(&mut agent, task).await;
    reset(&mut agent, &handle, Some(3)).await;
    for _ in 0..3 {
        agent
            .step(pb::StepRequest {
                handle: handle.clone(),
                action: action(1),
            })
            .await
            .unwrap();
    }
    start.elapsed()
}

fn verify(server: &TestServer, run_id: &str) -> ale_harness::verify::VerifiedTrajectory {
    ale_harness::verify::verify_trajectory(&read(&server.trajectory_path(run_id))).unwrap()
}

// ---------------------------------------------------------------------------------------------
// Sharing the pool.

/// A long run (an agent's, held until its time budget) must not keep a run submitted after it
/// queued: the docs promise that runs in flight share the cores whichever came first, and a
/// queued run's time budget is already running. Before the fix, the second run's policy load
/// waited in rayon's global queue behind the first run's block turns, which each pool thread
/// pushes onto its own local queue, so it started only when the first run ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_run_does_not_keep_a_later_run_queued() {
    let long = batch_task("long", 10_000, 0, 4);
    let short = batch_task("short", 4, 2000, 60);
    let server = server(
        &[long.clone(), short.clone()],
        Limits::default(),
        BatchOptions::default(),
    )
    .await;
    write_submission(&server, &good_policy());
    let mut harness = server.harness().await;
    let (first, _, _) = server.official_env("long").await;
    let first = submit(&mut harness, &first).await.unwrap();
    // Wait for the first run to be running on every pool thread.
    let start = Instant::now();
    while status(&mut harness, &first).await.state() != pb::BatchState::Running {
        assert!(start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (second, _, _) = server.official_env("short").await;
    let second = submit(&mut harness, &second).await.unwrap();
    let s = finished_within(&mut harness, &second, Duration::from_secs(30)).await;
    let first_state = status(&mut harness, &first).await;
    assert_eq!(s.state(), pb::BatchState::Succeeded, "{}", s.message);
    assert_eq!(
        s.result.unwrap().status(),
        pb::EvalStatus::Completed,
        "the short run must play all of its rollouts"
    );
    assert_eq!(
        first_state.state(),
        pb::BatchState::Running,
        "the short run finished only after the long one: it was kept queued ({})",
        first_state.message
    );
    finished(&mut harness, &first).await;
}
