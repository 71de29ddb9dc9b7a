//! Interactive eval sessions: hidden seeds, aborts, completion, the harness's end, budgets.
//! The harness creates the official env; the agent channel plays it, as a real agent would.

use std::time::Duration;

use ale_client::{Client, Env, EnvHandle, Info, InfoValue, Rng, SessionId, TaskSpec};
use ale_proto::eval::{EvalResultRecord, EvalStatus, Outcome as RolloutOutcome};
use ale_proto::info_keys::{ROLLOUT_INDEX, ROLLOUTS_PLANNED};
use ale_proto::{RunId, pb};
use tonic::Code;

use super::Ctx;
use super::check::{During, Outcome, Problem, expect, expect_code, expect_eq, expect_ok};
use super::practice::{SEED, any_action, expect_no_seed};

/// An official env, as the harness created it.
pub(crate) struct Official {
    pub handle: EnvHandle,
    pub session_id: SessionId,
    pub run_id: RunId,
}

pub(crate) async fn create_official(
    harness: &Client,
    task: &TaskSpec,
) -> Result<Official, Problem> {
    let created = expect_ok(
        &format!("CreateEnv official {} on the harness channel", task.id),
        harness
            .raw()
            .create_env(pb::CreateEnvRequest {
                task_id: task.id.clone(),
                official: true,
                ..Default::default()
            })
            .await,
    )?;
    expect_eq(
        "CreateEnv official to answer official =",
        true,
        created.official,
    )?;
    Ok(Official {
        handle: EnvHandle::from_wire(created.handle),
        session_id: SessionId::from_wire(created.session_id),
        run_id: RunId::from_wire(created.run_id),
    })
}

/// `GetEvalResult` on the harness channel, decoded.
pub(crate) async fn eval_result(
    harness: &Client,
    session_id: &SessionId,
    end_session: bool,
) -> Result<EvalResultRecord, Problem> {
    let answer = expect_ok(
        &format!("GetEvalResult (end_session {end_session}) on the harness channel"),
        harness
            .raw()
            .get_eval_result(pb::GetEvalResultRequest {
                session_id: session_id.to_string(),
                end_session,
            })
            .await,
    )?;
    let result = answer
        .result
        .ok_or_else(|| Problem::fail("GetEvalResult to carry a result", "none"))?;
    EvalResultRecord::try_from(result).during("decoding GetEvalResult's result")
}

/// Whether a session of `task` can be played through one whole rollout and a step of each
/// other without a budget running out.
fn has_room(task: &TaskSpec) -> bool {
    let steps_needed = u64::from(task.max_steps_per_episode) + u64::from(task.episodes_per_eval);
    !task.is_batch()
        && task.budgets.time_budget_seconds.is_none_or(|s| s >= 60)
        && task
            .budgets
            .max_total_steps
            .is_none_or(|n| n >= steps_needed)
}

/// The interactive task the session cases play.
pub(crate) fn interactive_task(ctx: &Ctx) -> Result<&TaskSpec, Problem> {
    ctx.task_where(has_room)?.ok_or_else(|| {
        Problem::Skip(
            "no interactive task whose budgets leave room for a whole rollout and a step of \
             each other"
                .into(),
        )
    })
}

/// The official env of `task`, handed to a fresh agent connection, its session started.
async fn started(ctx: &Ctx, task: &TaskSpec) -> Result<(Client, Official, Env, u32), Problem> {
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    let mut env = ctx
        .agent()
        .await?
        .attach(official.handle.clone())
        .await
        .during("GetSpec of the official env on the agent channel")?;
    let session = env
        .start_eval_session()
        .await
        .during("StartEvalSession on the agent channel")?;
    expect_eq(
        "StartEvalSession to answer the session id CreateEnv named",
        &official.session_id,
        &session.session_id,
    )?;
    expect_eq(
        &format!("StartEvalSession to plan {}'s episodes_per_eval", task.id),
        task.episodes_per_eval,
        session.episodes,
    )?;
    Ok((harness, official, env, session.episodes))
}

fn integer(info: &Info, key: &str) -> Option<i64> {
    match info.get(key) {
        Some(InfoValue::Integer(v)) => Some(*v),
        _ => None,
    }
}

