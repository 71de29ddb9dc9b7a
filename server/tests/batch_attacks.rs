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

fn good_policy() -> Vec<u8> {
    linear_cartpole(ale_client::policy::CartPoleHeuristic::default().gains)
}

/// Always pushes left: every episode ends in a few steps.
fn bad_policy() -> Vec<u8> {
    linear_cartpole([0.0, 0.0, 0.0, 0.0])
}

fn write_submission(server: &TestServer, run_id: &str, bytes: &[u8]) {
    let path = server.submission_dir(run_id).join(ENTRYPOINT);
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
    let mut harness = server.harness().await;
    let (first, _, first_run) = server.official_env("long").await;
    write_submission(&server, &first_run, &good_policy());
    let first = submit(&mut harness, &first).await.unwrap();
    // Wait for the first run to be running on every pool thread.
    let start = Instant::now();
    while status(&mut harness, &first).await.state() != pb::BatchState::Running {
        assert!(start.elapsed() < Duration::from_secs(10));
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (second, _, second_run) = server.official_env("short").await;
    write_submission(&server, &second_run, &good_policy());
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

// ---------------------------------------------------------------------------------------------
// Submitting: twice, racing file changes.

/// Many submissions of one handle at once: exactly one is taken, the others change nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_submissions_of_one_handle_make_one_run() {
    let task = batch_task("b", 4, 2000, 60);
    let server = server(&[task], Limits::default(), BatchOptions::default()).await;
    let (handle, _, run_id) = server.official_env("b").await;
    write_submission(&server, &run_id, &good_policy());
    let mut calls = Vec::new();
    for _ in 0..16 {
        let mut agent = server.agent().await;
        let handle = handle.clone();
        calls.push(tokio::spawn(
            async move { submit(&mut agent, &handle).await },
        ));
    }
    let mut ok = Vec::new();
    for call in calls {
        match call.await.unwrap() {
            Ok(id) => ok.push(id),
            Err(e) => assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}"),
        }
    }
    assert_eq!(ok.len(), 1, "{ok:?}");
    let mut harness = server.harness().await;
    let s = finished(&mut harness, &ok[0]).await;
    assert_eq!(s.state(), pb::BatchState::Succeeded, "{}", s.message);
    let verified = verify(&server, &run_id);
    assert!(verified.submission.is_some());
    assert_eq!(verified.result.unwrap().value, s.result.unwrap().value);
}

