//! The bounds on what a client can make the evaluator hold, tried with a real server and real
//! clients: echoed values, request bytes, request time, idle connections, the connection cap,
//! and the shutdown deadline. The process-level attacks (memory under a slow-request flood,
//! SIGTERM, the open-file limit) are in `tui/tests/resource_bounds.rs`.

mod common;

use std::time::{Duration, Instant};

use ale_proto::eval::{EvalResultRecord, EvalStatus};
use ale_proto::pb;
use ale_server::serve::ServeOptions;
use common::raw_h2::RawConnection;
use common::{TestServer, action};
use tokio::io::AsyncReadExt;
use tokio::time::timeout;
use tonic::{Code, Status};

const STEP: &str = "/ale.v1.AleEnv/Step";
const KIB: usize = 1024;
const MIB: usize = 1024 * KIB;

/// An error message a default client accepts whole, and a reader can read.
fn assert_short(status: &Status, code: Code) {
    assert_eq!(
        status.code(),
        code,
        "{}",
        &status.message()[..200.min(status.message().len())]
    );
    assert!(
        status.message().len() < 1024,
        "a {} byte message: {}…",
        status.message().len(),
        &status.message()[..200]
    );
}

/// Regression: a 3-million-element shape came back as a 10.9 MB message, which a default gRPC
/// client refused as RESOURCE_EXHAUSTED; ids of a megabyte were repeated whole.
#[tokio::test]
async fn values_a_client_sent_are_echoed_cut_short() {
    let t = TestServer::start().await;
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    common::reset(&mut agent, &handle, Some(1)).await;

    let step = |shape: Vec<i64>| pb::StepRequest {
        handle: handle.clone(),
        action: Some(pb::Tensor {
            dtype: pb::DType::DtypeInt64 as i32,
            shape,
            i64: vec![1],
            ..Default::default()
        }),
    };
    // 3,000,000 ones hold one element: a valid tensor of the wrong shape.
    let err = agent.step(step(vec![1; 3_000_000])).await.unwrap_err();
    assert_short(&err, Code::InvalidArgument);
    assert!(
        err.message().contains("got [1, 1, 1") && err.message().contains("(3000000 elements)"),
        "{}",
        err.message()
    );
    // A negative dimension, and a shape whose element count overflows.
    let mut negative = vec![1; 3_000_000];
    negative[0] = -1;
    for shape in [negative, vec![2; 3_000_000]] {
        let err = agent.step(step(shape)).await.unwrap_err();
        assert_short(&err, Code::InvalidArgument);
        assert!(
            err.message().contains("(3000000 elements)"),
            "{}",
            err.message()
        );
    }

    let mega = "x".repeat(MIB);
    let err = agent
        .create_env(pb::CreateEnvRequest {
            task_id: mega.clone(),
            official: false,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_short(&err, Code::NotFound);
    assert!(
        err.message().contains("(1048576 bytes)"),
        "{}",
        err.message()
    );
    assert!(
        err.message().contains("cartpole-balance"),
        "the known tasks are listed"
    );
    let err = agent
        .get_spec(pb::GetSpecRequest {
            handle: mega.clone(),
        })
        .await
        .unwrap_err();
    assert_short(&err, Code::NotFound);
    let err = agent
        .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
            batch_id: mega.clone(),
        })
        .await
        .unwrap_err();
    assert_short(&err, Code::NotFound);
    let err = t
        .harness()
        .await
        .get_eval_result(pb::GetEvalResultRequest {
            session_id: mega,
            end_session: false,
        })
        .await
        .unwrap_err();
    assert_short(&err, Code::NotFound);

    agent
        .step(pb::StepRequest {
            handle,
            action: action(1),
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_request_past_its_connections_byte_cap_is_refused_and_others_still_step() {
    let t = TestServer::start_serving(ServeOptions {
        max_connection_request_bytes: 256 * KIB,
        ..ServeOptions::default()
    })
    .await;
    let mut raw = RawConnection::tcp(t.server.agent_addr()).await.unwrap();
    let call = raw.stalled_call(STEP, MIB, 512 * KIB).await.unwrap();
    let (code, message) = timeout(Duration::from_secs(10), call.status())
        .await
        .expect("refused at once, not left to stall")
        .unwrap();
    assert_eq!(code, Code::ResourceExhausted as i32, "{message}");
    assert!(
        message.contains("262144 bytes") && message.contains("--max-connection-request-bytes"),
        "{message}"
    );

    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    common::reset(&mut agent, &handle, Some(1)).await;
}

/// Uploads that stall hold the shared pool; past it they are refused, while requests that fit
/// in their connection's reserve are never refused.
#[tokio::test]
async fn uploads_past_the_shared_pool_are_refused_but_small_requests_are_not() {
    let t = TestServer::start_serving(ServeOptions {
        max_request_bytes: MIB,
        ..ServeOptions::default()
    })
    .await;
    // Each upload needs 600 KiB, more than half the pool beyond its connection's reserve.
    let mut connections = Vec::new();
    let mut calls = Vec::new();
    for _ in 0..3 {
        let mut raw = RawConnection::tcp(t.server.agent_addr()).await.unwrap();
        calls.push(raw.stalled_call(STEP, 4 * MIB, 600 * KIB).await.unwrap());
        connections.push(raw);
    }
    let mut refused = 0;
    let mut stalled = 0;
    for call in calls {
        match timeout(Duration::from_secs(2), call.status()).await {
            Ok(answer) => {
                let (code, message) = answer.unwrap();
                assert_eq!(code, Code::ResourceExhausted as i32, "{message}");
                assert!(message.contains("--max-request-bytes"), "{message}");
                refused += 1;
            }
            Err(_) => stalled += 1,
        }
    }
    assert!(
        refused >= 1 && stalled >= 1,
        "{refused} refused, {stalled} stalled"
    );

    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    common::reset(&mut agent, &handle, Some(1)).await;
    for i in 0..50 {
        let step = agent
            .step(pb::StepRequest {
                handle: handle.clone(),
                action: action(i % 2),
            })
            .await
            .unwrap()
            .into_inner();
        if step.terminated || step.truncated {
            common::reset(&mut agent, &handle, None).await;
        }
    }
    drop(connections);
}

#[tokio::test]
async fn a_stalled_request_ends_at_the_request_timeout() {
    let t = TestServer::start_serving(ServeOptions {
        request_timeout: Duration::from_millis(500),
        ..ServeOptions::default()
    })
    .await;
    let mut raw = RawConnection::tcp(t.server.agent_addr()).await.unwrap();
    let started = Instant::now();
    let call = raw.stalled_call(STEP, 1000, 10).await.unwrap();
    let (code, message) = timeout(Duration::from_secs(5), call.status())
        .await
        .expect("answered at the timeout")
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(450));
    assert_eq!(code, Code::DeadlineExceeded as i32, "{message}");
    assert!(message.contains("--request-timeout"), "{message}");
}

#[tokio::test]
async fn an_idle_agent_connection_is_closed_and_its_client_reconnects() {
    let t = TestServer::start_serving(ServeOptions {
        idle_timeout: Duration::from_millis(300),
        ..ServeOptions::default()
    })
    .await;
    let idle = RawConnection::tcp(t.server.agent_addr()).await.unwrap();
    let idle_harness = RawConnection::unix(t.server.harness_socket())
        .await
        .unwrap();
    timeout(Duration::from_secs(5), idle.driver)
        .await
        .expect("the evaluator closes an idle agent connection")
        .unwrap()
        .ok();
    assert!(
        !idle_harness.driver.is_finished(),
        "harness connections are never closed for being idle"
    );

    // A gRPC client whose connection was closed while idle opens another on its next call.
    let mut agent = t.agent().await;
    let handle = common::practice_env(&mut agent, "cartpole-balance").await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    common::reset(&mut agent, &handle, Some(1)).await;
}

#[tokio::test]
async fn a_connection_past_the_agent_cap_is_closed_at_once_while_the_harness_answers() {
    let t = TestServer::start_serving(ServeOptions {
        max_agent_connections: 3,
        ..ServeOptions::default()
    })
    .await;
    let addr = t.server.agent_addr();
    let agent_socket = t.server.agent_socket().to_path_buf();
    // TCP and the agent socket share the cap.
    let mut held = vec![
        RawConnection::tcp(addr).await.unwrap(),
        RawConnection::tcp(addr).await.unwrap(),
        RawConnection::unix(&agent_socket).await.unwrap(),
    ];
    let closed_at_once = |mut stream: tokio::net::TcpStream| async move {
        let mut byte = [0u8; 1];
        let read = timeout(Duration::from_secs(2), stream.read(&mut byte)).await;
        matches!(read, Ok(Ok(0)) | Ok(Err(_)))
    };
    let extra = tokio::net::TcpStream::connect(addr).await.unwrap();
    assert!(
        closed_at_once(extra).await,
        "the fourth connection is closed"
    );
    let mut extra = tokio::net::UnixStream::connect(&agent_socket)
        .await
        .unwrap();
    let mut byte = [0u8; 1];
    let read = timeout(Duration::from_secs(2), extra.read(&mut byte)).await;
    assert!(matches!(read, Ok(Ok(0)) | Ok(Err(_))), "{read:?}");
    assert!(held.iter().all(|c| !c.driver.is_finished()));

    // The harness channel has its own cap.
    let (handle, _, _) = t.official_env("cartpole-balance").await;
    assert!(handle.starts_with("env-"));

    // A closed connection gives its place back.
    drop(held.pop());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        if !closed_at_once(stream).await {
            break;
        }
        assert!(Instant::now() < deadline, "the place was never given back");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn shutdown_drops_a_stalled_request_at_its_deadline_and_ends_the_session() {
    let t = TestServer::start_serving(ServeOptions {
        shutdown_deadline: Duration::from_millis(500),
        ..ServeOptions::default()
    })
    .await;
    let (mut env, _, run_id) = t.attached_official_env("cartpole-balance").await;
    env.start_eval_session().await.unwrap();
    env.reset(None).await.unwrap();
    let mut raw = RawConnection::tcp(t.server.agent_addr()).await.unwrap();
    let _call = raw.stalled_call(STEP, 1000, 10).await.unwrap();
    // Time for the evaluator to read the call, so the shutdown finds it in flight.
    tokio::time::sleep(Duration::from_millis(200)).await;

    let path = t.trajectory_path(&run_id);
    let TestServer { server, dir, .. } = t;
    let started = Instant::now();
    timeout(Duration::from_secs(5), server.shutdown())
        .await
        .expect("shutdown ends after its deadline");
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(450), "{took:?}");
    assert!(took < Duration::from_secs(2), "{took:?}");

    let chain = ale_records::trajectory::verify(&common::read(&path)).unwrap();
    let last = chain.events.last().unwrap();
    assert_eq!(
        last.event.kind,
        ale_records::trajectory::EventKind::SessionFinished
    );
    let r: EvalResultRecord = serde_json::from_value(last.event.data.clone()).unwrap();
    assert_eq!(r.status, EvalStatus::EvaluatorEnded);
    drop(dir);
}
