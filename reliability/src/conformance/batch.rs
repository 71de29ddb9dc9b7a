//! The batch contract's refusals, and a batch run's status on both channels. The suite writes
//! no submission: a run it submits plays whatever the evaluator's submission folder holds,
//! and with nothing there it must still be made and end `FAILED`, naming the problem.

use std::time::{Duration, Instant};

use ale_client::{BatchId, Client, EnvHandle, TaskSpec};
use ale_proto::eval::{EvalResultRecord, EvalStatus};
use ale_proto::pb;
use tonic::Code;

use super::Ctx;
use super::check::{
    During, Outcome, Problem, expect, expect_code, expect_eq, expect_ok, is_prefixed_random,
};
use super::practice::any_action;
use super::session::{Official, create_official, eval_result, interactive_task};

fn batch_task(ctx: &Ctx) -> Result<&TaskSpec, Problem> {
    ctx.task_where(TaskSpec::is_batch)?
        .ok_or_else(|| Problem::Skip("the catalog has no batch task".into()))
}

async fn submit(
    client: &Client,
    handle: &EnvHandle,
) -> Result<pb::SubmitBatchEvalResponse, tonic::Status> {
    client
        .raw()
        .submit_batch_eval(pb::SubmitBatchEvalRequest {
            handle: handle.to_string(),
        })
        .await
        .map(tonic::Response::into_inner)
}

pub(crate) async fn submit_practice_env(ctx: &Ctx) -> Outcome {
    let task = match ctx.task_where(TaskSpec::is_batch)? {
        Some(task) => task,
        None => &ctx.tasks()?[0],
    };
    let client = ctx.agent().await?;
    let env = client
        .create(&task.id)
        .await
        .during(&format!("CreateEnv {}", task.id))?;
    expect_code(
        &format!("SubmitBatchEval of a practice env of {}", task.id),
        submit(&client, env.handle()).await,
        Code::FailedPrecondition,
    )
}

pub(crate) async fn submit_interactive_official(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    expect_code(
        &format!(
            "SubmitBatchEval of the official env of the interactive task {}",
            task.id
        ),
        submit(&ctx.agent().await?, &official.handle).await,
        Code::FailedPrecondition,
    )?;
    eval_result(&harness, &official.session_id, true).await?;
    Ok(())
}

pub(crate) async fn official_refuses_reset_step(ctx: &Ctx) -> Outcome {
    let task = batch_task(ctx)?;
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    let mut raw = ctx.agent().await?.raw();
    expect_refuses_play(&mut raw, task, &official, "before its submission").await?;
    expect_code(
        "StartEvalSession of a batch task's official env",
        raw.start_eval_session(pb::StartEvalSessionRequest {
            handle: official.handle.to_string(),
        })
        .await,
        Code::FailedPrecondition,
    )?;
    eval_result(&harness, &official.session_id, true).await?;
    Ok(())
}

async fn expect_refuses_play(
    raw: &mut pb::ale_env_client::AleEnvClient<tonic::transport::Channel>,
    task: &TaskSpec,
    official: &Official,
    when: &str,
) -> Outcome {
    expect_code(
        &format!("Reset of a batch task's official env {when}"),
        raw.reset(pb::ResetRequest {
            handle: official.handle.to_string(),
            seed: None,
            ..Default::default()
        })
        .await,
        Code::FailedPrecondition,
    )?;
    expect_code(
        &format!("Step of a batch task's official env {when}"),
        raw.step(pb::StepRequest {
            handle: official.handle.to_string(),
            action: Some(any_action(task)),
        })
        .await,
        Code::FailedPrecondition,
    )
}

pub(crate) async fn second_submission(ctx: &Ctx) -> Outcome {
    let task = batch_task(ctx)?;
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    let agent = ctx.agent().await?;
    let first = submit(&agent, &official.handle)
        .await
        .during("the first SubmitBatchEval")?;
    expect(
        is_prefixed_random(&first.batch_id, BatchId::PREFIX),
        format!(
            "a batch id of {:?} and 32 lowercase hex digits",
            BatchId::PREFIX
        ),
        &first.batch_id,
    )?;
    expect_code(
        "a second SubmitBatchEval of the same official env",
        submit(&agent, &official.handle).await,
        Code::FailedPrecondition,
    )?;
    expect_refuses_play(&mut agent.raw(), task, &official, "after its submission").await?;
    // Cancel the run, whatever it is playing.
    eval_result(&harness, &official.session_id, true).await?;
    Ok(())
}

/// How long a submitted run may take to finish.
const RUN_DEADLINE: Duration = Duration::from_secs(150);

pub(crate) async fn run_reports_status(ctx: &Ctx) -> Outcome {
    let task = batch_task(ctx)?;
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    let agent = ctx.agent().await?;
    let batch_id = submit(&agent, &official.handle)
        .await
        .during("SubmitBatchEval (the suite writes no submission)")?
        .batch_id;
    let status = |client: &Client| {
        let batch_id = batch_id.clone();
        let mut raw = client.raw();
        async move {
            expect_ok(
                "GetBatchEvalStatus",
                raw.get_batch_eval_status(pb::GetBatchEvalStatusRequest { batch_id })
                    .await,
            )
        }
    };
    let deadline = Instant::now() + RUN_DEADLINE;
    let last = loop {
        let answer = status(&agent).await?;
        expect(
            answer.result.is_none(),
            "GetBatchEvalStatus on the agent channel never to carry the result",
            format!("a result in state {:?}", answer.state()),
        )?;
        expect(
            (0.0..=1.0).contains(&answer.progress),
            "progress within 0..1",
            answer.progress,
        )?;
        match answer.state() {
            pb::BatchState::Succeeded | pb::BatchState::Failed => break answer,
            pb::BatchState::Queued | pb::BatchState::Running => {}
            pb::BatchState::Unspecified => {
                return Err(Problem::fail("a batch state", "BATCH_STATE_UNSPECIFIED"));
            }
        }
        if Instant::now() > deadline {
            return Err(Problem::fail(
                format!("the run to finish within {} s", RUN_DEADLINE.as_secs()),
                format!("{:?} at progress {}", answer.state(), answer.progress),
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let on_harness = status(&harness).await?;
    let result = on_harness.result.ok_or_else(|| {
        Problem::fail(
            "GetBatchEvalStatus on the harness channel to carry the finished run's result",
            "none",
        )
    })?;
    let result = EvalResultRecord::try_from(result).during("decoding the batch run's result")?;
    expect_eq(
        "the batch run's result to be the official env's session",
        &official.session_id,
        &result.session_id,
    )?;
    if last.state() == pb::BatchState::Failed {
        expect(
            !last.message.is_empty(),
            "a FAILED run to say why",
            "an empty message",
        )?;
        // Ended early by the agent's side (its submission), or by the evaluator itself.
        expect(
            matches!(
                result.status,
                EvalStatus::EndedEarly | EvalStatus::EvaluatorEnded
            ),
            "a FAILED run's session to be ended_early or evaluator_ended",
            format!("{:?}", result.status),
        )?;
    } else {
        expect(
            matches!(
                result.status,
                EvalStatus::Completed | EvalStatus::BudgetExceeded
            ),
            "a SUCCEEDED run's session to be completed or budget_exceeded",
            format!("{:?}", result.status),
        )?;
    }
    let polled = eval_result(&harness, &official.session_id, false).await?;
    expect_eq(
        "GetEvalResult of the run's session to agree with its batch status",
        result.status,
        polled.status,
    )
}