/// The info map of a Reset in a session names the rollout and how many are planned.
fn expect_rollout(info: &Info, index: u32, planned: u32) -> Outcome {
    expect_eq(
        &format!("the Reset's info ({ROLLOUT_INDEX}, {ROLLOUTS_PLANNED}) to be"),
        (Some(i64::from(index)), Some(i64::from(planned))),
        (
            integer(info, ROLLOUT_INDEX),
            integer(info, ROLLOUTS_PLANNED),
        ),
    )?;
    expect_no_seed(info, "an eval session's info map")
}

/// Whether two floating-point results agree to rounding.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

fn expect_outcome(result: &EvalResultRecord, index: usize, outcome: RolloutOutcome) -> Outcome {
    let got = result.episodes.get(index).map(|e| e.outcome);
    expect_eq(
        &format!("rollout {index}'s outcome to be"),
        Some(outcome),
        got,
    )
}

/// Every rollout past the first `played` is `not_run` at the failure value.
fn expect_rest_not_run(result: &EvalResultRecord, played: usize, failure: f64) -> Outcome {
    for (i, e) in result.episodes.iter().enumerate().skip(played) {
        expect(
            e.outcome == RolloutOutcome::NotRun && e.metric == failure,
            format!("rollout {i} to be not_run at the failure value {failure}"),
            format!("{:?} at {}", e.outcome, e.metric),
        )?;
    }
    Ok(())
}

/// Asks the harness to end the session, so a case leaves nothing running.
async fn end(harness: &Client, official: &Official) -> Outcome {
    eval_result(harness, &official.session_id, true).await?;
    Ok(())
}

pub(crate) async fn needs_official_env(ctx: &Ctx) -> Outcome {
    let task = &ctx.tasks()?[0];
    let client = ctx.agent().await?;
    let env = client
        .create(&task.id)
        .await
        .during(&format!("CreateEnv {}", task.id))?;
    expect_code(
        "StartEvalSession on a practice env",
        client
            .raw()
            .start_eval_session(pb::StartEvalSessionRequest {
                handle: env.handle().to_string(),
            })
            .await,
        Code::FailedPrecondition,
    )
}

pub(crate) async fn official_env_needs_session(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let harness = ctx.harness().await?;
    let official = create_official(&harness, task).await?;
    let mut raw = ctx.agent().await?.raw();
    let handle = official.handle.to_string();
    expect_code(
        "Reset of an official env before StartEvalSession",
        raw.reset(pb::ResetRequest {
            handle: handle.clone(),
            seed: None,
            ..Default::default()
        })
        .await,
        Code::FailedPrecondition,
    )?;
    expect_code(
        "Step of an official env before StartEvalSession",
        raw.step(pb::StepRequest {
            handle: handle.clone(),
            action: Some(any_action(task)),
        })
        .await,
        Code::FailedPrecondition,
    )?;
    expect_code(
        "GetEvalResult before StartEvalSession",
        harness
            .raw()
            .get_eval_result(pb::GetEvalResultRequest {
                session_id: official.session_id.to_string(),
                end_session: false,
            })
            .await,
        Code::FailedPrecondition,
    )?;
    // end_session may end a session that never started: every rollout is not run.
    let ended = eval_result(&harness, &official.session_id, true).await?;
    expect_eq(
        "a session ended before it started to be",
        EvalStatus::EndedEarly,
        ended.status,
    )?;
    expect_rest_not_run(&ended, 0, task.metric.failure_value)?;
    expect_code(
        "StartEvalSession of a session the harness ended",
        raw.start_eval_session(pb::StartEvalSessionRequest { handle })
            .await,
        Code::FailedPrecondition,
    )
}

pub(crate) async fn starts_once(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let (harness, official, env, _) = started(ctx, task).await?;
    expect_code(
        "a second StartEvalSession",
        env.raw_client()
            .start_eval_session(pb::StartEvalSessionRequest {
                handle: official.handle.to_string(),
            })
            .await,
        Code::FailedPrecondition,
    )?;
    end(&harness, &official).await
}

