//! Runs that share one evaluator cannot touch each other: each batch run reads only its own
//! submission folder, each official run's agent has its own socket with its own caps and sees
//! only its own envs, and a full disk cannot cost a run its record. A real server on real
//! sockets and files.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use ale_proto::eval::EvalStatus;
use ale_proto::pb::{self, ale_env_client::AleEnvClient};
use ale_server::serve::ServeOptions;
use ale_server::{BatchOptions, Limits};
use common::{TestServer, action, cartpole_variant, is_finished, linear_cartpole, result, submit};
use tonic::Code;
use tonic::transport::Channel;

const BATCH: &str = "cartpole-batch";
const ENTRYPOINT: &str = "policy.safetensors";

fn batch_task() -> (&'static str, String) {
    let mut text = cartpole_variant(
        BATCH,
        &[
            ("mode = \"interactive\"", "mode = \"batch\""),
            ("episodes = 20", "episodes = 4"),
        ],
    );
    text.push_str(
        "\n[submission]\nsubmission_path = \"/submission\"\nentrypoint = \"policy.safetensors\"\nformat = \"mlp-safetensors\"\n",
    );
    ("cartpole-batch.toml", text)
}

fn options() -> ServeOptions {
    ServeOptions {
        run_linger: Duration::from_millis(100),
        ..ServeOptions::default()
    }
}

async fn server_with(limits: Limits, options: ServeOptions) -> TestServer {
    TestServer::start_in(
        tempfile::tempdir().unwrap(),
        &[batch_task()],
        limits,
        BatchOptions::default(),
        options,
    )
    .await
}

async fn finished(
    client: &mut AleEnvClient<Channel>,
    batch: &str,
) -> pb::GetBatchEvalStatusResponse {
    let start = Instant::now();
    loop {
        let s = client
            .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
                batch_id: batch.into(),
            })
            .await
            .unwrap()
            .into_inner();
        if is_finished(&s) {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the run did not finish"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn spec(client: &mut AleEnvClient<Channel>, handle: &str) -> Result<(), tonic::Status> {
    client
        .get_spec(pb::GetSpecRequest {
            handle: handle.into(),
        })
        .await
        .map(drop)
}

async fn create_practice(client: &mut AleEnvClient<Channel>) -> Result<String, tonic::Status> {
    client
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: false,
            ..Default::default()
        })
        .await
        .map(|r| r.into_inner().handle)
}

