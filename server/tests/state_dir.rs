//! A state dir that only the evaluator owns: what a real evaluator does when someone else
//! prepared or tampered with its state dir.

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::Path;
use std::sync::Arc;

use ale_proto::pb;
use ale_server::{Evaluator, TaskRegistry};

fn evaluator(state: &Path) -> Result<Evaluator, ale_server::StateDirError> {
    Evaluator::new(TaskRegistry::builtin(&ale_sims::catalog()).unwrap(), state)
}

#[tokio::test]
async fn the_agent_endpoint_file_is_written_beside_a_planted_link_not_through_it() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let evaluator = evaluator(&state).unwrap();
    // Someone points agent.endpoint at a file they want overwritten.
    let target = tmp.path().join("precious");
    std::fs::write(&target, "root's own file\n").unwrap();
    let endpoint_file = state.join("agent.endpoint");
    symlink(&target, &endpoint_file).unwrap();

    let server = ale_server::serve::start(Arc::new(evaluator), "127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "root's own file\n"
    );
    let metadata = std::fs::symlink_metadata(&endpoint_file).unwrap();
    assert!(metadata.is_file(), "the link was replaced by a file");
    assert_eq!(metadata.mode() & 0o777, 0o600);
    let recorded = ale_records::layout::AgentEndpoints::parse(
        &std::fs::read_to_string(&endpoint_file).unwrap(),
    )
    .unwrap();
    assert_eq!(recorded.tcp, server.agent_endpoint());
    assert_eq!(recorded.unix, server.agent_socket());
    server.shutdown().await;
    assert!(!endpoint_file.exists());
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "root's own file\n"
    );
}

#[tokio::test]
async fn a_runs_dir_swapped_for_a_link_gets_no_run_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let server = ale_server::serve::start(
        Arc::new(evaluator(&state).unwrap()),
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let attacker = tmp.path().join("attacker");
    std::fs::create_dir(&attacker).unwrap();
    std::fs::set_permissions(&attacker, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::remove_dir(state.join("runs")).unwrap();
    symlink(&attacker, state.join("runs")).unwrap();

    let mut harness = ale_harness::channel::connect(server.harness_socket())
        .await
        .unwrap();
    let status = harness
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), tonic::Code::Internal, "{status:?}");
    assert!(
        status.message().contains("is a symbolic link"),
        "{status:?}"
    );
    assert_eq!(std::fs::read_dir(&attacker).unwrap().count(), 0);

    // With runs/ a real directory again, official runs work.
    std::fs::remove_file(state.join("runs")).unwrap();
    std::fs::create_dir(state.join("runs")).unwrap();
    std::fs::set_permissions(state.join("runs"), std::fs::Permissions::from_mode(0o700)).unwrap();
    let created = harness
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let run_dir = state.join("runs").join(&created.run_id);
    assert_eq!(std::fs::metadata(&run_dir).unwrap().mode() & 0o777, 0o700);
    assert!(run_dir.join("trajectory.jsonl").is_file());
    server.shutdown().await;
}

#[test]
fn the_evaluator_has_a_key_and_publishes_it() {
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let first = evaluator(&state).unwrap();
    let published =
        ale_records::signing_keys::read_public_key(&state.join("evaluator.pub")).unwrap();
    assert_eq!(published, first.signing_key().verifying_key());
    assert_eq!(
        first.public_key_hex(),
        ale_records::signing_keys::encode_public_key(&published)
    );
    drop(first);
    // The same key on the next start.
    let second = evaluator(&state).unwrap();
    assert_eq!(second.signing_key().verifying_key(), published);
}

#[test]
fn a_key_of_another_user_stops_the_evaluator() {
    if ale_records::private_files::effective_uid() != 0 {
        eprintln!("not root: cannot make a file of another user");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    drop(evaluator(&state).unwrap());
    let key = state.join("evaluator.key");
    std::os::unix::fs::lchown(&key, Some(65534), Some(65534)).unwrap();
    let e = evaluator(&state).err().expect("refused").to_string();
    assert!(
        e.contains(&format!(
            "{} is owned by uid 65534, expected uid 0",
            key.display()
        )),
        "{e}"
    );
}
