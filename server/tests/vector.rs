//! Practice vector envs over real gRPC: one handle, N sub-envs, one call a step; the same
//! trajectories as single envs; Gymnasium's autoreset modes; every check before anything
//! steps; caps that count sub-envs.

mod common;

use std::time::Duration;

use ale_client::{AutoresetMode, Client, InfoValue, VecReset};
use ale_proto::pb;
use ale_server::{EnvCounts, Limits};
use ale_sim::{Rng, Space, Tensor, TensorData};
use common::TestServer;
use tonic::Code;

fn discrete(actions: &[i64]) -> Tensor {
    Tensor::new(vec![actions.len()], TensorData::I64(actions.to_vec())).unwrap()
}

fn boxed(rows: &[f32]) -> Tensor {
    Tensor::new(vec![rows.len(), 1], TensorData::F32(rows.to_vec())).unwrap()
}

fn column(info: &ale_client::Info, key: &str) -> Tensor {
    match info.get(key) {
        Some(InfoValue::Tensor(t)) => t.clone(),
        other => panic!("info {key}: {other:?}"),
    }
}

fn row(batch: &Tensor, i: usize) -> Vec<f64> {
    let per: usize = batch.shape()[1..].iter().product();
    batch.to_f64_vec()[i * per..(i + 1) * per].to_vec()
}

#[tokio::test]
async fn a_vector_env_plays_exactly_what_single_envs_on_the_same_seeds_play() {
    let t = TestServer::start().await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    const N: usize = 5;
    let mut envs = client
        .create_vec("cartpole-balance", N as u32, AutoresetMode::Disabled)
        .await
        .unwrap();
    assert_eq!(envs.num_envs(), N);
    assert_eq!(envs.spec().observation_space.shape(), vec![4]);
    let mut singles = Vec::new();
    for _ in 0..N {
        singles.push(client.create("cartpole-balance").await.unwrap());
    }
    let first = envs.reset(VecReset::seeded(40)).await.unwrap();
    assert_eq!(first.observation.shape(), &[N, 4]);
    for (i, single) in singles.iter_mut().enumerate() {
        let one = single.reset(Some(40 + i as u64)).await.unwrap();
        assert_eq!(row(&first.observation, i), one.observation.to_f64_vec());
    }
    let mut rng = Rng::new(3);
    let mut episodes = 0;
    for _ in 0..300 {
        let actions: Vec<i64> = (0..N).map(|_| (rng.next_u64() % 2) as i64).collect();
        let step = envs.step(&discrete(&actions)).await.unwrap();
        let mut ended = vec![false; N];
        for (i, single) in singles.iter_mut().enumerate() {
            let one = single.step(&Tensor::scalar_i64(actions[i])).await.unwrap();
            assert_eq!(row(&step.observation, i), one.observation.to_f64_vec());
            assert_eq!(step.rewards[i], one.reward);
            assert_eq!(step.terminations[i], one.terminated);
            assert_eq!(step.truncations[i], one.truncated);
            ended[i] = one.is_done();
        }
        if ended.contains(&true) {
            episodes += ended.iter().filter(|e| **e).count();
            // Ended sub-envs start again from seeds of their own, as the singles do.
            let seeds: Vec<u64> = (0..N as u64).map(|i| 1000 + i + episodes as u64).collect();
            envs.reset(VecReset {
                seeds: seeds.clone(),
                mask: ended.clone(),
                ..VecReset::default()
            })
            .await
            .unwrap();
            for (i, single) in singles.iter_mut().enumerate() {
                if ended[i] {
                    single.reset(Some(seeds[i])).await.unwrap();
                }
            }
        }
    }
    assert!(
        episodes >= 5,
        "several episodes ended and restarted: {episodes}"
    );
}

#[tokio::test]
async fn next_step_autoreset_resets_on_the_step_after_the_end_with_reward_zero() {
    let t = TestServer::start().await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let mut envs = client
        .create_vec("cartpole-balance", 2, AutoresetMode::NextStep)
        .await
        .unwrap();
    envs.reset(VecReset::seeded(0)).await.unwrap();
    let mut ended_at = None;
    for t in 0..600 {
        let step = envs.step(&discrete(&[1, 0])).await.unwrap();
        let steps = column(&step.info, "episode_steps");
        if ended_at.is_some() {
            assert_eq!(step.rewards[0], 0.0);
            assert!(!step.terminations[0] && !step.truncations[0]);
            assert_eq!(steps.to_f64_vec()[0], 0.0, "sub-env 0 began again");
            assert_eq!(steps.to_f64_vec()[1], (t + 1) as f64, "sub-env 1 played on");
            break;
        }
        if step.terminations[0] {
            ended_at = Some(t);
        }
    }
    assert!(ended_at.is_some());
}