/// Waits until nothing is at `path` (a run's socket lingers a moment after its run ends).
async fn gone(path: &Path) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(10) {
        if std::fs::symlink_metadata(path).is_err() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

fn sha256(bytes: &[u8]) -> String {
    hex::encode(<sha2::Sha256 as sha2::Digest>::digest(bytes))
}

#[tokio::test]
async fn each_batch_run_reads_only_its_own_folder_and_a_thief_gets_nothing() {
    let server = server_with(Limits::default(), options()).await;
    let (honest, _, honest_run) = server.official_env(BATCH).await;
    let (thief, _, thief_run) = server.official_env(BATCH).await;
    let honest_dir = server.submission_dir(&honest_run);
    let thief_dir = server.submission_dir(&thief_run);
    assert_ne!(honest_dir, thief_dir);
    // As root the evaluator owns each folder; the harness gives it to the run's agent.
    let policy = linear_cartpole(ale_client::policy::CartPoleHeuristic::default().gains);
    std::fs::write(honest_dir.join(ENTRYPOINT), &policy).unwrap();

    // The thief submits over its own channel with its own folder empty.
    let mut thief_agent = server.run_agent(&thief_run).await;
    let stolen = submit(&mut thief_agent, &thief).await.unwrap();
    let s = finished(&mut thief_agent, &stolen).await;
    assert_eq!(s.state(), pb::BatchState::Failed);
    assert!(s.message.contains("no policy.safetensors"), "{}", s.message);
    assert_eq!(
        std::fs::read(honest_dir.join(ENTRYPOINT)).unwrap(),
        policy,
        "the other run's file is untouched"
    );
    // The thief's channel cannot submit the honest run's env either: it is not there.
    let err = submit(&mut thief_agent, &honest).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");

    let mut honest_agent = server.run_agent(&honest_run).await;
    let batch = submit(&mut honest_agent, &honest).await.unwrap();
    let mut harness = server.harness().await;
    let s = finished(&mut harness, &batch).await;
    assert_eq!(s.state(), pb::BatchState::Succeeded, "{}", s.message);
    let text = common::read(&server.trajectory_path(&honest_run));
    let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
    assert_eq!(verified.submission.unwrap().sha256, sha256(&policy));
    // Each folder goes as its run ends (just after its status says so).
    assert!(gone(&honest_dir).await && gone(&thief_dir).await);
}

#[tokio::test]
async fn two_honest_batch_runs_at_once_each_score_their_own_file() {
    let server = server_with(Limits::default(), options()).await;
    let good = linear_cartpole(ale_client::policy::CartPoleHeuristic::default().gains);
    let bad = linear_cartpole([0.0; 4]);
    let (a, _, a_run) = server.official_env(BATCH).await;
    let (b, _, b_run) = server.official_env(BATCH).await;
    std::fs::write(server.submission_dir(&a_run).join(ENTRYPOINT), &good).unwrap();
    std::fs::write(server.submission_dir(&b_run).join(ENTRYPOINT), &bad).unwrap();
    let mut harness = server.harness().await;
    let (a_batch, b_batch) = (
        submit(&mut harness, &a).await.unwrap(),
        submit(&mut harness, &b).await.unwrap(),
    );
    let (a_done, b_done) = (
        finished(&mut harness, &a_batch).await,
        finished(&mut harness, &b_batch).await,
    );
    for (run, file, s) in [(&a_run, &good, &a_done), (&b_run, &bad, &b_done)] {
        assert_eq!(s.state(), pb::BatchState::Succeeded, "{}", s.message);
        let text = common::read(&server.trajectory_path(run));
        let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
        assert_eq!(verified.submission.unwrap().sha256, sha256(file));
    }
    let value = |s: &pb::GetBatchEvalStatusResponse| s.result.as_ref().unwrap().value;
    assert!(
        value(&a_done) > value(&b_done),
        "{} vs {}",
        value(&a_done),
        value(&b_done)
    );
}

#[tokio::test]
async fn a_runs_folder_and_socket_go_when_it_ends_and_stale_ones_at_start() {
    let server = server_with(Limits::default(), options()).await;
    let (handle, session, run_id) = server.official_env(BATCH).await;
    let (folder, socket) = (server.submission_dir(&run_id), server.run_socket(&run_id));
    assert!(folder.is_dir());
    {
        use std::os::unix::fs::{FileTypeExt, MetadataExt};
        let m = std::fs::symlink_metadata(&socket).unwrap();
        assert!(m.file_type().is_socket());
        assert_eq!(m.mode() & 0o777, 0o666);
        let agents = socket.parent().unwrap();
        assert_eq!(std::fs::metadata(agents).unwrap().mode() & 0o777, 0o700);
    }
    // An interactive run: its socket goes when the harness ends its session.
    let (_, i_session, i_run) = server.official_env("cartpole-balance").await;
    let i_socket = server.run_socket(&i_run);
    assert!(i_socket.exists());
    assert!(
        !server.submission_dir(&i_run).exists(),
        "only batch runs have a folder"
    );
    let mut harness = server.harness().await;
    result(&mut harness, &i_session, true).await;
    assert!(gone(&i_socket).await, "{}", i_socket.display());

    // The batch run ends (the harness ends it before any submission).
    let mut agent = server.run_agent(&run_id).await;
    spec(&mut agent, &handle).await.unwrap();
    result(&mut harness, &session, true).await;
    assert!(gone(&folder).await, "the folder goes with the run");
    assert!(gone(&socket).await);
    // Its connections were dropped once the linger passed.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(spec(&mut agent, &handle).await.is_err());

    // What a killed evaluator would leave, and the shared folder of older versions.
    let state = server.state_dir();
    let (_, _, left_run) = server.official_env(BATCH).await;
    let left = server.submission_dir(&left_run);
    std::fs::write(left.join(ENTRYPOINT), b"left behind").unwrap();
    let dir = {
        let TestServer { server, dir, .. } = server;
        drop(harness);
        drop(agent);
        // Not shut down: its run's folder and socket stay, as after a crash.
        std::mem::forget(server);
        dir
    };
    std::fs::create_dir_all(state.join("submissions/stale-run/deeper")).unwrap();
    std::fs::write(state.join("agents/stale-run.sock"), b"").unwrap();
    std::fs::create_dir_all(state.join("submission")).unwrap();
    std::fs::write(state.join("submission").join(ENTRYPOINT), b"old").unwrap();
    // The old server's sockets answer no one once it is gone; here it is still listening on
    // the same process, so take its harness socket away to start a second one.
    std::fs::remove_file(state.join("harness.sock")).unwrap();
    std::fs::remove_file(state.join("agent.sock")).unwrap();
    let restarted = TestServer::start_in(
        dir,
        &[batch_task()],
        Limits::default(),
        BatchOptions::default(),
        options(),
    )
    .await;
    let listing = |dir: &str| -> Vec<String> {
        std::fs::read_dir(state.join(dir))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    };
    assert!(
        listing("submissions").is_empty(),
        "{:?}",
        listing("submissions")
    );
    assert!(listing("agents").is_empty(), "{:?}", listing("agents"));
    assert!(!state.join("submission").exists());
    assert!(!left.exists());
    restarted.server.shutdown().await;
}

#[tokio::test]
async fn a_runs_channel_reaches_only_its_own_envs() {
    let server = server_with(Limits::default(), options()).await;
    let (a, _, a_run) = server.official_env("cartpole-balance").await;
    let (b, _, b_run) = server.official_env(BATCH).await;
    let mut a_agent = server.run_agent(&a_run).await;
    let mut b_agent = server.run_agent(&b_run).await;
    let mut shared = server.agent().await;
    let mut harness = server.harness().await;

    spec(&mut a_agent, &a).await.unwrap();
    let err = spec(&mut a_agent, &b).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    assert!(err.message().contains("unknown env handle"), "{err:?}");
    let shared_practice = create_practice(&mut shared).await.unwrap();
    assert_eq!(
        spec(&mut a_agent, &shared_practice)
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );

    // A practice env made over a run's channel belongs to that run.
    let a_practice = create_practice(&mut a_agent).await.unwrap();
    spec(&mut a_agent, &a_practice).await.unwrap();
    for other in [&mut b_agent, &mut shared] {
        assert_eq!(
            spec(other, &a_practice).await.unwrap_err().code(),
            Code::NotFound
        );
    }
    spec(&mut harness, &a_practice).await.unwrap();

    // Privilege is the agent's: no official env, no result.
    let err = a_agent
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);

    // Another run's batch is not there either.
    std::fs::write(server.submission_dir(&b_run).join(ENTRYPOINT), b"x").unwrap();
    let batch = submit(&mut b_agent, &b).await.unwrap();
    let err = a_agent
        .get_batch_eval_status(pb::GetBatchEvalStatusRequest {
            batch_id: batch.clone(),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let s = finished(&mut b_agent, &batch).await;
    assert!(
        s.result.is_none(),
        "a run's channel never carries the result"
    );

    // The run's agent plays its own session over its channel.
    a_agent
        .start_eval_session(pb::StartEvalSessionRequest { handle: a.clone() })
        .await
        .unwrap();
    a_agent
        .reset(pb::ResetRequest {
            handle: a.clone(),
            seed: None,
            ..Default::default()
        })
        .await
        .unwrap();
    a_agent
        .step(pb::StepRequest {
            handle: a.clone(),
            action: action(1),
        })
        .await
        .unwrap();
}

/// Whether a connection to `socket` is served: connected, and answering a request.
async fn is_served(socket: &Path) -> Option<AleEnvClient<Channel>> {
    let mut client = ale_harness::channel::connect(socket).await.ok()?;
    let ok = tokio::time::timeout(
        Duration::from_secs(5),
        client.get_spec(pb::GetSpecRequest {
            handle: "env-nope".into(),
        }),
    )
    .await
    .ok()?;
    match ok {
        Err(status) if status.code() == Code::NotFound => Some(client),
        _ => None,
    }
}

#[tokio::test]
async fn one_runs_agent_exhausting_its_share_leaves_every_other_share_whole() {
    let limits = Limits {
        max_run_practice_envs: 3,
        ..Limits::default()
    };
    let options = ServeOptions {
        max_run_connections: 2,
        ..options()
    };
    let server = server_with(limits, options).await;
    let (_, _, hog_run) = server.official_env("cartpole-balance").await;
    let (_, _, other_run) = server.official_env("cartpole-balance").await;
    let hog_socket = server.run_socket(&hog_run);

    // Every connection the hog's run may have, held.
    let mut held = Vec::new();
    for _ in 0..2 {
        held.push(is_served(&hog_socket).await.expect("within the run's cap"));
    }
    assert!(is_served(&hog_socket).await.is_none(), "past the run's cap");
    // Every practice env the hog's run may have, held.
    for _ in 0..3 {
        create_practice(&mut held[0]).await.unwrap();
    }
    let err = create_practice(&mut held[1]).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted);
    assert!(err.message().contains("--max-run-practice-envs"), "{err:?}");

    // The other run's share is whole: its connections and its practice envs.
    let mut other = Vec::new();
    for _ in 0..2 {
        other.push(
            is_served(&server.run_socket(&other_run))
                .await
                .expect("its own cap"),
        );
    }
    for _ in 0..3 {
        create_practice(&mut other[1]).await.unwrap();
    }
    // And so is the shared channel's.
    let mut shared = server.agent().await;
    create_practice(&mut shared).await.unwrap();
    assert_eq!(server.server.evaluator().env_counts().run_practice, 6);
    assert_eq!(server.server.evaluator().env_counts().practice, 1);
}

#[tokio::test]
async fn a_run_that_ends_takes_its_channels_practice_envs_with_it() {
    let server = server_with(Limits::default(), options()).await;
    let (_, session, run_id) = server.official_env("cartpole-balance").await;
    let mut agent = server.run_agent(&run_id).await;
    for _ in 0..3 {
        create_practice(&mut agent).await.unwrap();
    }
    assert_eq!(server.server.evaluator().env_counts().run_practice, 3);
    let mut harness = server.harness().await;
    result(&mut harness, &session, true).await;
    assert_eq!(server.server.evaluator().env_counts().run_practice, 0);
}

/// Mounts a tmpfs of `size` on `path` (mode 0700); `false` if this process may not mount.
fn mount_tmpfs(path: &Path, size: &str) -> bool {
    use nix::mount::{MsFlags, mount};
    if !nix::unistd::geteuid().is_root() {
        return false;
    }
    std::fs::create_dir_all(path).unwrap();
    let options = format!("size={size},mode=0700");
    mount(
        Some("ale-test"),
        path,
        Some("tmpfs"),
        MsFlags::empty(),
        Some(options.as_str()),
    )
    .is_ok()
}

#[tokio::test]
async fn a_full_disk_never_costs_a_started_run_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    if !mount_tmpfs(&state, "4m") {
        eprintln!("not root (or no mount allowed): cannot make a small tmpfs state dir; skipped");
        return;
    }
    let server = TestServer::start_in(
        dir,
        &[batch_task()],
        Limits::default(),
        BatchOptions::default(),
        options(),
    )
    .await;
    let (handle, session, run_id) = server.official_env("cartpole-balance").await;

    // Another run's agent (here: anyone) fills the disk.
    {
        use std::io::Write;
        let mut filler = std::fs::File::create(state.join("filler")).unwrap();
        let chunk = vec![1u8; 64 << 10];
        while filler.write_all(&chunk).is_ok() {}
        // Down to the last page.
        while filler.write_all(&[1]).is_ok() {}
    }
    // No new run starts that could not finish its record, and none is left half-made.
    let mut harness = server.harness().await;
    let err = harness
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    assert!(err.message().contains("cannot reserve"), "{err:?}");
    let runs = std::fs::read_dir(state.join("runs")).unwrap().count();
    assert_eq!(runs, 1, "a refused run leaves no run folder");

    // The run that started plays every rollout and records its end in its reserved blocks.
    let mut agent = server.run_agent(&run_id).await;
    agent
        .start_eval_session(pb::StartEvalSessionRequest {
            handle: handle.clone(),
        })
        .await
        .unwrap();
    let mut rollouts = 0;
    while agent
        .reset(pb::ResetRequest {
            handle: handle.clone(),
            seed: None,
            ..Default::default()
        })
        .await
        .is_ok()
    {
        rollouts += 1;
        loop {
            let t = agent
                .step(pb::StepRequest {
                    handle: handle.clone(),
                    action: action(1),
                })
                .await
                .unwrap()
                .into_inner();
            if t.terminated || t.truncated {
                break;
            }
        }
    }
    assert_eq!(rollouts, 20);
    let record = result(&mut harness, &session, false).await;
    assert_eq!(
        record.status(),
        pb::EvalStatus::Completed,
        "{}",
        record.status_message
    );
    let path = server.trajectory_path(&run_id);
    let text = common::read(&path);
    let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
    assert_eq!(verified.result.unwrap().episodes.len(), 20);
    assert!(text.contains("\"session_finished\""));
    // The record fits in what was reserved for it: 64 KiB + 2 KiB per planned rollout.
    let len = std::fs::metadata(&path).unwrap().len();
    assert!(len <= (64 << 10) + 20 * (2 << 10), "{len} bytes");
    eprintln!("a 20-rollout record: {len} bytes, {} per rollout", len / 20);
    // Finished, it gives back what it did not use of its reservation.
    let allocated = {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata(&path).unwrap().blocks() * 512
    };
    assert!(
        allocated <= len.next_multiple_of(4096) + 4096,
        "{allocated} bytes still allocated for a {len}-byte record"
    );

    server.server.shutdown().await;
    let _ = nix::mount::umount2(&state, nix::mount::MntFlags::MNT_DETACH);
}

