//! The env caps over real gRPC: practice envs capped per connection and in total, official
//! envs capped on their own, so practice load never refuses the harness.

mod common;

use std::time::Duration;

use ale_client::policy::CartPoleHeuristic;
use ale_client::{Client, play_episode};
use ale_proto::eval::{EvalResultRecord, EvalStatus, Outcome};
use ale_proto::pb;
use ale_server::{EnvCounts, Limits};
use ale_sim::Tensor;
use common::{TestServer, result};
use tonic::Code;

const HOUR: Duration = Duration::from_secs(3600);

fn caps(practice: usize, per_connection: usize, official: usize) -> Limits {
    Limits {
        max_practice_envs: practice,
        max_practice_envs_per_connection: per_connection,
        max_official_envs: official,
        max_run_practice_envs: per_connection,
        practice_idle: HOUR,
        finished_official_idle: HOUR,
        read_official_idle: HOUR,
        ..Limits::default()
    }
}

async fn create(
    agent: &mut pb::ale_env_client::AleEnvClient<tonic::transport::Channel>,
) -> Result<String, tonic::Status> {
    agent
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: false,
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner().handle)
}

async fn create_official(
    client: &mut pb::ale_env_client::AleEnvClient<tonic::transport::Channel>,
) -> Result<pb::CreateEnvResponse, tonic::Status> {
    client
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .map(tonic::Response::into_inner)
}

fn counts(t: &TestServer) -> EnvCounts {
    t.server.evaluator().env_counts()
}

#[tokio::test]
async fn a_full_practice_table_never_refuses_the_harness_an_official_session() {
    let task = common::cartpole_variant(
        "cartpole-short",
        &[
            ("episodes = 20", "episodes = 2"),
            ("max_steps_per_episode = 500", "max_steps_per_episode = 50"),
        ],
    );
    let t = TestServer::start_with(&[("short.toml", task)], caps(4, 2, 2)).await;
    let (mut a, mut b) = (t.agent().await, t.agent().await);
    for agent in [&mut a, &mut b] {
        for _ in 0..2 {
            create(agent).await.unwrap();
        }
    }
    let err = create(&mut t.agent().await).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(
        counts(&t),
        EnvCounts {
            practice: 4,
            run_practice: 0,
            official: 0
        }
    );

    // The harness still gets its official env, and the agent plays the whole session.
    let (mut env, session, _) = t.attached_official_env("cartpole-short").await;
    assert_eq!(env.start_eval_session().await.unwrap().episodes, 2);
    let mut policy = CartPoleHeuristic::default();
    for _ in 0..2 {
        let episode = play_episode(&mut env, &mut policy, None).await.unwrap();
        assert_eq!(episode.steps, 50);
    }
    let r =
        EvalResultRecord::try_from(result(&mut t.harness().await, &session, false).await).unwrap();
    assert_eq!(r.status, EvalStatus::Completed, "{}", r.status_message);
    assert!(r.episodes.iter().all(|e| e.outcome == Outcome::Completed));
    assert_eq!(r.value, 50.0);
    assert_eq!(
        counts(&t),
        EnvCounts {
            practice: 4,
            run_practice: 0,
            official: 1
        }
    );
}

#[tokio::test]
async fn one_connection_at_its_cap_leaves_others_free_until_the_total_cap() {
    let t = TestServer::start_with(&[], caps(4, 2, 1)).await;
    let (mut first, mut second, mut third) = (t.agent().await, t.agent().await, t.agent().await);
    let mine = [
        create(&mut first).await.unwrap(),
        create(&mut first).await.unwrap(),
    ];
    let err = create(&mut first).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert!(
        err.message()
            .starts_with("this connection's practice envs would pass the per-connection cap of 2")
            && err.message().contains("--max-practice-envs-per-connection")
            && err.message().contains("reuse one of them with Reset"),
        "{}",
        err.message()
    );

    // Another connection has its own allowance, until the total cap binds.
    create(&mut second).await.unwrap();
    create(&mut second).await.unwrap();
    let err = create(&mut third).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert!(
        err.message()
            .starts_with("the evaluator's practice envs would pass its total practice cap of 4")
            && err.message().contains("--max-practice-envs;"),
        "{}",
        err.message()
    );

    // Envs are counted against the connection that created them, not the one using them.
    for handle in mine {
        common::reset(&mut third, &handle, Some(1)).await;
    }
}

