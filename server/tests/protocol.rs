//! The AleEnv protocol over real gRPC: a server on 127.0.0.1 and on a Unix socket.

mod common;

use ale_client::policy::{CartPoleHeuristic, Policy};
use ale_client::{Client, play_episode};
use ale_proto::eval::{EvalResultRecord, EvalStatus, Outcome};
use ale_proto::pb;
use ale_sim::{Tensor, TensorData};
use common::{TestServer, action, result};
use tonic::Code;

/// Every observation of one practice episode from `seed`, with a deliberately weak policy so
/// the episode terminates early.
async fn episode(env: &mut ale_client::Env, seed: u64) -> Vec<Tensor> {
    let mut observations = vec![env.reset(Some(seed)).await.unwrap().observation];
    let mut policy = CartPoleHeuristic {
        gains: [0.0, 0.0, 1.0, 0.1],
    };
    loop {
        let a = policy.act(observations.last().unwrap());
        let step = env.step(&a).await.unwrap();
        assert_eq!(step.reward, 1.0);
        observations.push(step.observation.clone());
        if step.is_done() {
            return observations;
        }
    }
}

#[tokio::test]
async fn a_practice_episode_is_reproducible_from_its_seed() {
    let t = TestServer::start().await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let tasks = client.list_tasks().await.unwrap();
    assert!(tasks.iter().any(|t| t.id == "cartpole-balance"));

    let mut env = client.create("cartpole-balance").await.unwrap();
    let spec = env.spec().clone();
    assert!(!spec.official);
    assert_eq!(spec.action_space.to_string(), "Discrete(2)");
    assert_eq!(spec.task.episodes_per_eval, 20);

    let first = episode(&mut env, 7).await;
    let again = episode(&mut env, 7).await;
    let other = episode(&mut env, 8).await;
    assert!(first.len() > 2);
    assert_eq!(first, again);
    assert_ne!(first, other);

    // The evaluator's episode is the sim's own episode from that seed.
    let mut sim = ale_sims::catalog()
        .find("CartPole-v1")
        .unwrap()
        .build_plain(500)
        .unwrap();
    sim.reset(7).unwrap();
    assert_eq!(sim.observation(), &first[0]);
}

