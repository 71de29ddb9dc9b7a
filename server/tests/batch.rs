//! Batch evaluation over a real server: submissions read from real files in the submission
//! dir, both channels, the records on disk.

mod common;

use std::time::Duration;

use ale_proto::pb::{self, ale_env_client::AleEnvClient};
use ale_records::event_data::SubmissionReceived;
use ale_records::trajectory::EventKind;
use ale_server::{BatchOptions, Limits};
use common::*;
use sha2::{Digest, Sha256};
use tonic::Code;
use tonic::transport::Channel;

const TASK: &str = "cartpole-batch";
const ENTRYPOINT: &str = "policy.safetensors";

/// Cartpole in batch mode with a few episodes.
fn batch_task() -> (&'static str, String) {
    let mut text = cartpole_variant(
        TASK,
        &[
            ("mode = \"interactive\"", "mode = \"batch\""),
            ("episodes = 20", "episodes = 8"),
        ],
    );
    text.push_str(
        "\n[submission]\nsubmission_path = \"/submission\"\nentrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n",
    );
    ("cartpole-batch.toml", text)
}

async fn server_with(batch: BatchOptions) -> TestServer {
    TestServer::start_with_batch(&[batch_task()], Limits::default(), batch).await
}

async fn status(
    client: &mut AleEnvClient<Channel>,
    batch_id: &str,
) -> pb::GetBatchEvalStatusResponse {
    client
        .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
            batch_id: batch_id.into(),
        })
        .await
        .unwrap()
        .into_inner()
}

