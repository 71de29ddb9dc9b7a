//! Privilege comes from the listener: the agent channel may play an official env it was
//! handed, but never create one, read a result or end a session.

use ale_client::{EnvHandle, SessionId};
use ale_proto::RunId;
use ale_proto::eval::EvalStatus;
use ale_proto::pb;
use tonic::Code;

use super::Ctx;
use super::check::{During, Outcome, expect, expect_code, expect_eq, is_prefixed_random};
use super::session::{create_official, eval_result, interactive_task};

/// A session id no evaluator hands out by chance.
pub(crate) const UNKNOWN_SESSION: &str = "ses-00000000000000000000000000000000";

pub(crate) async fn cannot_create_official(ctx: &Ctx) -> Outcome {
    let task = &ctx.tasks()?[0];
    let mut raw = ctx.agent().await?.raw();
    expect_code(
        "CreateEnv official on the agent channel",
        raw.create_env(pb::CreateEnvRequest {
            task_id: task.id.clone(),
            official: true,
            ..Default::default()
        })
        .await,
        Code::PermissionDenied,
    )
}

pub(crate) async fn cannot_read_results(ctx: &Ctx) -> Outcome {
    let mut raw = ctx.agent().await?.raw();
    for end_session in [false, true] {
        expect_code(
            &format!("GetEvalResult (end_session {end_session}) on the agent channel"),
            raw.get_eval_result(pb::GetEvalResultRequest {
                session_id: UNKNOWN_SESSION.into(),
                end_session,
            })
            .await,
            Code::PermissionDenied,
        )?;
    }
    Ok(())
}

/// An agent holding its own session's id can neither read nor end it.
pub(crate) async fn cannot_end_sessions(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    let agent = ctx.agent().await?;
    let mut env = agent
        .attach(official.handle.clone())
        .await
        .during("GetSpec of the official env on the agent channel")?;
    env.start_eval_session()
        .await
        .during("StartEvalSession on the agent channel")?;
    let mut raw = agent.raw();
    for end_session in [false, true] {
        expect_code(
            &format!(
                "GetEvalResult (end_session {end_session}) of the agent's own session on the agent channel"
            ),
            raw.get_eval_result(pb::GetEvalResultRequest {
                session_id: official.session_id.to_string(),
                end_session,
            })
            .await,
            Code::PermissionDenied,
        )?;
    }
    let result = eval_result(&harness, &official.session_id, false).await?;
    expect_eq(
        "the session, after the agent's refused end_session, to be",
        EvalStatus::Running,
        result.status,
    )?;
    // Leave nothing running.
    eval_result(&harness, &official.session_id, true).await?;
    Ok(())
}

pub(crate) async fn official_env_handed_to_agent(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    for (id, prefix) in [
        (official.handle.as_str(), EnvHandle::PREFIX),
        (official.session_id.as_str(), SessionId::PREFIX),
        (official.run_id.as_str(), RunId::PREFIX),
    ] {
        expect(
            is_prefixed_random(id, prefix),
            format!("CreateEnv official to answer an id of {prefix:?} and 32 lowercase hex digits"),
            id,
        )?;
    }
    let env = ctx
        .agent()
        .await?
        .attach(official.handle.clone())
        .await
        .during("GetSpec of the official env on the agent channel")?;
    expect_eq(
        "GetSpec of the official env on the agent channel: official =",
        true,
        env.spec().official,
    )?;
    expect_eq(
        "GetSpec of the official env: the catalog's metadata",
        task,
        &env.spec().task,
    )
}

pub(crate) async fn unknown_session(ctx: &Ctx) -> Outcome {
    let mut raw = ctx.harness().await?.raw();
    expect_code(
        "GetEvalResult of an unknown session on the harness channel",
        raw.get_eval_result(pb::GetEvalResultRequest {
            session_id: UNKNOWN_SESSION.into(),
            end_session: false,
        })
        .await,
        Code::NotFound,
    )
}