/// The agent keeps rewriting the entrypoint (good policy, bad policy, garbage, a link, a FIFO,
/// a directory) while submissions are made: each run plays exactly the bytes whose SHA-256 it
/// records, or fails naming the problem; nothing hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_rewrites_of_the_entrypoint_never_mix_two_files() {
    let task = batch_task("b", 4, 2000, 60);
    let server = server(&[task], Limits::default(), BatchOptions::default()).await;
    // The folder of the run being submitted, which the writer keeps rewriting.
    let current = std::sync::Arc::new(std::sync::Mutex::new(None::<std::path::PathBuf>));
    let (good, bad) = (good_policy(), bad_policy());
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, current, good, bad) = (stop.clone(), current.clone(), good.clone(), bad.clone());
        let outside = server.state_dir().join("evaluator.key");
        std::thread::spawn(move || {
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let Some(dir) = current.lock().unwrap().clone() else {
                    std::thread::yield_now();
                    continue;
                };
                let (file, tmp) = (dir.join(ENTRYPOINT), dir.join("tmp"));
                // Each object is made beside the entrypoint and renamed onto it, so the name
                // is almost never missing.
                let _ = std::fs::remove_file(&tmp);
                let _ = std::fs::remove_dir(&tmp);
                match i % 7 {
                    0 => drop(std::fs::write(&tmp, &good)),
                    1 => drop(std::fs::write(&tmp, &bad)),
                    2 => drop(std::fs::write(&tmp, &good[..good.len() / 2])),
                    3 => drop(std::os::unix::fs::symlink(&outside, &tmp)),
                    4 => drop(nix::unistd::mkfifo(
                        &tmp,
                        nix::sys::stat::Mode::from_bits_truncate(0o600),
                    )),
                    5 => drop(std::fs::create_dir(&tmp)),
                    _ => {
                        // The entrypoint itself rewritten in place, byte by byte.
                        use std::io::Write;
                        // (Never opened while a FIFO: that open would block this thread.)
                        let _ = std::fs::remove_dir(&file);
                        let _ = std::fs::remove_file(&file);
                        if let Ok(mut f) = std::fs::File::create(&file) {
                            for b in &bad {
                                let _ = f.write_all(&[*b]);
                            }
                        }
                        i += 1;
                        continue;
                    }
                }
                let _ = std::fs::remove_dir(&file);
                let _ = std::fs::rename(&tmp, &file);
                i += 1;
            }
        })
    };
    let mut harness = server.harness().await;
    let (good_sha, bad_sha) = (
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&good)),
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&bad)),
    );
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for _ in 0..40 {
        let (handle, _, run_id) = server.official_env("b").await;
        *current.lock().unwrap() = Some(server.submission_dir(&run_id));
        // Let the writer rewrite the new folder a while before the submission.
        tokio::time::sleep(Duration::from_millis(2)).await;
        let batch = submit(&mut harness, &handle).await.unwrap();
        let s = finished_within(&mut harness, &batch, Duration::from_secs(20)).await;
        let verified = verify(&server, &run_id);
        let result = s.result.clone().unwrap();
        assert_eq!(verified.result.as_ref().unwrap().value, result.value);
        match s.state() {
            pb::BatchState::Succeeded => {
                let sha = verified.submission.unwrap().sha256;
                let returns: Vec<f64> = result.episodes.iter().map(|e| e.episode_return).collect();
                if sha == good_sha {
                    assert!(returns.iter().all(|r| *r > 100.0), "{returns:?}");
                    *outcomes.entry("good".into()).or_default() += 1;
                } else if sha == bad_sha {
                    assert!(returns.iter().all(|r| *r < 30.0), "{returns:?}");
                    *outcomes.entry("bad".into()).or_default() += 1;
                } else {
                    panic!("a run succeeded on bytes that are neither file: {sha}");
                }
            }
            _ => {
                assert_eq!(result.status(), pb::EvalStatus::EndedEarly);
                assert!(result.episodes.iter().all(|e| e.metric == 0.0));
                let key = s.message.split(':').next().unwrap_or("").to_string();
                *outcomes.entry(key).or_default() += 1;
            }
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    eprintln!("outcomes: {outcomes:#?}");
    practice_round(&server, "b").await;
}

// ---------------------------------------------------------------------------------------------
// Failing on purpose, cancelling, shutting down.

/// A policy whose output overflows to infinity at the first step: the run fails, every
/// rollout counts at the failure value, and the record says so and verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_errors_mid_run_scores_every_unfinished_rollout_as_failed() {
    let task = batch_task("b", 8, 4000, 60);
    let server = server(&[task], Limits::default(), BatchOptions::default()).await;
    // (x - 0) / 1e-6 * 3e38: infinite unless x is exactly 0.
    let policy = safetensors_file(
        &[
            (
                "0.weight",
                vec![2, 4],
                vec![3e38, 0.0, 0.0, 0.0, -3e38, 0.0, 0.0, 0.0],
            ),
            ("obs_mean", vec![4], vec![0.0; 4]),
            ("obs_std", vec![4], vec![1e-9; 4]),
        ],
        &[],
    );
    let (handle, _, run_id) = server.official_env("b").await;
    write_submission(&server, &run_id, &policy);
    let mut agent = server.agent().await;
    let batch = submit(&mut agent, &handle).await.unwrap();
    let on_agent = finished(&mut agent, &batch).await;
    assert_eq!(on_agent.state(), pb::BatchState::Failed);
    assert!(on_agent.result.is_none());
    assert!(
        on_agent.message.contains("non-finite")
            || on_agent.message.contains("NaN")
            || on_agent.message.contains("inf"),
        "{}",
        on_agent.message
    );
    let mut harness = server.harness().await;
    let result = status(&mut harness, &batch).await.result.unwrap();
    assert_eq!(result.status(), pb::EvalStatus::EndedEarly);
    assert_eq!(result.episodes.len(), 8);
    for e in &result.episodes {
        assert_ne!(e.outcome(), pb::Outcome::Completed, "{e:?}");
        assert_ne!(e.outcome(), pb::Outcome::InProgress, "{e:?}");
        assert_eq!(e.metric, 0.0);
    }
    assert_eq!(result.value, 0.0);
    assert_eq!(verify(&server, &run_id).result.unwrap().value, 0.0);
}

