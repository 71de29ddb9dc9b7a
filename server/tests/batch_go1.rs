//! go1-joystick in batch mode over a real server: a submitted MLP is rolled out on the Go1
//! (MuJoCo) and scored by the tracking its rollouts measure, exactly as the same policy
//! played in-process on the seeds the run drew. Without MuJoCo built in, the task is still
//! listed and its official env says how to get the library.

mod common;

use std::time::Duration;

use ale_proto::pb::{self, ale_env_client::AleEnvClient};
use ale_server::{BatchOptions, Limits};
use ale_sim::{Sim, SimCatalog, Tensor};
use common::*;
use tonic::Code;
use tonic::transport::Channel;

const TASK: &str = "go1-joystick";
const ENTRYPOINT: &str = "policy.safetensors";
const OBSERVATION_LEN: usize = ale_sims_go1::layout::OBSERVATION_LEN;
const ACTION_LEN: usize = ale_sims_go1::layout::ACTION_LEN;

/// The bundled sims and the Go1.
fn catalog() -> SimCatalog {
    let mut catalog = ale_sims::catalog();
    ale_sims_go1::add_to(&mut catalog).unwrap();
    catalog
}

/// The embedded task with 4 rollouts instead of 32, to keep the test short.
fn task() -> (&'static str, String) {
    let text = include_str!("../tasks/go1-joystick.toml");
    assert!(text.contains("episodes = 32\n"));
    (
        "go1-joystick.toml",
        text.replace("episodes = 32\n", "episodes = 4\n"),
    )
}

async fn server() -> TestServer {
    TestServer::start_on(
        &catalog(),
        tempfile::tempdir().unwrap(),
        &[task()],
        Limits::default(),
        BatchOptions::default(),
        ale_server::serve::ServeOptions::default(),
    )
    .await
}

/// A linear policy whose action is `action` whatever it observes (zero weights).
fn constant_policy(action: [f32; ACTION_LEN]) -> Vec<u8> {
    safetensors_file(
        &[
            (
                "0.weight",
                vec![ACTION_LEN, OBSERVATION_LEN],
                vec![0.0; ACTION_LEN * OBSERVATION_LEN],
            ),
            ("0.bias", vec![ACTION_LEN], action.to_vec()),
        ],
        &[],
    )
}

/// The constant action played in-process from `seed`: (tracking_lin_vel, falls, steps).
fn in_process(seed: u64, action: [f32; ACTION_LEN]) -> (f64, f64, u64) {
    let mut sim = ale_sims_go1::Go1Joystick::new(1000).unwrap();
    sim.reset(seed).unwrap();
    let action = Tensor::vector_f32(action.to_vec());
    let mut steps = 0;
    while !sim.step(&action).unwrap().is_done() {
        steps += 1;
    }
    let counter = |name: &str| {
        sim.counters()
            .iter()
            .find(|c| c.name == name)
            .unwrap()
            .value
    };
    (counter("tracking_lin_vel"), counter("falls"), steps + 1)
}

async fn finished(
    client: &mut AleEnvClient<Channel>,
    batch_id: &str,
) -> pb::GetBatchEvalStatusResponse {
    for _ in 0..1200 {
        let s = client
            .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
                batch_id: batch_id.into(),
            })
            .await
            .unwrap()
            .into_inner();
        if is_finished(&s) {
            return s;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("batch run {batch_id} did not finish in 120 s");
}

/// Submits `policy` on a new official env; the run's result.
async fn run_policy(server: &TestServer, policy: &[u8]) -> pb::EvalResult {
    let (handle, _, run_id) = server.official_env(TASK).await;
    std::fs::write(server.submission_dir(&run_id).join(ENTRYPOINT), policy).unwrap();
    let mut harness = server.harness().await;
    let batch = submit(&mut harness, &handle).await.unwrap();
    let status = finished(&mut harness, &batch).await;
    assert_eq!(
        status.state(),
        pb::BatchState::Succeeded,
        "{}",
        status.message
    );
    status.result.unwrap()
}

#[tokio::test]
async fn a_submitted_mlp_is_scored_by_the_tracking_its_rollouts_measure() {
    let server = server().await;
    if !ale_sims_go1::MUJOCO_BUILT_IN {
        // Listed, with its spaces; the official env says how to get MuJoCo.
        let err = server
            .harness()
            .await
            .create_env(pb::CreateEnvRequest {
                task_id: TASK.into(),
                official: true,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
        assert!(
            err.message().contains("scripts/fetch-mujoco"),
            "{}",
            err.message()
        );
        return;
    }

    // Standing in the default pose, then crouched (every knee 0.2 rad further bent).
    let mut crouch = [0.0; ACTION_LEN];
    for leg in 0..4 {
        crouch[leg * 3 + 2] = -0.4;
    }
    let mut seen = 0;
    for action in [[0.0; ACTION_LEN], crouch] {
        let result = run_policy(&server, &constant_policy(action)).await;
        assert_eq!(result.status(), pb::EvalStatus::Completed);
        assert_eq!(result.metric_name, "mean_tracking_lin_vel");
        let seeds = server.drawn_seeds();
        let seeds = &seeds[seen..];
        seen += seeds.len();
        assert_eq!(seeds.len(), 4);
        assert_eq!(result.episodes.len(), 4);
        let (mut tracked, mut fell, mut played) = (0.0, 0.0, 0);
        for (episode, seed) in result.episodes.iter().zip(seeds) {
            let (tracking, falls, steps) = in_process(*seed, action);
            assert_eq!(episode.metric, tracking, "seed {seed}");
            assert_eq!(episode.steps, steps, "seed {seed}");
            assert_eq!(episode.safety.get("falls"), Some(&falls), "seed {seed}");
            // Holding a pose, the robot tracks only as well as the command is near zero; from
            // a few starts (about 3 in 100 standing) it topples, which ends the episode early.
            assert!((0.0..=1.0).contains(&tracking), "{tracking}");
            assert!(falls == 0.0 && steps == 1000 || falls == 1.0 && steps < 1000);
            (tracked, fell, played) = (tracked + tracking, fell + falls, played + steps);
        }
        assert!(
            (result.value - tracked / 4.0).abs() < 1e-12,
            "{}",
            result.value
        );
        assert_eq!(result.safety.get("falls"), Some(&fell));
        assert_eq!(result.total_steps, played);
    }
}