/// Polls until the run has finished; its final status.
async fn finished(
    client: &mut AleEnvClient<Channel>,
    batch_id: &str,
) -> pb::GetBatchEvalStatusResponse {
    for _ in 0..600 {
        let s = status(client, batch_id).await;
        if is_finished(&s) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("batch run {batch_id} did not finish in 30 s");
}

/// A practice episode's first steps on the agent channel: the server still serves.
async fn practice_round(server: &TestServer) {
    let mut agent = server.agent().await;
    let handle = practice_env(&mut agent, TASK).await;
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
}

fn submission_events(text: &str) -> Vec<SubmissionReceived> {
    ale_records::trajectory::verify(text)
        .unwrap()
        .events
        .into_iter()
        .filter(|e| e.event.kind == EventKind::SubmissionReceived)
        .map(|e| serde_json::from_value(e.event.data).unwrap())
        .collect()
}

#[tokio::test]
async fn the_official_batch_env_is_not_played_interactively_but_its_practice_env_is() {
    let server = server_with(BatchOptions::default()).await;
    let (handle, _, _) = server.official_env(TASK).await;
    let mut agent = server.agent().await;
    let refusals = [
        agent
            .reset(pb::ResetRequest {
                handle: handle.clone(),
                seed: None,
                ..Default::default()
            })
            .await
            .map(|_| ())
            .unwrap_err(),
        agent
            .step(pb::StepRequest {
                handle: handle.clone(),
                action: action(0),
            })
            .await
            .map(|_| ())
            .unwrap_err(),
        agent
            .start_eval_session(pb::StartEvalSessionRequest {
                handle: handle.clone(),
            })
            .await
            .map(|_| ())
            .unwrap_err(),
    ];
    for status in refusals {
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert!(
            status.message().contains("SubmitBatchEval"),
            "{}",
            status.message()
        );
    }
    practice_round(&server).await;
}

#[tokio::test]
async fn misuse_is_refused_and_changes_nothing() {
    let server = server_with(BatchOptions {
        max_runs: 1,
        ..BatchOptions::default()
    })
    .await;
    let mut agent = server.agent().await;
    let mut harness = server.harness().await;

    let practice = practice_env(&mut agent, TASK).await;
    let err = submit(&mut agent, &practice).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(err.message().contains("practice env"), "{}", err.message());

    let (interactive, _, _) = server.official_env("cartpole-balance").await;
    let err = submit(&mut harness, &interactive).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(
        err.message().contains("is interactive"),
        "{}",
        err.message()
    );

    let err = submit(&mut harness, "env-nope").await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = agent
        .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
            batch_id: "bat-nope".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    // The agent holding the official handle may submit; a second submission is refused.
    let (handle, _, run_id) = server.official_env(TASK).await;
    std::fs::write(server.submission_dir(&run_id).join(ENTRYPOINT), b"x").unwrap();
    let batch = submit(&mut agent, &handle).await.unwrap();
    let err = submit(&mut harness, &handle).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(
        err.message().contains("already submitted"),
        "{}",
        err.message()
    );
    finished(&mut agent, &batch).await;

    // Past the runs that play at once a submission is not refused: it waits in line (QUEUED),
    // then plays.
    let (first_env, _, _) = server.official_env(TASK).await;
    let (second_env, _, _) = server.official_env(TASK).await;
    let first = submit(&mut harness, &first_env).await.unwrap();
    let second = submit(&mut harness, &second_env).await.unwrap();
    for batch in [&first, &second] {
        finished(&mut harness, batch).await;
    }
}

/// Puts something at the entrypoint's path.
type Prepare<'a> = Box<dyn Fn(&std::path::Path) + 'a>;

#[tokio::test]
async fn each_unreadable_submission_fails_its_run_naming_the_problem() {
    let server = server_with(BatchOptions {
        max_submission_bytes: 100,
        ..BatchOptions::default()
    })
    .await;
    let outside = server.dir.path().join("outside.safetensors");
    std::fs::write(&outside, b"secret").unwrap();
    let cases: Vec<(&str, Prepare, &str)> = vec![
        (
            "missing",
            Box::new(|_| {}),
            "the submission has no policy.safetensors",
        ),
        (
            "a link out of the dir",
            Box::new(|file| std::os::unix::fs::symlink(&outside, file).unwrap()),
            "is a symbolic link",
        ),
        (
            "oversize",
            Box::new(|file| std::fs::write(file, vec![0u8; 101]).unwrap()),
            "101 bytes, over the cap of 100 bytes",
        ),
        (
            "a directory",
            Box::new(|file| std::fs::create_dir(file).unwrap()),
            "is a directory, not a regular file",
        ),
        (
            "a FIFO",
            Box::new(|file| {
                nix::unistd::mkfifo(file, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap()
            }),
            "is a FIFO, not a regular file",
        ),
    ];
    let mut harness = server.harness().await;
    for (what, prepare, expected) in cases {
        let (handle, session, run_id) = server.official_env(TASK).await;
        prepare(&server.submission_dir(&run_id).join(ENTRYPOINT));
        let batch = submit(&mut harness, &handle).await.unwrap();
        let s = finished(&mut harness, &batch).await;
        assert_eq!(s.state(), pb::BatchState::Failed, "{what}");
        assert!(s.message.contains(expected), "{what}: {}", s.message);
        let result = s.result.unwrap();
        assert_eq!(result.status_message, s.message, "{what}");
        assert_eq!(result.status(), pb::EvalStatus::EndedEarly, "{what}");
        // The harness reads the same by session id.
        let by_session = common::result(&mut harness, &session, false).await;
        assert_eq!(by_session, result, "{what}");
        // Nothing was received: the record says so, and verifies.
        let text = read(&server.trajectory_path(&run_id));
        assert!(submission_events(&text).is_empty(), "{what}");
        ale_harness::verify::verify_trajectory(&text).unwrap();
        practice_round(&server).await;
    }
}

#[tokio::test]
async fn the_run_reads_a_snapshot_and_only_the_harness_sees_the_result() {
    let server = server_with(BatchOptions::default()).await;
    let original = linear_cartpole(ale_client::policy::CartPoleHeuristic::default().gains);
    let (handle, session, run_id) = server.official_env(TASK).await;
    let file = server.submission_dir(&run_id).join(ENTRYPOINT);
    std::fs::write(&file, &original).unwrap();
    let mut agent = server.agent().await;
    let batch = submit(&mut agent, &handle).await.unwrap();
    // Had the run read this, its policy could not be loaded and it would fail.
    std::fs::write(&file, b"changed after the submission").unwrap();

    let on_agent = finished(&mut agent, &batch).await;
    assert_eq!(
        on_agent.state(),
        pb::BatchState::Succeeded,
        "{}",
        on_agent.message
    );
    assert!(
        on_agent.result.is_none(),
        "the agent channel never carries the result"
    );
    assert!(!on_agent.message.is_empty());
    let mut harness = server.harness().await;
    let on_harness = status(&mut harness, &batch).await;
    assert_eq!(on_harness.state, on_agent.state);
    assert_eq!(on_harness.progress, 1.0);
    let result = on_harness.result.unwrap();
    assert_eq!(result.session_id, session);
    // The original policy's result: the heuristic's returns on the seeds drawn.
    let heuristic = ale_client::policy::CartPoleHeuristic::default();
    let expected: Vec<f64> = server
        .drawn_seeds()
        .iter()
        .map(|s| cartpole_return(*s, &mut heuristic.clone()))
        .collect();
    let got: Vec<f64> = result.episodes.iter().map(|e| e.episode_return).collect();
    assert_eq!(got, expected);
    let err = agent
        .get_eval_result(pb::GetEvalResultRequest {
            session_id: session.clone(),
            end_session: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);

    let text = read(&server.trajectory_path(&run_id));
    let received = submission_events(&text);
    assert_eq!(
        received,
        vec![SubmissionReceived {
            entrypoint: ENTRYPOINT.into(),
            format: "mlp-safetensors".into(),
            bytes: original.len() as u64,
            sha256: hex::encode(Sha256::digest(&original)),
        }]
    );
    let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
    assert_eq!(verified.submission, received.into_iter().next());
}

// ---------------------------------------------------------------------------------------------
// Real policy files (mlp-safetensors, written by `common::safetensors_file`), played for real.

/// The episode return of `policy` on cartpole from `seed`, played in-process.
fn cartpole_return(seed: u64, policy: &mut dyn ale_client::policy::Policy) -> f64 {
    let mut sim = ale_sims::catalog()
        .find("CartPole-v1")
        .unwrap()
        .build_plain(500)
        .unwrap();
    sim.reset(seed).unwrap();
    let mut total = 0.0;
    loop {
        let action = policy.act(sim.observation());
        let t = sim.step(&action).unwrap();
        total += t.reward;
        if t.is_done() {
            return total;
        }
    }
}

/// Submits `policy` on a new official env; (final status, run id).
async fn run_policy(
    server: &TestServer,
    policy: &[u8],
) -> (pb::GetBatchEvalStatusResponse, String) {
    let (handle, _, run_id) = server.official_env(TASK).await;
    std::fs::write(server.submission_dir(&run_id).join(ENTRYPOINT), policy).unwrap();
    let mut harness = server.harness().await;
    let batch = submit(&mut harness, &handle).await.unwrap();
    (finished(&mut harness, &batch).await, run_id)
}

#[tokio::test]
async fn a_linear_controller_scores_what_the_heuristic_scores_on_the_same_seeds() {
    let server = server_with(BatchOptions::default()).await;
    let heuristic = ale_client::policy::CartPoleHeuristic::default();
    let file = linear_cartpole(heuristic.gains);
    let (status, run_id) = run_policy(&server, &file).await;
    assert_eq!(
        status.state(),
        pb::BatchState::Succeeded,
        "{}",
        status.message
    );
    let result = status.result.unwrap();
    assert_eq!(result.status(), pb::EvalStatus::Completed);

    // The same controller as the client's heuristic, on the hidden seeds the run drew.
    let seeds = server.drawn_seeds();
    assert_eq!(seeds.len(), 8);
    let expected: Vec<f64> = seeds
        .iter()
        .map(|s| cartpole_return(*s, &mut heuristic.clone()))
        .collect();
    let got: Vec<f64> = result.episodes.iter().map(|e| e.episode_return).collect();
    assert_eq!(got, expected);
    let mean = expected.iter().sum::<f64>() / expected.len() as f64;
    assert!(
        (result.value - mean).abs() < 1e-9,
        "{} vs {mean}",
        result.value
    );

    // Its records verify; an altered rollout is caught.
    let text = read(&server.trajectory_path(&run_id));
    let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
    assert_eq!(verified.result.unwrap().value, result.value);
    let received = verified.submission.unwrap();
    assert_eq!(received.sha256, hex::encode(Sha256::digest(&file)));
    let lines: Vec<&str> = text.lines().collect();
    let finished_line = lines
        .iter()
        .position(|l| l.contains("\"kind\":\"rollout_finished\""))
        .unwrap();
    let mut altered = lines.clone();
    let edited = lines[finished_line].replacen("\"steps\":", "\"steps\":1", 1);
    assert_ne!(edited, lines[finished_line]);
    altered[finished_line] = &edited;
    let err = ale_harness::verify::verify_trajectory(&(altered.join("\n") + "\n")).unwrap_err();
    assert_eq!(err.line, finished_line + 1, "{err}");

    // A controller with arbitrary weights balances far worse.
    let (status, _) = run_policy(&server, &linear_cartpole([0.7, -1.3, -2.1, 0.4])).await;
    let worse = status.result.unwrap();
    assert_eq!(worse.status(), pb::EvalStatus::Completed);
    assert!(
        worse.value < result.value / 4.0,
        "{} vs {}",
        worse.value,
        result.value
    );
}

#[tokio::test]
async fn each_bad_policy_file_fails_its_run_naming_the_problem() {
    let server = server_with(BatchOptions::default()).await;
    let good = linear_cartpole([0.5, 1.0, 10.0, 2.0]);
    let hidden = |activation: &str| {
        safetensors_file(
            &[
                ("0.weight", vec![3, 4], vec![0.1; 12]),
                ("1.weight", vec![2, 3], vec![0.1; 6]),
            ],
            &[("activation", activation)],
        )
    };
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() - 8].to_vec(), "truncated"),
        (
            "wrong shapes",
            safetensors_file(&[("0.weight", vec![2, 3], vec![0.0; 6])], &[]),
            "flattens to 4",
        ),
        (
            "a NaN weight",
            safetensors_file(
                &[("0.weight", vec![2, 4], {
                    let mut w = vec![0.0; 8];
                    w[5] = f32::NAN;
                    w
                })],
                &[],
            ),
            "every value must be finite",
        ),
        (
            "an unknown activation",
            hidden("swish"),
            "unknown activation \"swish\"",
        ),
        ("not a policy at all", b"hello".to_vec(), "cannot be used"),
    ];
    for (what, file, expected) in cases {
        let (status, run_id) = run_policy(&server, &file).await;
        assert_eq!(status.state(), pb::BatchState::Failed, "{what}");
        assert!(
            status
                .message
                .starts_with("the submitted policy cannot be used: "),
            "{what}: {}",
            status.message
        );
        assert!(
            status.message.contains(expected),
            "{what}: {}",
            status.message
        );
        ale_harness::verify::verify_trajectory(&read(&server.trajectory_path(&run_id))).unwrap();
        practice_round(&server).await;
    }
    // A well-formed hidden layer runs.
    let (status, _) = run_policy(&server, &hidden("tanh")).await;
    assert_eq!(
        status.state(),
        pb::BatchState::Succeeded,
        "{}",
        status.message
    );
}