/// The harness ends the session (its agent gone) at every moment of a run: the run ends
/// FAILED/ENDED_EARLY (or had finished), its record verifies, and its place among the runs in
/// flight is given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_at_any_moment_closes_the_run_and_frees_its_place() {
    let long = batch_task("long", 10_000, 0, 30);
    let server = server(
        &[long],
        Limits::default(),
        BatchOptions {
            max_runs: 1,
            ..BatchOptions::default()
        },
    )
    .await;
    let mut harness = server.harness().await;
    for delay_ms in [0u64, 0, 1, 2, 5, 10, 20, 50, 100, 300] {
        let (handle, session, run_id) = server.official_env("long").await;
        write_submission(&server, &run_id, &good_policy());
        let batch = submit(&mut harness, &handle).await.unwrap();
        tokio::time::sleep(Duration::from_millis(delay_ms)).await;
        let at_cancel = result(&mut harness, &session, true).await;
        let s = finished_within(&mut harness, &batch, Duration::from_secs(10)).await;
        assert_eq!(
            s.state(),
            pb::BatchState::Failed,
            "{delay_ms} ms: {}",
            s.message
        );
        assert!(s.message.contains("harness ended"), "{}", s.message);
        let r = s.result.unwrap();
        assert_eq!(r.status(), pb::EvalStatus::EndedEarly);
        assert!(at_cancel.episodes.len() == r.episodes.len());
        let verified = verify(&server, &run_id);
        assert_eq!(verified.result.unwrap().value, r.value);
        // Cancelling again changes nothing.
        let again = result(&mut harness, &session, true).await;
        assert_eq!(again.value, r.value);
        assert_eq!(again.trajectory_head, r.trajectory_head);
    }
}

/// Shutting the evaluator down while a long run plays: it ends the run, and the record on disk
/// verifies and says the evaluator shut down.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_during_a_run_closes_its_record() {
    let long = batch_task("long", 10_000, 0, 60);
    let server = server(&[long], Limits::default(), BatchOptions::default()).await;
    let (handle, _, run_id) = server.official_env("long").await;
    write_submission(&server, &run_id, &good_policy());
    let mut agent = server.agent().await;
    let batch = submit(&mut agent, &handle).await.unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        status(&mut agent, &batch).await.state(),
        pb::BatchState::Running
    );
    let path = server.trajectory_path(&run_id);
    let TestServer {
        server: running,
        dir,
        ..
    } = server;
    let start = Instant::now();
    running.shutdown().await;
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    let verified = ale_harness::verify::verify_trajectory(&read(&path)).unwrap();
    let result = verified.result.unwrap();
    assert_eq!(result.status, ale_proto::eval::EvalStatus::EvaluatorEnded);
    assert!(
        result.status_message.contains("shut down"),
        "{}",
        result.status_message
    );
    drop(dir);
}

// ---------------------------------------------------------------------------------------------
// Reading what is not the agent's.