pub(crate) async fn ignores_seeds(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let practice = {
        let mut env = ctx
            .agent()
            .await?
            .create(&task.id)
            .await
            .during(&format!("CreateEnv {}", task.id))?;
        let seeded = env.reset(Some(SEED)).await.during("Reset")?.observation;
        let other = env.reset(Some(SEED + 1)).await.during("Reset")?.observation;
        if seeded == other {
            return Err(Problem::Skip(format!(
                "{}'s first observation does not depend on the seed: hidden seeds cannot be told from the agent's",
                task.id
            )));
        }
        seeded
    };
    let (harness, official, mut env, planned) = started(ctx, task).await?;
    let first = env.reset(Some(SEED)).await.during("Reset in the session")?;
    expect_rollout(&first.info, 0, planned)?;
    env.step(&any_action_tensor(task))
        .await
        .during("Step in the session")?;
    if planned > 1 {
        let second = env.reset(Some(SEED)).await.during("Reset in the session")?;
        expect_rollout(&second.info, 1, planned)?;
        expect(
            first.observation != second.observation,
            format!("two session Resets with seed {SEED} to start two hidden-seed rollouts"),
            "the same first observation twice",
        )?;
    }
    expect(
        first.observation != practice,
        format!("a session Reset with seed {SEED} to ignore it"),
        "the first observation of a practice Reset with that seed",
    )?;
    end(&harness, &official).await
}

fn any_action_tensor(task: &TaskSpec) -> ale_client::Tensor {
    task.action_space.sample(&mut Rng::new(SEED))
}

pub(crate) async fn mid_episode_reset_aborts(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let (harness, official, mut env, planned) = started(ctx, task).await?;
    if planned < 2 {
        end(&harness, &official).await?;
        return Err(Problem::Skip(format!(
            "{} plans one rollout: an abort would end the session",
            task.id
        )));
    }
    env.reset(None).await.during("Reset in the session")?;
    env.step(&any_action_tensor(task))
        .await
        .during("Step in the session")?;
    let next = env.reset(None).await.during("a mid-episode Reset")?;
    expect_rollout(&next.info, 1, planned)?;
    let result = eval_result(&harness, &official.session_id, false).await?;
    let failure = task.metric.failure_value;
    expect_eq("the session to be", EvalStatus::Running, result.status)?;
    expect_eq(
        "the session to keep its planned rollouts:",
        planned as usize,
        result.episodes.len(),
    )?;
    expect_outcome(&result, 0, RolloutOutcome::Aborted)?;
    let aborted = &result.episodes[0];
    expect(
        aborted.metric == failure && aborted.steps == 1,
        format!("the aborted rollout at the failure value {failure} after its 1 step"),
        format!("{} after {} steps", aborted.metric, aborted.steps),
    )?;
    expect_outcome(&result, 1, RolloutOutcome::InProgress)?;
    end(&harness, &official).await
}