#[tokio::test]
async fn the_agent_channel_cannot_create_official_envs_or_read_results() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let err = agent
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);

    let (_, session, _) = t.official_env("cartpole-balance").await;
    for end_session in [false, true] {
        let err = agent
            .get_eval_result(pb::GetEvalResultRequest {
                session_id: session.clone(),
                end_session,
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied);
    }
    // The harness channel can; the session has not started, so there is nothing yet.
    let err = t
        .harness()
        .await
        .get_eval_result(pb::GetEvalResultRequest {
            session_id: session,
            end_session: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
}

/// Plays an agent that records every byte it receives, and searches them for each hidden seed.
#[tokio::test]
async fn no_response_on_the_agent_channel_carries_a_hidden_seed() {
    use prost::Message;
    let t = TestServer::start().await;
    let (handle, session_id, _) = t.official_env("cartpole-balance").await;
    let mut agent = t.agent().await;
    let mut received: Vec<u8> = Vec::new();
    let mut record = |bytes: Vec<u8>| received.extend(bytes);

    let spec = agent
        .get_spec(pb::GetSpecRequest {
            handle: handle.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    record(spec.encode_to_vec());
    let start = agent
        .start_eval_session(pb::StartEvalSessionRequest {
            handle: handle.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(start.session_id, session_id);
    record(start.encode_to_vec());
    let mut policy = CartPoleHeuristic::default();
    for episode in 0..start.episodes {
        let reset = agent
            .reset(pb::ResetRequest {
                handle: handle.clone(),
                seed: Some(u64::from(episode)),
                ..Default::default()
            })
            .await
            .unwrap()
            .into_inner();
        record(reset.encode_to_vec());
        let mut obs = Tensor::try_from(reset.observation.unwrap()).unwrap();
        // Short episodes keep the test quick; every third one is aborted mid-way.
        for step in 0.. {
            if episode % 3 == 2 && step == 5 {
                break;
            }
            let resp = agent
                .step(pb::StepRequest {
                    handle: handle.clone(),
                    action: Some(policy.act(&obs).into()),
                })
                .await
                .unwrap()
                .into_inner();
            record(resp.encode_to_vec());
            if resp.terminated || resp.truncated {
                break;
            }
            obs = Tensor::try_from(resp.observation.unwrap()).unwrap();
        }
    }
    // Errors are responses too.
    for status in [
        agent
            .reset(pb::ResetRequest {
                handle: handle.clone(),
                seed: None,
                ..Default::default()
            })
            .await
            .unwrap_err(),
        agent
            .get_eval_result(pb::GetEvalResultRequest {
                session_id: session_id.clone(),
                end_session: false,
            })
            .await
            .unwrap_err(),
    ] {
        record(status.message().as_bytes().to_vec());
        record(status.details().to_vec());
    }

    let seeds = t.drawn_seeds();
    assert_eq!(seeds.len(), 20);
    assert!(
        received.len() > 10_000,
        "the spy saw only {} bytes",
        received.len()
    );
    for seed in seeds {
        for pattern in [seed.to_be_bytes(), seed.to_le_bytes()] {
            assert!(
                !received.windows(8).any(|w| w == pattern),
                "a hidden seed reached the agent"
            );
        }
        // Nor in decimal or hex text.
        let text = String::from_utf8_lossy(&received);
        assert!(!text.contains(&seed.to_string()));
        assert!(!text.contains(&format!("{seed:016x}")));
    }
}

#[tokio::test]
async fn a_mid_episode_reset_aborts_the_rollout_and_client_seeds_are_ignored() {
    let t = TestServer::start().await;
    let (mut env, session, _) = t.attached_official_env("cartpole-balance").await;
    assert!(env.spec().official);

    // Before the session: no episodes on the official env.
    let err = env.reset(None).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::FailedPrecondition));

    env.start_eval_session().await.unwrap();
    let seeds = t.drawn_seeds();
    // Rollout 0, asked for seed 7: the evaluator plays its hidden seed 0 instead.
    let first = env.reset(Some(7)).await.unwrap();
    let mut sim = ale_sims::catalog()
        .find("CartPole-v1")
        .unwrap()
        .build_plain(500)
        .unwrap();
    sim.reset(seeds[0]).unwrap();
    assert_eq!(&first.observation, sim.observation());
    sim.reset(7).unwrap();
    assert_ne!(&first.observation, sim.observation());
    env.step(&Tensor::scalar_i64(0)).await.unwrap();
    env.step(&Tensor::scalar_i64(1)).await.unwrap();

    // A Reset now aborts rollout 0 and starts rollout 1 on hidden seed 1.
    let second = env.reset(Some(7)).await.unwrap();
    sim.reset(seeds[1]).unwrap();
    assert_eq!(&second.observation, sim.observation());

    let mut harness = t.harness().await;
    let r = EvalResultRecord::try_from(result(&mut harness, &session, false).await).unwrap();
    assert_eq!(r.status, EvalStatus::Running);
    assert_eq!(r.episodes.len(), 20, "an aborted rollout is not replaced");
    assert_eq!(r.episodes[0].outcome, Outcome::Aborted);
    assert_eq!(r.episodes[0].metric, 0.0);
    assert_eq!(r.episodes[0].steps, 2);
    assert_eq!(r.episodes[1].outcome, Outcome::InProgress);
    assert_eq!(r.value, 0.0, "only the aborted rollout has finished");

    // Play the rest properly.
    let mut policy = CartPoleHeuristic::default();
    let mut obs = second.observation;
    loop {
        let s = env.step(&policy.act(&obs)).await.unwrap();
        if s.is_done() {
            break;
        }
        obs = s.observation;
    }
    for _ in 2..20 {
        play_episode(&mut env, &mut policy, Some(1)).await.unwrap();
    }
    let r = EvalResultRecord::try_from(result(&mut harness, &session, false).await).unwrap();
    assert_eq!(r.status, EvalStatus::Completed);
    assert_eq!(r.value, 19.0 * 500.0 / 20.0);
    assert_eq!(r.total_steps, 2 + 19 * 500);
    let err = env.reset(None).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::FailedPrecondition));
    assert!(err.to_string().contains("finished"), "{err}");
}

#[tokio::test]
async fn two_sessions_draw_different_seeds_and_commitments() {
    let t = TestServer::start().await;
    let mut results = Vec::new();
    for _ in 0..2 {
        let (mut env, session, _) = t.attached_official_env("cartpole-balance").await;
        env.start_eval_session().await.unwrap();
        let mut h = t.harness().await;
        results.push(result(&mut h, &session, true).await);
    }
    let seeds = t.drawn_seeds();
    assert_eq!(seeds.len(), 40);
    let (a, b) = seeds.split_at(20);
    assert!(a.iter().all(|s| !b.contains(s)));
    let commitments: std::collections::HashSet<_> = results
        .iter()
        .flat_map(|r| r.seed_commitments.clone())
        .collect();
    assert_eq!(commitments.len(), 40);
}

#[tokio::test]
async fn each_bad_input_gets_its_code_and_leaves_the_env_usable() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    let step = |a: Option<pb::Tensor>| pb::StepRequest {
        handle: handle.clone(),
        action: a,
    };

    // Step before reset.
    let err = agent.step(step(action(0))).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("Reset"), "{}", err.message());

    let reset = agent
        .reset(pb::ResetRequest {
            handle: handle.clone(),
            seed: Some(3),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let mut reference = ale_sims::catalog()
        .find("CartPole-v1")
        .unwrap()
        .build_plain(500)
        .unwrap();
    reference.reset(3).unwrap();
    assert_eq!(
        Tensor::try_from(reset.observation.unwrap()).unwrap(),
        *reference.observation()
    );

    let float = |v: f32| Some(Tensor::vector_f32(vec![v]).into());
    let bad: Vec<(&str, Option<pb::Tensor>, &str)> = vec![
        (
            "wrong dtype",
            float(1.0),
            "expected dtype int64, got float32",
        ),
        ("NaN", float(f32::NAN), "expected dtype int64, got float32"),
        (
            "wrong shape",
            Some(
                Tensor::new(vec![1], TensorData::I64(vec![1]))
                    .unwrap()
                    .into(),
            ),
            "expected shape [], got [1]",
        ),
        (
            "out of bounds",
            action(2),
            "expected an integer in 0..=1, got 2",
        ),
        (
            "negative",
            action(-1),
            "expected an integer in 0..=1, got -1",
        ),
        (
            "data that disagrees with its shape",
            Some(pb::Tensor {
                dtype: pb::DType::DtypeInt64 as i32,
                shape: vec![3],
                i64: vec![1],
                ..Default::default()
            }),
            "holds 3 elements, but 1 were given",
        ),
        ("no dtype", Some(pb::Tensor::default()), "dtype is unset"),
        ("no action", None, "action is missing"),
    ];
    for (what, a, detail) in bad {
        let err = agent.step(step(a)).await.unwrap_err();
        assert_eq!(
            err.code(),
            Code::InvalidArgument,
            "{what}: {}",
            err.message()
        );
        assert!(err.message().contains(detail), "{what}: {}", err.message());
        if what != "no action"
            && !err.message().contains("tensor")
            && !err.message().contains("dtype is unset")
        {
            assert!(
                err.message().contains("Discrete(2)"),
                "{what}: {}",
                err.message()
            );
        }
    }

    // Unknown handle.
    let err = agent
        .step(pb::StepRequest {
            handle: "env-nope".into(),
            action: action(0),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = agent
        .get_spec(pb::GetSpecRequest {
            handle: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = agent
        .create_env(pb::CreateEnvRequest {
            task_id: "no-such-task".into(),
            official: false,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert!(
        err.message().contains("cartpole-balance"),
        "lists known tasks: {}",
        err.message()
    );

    // None of that changed the episode: it continues exactly like the reference.
    let mut steps = 0;
    loop {
        let r = agent.step(step(action(1))).await.unwrap().into_inner();
        let want = reference.step(&Tensor::scalar_i64(1)).unwrap();
        assert_eq!(
            Tensor::try_from(r.observation.unwrap()).unwrap(),
            *reference.observation()
        );
        assert_eq!(
            (r.terminated, r.truncated),
            (want.terminated, want.truncated)
        );
        steps += 1;
        if r.terminated {
            break;
        }
    }
    assert!(steps > 5);
    // Step after termination, then a reset makes it usable again.
    let err = agent.step(step(action(1))).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    common::reset(&mut agent, &handle, None).await;
    agent.step(step(action(1))).await.unwrap();
}

#[tokio::test]
async fn practice_envs_cannot_run_eval_sessions_and_batch_rpcs_say_why() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    let err = agent
        .start_eval_session(pb::StartEvalSessionRequest {
            handle: handle.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("practice env"), "{}", err.message());

    let err = agent
        .submit_batch_eval(pb::SubmitBatchEvalRequest { handle })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
    assert!(err.message().contains("practice env"), "{}", err.message());
    let err = agent
        .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
            batch_id: "bat-1".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    let (official, _, _) = t.official_env("cartpole-balance").await;
    agent
        .start_eval_session(pb::StartEvalSessionRequest {
            handle: official.clone(),
        })
        .await
        .unwrap();
    let err = agent
        .start_eval_session(pb::StartEvalSessionRequest { handle: official })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn the_step_budget_ends_the_session_and_fails_the_rest() {
    let task = common::cartpole_variant(
        "cartpole-tight",
        &[
            ("episodes = 20", "episodes = 3"),
            ("max_total_steps = 10000", "max_total_steps = 600"),
        ],
    );
    let t = TestServer::start_with(&[("tight.toml", task)], Default::default()).await;
    let (mut env, session, _) = t.attached_official_env("cartpole-tight").await;
    env.start_eval_session().await.unwrap();
    let mut policy = CartPoleHeuristic::default();
    assert_eq!(
        play_episode(&mut env, &mut policy, None)
            .await
            .unwrap()
            .episode_return,
        500.0
    );
    let err = play_episode(&mut env, &mut policy, None).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::FailedPrecondition));
    assert!(err.to_string().contains("step budget of 600"), "{err}");
    let r =
        EvalResultRecord::try_from(result(&mut t.harness().await, &session, false).await).unwrap();
    assert_eq!(r.status, EvalStatus::BudgetExceeded);
    let outcomes: Vec<_> = r.episodes.iter().map(|e| (e.outcome, e.steps)).collect();
    assert_eq!(
        outcomes,
        [
            (Outcome::Completed, 500),
            (Outcome::BudgetExceeded, 100),
            (Outcome::NotRun, 0)
        ]
    );
    assert_eq!(r.value, 500.0 / 3.0);
}

#[tokio::test]
async fn the_time_budget_ends_an_idle_session() {
    let task = common::cartpole_variant(
        "cartpole-quick",
        &[("time_budget_seconds = 600", "time_budget_seconds = 1")],
    );
    let t = TestServer::start_with(&[("quick.toml", task)], Default::default()).await;
    let (mut env, session, _) = t.attached_official_env("cartpole-quick").await;
    env.start_eval_session().await.unwrap();
    env.reset(None).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    // The harness's read notices the deadline even though the agent went quiet.
    let r =
        EvalResultRecord::try_from(result(&mut t.harness().await, &session, false).await).unwrap();
    assert_eq!(r.status, EvalStatus::BudgetExceeded);
    assert!(
        r.status_message.contains("time budget"),
        "{}",
        r.status_message
    );
    assert_eq!(r.episodes[0].outcome, Outcome::BudgetExceeded);
    let err = env.step(&Tensor::scalar_i64(0)).await.unwrap_err();
    assert_eq!(err.code(), Some(Code::FailedPrecondition));
}

#[tokio::test]
async fn the_trajectory_verifies_and_matches_the_result_and_a_flipped_byte_is_caught() {
    let t = TestServer::start().await;
    let (mut env, session, run_id) = t.attached_official_env("cartpole-balance").await;
    env.start_eval_session().await.unwrap();
    let mut policy = CartPoleHeuristic::default();
    for _ in 0..3 {
        play_episode(&mut env, &mut policy, None).await.unwrap();
    }
    env.reset(None).await.unwrap();
    env.step(&Tensor::scalar_i64(0)).await.unwrap();
    // The harness ends the session: rollout 3 aborted, 4..19 not run.
    let r =
        EvalResultRecord::try_from(result(&mut t.harness().await, &session, true).await).unwrap();
    assert_eq!(r.status, EvalStatus::EndedEarly);
    assert_eq!(r.episodes[3].outcome, Outcome::Aborted);
    assert_eq!(r.episodes[19].outcome, Outcome::NotRun);
    assert_eq!(r.value, 3.0 * 500.0 / 20.0);

    let path = t.trajectory_path(&run_id);
    let text = common::read(&path);
    let chain = ale_records::trajectory::verify(&text).unwrap();
    assert_eq!(chain.head, r.trajectory_head);
    use ale_records::trajectory::EventKind::*;
    let kinds: Vec<_> = chain.events.iter().map(|e| e.event.kind).collect();
    assert_eq!(kinds[..3], [RunStarted, SessionStarted, RolloutStarted]);
    assert_eq!(*kinds.last().unwrap(), SessionFinished);
    assert_eq!(kinds.iter().filter(|k| **k == RolloutFinished).count(), 4);
    let last: EvalResultRecord =
        serde_json::from_value(chain.events.last().unwrap().event.data.clone()).unwrap();
    assert_eq!(last.episodes, r.episodes);
    assert_eq!(last.seed_commitments, r.seed_commitments);
    // The commitments are SHA256(seed ‖ run id ‖ secret) of the seeds actually drawn.
    let secret: [u8; 32] = std::fs::read(t.state_dir().join("evaluator.secret"))
        .unwrap()
        .try_into()
        .unwrap();
    let run = ale_proto::RunId::from_wire(run_id);
    for (seed, c) in t.drawn_seeds().iter().zip(&r.seed_commitments) {
        assert_eq!(&ale_records::seed_commitment(*seed, &run, &secret), c);
    }

    let mut bytes = text.into_bytes();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x04;
    let tampered = String::from_utf8_lossy(&bytes);
    assert!(ale_records::trajectory::verify(&tampered).is_err());
}

#[tokio::test]
async fn shutdown_ends_running_sessions_in_the_trajectory() {
    let t = TestServer::start().await;
    let (mut env, _, run_id) = t.attached_official_env("cartpole-balance").await;
    env.start_eval_session().await.unwrap();
    env.reset(None).await.unwrap();
    let path = t.trajectory_path(&run_id);
    let socket = t.server.harness_socket().to_path_buf();
    let TestServer { server, dir, .. } = t;
    server.shutdown().await;
    assert!(!socket.exists());
    let chain = ale_records::trajectory::verify(&common::read(&path)).unwrap();
    let last = chain.events.last().unwrap();
    assert_eq!(
        last.event.kind,
        ale_records::trajectory::EventKind::SessionFinished
    );
    let r: EvalResultRecord = serde_json::from_value(last.event.data.clone()).unwrap();
    assert_eq!(r.status, EvalStatus::EvaluatorEnded);
    assert!(r.status_message.contains("shut down"));
    drop(dir);
}

#[tokio::test]
async fn an_oversized_request_is_resource_exhausted_and_changes_nothing() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    common::reset(&mut agent, &handle, Some(1)).await;
    let huge = Tensor::new(vec![5_000_000], TensorData::U8(vec![0; 5_000_000])).unwrap();
    let err = agent
        .step(pb::StepRequest {
            handle: handle.clone(),
            action: Some(huge.into()),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{}", err.message());
    let r = agent
        .step(pb::StepRequest {
            handle,
            action: action(1),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        r.info["episode_steps"].kind,
        Some(pb::value::Kind::Integer(1))
    );
}

/// Regression: a shape whose element count overflows must be refused, not panic or wrap.
#[tokio::test]
async fn a_shape_that_overflows_is_invalid_argument() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    common::reset(&mut agent, &handle, Some(1)).await;
    for shape in [
        vec![1i64 << 32, 1 << 32],
        vec![i64::MAX, 2],
        vec![1 << 62, 1 << 62, 0],
    ] {
        let err = agent
            .step(pb::StepRequest {
                handle: handle.clone(),
                action: Some(pb::Tensor {
                    dtype: pb::DType::DtypeInt64 as i32,
                    shape: shape.clone(),
                    ..Default::default()
                }),
            })
            .await
            .unwrap_err();
        assert_eq!(
            err.code(),
            Code::InvalidArgument,
            "{shape:?}: {}",
            err.message()
        );
    }
    agent
        .step(pb::StepRequest {
            handle,
            action: action(1),
        })
        .await
        .unwrap();
}

/// The first observation of the first `n` rollouts of an official run of cartpole-balance on
/// `seed_set` (each Reset starts the next rollout, aborting the one before), and the run's id.
async fn first_observations(t: &TestServer, seed_set: &str, n: usize) -> (Vec<Tensor>, String) {
    let created = t
        .harness()
        .await
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            seed_set: seed_set.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let mut env = client
        .attach(ale_proto::EnvHandle::from_wire(created.handle))
        .await
        .unwrap();
    env.start_eval_session().await.unwrap();
    let mut firsts = Vec::new();
    for _ in 0..n {
        firsts.push(env.reset(None).await.unwrap().observation);
    }
    (firsts, created.run_id)
}

/// The `seed_set` a run's `run_started` event records.
fn recorded_seed_set(t: &TestServer, run_id: &str) -> Option<serde_json::Value> {
    let dir = ale_records::layout::run_dir(&t.state_dir(), &ale_proto::RunId::from_wire(run_id));
    let text = std::fs::read_to_string(dir.join("trajectory.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    first["data"].get("seed_set").cloned()
}

#[tokio::test]
async fn runs_on_one_seed_set_play_the_same_hidden_seeds_and_say_so_without_showing_them() {
    let t = TestServer::start().await;
    let (a, run_a) = first_observations(&t, "benchmark", 3).await;
    let (b, run_b) = first_observations(&t, "benchmark", 3).await;
    let (holdout, run_h) = first_observations(&t, "holdout", 3).await;
    let (fresh, run_f) = first_observations(&t, "", 3).await;
    assert_eq!(a, b, "one set: the same scenes, rollout for rollout");
    assert_ne!(a[0], a[1], "each rollout its own seed");
    assert_ne!(a, holdout);
    assert_ne!(a, fresh);
    // The records: one commitment per set, the same in both runs; none for fresh seeds.
    let (set_a, set_b, set_h) = (
        recorded_seed_set(&t, &run_a).unwrap(),
        recorded_seed_set(&t, &run_b).unwrap(),
        recorded_seed_set(&t, &run_h).unwrap(),
    );
    assert_eq!(set_a, set_b);
    assert_eq!(set_a["name"], "benchmark");
    assert_ne!(set_a["commitment"], set_h["commitment"]);
    assert_eq!(recorded_seed_set(&t, &run_f), None);
    // The seed-set seeds never came from the evaluator's fresh draws: only the fresh run's.
    assert_eq!(t.drawn_seeds().len(), 20);
    // Per-rollout commitments still mix in the run id: no line repeats between the runs.
    let commitments = |run: &str| {
        let dir = ale_records::layout::run_dir(&t.state_dir(), &ale_proto::RunId::from_wire(run));
        std::fs::read_to_string(dir.join("trajectory.jsonl")).unwrap()
    };
    let (text_a, text_b) = (commitments(&run_a), commitments(&run_b));
    let line_a: serde_json::Value = serde_json::from_str(
        text_a
            .lines()
            .find(|l| l.contains("session_started"))
            .unwrap(),
    )
    .unwrap();
    for c in line_a["data"]["seed_commitments"].as_array().unwrap() {
        assert!(!text_b.contains(c.as_str().unwrap()));
    }
}

#[tokio::test]
async fn a_seed_set_is_refused_for_practice_and_when_the_task_lacks_it_and_makes_nothing() {
    let t = TestServer::start().await;
    let runs = || {
        std::fs::read_dir(ale_records::layout::runs_dir(&t.state_dir()))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    let before = runs();
    let mut harness = t.harness().await;
    let unknown = harness
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            seed_set: "paper".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::InvalidArgument);
    assert!(
        unknown
            .message()
            .contains("no evaluation seed set \"paper\"")
            && unknown.message().contains("benchmark, holdout"),
        "{}",
        unknown.message()
    );
    let practice = harness
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            seed_set: "benchmark".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(practice.code(), Code::InvalidArgument);
    assert!(
        practice.message().contains("official"),
        "{}",
        practice.message()
    );
    assert_eq!(runs(), before, "a refused request makes no run");
    // The agent channel cannot make an official env at all, seed set or not.
    let mut agent = t.agent().await;
    let err = agent
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            seed_set: "benchmark".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    // The task says which sets it has.
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    let spec = agent
        .get_spec(pb::GetSpecRequest { handle })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(spec.task.unwrap().seed_sets, ["benchmark", "holdout"]);
}