/// Two long runs at once both finish, sharing the pool, and a practice client on the agent
/// channel is served all the while.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_runs_at_once_both_finish_while_practice_is_served() {
    const LONG: &str = "cartpole-batch-long";
    let mut long = cartpole_variant(
        LONG,
        &[
            ("mode = \"interactive\"", "mode = \"batch\""),
            ("episodes = 20", "episodes = 300"),
            ("max_total_steps = 10000", "max_total_steps = 0"),
        ],
    );
    long.push_str(
        "\n[submission]\nsubmission_path = \"/run/ale/submission\"\nentrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n",
    );
    let server = TestServer::start_with_batch(
        &[batch_task(), ("long.toml", long)],
        ale_server::Limits::default(),
        BatchOptions::default(),
    )
    .await;
    let heuristic = ale_client::policy::CartPoleHeuristic::default();
    let mut harness = server.harness().await;
    let (first, _, first_run) = server.official_env(LONG).await;
    let (second, _, second_run) = server.official_env(LONG).await;
    for run in [&first_run, &second_run] {
        std::fs::write(
            server.submission_dir(run).join(ENTRYPOINT),
            linear_cartpole(heuristic.gains),
        )
        .unwrap();
    }
    let runs = [
        submit(&mut harness, &first).await.unwrap(),
        submit(&mut harness, &second).await.unwrap(),
    ];
    // Practice rounds while both runs are in flight.
    let mut served_during = 0;
    loop {
        let states: Vec<pb::BatchState> = {
            let mut states = Vec::new();
            for run in &runs {
                states.push(status(&mut harness, run).await.state());
            }
            states
        };
        if states
            .iter()
            .all(|s| matches!(s, pb::BatchState::Succeeded | pb::BatchState::Failed))
        {
            break;
        }
        practice_round(&server).await;
        if states.iter().all(|s| *s == pb::BatchState::Running) {
            served_during += 1;
        }
    }
    for run in &runs {
        let s = status(&mut harness, run).await;
        assert_eq!(s.state(), pb::BatchState::Succeeded, "{}", s.message);
        let result = s.result.unwrap();
        assert_eq!(result.episodes.len(), 300);
        assert_eq!(result.status(), pb::EvalStatus::Completed);
    }
    assert!(
        served_during > 0,
        "no practice round was served while both runs were running"
    );
}
