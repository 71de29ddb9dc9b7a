//! What an evaluator leaves on disk, read where its harness socket lives: the state dir's
//! modes and a session's trajectory. Only whoever can reach the harness socket can read
//! these, so the cases need it; they skip when its folder is not an ALE state dir.

use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ale_client::TaskSpec;
use ale_records::layout::{
    AGENT_ENDPOINT_FILE, AGENT_SOCKET, EVALUATOR_KEY_FILE, EVALUATOR_PUBLIC_KEY_FILE,
    HARNESS_SOCKET, RUNS_DIR, SECRET_FILE,
};
use ale_records::signature::check_head;
use ale_records::signing_keys::read_public_key;
use ale_records::trajectory::{EventKind, Level, verify};

use super::Ctx;
use super::check::{During, Outcome, Problem, expect, expect_eq};
use super::session::{create_official, eval_result, interactive_task};

/// The folder holding the harness socket, if it is an ALE state dir.
fn state_dir(ctx: &Ctx) -> Result<PathBuf, Problem> {
    let dir = ctx
        .harness_socket
        .as_deref()
        .and_then(Path::parent)
        .ok_or_else(|| Problem::Skip("the harness socket has no folder".into()))?;
    if !dir.join(EVALUATOR_PUBLIC_KEY_FILE).exists() {
        return Err(Problem::Skip(format!(
            "{} holds no {EVALUATOR_PUBLIC_KEY_FILE}: the harness socket is not in an ALE \
             state dir",
            dir.display()
        )));
    }
    Ok(dir.to_path_buf())
}

fn mode(path: &Path) -> Result<u32, Problem> {
    std::fs::symlink_metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .during(&format!("reading the metadata of {}", path.display()))
}

fn expect_mode(path: &Path, want: u32) -> Outcome {
    let got = mode(path)?;
    expect(
        got == want,
        format!("{} to have mode {want:04o}", path.display()),
        format!("{got:04o}"),
    )
}

pub(crate) async fn state_dir_private(ctx: &Ctx) -> Outcome {
    let dir = state_dir(ctx)?;
    expect_mode(&dir, 0o700)?;
    expect_mode(&dir.join(RUNS_DIR), 0o700)?;
    let socket = dir.join(HARNESS_SOCKET);
    let is_socket = std::fs::symlink_metadata(&socket)
        .map(|m| m.file_type().is_socket())
        .unwrap_or(false);
    expect(
        is_socket,
        format!("{} to be a socket", socket.display()),
        "something else",
    )?;
    expect_mode(&socket, 0o600)?;
    for file in [SECRET_FILE, EVALUATOR_KEY_FILE] {
        let path = dir.join(file);
        expect_mode(&path, 0o600)?;
        let len = std::fs::metadata(&path)
            .during(&format!("reading {}", path.display()))?
            .len();
        expect_eq(
            &format!("{} to hold 32 bytes, not", path.display()),
            32,
            len,
        )?;
    }
    let public = dir.join(EVALUATOR_PUBLIC_KEY_FILE);
    expect_mode(&public, 0o644)?;
    let text = std::fs::read_to_string(&public).during(&format!("reading {}", public.display()))?;
    expect(
        text.len() == 65
            && text.ends_with('\n')
            && text[..64]
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        format!(
            "{} to hold 64 lowercase hex digits and a newline",
            public.display()
        ),
        format!("{text:?}"),
    )?;
    let endpoint = dir.join(AGENT_ENDPOINT_FILE);
    if endpoint.exists() {
        expect_mode(&endpoint, 0o600)?;
    }
    let agent_socket = dir.join(AGENT_SOCKET);
    if agent_socket.exists() {
        expect_mode(&agent_socket, 0o666)?;
    }
    Ok(())
}

/// Plays a short session (two rollouts, the second ended by the harness) and checks its
/// trajectory: an unbroken hash chain whose head `GetEvalResult` names, the events in the
/// protocol's order, the seed commitments the result lists, and the evaluator's signature.
pub(crate) async fn trajectory_verifies(ctx: &Ctx) -> Outcome {
    let dir = state_dir(ctx)?;
    let task: &TaskSpec = interactive_task(ctx)?;
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    let mut env = ctx
        .agent()
        .await?
        .attach(official.handle.clone())
        .await
        .during("GetSpec of the official env")?;
    env.start_eval_session().await.during("StartEvalSession")?;
    let action = task.action_space.sample(&mut ale_client::Rng::new(1));
    env.reset(None).await.during("Reset in the session")?;
    env.step(&action).await.during("Step in the session")?;
    let two_rollouts = task.episodes_per_eval > 1;
    if two_rollouts {
        env.reset(None).await.during("Reset in the session")?;
    }
    let result = eval_result(&harness, &official.session_id, true).await?;

    let path = dir
        .join(RUNS_DIR)
        .join(official.run_id.as_str())
        .join("trajectory.jsonl");
    let text = std::fs::read_to_string(&path).during(&format!("reading {}", path.display()))?;
    let chain = verify(&text).during(&format!("the hash chain of {}", path.display()))?;
    expect_eq(
        "the trajectory's head to be the one GetEvalResult names:",
        &result.trajectory_head,
        &chain.head,
    )?;
    let kinds: Vec<EventKind> = chain.events.iter().map(|e| e.event.kind).collect();
    let mut want = vec![
        EventKind::RunStarted,
        EventKind::SessionStarted,
        EventKind::RolloutStarted,
        EventKind::RolloutFinished,
    ];
    if two_rollouts {
        want.extend([EventKind::RolloutStarted, EventKind::RolloutFinished]);
    }
    want.push(EventKind::SessionFinished);
    expect_eq("the trajectory's events", want, kinds)?;
    let committed: Vec<&str> = chain.events[1]
        .event
        .data
        .get("seed_commitments")
        .and_then(|v| v.as_array())
        .map(|a| a.iter().filter_map(|c| c.as_str()).collect())
        .unwrap_or_default();
    let listed: Vec<&str> = result.seed_commitments.iter().map(String::as_str).collect();
    expect_eq(
        "session_started's commitments to be the result's:",
        listed,
        committed,
    )?;
    let last = chain
        .events
        .last()
        .ok_or_else(|| Problem::fail("events", "none"))?;
    let signature = last.signature.as_deref().ok_or_else(|| {
        Problem::fail(
            "session_finished to carry the evaluator's signature",
            "none",
        )
    })?;
    let key = read_public_key(&dir.join(EVALUATOR_PUBLIC_KEY_FILE))
        .during("reading the evaluator's public key")?;
    check_head(&key, Level::TrustedEvaluator, &chain.head, signature)
        .during("checking the evaluator's signature on session_finished")
}