/// On the agent channel, a batch id (its own or another run's) answers state, progress and a
/// message, never the result or its value; once the env is reclaimed the id answers NOT_FOUND.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_runs_id_reads_no_result_and_a_reclaimed_run_is_gone() {
    let task = batch_task("b", 4, 2000, 60);
    let limits = Limits {
        max_official_envs: 1,
        finished_official_idle: Duration::from_millis(100),
        ..Limits::default()
    };
    let server = server(&[task], limits, BatchOptions::default()).await;
    let (handle, _, run_id) = server.official_env("b").await;
    write_submission(&server, &run_id, &good_policy());
    let mut harness = server.harness().await;
    // The harness's run; the agent somehow learnt its id.
    let batch = submit(&mut harness, &handle).await.unwrap();
    let mut harness_done = finished(&mut harness, &batch).await;
    let value = harness_done.result.take().unwrap().value;
    let mut agent = server.agent().await;
    let seen = status(&mut agent, &batch).await;
    assert!(seen.result.is_none());
    assert!(
        !seen.message.contains(&format!("{value}")),
        "{}",
        seen.message
    );
    // Many polls, and ids that are not runs.
    for i in 0..200 {
        let s = status(&mut agent, &batch).await;
        assert!(s.result.is_none());
        let err = try_status(&mut agent, &format!("bat-{i:032x}"))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::NotFound);
    }
    // The finished env is reclaimed for a new official env: its run can no longer be read.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let _ = server.official_env("b").await;
    for client in [&mut agent, &mut harness] {
        let err = try_status(client, &batch).await.unwrap_err();
        assert_eq!(err.code(), Code::NotFound, "{err:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Load: polls, a model at the caps.

fn peak_rss_kib() -> u64 {
    let text = std::fs::read_to_string("/proc/self/status").unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// A valid MLP near every cap (64 MB of float32, 16 M parameters, width 4000) on a task with
/// a 3 s budget, while the agent floods status polls: the run ends by its budget, the agent
/// channel keeps answering quickly, and memory stays within a few copies of the model.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_at_the_caps_and_a_poll_flood_neither_stall_nor_exhaust() {
    let task = batch_task("b", 10_000, 0, 3);
    let server = server(&[task], Limits::default(), BatchOptions::default()).await;
    const W: usize = 4000;
    let policy = safetensors_file(
        &[
            ("0.weight", vec![W, 4], vec![0.01; W * 4]),
            ("1.weight", vec![W, W], vec![0.0; W * W]),
            ("2.weight", vec![2, W], vec![0.0; 2 * W]),
        ],
        &[("activation", "tanh")],
    );
    assert!(policy.len() < 64 << 20, "{}", policy.len());
    let (handle, _, run_id) = server.official_env("b").await;
    write_submission(&server, &run_id, &policy);
    drop(policy);
    let before = peak_rss_kib();
    let mut agent = server.agent().await;
    let batch = submit(&mut agent, &handle).await.unwrap();
    let start = Instant::now();
    let mut pollers = Vec::new();
    for _ in 0..4 {
        let mut agent = server.agent().await;
        let batch = batch.clone();
        pollers.push(tokio::spawn(async move {
            let mut worst = Duration::ZERO;
            loop {
                let t = Instant::now();
                let s = status(&mut agent, &batch).await;
                worst = worst.max(t.elapsed());
                assert!(s.result.is_none());
                if is_finished(&s) {
                    return worst;
                }
            }
        }));
    }
    // One practice env, reset and stepped over and over (a new env per round would hit the
    // practice cap).
    let mut practice = server.agent().await;
    let practice_handle = practice_env(&mut practice, "b").await;
    let mut slowest_practice = Duration::ZERO;
    while !is_finished(&status(&mut agent, &batch).await) {
        let t = Instant::now();
        reset(&mut practice, &practice_handle, Some(3)).await;
        for _ in 0..3 {
            practice
                .step(pb::StepRequest {
                    handle: practice_handle.clone(),
                    action: action(1),
                })
                .await
                .unwrap();
        }
        slowest_practice = slowest_practice.max(t.elapsed());
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the run did not end by its budget"
        );
    }
    let ended = start.elapsed();
    for p in pollers {
        let worst = p.await.unwrap();
        assert!(
            worst < Duration::from_secs(1),
            "a status poll took {worst:?}"
        );
    }
    assert!(
        slowest_practice < Duration::from_secs(2),
        "{slowest_practice:?}"
    );
    let mut harness = server.harness().await;
    let s = status(&mut harness, &batch).await;
    assert_eq!(s.state(), pb::BatchState::Succeeded, "{}", s.message);
    assert_eq!(s.result.unwrap().status(), pb::EvalStatus::BudgetExceeded);
    verify(&server, &run_id);
    let grown_mib = peak_rss_kib().saturating_sub(before) / 1024;
    eprintln!(
        "ended after {ended:?}; peak RSS grew {grown_mib} MiB; slowest practice {slowest_practice:?}"
    );
    assert!(grown_mib < 1024, "peak RSS grew {grown_mib} MiB");
}