pub(crate) async fn completes(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let (harness, official, mut env, planned) = started(ctx, task).await?;
    let n = planned as usize;
    let failure = task.metric.failure_value;

    // Rollout 0, played to its end.
    env.reset(Some(SEED)).await.during("Reset in the session")?;
    let mut rng = Rng::new(SEED);
    let (mut steps, mut episode_return) = (0u64, 0.0);
    loop {
        let step = env
            .step(&task.action_space.sample(&mut rng))
            .await
            .during("Step in the session")?;
        steps += 1;
        episode_return += step.reward;
        if step.is_done() {
            break;
        }
    }
    if n > 1 {
        expect_code(
            "Step after a rollout ended, before the next Reset",
            env.raw_client()
                .step(pb::StepRequest {
                    handle: official.handle.to_string(),
                    action: Some(any_action(task)),
                })
                .await,
            Code::FailedPrecondition,
        )?;
    }
    // Rollouts 1.., each started, stepped once and aborted by the next Reset; the Reset
    // that aborts the last one answers that the session is complete.
    for i in 1..n {
        let reset = env.reset(None).await.during("Reset in the session")?;
        expect_rollout(&reset.info, i as u32, planned)?;
        env.step(&any_action_tensor(task))
            .await
            .during("Step in the session")?;
    }
    let mut raw = env.raw_client();
    let handle = official.handle.to_string();
    if n > 1 {
        expect_code(
            "the Reset that aborts the last rollout",
            raw.reset(pb::ResetRequest {
                handle: handle.clone(),
                seed: None,
                ..Default::default()
            })
            .await,
            Code::FailedPrecondition,
        )?;
    }
    let result = eval_result(&harness, &official.session_id, false).await?;
    expect_eq("the session to be", EvalStatus::Completed, result.status)?;
    expect_eq("the planned rollouts:", n, result.episodes.len())?;
    let first = &result.episodes[0];
    expect(
        first.outcome == RolloutOutcome::Completed
            && first.steps == steps
            && close(first.episode_return, episode_return),
        format!("rollout 0 completed after {steps} steps with return {episode_return}"),
        format!(
            "{:?} after {} steps with return {}",
            first.outcome, first.steps, first.episode_return
        ),
    )?;
    for (i, e) in result.episodes.iter().enumerate().skip(1) {
        expect(
            e.outcome == RolloutOutcome::Aborted && e.metric == failure,
            format!("rollout {i} aborted at the failure value {failure}"),
            format!("{:?} at {}", e.outcome, e.metric),
        )?;
    }
    let mean = result.episodes.iter().map(|e| e.metric).sum::<f64>() / n as f64;
    expect(
        close(result.value, mean),
        format!("the value to be the mean of the rollout metrics, {mean}"),
        result.value,
    )?;
    expect_eq(
        "the session's total steps",
        steps + n as u64 - 1,
        result.total_steps,
    )?;
    let commitments: std::collections::HashSet<&String> = result.seed_commitments.iter().collect();
    expect(
        result.seed_commitments.len() == n
            && commitments.len() == n
            && result
                .seed_commitments
                .iter()
                .all(|c| c.len() == 64 && c.bytes().all(|b| b.is_ascii_hexdigit())),
        format!("{n} distinct seed commitments of 64 hex digits"),
        format!("{:?}", result.seed_commitments),
    )?;
    expect_code(
        "Reset after the session completed",
        raw.reset(pb::ResetRequest {
            handle: handle.clone(),
            seed: None,
            ..Default::default()
        })
        .await,
        Code::FailedPrecondition,
    )?;
    expect_code(
        "Step after the session completed",
        raw.step(pb::StepRequest {
            handle,
            action: Some(any_action(task)),
        })
        .await,
        Code::FailedPrecondition,
    )
}

pub(crate) async fn ended_by_harness(ctx: &Ctx) -> Outcome {
    let task = interactive_task(ctx)?;
    let (harness, official, mut env, _) = started(ctx, task).await?;
    env.reset(None).await.during("Reset in the session")?;
    env.step(&any_action_tensor(task))
        .await
        .during("Step in the session")?;
    let result = eval_result(&harness, &official.session_id, true).await?;
    let failure = task.metric.failure_value;
    expect_eq(
        "a session the harness ended to be",
        EvalStatus::EndedEarly,
        result.status,
    )?;
    expect_outcome(&result, 0, RolloutOutcome::Aborted)?;
    expect_rest_not_run(&result, 1, failure)?;
    expect(
        close(result.value, failure),
        format!(
            "the value of a session with no rollout completed to be the failure value {failure}"
        ),
        result.value,
    )?;
    let mut raw = env.raw_client();
    expect_code(
        "Step after the harness ended the session",
        raw.step(pb::StepRequest {
            handle: official.handle.to_string(),
            action: Some(any_action(task)),
        })
        .await,
        Code::FailedPrecondition,
    )?;
    expect_code(
        "Reset after the harness ended the session",
        raw.reset(pb::ResetRequest {
            handle: official.handle.to_string(),
            seed: None,
            ..Default::default()
        })
        .await,
        Code::FailedPrecondition,
    )
}

/// The largest step budget the suite exhausts.
const MAX_BUDGET_STEPS: u64 = 20_000;