#[tokio::test]
async fn same_step_autoreset_hands_back_the_last_observation_and_info() {
    let t = TestServer::start().await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let mut envs = client
        .create_vec("cartpole-balance", 3, AutoresetMode::SameStep)
        .await
        .unwrap();
    envs.reset(VecReset::seeded(0)).await.unwrap();
    for _ in 0..600 {
        let step = envs.step(&discrete(&[1, 1, 1])).await.unwrap();
        let Some(finals) = step.finals else {
            assert!(!step.terminations.iter().any(|t| *t));
            continue;
        };
        let ended: Vec<usize> = (0..3).filter(|&i| step.terminations[i]).collect();
        assert_eq!(finals.index, ended);
        assert_eq!(finals.observation.shape(), &[ended.len(), 4]);
        let last = row(&finals.observation, 0);
        assert!(
            last[2].abs() > 0.2 || last[0].abs() > 2.4,
            "past a limit: {last:?}"
        );
        let steps = column(&step.info, "episode_steps").to_f64_vec();
        let final_steps = column(&finals.info, "episode_steps").to_f64_vec();
        let mask = column(&finals.info, "_episode_steps");
        let expected: Vec<bool> = (0..3).map(|i| ended.contains(&i)).collect();
        assert_eq!(mask.data(), &TensorData::Bool(expected));
        for i in ended {
            assert_eq!(steps[i], 0.0, "the observation is the new episode's");
            assert!(final_steps[i] > 0.0);
        }
        return;
    }
    panic!("no episode ended");
}

#[tokio::test]
async fn disabled_autoreset_refuses_a_step_over_an_ended_episode_until_it_is_reset() {
    let t = TestServer::start().await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let mut envs = client
        .create_vec("cartpole-balance", 2, AutoresetMode::Disabled)
        .await
        .unwrap();
    envs.reset(VecReset::seeded(0)).await.unwrap();
    let ended = loop {
        let step = envs.step(&discrete(&[1, 1])).await.unwrap();
        let done: Vec<bool> = (0..2)
            .map(|i| step.terminations[i] || step.truncations[i])
            .collect();
        if done.contains(&true) {
            break done;
        }
    };
    let refused = envs.step(&discrete(&[1, 1])).await.unwrap_err();
    assert_eq!(refused.code(), Some(Code::FailedPrecondition));
    assert!(refused.to_string().contains("reset_mask"), "{refused}");
    let reset = envs
        .reset(VecReset {
            mask: ended.clone(),
            ..VecReset::default()
        })
        .await
        .unwrap();
    let mask = column(&reset.info, "_episode_steps");
    assert_eq!(mask.data(), &TensorData::Bool(ended));
    envs.step(&discrete(&[1, 1])).await.unwrap();
}

#[tokio::test]
async fn one_bad_action_refuses_the_step_naming_its_sub_env_and_nothing_steps() {
    let t = TestServer::start().await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let mut envs = client
        .create_vec("pendulum-swingup", 3, AutoresetMode::NextStep)
        .await
        .unwrap();
    envs.reset(VecReset::seeded(7)).await.unwrap();
    let cases = [
        (boxed(&[0.0, 9.0, 0.0]), "sub-env 1"),
        (boxed(&[0.0, 0.0, f32::NAN]), "sub-env 2"),
        (boxed(&[0.0, 0.0]), "shape [3, 1]"),
        (discrete(&[0, 0, 0]), "dtype float32"),
    ];
    for (action, names) in cases {
        let refused = envs.step(&action).await.unwrap_err();
        assert_eq!(refused.code(), Some(Code::InvalidArgument), "{refused}");
        assert!(refused.to_string().contains(names), "{names}: {refused}");
    }
    // A shape of a hundred thousand dimensions is named in a few words, not repeated whole.
    let many = Tensor::new(vec![1; 100_000], TensorData::F32(vec![0.0])).unwrap();
    let refused = envs.step(&many).await.unwrap_err();
    assert_eq!(refused.code(), Some(Code::InvalidArgument));
    assert!(
        refused.to_string().len() < 1000,
        "{}",
        refused.to_string().len()
    );
    let step = envs.step(&boxed(&[0.0, 0.5, -0.5])).await.unwrap();
    let steps = column(&step.info, "episode_steps");
    assert_eq!(
        steps.data(),
        &TensorData::I64(vec![1, 1, 1]),
        "no refused call stepped"
    );
}