/// The tasks of a run whose time budget is 1 s: interactive and batch.
fn short_budget_tasks() -> Vec<(&'static str, String)> {
    let interactive = cartpole_variant(
        "cartpole-short",
        &[("time_budget_seconds = 600", "time_budget_seconds = 1")],
    );
    let (name, batch) = batch_task();
    let batch = batch
        .replace("id = \"cartpole-batch\"", "id = \"cartpole-batch-short\"")
        .replace("time_budget_seconds = 600", "time_budget_seconds = 1");
    vec![
        ("short.toml", interactive),
        (name, batch_task().1),
        ("batch-short.toml", batch),
    ]
}

/// Regression: deadlines were enforced only when a request arrived, so a run whose harness
/// died (before its agent started, or with a session nobody drove) kept its folder, its
/// socket and its connections until the official pool was full.
#[tokio::test]
async fn runs_nobody_drives_past_their_time_budget_are_ended_by_the_sweep() {
    let server = TestServer::start_in(
        tempfile::tempdir().unwrap(),
        &short_budget_tasks(),
        Limits::default(),
        BatchOptions::default(),
        options(),
    )
    .await;
    // A batch run never submitted, an interactive run never started, and one started whose
    // agent went silent; no harness polls any of them.
    let (_, _, batch_run) = server.official_env("cartpole-batch-short").await;
    let (_, _, idle_run) = server.official_env("cartpole-short").await;
    let (started, _, started_run) = server.official_env("cartpole-short").await;
    let mut agent = server.run_agent(&started_run).await;
    agent
        .start_eval_session(pb::StartEvalSessionRequest {
            handle: started.clone(),
        })
        .await
        .unwrap();
    agent
        .reset(pb::ResetRequest {
            handle: started.clone(),
            seed: None,
            ..Default::default()
        })
        .await
        .unwrap();
    // A run with time to spare is left alone.
    let (_, _, long_run) = server.official_env(BATCH).await;
    let folder = server.submission_dir(&batch_run);
    assert!(folder.is_dir());

    assert!(gone(&folder).await, "the batch run's folder");
    for run in [&batch_run, &idle_run, &started_run] {
        assert!(gone(&server.run_socket(run)).await, "{run}'s socket");
    }
    let expect = [
        (&batch_run, EvalStatus::EndedEarly, "nothing was submitted"),
        (
            &idle_run,
            EvalStatus::EndedEarly,
            "its session was never started",
        ),
        (
            &started_run,
            EvalStatus::BudgetExceeded,
            "the time budget of 1 s ran out",
        ),
    ];
    for (run, status, message) in expect {
        let text = common::read(&server.trajectory_path(run));
        let verified = ale_harness::verify::verify_trajectory(&text).unwrap();
        let result = verified.result.expect("a finished session");
        assert_eq!(result.status, status, "{run}: {result:?}");
        assert!(
            result.status_message.contains(message),
            "{run}: {}",
            result.status_message
        );
    }
    assert!(server.submission_dir(&long_run).is_dir());
    assert!(server.run_socket(&long_run).exists());
    server.server.shutdown().await;
}