#[tokio::test]
async fn a_refused_create_env_changes_nothing() {
    let limits = Limits {
        practice_idle: Duration::from_millis(100),
        ..caps(10, 2, 1)
    };
    let t = TestServer::start_with(&[], limits).await;
    let (mut first, mut idle) = (t.agent().await, t.agent().await);
    let idle_handle = create(&mut idle).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    create(&mut first).await.unwrap();
    create(&mut first).await.unwrap();
    let before = counts(&t);
    assert_eq!(
        before,
        EnvCounts {
            practice: 3,
            run_practice: 0,
            official: 0
        }
    );

    // Reclaiming the other connection's idle env would not make room on this one: it stays.
    let err = create(&mut first).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(counts(&t), before);
    common::reset(&mut idle, &idle_handle, Some(1)).await;

    // Neither does a refused official env, on either channel.
    let err = create_official(&mut first).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    t.official_env("cartpole-balance").await;
    let err = t
        .harness()
        .await
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert!(
        err.message()
            .starts_with("the evaluator already holds 1 official envs, its official cap")
            && err.message().contains("--max-official-envs"),
        "{}",
        err.message()
    );
    assert_eq!(
        counts(&t),
        EnvCounts {
            practice: 3,
            run_practice: 0,
            official: 1
        }
    );
    let runs = std::fs::read_dir(t.state_dir().join("runs"))
        .unwrap()
        .count();
    assert_eq!(runs, 1, "a refused official env must leave no run folder");
}

#[tokio::test]
async fn idle_practice_envs_make_room_and_the_practice_cap_holds() {
    let limits = Limits {
        practice_idle: Duration::from_millis(200),
        ..caps(3, 64, 1)
    };
    let t = TestServer::start_with(&[], limits).await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let mut envs = Vec::new();
    for _ in 0..3 {
        envs.push(client.create("cartpole-balance").await.unwrap());
    }
    let err = client.create("cartpole-balance").await.err().unwrap();
    assert_eq!(err.code(), Some(Code::ResourceExhausted));
    tokio::time::sleep(Duration::from_millis(250)).await;
    envs[0].reset(Some(1)).await.unwrap();
    // One idle env is dropped, only as many as the new one needs; the one just used survives.
    client.create("cartpole-balance").await.unwrap();
    envs[0].reset(Some(1)).await.unwrap();
    let mut gone = 0;
    for env in &mut envs[1..] {
        match env.reset(Some(1)).await {
            Ok(_) => {}
            Err(err) => {
                assert_eq!(err.code(), Some(Code::NotFound));
                gone += 1;
            }
        }
    }
    assert_eq!(gone, 1);
    assert_eq!(counts(&t).practice, 3);
}