#[tokio::test]
async fn bad_resets_and_vector_arguments_to_single_envs_are_refused_and_change_nothing() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let vector = agent
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            num_envs: 3,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(vector.num_envs, 3);
    let spec = agent
        .get_spec(pb::GetSpecRequest {
            handle: vector.handle.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(spec.num_envs, 3);
    assert_eq!(spec.autoreset_mode, pb::AutoresetMode::NextStep as i32);
    let bad = [
        pb::ResetRequest {
            handle: vector.handle.clone(),
            seeds: vec![1, 2],
            ..Default::default()
        },
        pb::ResetRequest {
            handle: vector.handle.clone(),
            seed: Some(1),
            seeds: vec![1, 2, 3],
            ..Default::default()
        },
        pb::ResetRequest {
            handle: vector.handle.clone(),
            reset_mask: vec![false, false, false],
            ..Default::default()
        },
        pb::ResetRequest {
            handle: vector.handle.clone(),
            reset_mask: vec![true],
            ..Default::default()
        },
    ];
    for request in bad {
        let refused = agent.reset(request).await.unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused:?}");
    }
    // Never reset: no sub-env has an episode to step.
    let refused = agent
        .step(pb::StepRequest {
            handle: vector.handle.clone(),
            action: Some(discrete(&[0, 0, 0]).into()),
        })
        .await
        .unwrap_err();
    assert_eq!(
        refused.code(),
        Code::FailedPrecondition,
        "as a single env's"
    );
    assert!(
        refused
            .message()
            .starts_with("sub-env 0: step before reset"),
        "{refused:?}"
    );

    let single = agent
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(single.num_envs, 1);
    let refused = agent
        .reset(pb::ResetRequest {
            handle: single.handle,
            seeds: vec![1],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().contains("single env"), "{refused:?}");
    let refused = agent
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            num_envs: 2,
            autoreset_mode: 99,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
}

fn caps(practice: usize, per_connection: usize) -> Limits {
    Limits {
        max_practice_envs: practice,
        max_practice_envs_per_connection: per_connection,
        max_run_practice_envs: per_connection,
        practice_idle: Duration::from_secs(3600),
        ..Limits::default()
    }
}

#[tokio::test]
async fn caps_count_sub_envs() {
    let t = TestServer::start_with(&[], caps(12, 8)).await;
    let counts = || t.server.evaluator().env_counts();
    let create = |n: u32| pb::CreateEnvRequest {
        task_id: "cartpole-balance".into(),
        num_envs: n,
        ..Default::default()
    };
    let mut agent = t.agent().await;
    let refused = agent.create_env(create(9)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert!(
        refused
            .message()
            .contains("--max-practice-envs-per-connection"),
        "{refused:?}"
    );
    assert_eq!(
        counts(),
        EnvCounts::default(),
        "a refused vector holds nothing"
    );
    agent.create_env(create(6)).await.unwrap();
    agent.create_env(create(1)).await.unwrap();
    agent.create_env(create(0)).await.unwrap();
    assert_eq!(counts().practice, 8);
    let refused = agent.create_env(create(1)).await.unwrap_err();
    assert_eq!(
        refused.code(),
        Code::ResourceExhausted,
        "the connection's 8 are taken"
    );
    // Another connection: 4 more fit under the total of 12, not 5.
    let mut other = t.agent().await;
    assert_eq!(
        other.create_env(create(5)).await.unwrap_err().code(),
        Code::ResourceExhausted
    );
    other.create_env(create(4)).await.unwrap();
    assert_eq!(counts().practice, 12);
    let refused = t.agent().await.create_env(create(9)).await.unwrap_err();
    assert!(
        refused
            .message()
            .contains("--max-practice-envs-per-connection"),
        "{refused:?}"
    );
    // Past the total (12) but not a connection's share: the total names its own flag.
    let t = TestServer::start_with(&[], caps(12, 20)).await;
    let refused = t.agent().await.create_env(create(13)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
    assert!(
        refused.message().contains("ale serve --max-practice-envs)"),
        "{refused:?}"
    );
}

#[tokio::test]
async fn an_official_vector_env_is_refused_and_nothing_is_made() {
    let t = TestServer::start().await;
    let mut harness = t.harness().await;
    for (num_envs, vector) in [(4, false), (1, true)] {
        let refused = harness
            .create_env(pb::CreateEnvRequest {
                task_id: "cartpole-balance".into(),
                official: true,
                num_envs,
                vector,
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument);
        assert!(
            refused.message().contains("official envs are single"),
            "{refused:?}"
        );
    }
    assert_eq!(t.server.evaluator().env_counts(), EnvCounts::default());
    let runs = std::fs::read_dir(t.state_dir().join("runs")).map_or(0, |d| d.count());
    assert_eq!(runs, 0, "no run folder");
}

#[tokio::test]
async fn a_vector_whose_answers_would_not_fit_a_message_is_refused() {
    let t = TestServer::start_with(&[], caps(1_000_000, 1_000_000)).await;
    let refused = t
        .agent()
        .await
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            num_envs: 100_000,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument);
    assert!(refused.message().contains("ask for at most"), "{refused:?}");
    assert_eq!(t.server.evaluator().env_counts(), EnvCounts::default());
}

/// Big enough that its steps go to the vector threads (a debug build steps 4,096 CartPoles in
/// well over the inline budget), so the parallel path plays the same as single envs.
#[test]
fn a_large_vector_stepped_in_parallel_plays_what_single_envs_play() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let t = rt.block_on(TestServer::start_with(&[], caps(8192, 8192)));
    let client = ale_client::blocking::Client::connect(&t.endpoint()).unwrap();
    const N: usize = 4096;
    let mut envs = client
        .create_vec("cartpole-balance", N as u32, AutoresetMode::NextStep)
        .unwrap();
    envs.reset(VecReset::seeded(100)).unwrap();
    let watched = [0, 63, 64, 2000, N - 1];
    let mut singles: Vec<_> = watched
        .iter()
        .map(|&i| {
            let mut env = client.create("cartpole-balance").unwrap();
            env.reset(Some(100 + i as u64)).unwrap();
            env
        })
        .collect();
    for step in 0..20 {
        let actions: Vec<i64> = (0..N).map(|i| ((i + step) % 2) as i64).collect();
        let out = envs.step(&discrete(&actions)).unwrap();
        for (k, &i) in watched.iter().enumerate() {
            let one = singles[k].step(&Tensor::scalar_i64(actions[i])).unwrap();
            assert_eq!(
                row(&out.observation, i),
                one.observation.to_f64_vec(),
                "sub-env {i}"
            );
            assert_eq!(out.rewards[i], one.reward);
        }
    }
    assert!(matches!(envs.spec().action_space, Space::Discrete(_)));
}

#[tokio::test]
async fn a_closed_connections_practice_envs_make_room_at_once() {
    let t = TestServer::start_with(&[], caps(12, 8)).await;
    let create = |n: u32| pb::CreateEnvRequest {
        task_id: "cartpole-balance".into(),
        num_envs: n,
        ..Default::default()
    };
    let mut gone = t.agent().await;
    gone.create_env(create(8)).await.unwrap();
    let mut stays = t.agent().await;
    stays.create_env(create(4)).await.unwrap();
    let mut late = t.agent().await;
    let refused = late.create_env(create(8)).await.unwrap_err();
    assert_eq!(
        refused.code(),
        Code::ResourceExhausted,
        "12 of 12 held, none idle"
    );
    // The first client closes its connection: its 8 go first, though used a moment ago.
    drop(gone);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        match late.create_env(create(8)).await {
            Ok(_) => break,
            Err(e) if std::time::Instant::now() < deadline => {
                assert_eq!(e.code(), Code::ResourceExhausted);
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("the closed connection's envs never made room: {e:?}"),
        }
    }
    assert_eq!(t.server.evaluator().env_counts().practice, 12);
    // The open connection's envs stayed.
    let refused = late.create_env(create(1)).await.unwrap_err();
    assert_eq!(refused.code(), Code::ResourceExhausted);
}

#[tokio::test]
async fn a_closed_connections_env_used_again_over_another_is_kept() {
    let t = TestServer::start_with(&[], caps(12, 8)).await;
    let create = |n: u32| pb::CreateEnvRequest {
        task_id: "cartpole-balance".into(),
        num_envs: n,
        ..Default::default()
    };
    let mut first = t.agent().await;
    let handle = first
        .create_env(create(8))
        .await
        .unwrap()
        .into_inner()
        .handle;
    let mut other = t.agent().await;
    other.create_env(create(4)).await.unwrap();
    drop(first);
    // Its creator reconnects (a new connection) and goes on using it.
    let mut again = t.agent().await;
    // Long after the evaluator has seen the first connection close.
    tokio::time::sleep(Duration::from_secs(1)).await;
    again
        .reset(pb::ResetRequest {
            handle: handle.clone(),
            seed: Some(1),
            ..Default::default()
        })
        .await
        .unwrap();
    let refused = t.agent().await.create_env(create(8)).await.unwrap_err();
    assert_eq!(
        refused.code(),
        Code::ResourceExhausted,
        "an env in use is not reclaimed because its first connection closed"
    );
}