/// Regression: practice envs created over a run's channel while it lingered after its run
/// ended survived the run.
#[tokio::test]
async fn an_ended_runs_lingering_channel_refuses_new_practice_envs() {
    let server = server_with(
        Limits::default(),
        ServeOptions {
            run_linger: Duration::from_millis(800),
            ..options()
        },
    )
    .await;
    let (_, session, run_id) = server.official_env("cartpole-balance").await;
    let mut agent = server.run_agent(&run_id).await;
    create_practice(&mut agent).await.unwrap();
    let mut harness = server.harness().await;
    result(&mut harness, &session, true).await;
    assert_eq!(server.server.evaluator().env_counts().run_practice, 0);

    // The connection lingers, and is still served, but makes no env.
    let err = create_practice(&mut agent).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    assert!(
        err.message().contains(&run_id) && err.message().contains("has ended"),
        "{err:?}"
    );
    assert_eq!(server.server.evaluator().env_counts().run_practice, 0);
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(create_practice(&mut agent).await.is_err());
    assert_eq!(server.server.evaluator().env_counts().run_practice, 0);
    // Other channels still make practice envs.
    create_practice(&mut server.agent().await).await.unwrap();
}

/// Regression: a run's folder an agent kept creating files in as its run ended could not be
/// removed (`ENOTEMPTY`), was never tried again, and stayed on the state disk.
#[tokio::test]
async fn a_folder_an_agent_keeps_writing_in_as_its_run_ends_goes_once_it_stops() {
    let server = server_with(Limits::default(), options()).await;
    let (_, session, run_id) = server.official_env(BATCH).await;
    let folder = server.submission_dir(&run_id);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (folder, stop) = (folder.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // Fails once the folder is gone; an agent would go on trying.
                let _ = std::fs::write(folder.join(format!("filler-{n}")), b"x");
                n += 1;
            }
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    let mut harness = server.harness().await;
    result(&mut harness, &session, true).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let raced = folder.exists();
    eprintln!("the folder survived its run's end while written to: {raced}");
    // The harness kills its agent shortly after the run ends.
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert!(gone(&folder).await, "removed on the sweep's retry");
    server.server.shutdown().await;
}