pub(crate) async fn step_budget(ctx: &Ctx) -> Outcome {
    let budget_of = |t: &TaskSpec| {
        let budget = t.budgets.max_total_steps?;
        let reachable = budget
            < u64::from(t.episodes_per_eval) * u64::from(t.max_steps_per_episode)
            && budget <= MAX_BUDGET_STEPS
            && t.budgets.time_budget_seconds.is_none_or(|s| s >= 60);
        (!t.is_batch() && reachable).then_some(budget)
    };
    let Some(task) = ctx.task_where(|t| budget_of(t).is_some())? else {
        return Err(Problem::Skip(format!(
            "no interactive task has a step budget (max_total_steps) below episodes × \
             max_steps_per_episode and at most {MAX_BUDGET_STEPS} steps, so none can run out"
        )));
    };
    let budget = budget_of(task).unwrap_or_default();
    let (harness, official, env, planned) = started(ctx, task).await?;
    let mut raw = env.raw_client();
    let handle = official.handle.to_string();
    let mut rng = Rng::new(SEED);
    let mut taken = 0u64;
    let refusal = 'play: loop {
        let reset = raw
            .reset(pb::ResetRequest {
                handle: handle.clone(),
                seed: None,
                ..Default::default()
            })
            .await;
        if let Err(status) = reset {
            break 'play status;
        }
        loop {
            let step = raw
                .step(pb::StepRequest {
                    handle: handle.clone(),
                    action: Some(task.action_space.sample(&mut rng).into()),
                })
                .await;
            match step {
                Ok(answer) => {
                    taken += 1;
                    let answer = answer.into_inner();
                    if answer.terminated || answer.truncated {
                        break;
                    }
                }
                Err(status) => break 'play status,
            }
        }
    };
    let result = eval_result(&harness, &official.session_id, false).await?;
    if result.status == EvalStatus::Completed {
        return Err(Problem::Skip(format!(
            "{}'s {planned} rollouts ended in {taken} steps, before the budget of {budget} ran out",
            task.id
        )));
    }
    expect_code(
        &format!("the call after {budget} steps (the budget)"),
        Err::<(), _>(refusal),
        Code::FailedPrecondition,
    )?;
    expect_eq("the steps taken before the refusal", budget, taken)?;
    expect_eq(
        "the session to be",
        EvalStatus::BudgetExceeded,
        result.status,
    )?;
    expect_eq("the session's total steps", budget, result.total_steps)?;
    let cut = result
        .episodes
        .iter()
        .position(|e| e.outcome == RolloutOutcome::BudgetExceeded)
        .ok_or_else(|| {
            Problem::fail(
                "the rollout in progress to be budget_exceeded",
                format!(
                    "{:?}",
                    result
                        .episodes
                        .iter()
                        .map(|e| e.outcome)
                        .collect::<Vec<_>>()
                ),
            )
        })?;
    expect_rest_not_run(&result, cut + 1, task.metric.failure_value)
}

/// The longest time budget the suite waits out.
const MAX_BUDGET_SECONDS: u64 = 5;

pub(crate) async fn time_budget(ctx: &Ctx) -> Outcome {
    let Some(task) = ctx.task_where(|t| {
        !t.is_batch()
            && t.budgets
                .time_budget_seconds
                .is_some_and(|s| s <= MAX_BUDGET_SECONDS)
    })?
    else {
        return Err(Problem::Skip(format!(
            "no interactive task has a time budget of at most {MAX_BUDGET_SECONDS} s to wait out"
        )));
    };
    let seconds = task.budgets.time_budget_seconds.unwrap_or_default();
    let (harness, official, mut env, _) = started(ctx, task).await?;
    env.reset(None).await.during("Reset in the session")?;
    tokio::time::sleep(Duration::from_millis(seconds * 1000 + 300)).await;
    // The harness's own poll enforces the budget: a silent agent cannot hold a session open.
    let result = eval_result(&harness, &official.session_id, false).await?;
    expect_eq(
        &format!("the session, {seconds} s past its start, to be"),
        EvalStatus::BudgetExceeded,
        result.status,
    )?;
    expect_outcome(&result, 0, RolloutOutcome::BudgetExceeded)?;
    expect_rest_not_run(&result, 1, task.metric.failure_value)?;
    expect_code(
        "Step after the time budget ran out",
        env.raw_client()
            .step(pb::StepRequest {
                handle: official.handle.to_string(),
                action: Some(any_action(task)),
            })
            .await,
        Code::FailedPrecondition,
    )
}