#[tokio::test]
async fn finished_official_runs_make_room_but_running_ones_never_do() {
    let limits = Limits {
        finished_official_idle: Duration::from_millis(100),
        ..caps(1, 1, 2)
    };
    let t = TestServer::start_with(&[], limits).await;
    let mut harness = t.harness().await;
    // One finished run, one still running.
    let (_, finished, _) = t.official_env("cartpole-balance").await;
    result(&mut harness, &finished, true).await;
    let (running_handle, running, _) = t.official_env("cartpole-balance").await;
    let client = Client::connect(&t.endpoint()).await.unwrap();
    let mut env = client
        .attach(ale_proto::EnvHandle::from_wire(running_handle))
        .await
        .unwrap();
    env.start_eval_session().await.unwrap();
    env.reset(None).await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    // A practice env does not take the finished run's slot: the pools are apart.
    client.create("cartpole-balance").await.unwrap();
    result(&mut harness, &finished, false).await;
    // A new official env does, once no one has read that result for a while.
    tokio::time::sleep(Duration::from_millis(150)).await;
    t.official_env("cartpole-balance").await;
    let err = harness
        .get_eval_result(pb::GetEvalResultRequest {
            session_id: finished,
            end_session: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    // The running one is untouched, and the official pool is full again.
    env.step(&Tensor::scalar_i64(1)).await.unwrap();
    assert_eq!(result(&mut harness, &running, false).await.total_steps, 1);
    let err = create_official(&mut harness).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert_eq!(
        counts(&t),
        EnvCounts {
            practice: 1,
            run_practice: 0,
            official: 2
        }
    );
}

#[tokio::test]
async fn a_run_whose_final_result_its_harness_read_gives_up_its_slot_soon_after() {
    let limits = Limits {
        read_official_idle: Duration::from_millis(300),
        ..caps(1, 1, 1)
    };
    let t = TestServer::start_with(&[], limits).await;
    let mut harness = t.harness().await;
    let (_, done, _) = t.official_env("cartpole-balance").await;
    // Ended by its harness, which reads the final result (and may read it again a moment
    // later, as a harness finishing its report does).
    assert!(result(&mut harness, &done, true).await.status != pb::EvalStatus::Running as i32);
    let err = create_official(&mut harness).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(result(&mut harness, &done, false).await.status != pb::EvalStatus::Running as i32);
    // Soon after, its slot goes to a new run, long before the finished runs' idle time.
    tokio::time::sleep(Duration::from_millis(400)).await;
    create_official(&mut harness).await.unwrap();
    let err = harness
        .get_eval_result(pb::GetEvalResultRequest {
            session_id: done,
            end_session: false,
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert_eq!(counts(&t).official, 1);
}

#[tokio::test]
async fn below_the_total_cap_a_connection_reclaims_only_its_own_idle_envs() {
    let limits = Limits {
        practice_idle: Duration::from_millis(100),
        ..caps(10, 1, 1)
    };
    let t = TestServer::start_with(&[], limits).await;
    let other = Client::connect(&t.endpoint()).await.unwrap();
    let mut others_env = other.create("cartpole-balance").await.unwrap();
    let mine = Client::connect(&t.endpoint()).await.unwrap();
    let mut my_first = mine.create("cartpole-balance").await.unwrap();
    tokio::time::sleep(Duration::from_millis(150)).await;
    // Both are idle; my next env may replace only mine.
    mine.create("cartpole-balance").await.unwrap();
    assert_eq!(
        my_first.reset(Some(1)).await.unwrap_err().code(),
        Some(Code::NotFound)
    );
    others_env.reset(Some(1)).await.unwrap();
}

#[tokio::test]
async fn an_official_env_never_started_is_reclaimed_once_its_harness_stops_following_it() {
    let limits = Limits {
        finished_official_idle: Duration::from_millis(400),
        ..caps(1, 1, 1)
    };
    let t = TestServer::start_with(&[], limits).await;
    let mut harness = t.harness().await;
    let followed = create_official(&mut harness).await.unwrap().session_id;
    // While a harness polls for its result, the env is in use, started or not.
    for _ in 0..6 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let err = harness
            .get_eval_result(pb::GetEvalResultRequest {
                session_id: followed.clone(),
                end_session: false,
            })
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::FailedPrecondition);
    }
    let err = create_official(&mut harness).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    // Abandoned (no agent ever started it, no harness asks): it makes room.
    tokio::time::sleep(Duration::from_millis(500)).await;
    create_official(&mut harness).await.unwrap();
    assert_eq!(counts(&t).official, 1);
}

#[tokio::test]
async fn past_the_total_cap_the_biggest_holders_idle_envs_go_first_and_only_as_many_as_needed() {
    let limits = Limits {
        practice_idle: Duration::from_millis(200),
        ..caps(4, 64, 1)
    };
    let t = TestServer::start_with(&[], limits).await;
    let big = Client::connect(&t.endpoint()).await.unwrap();
    let small = Client::connect(&t.endpoint()).await.unwrap();
    let mut bigs = Vec::new();
    for _ in 0..3 {
        bigs.push(big.create("cartpole-balance").await.unwrap());
    }
    let mut small_env = small.create("cartpole-balance").await.unwrap();
    tokio::time::sleep(Duration::from_millis(250)).await;
    // Everyone's envs are idle; a newcomer needs one slot: it comes from the biggest holder.
    let newcomer = Client::connect(&t.endpoint()).await.unwrap();
    newcomer.create("cartpole-balance").await.unwrap();
    small_env.reset(Some(1)).await.unwrap();
    let mut gone = 0;
    for env in &mut bigs {
        if env.reset(Some(1)).await.is_err() {
            gone += 1;
        }
    }
    assert_eq!(gone, 1, "one env of the biggest holder, and no more");
    assert_eq!(counts(&t).practice, 4);
}
