//! Practice vector envs: one handle, N sub-envs, batched answers in the vector-info layout;
//! each sub-env's action checked before any steps; official envs stay single.

use ale_client::{AutoresetMode, InfoValue, Tensor, VecReset};
use ale_proto::info_keys::{EPISODE_RETURN, EPISODE_STEPS};
use ale_proto::pb;
use ale_sim::{Space, TensorData};
use tonic::Code;

use super::Ctx;
use super::check::{During, Outcome, Problem, expect, expect_code, expect_eq};
use super::practice::SEED;

/// Sub-envs of the vectors the cases make.
const N: usize = 4;

/// A task with a Discrete action space (actions are easy to make out of range).
fn discrete_task(ctx: &Ctx) -> Result<&ale_client::TaskSpec, Problem> {
    ctx.task_where(|t| !t.is_batch() && matches!(t.action_space, Space::Discrete(_)))?
        .ok_or_else(|| Problem::Skip("no interactive task with a Discrete action space".into()))
}

fn actions(values: &[i64]) -> Tensor {
    Tensor::new(vec![values.len()], TensorData::I64(values.to_vec()))
        .expect("one element per value")
}

fn first_rows(batch: &Tensor, i: usize) -> Vec<f64> {
    let per: usize = batch.shape()[1..].iter().product();
    batch.to_f64_vec()[i * per..(i + 1) * per].to_vec()
}

/// The info key `key` as one value per sub-env, beside its `_key` mask.
fn vector_info(info: &ale_client::Info, key: &str) -> Result<(Tensor, Tensor), Problem> {
    let get = |k: &str| match info.get(k) {
        Some(InfoValue::Tensor(t)) if t.shape() == [N] => Ok(t.clone()),
        other => Err(Problem::fail(
            format!("info {k:?} to be a tensor of {N}"),
            format!("{other:?}"),
        )),
    };
    Ok((get(key)?, get(&format!("_{key}"))?))
}

pub(crate) async fn batched(ctx: &Ctx) -> Outcome {
    let task = discrete_task(ctx)?;
    let client = ctx.agent().await?;
    let mut envs = client
        .create_vec(&task.id, N as u32, AutoresetMode::NextStep)
        .await
        .during("CreateEnv with num_envs 4")?;
    expect_eq("GetSpec's num_envs", N, envs.num_envs())?;
    expect_eq(
        "GetSpec's observation space (one sub-env's)",
        &task.observation_space,
        &envs.spec().observation_space,
    )?;
    let reset = envs
        .reset(VecReset::seeded(SEED))
        .await
        .during("Reset of the vector")?;
    expect_eq(
        "the batched observation's first dimension",
        Some(&N),
        reset.observation.shape().first(),
    )?;
    for i in [0, N - 1] {
        let mut single = client.create(&task.id).await.during("CreateEnv")?;
        let one = single
            .reset(Some(SEED + i as u64))
            .await
            .during("Reset of a single env")?;
        expect_eq(
            &format!("sub-env {i}'s first observation, a single env's on seed {SEED} + {i},"),
            one.observation.to_f64_vec(),
            first_rows(&reset.observation, i),
        )?;
    }
    let step = envs
        .step(&actions(&[0; N]))
        .await
        .during("Step of the vector")?;
    expect_eq("rewards", N, step.rewards.len())?;
    expect_eq("terminations", N, step.terminations.len())?;
    expect_eq("truncations", N, step.truncations.len())?;
    for key in [EPISODE_STEPS, EPISODE_RETURN] {
        let (_, mask) = vector_info(&step.info, key)?;
        expect_eq(
            &format!("the mask _{key} of a Step"),
            &TensorData::Bool(vec![true; N]),
            mask.data(),
        )?;
    }
    Ok(())
}

pub(crate) async fn bad_action_steps_nothing(ctx: &Ctx) -> Outcome {
    let task = discrete_task(ctx)?;
    let Space::Discrete(space) = &task.action_space else {
        return Err(Problem::Skip("no Discrete task".into()));
    };
    let client = ctx.agent().await?;
    let mut envs = client
        .create_vec(&task.id, N as u32, AutoresetMode::NextStep)
        .await
        .during("CreateEnv with num_envs 4")?;
    envs.reset(VecReset::seeded(SEED))
        .await
        .during("Reset of the vector")?;
    let mut bad = vec![space.start; N];
    bad[2] = space.start + space.n as i64;
    let refused = envs.step(&actions(&bad)).await;
    match refused {
        Ok(_) => {
            return Err(Problem::fail(
                "a Step with one action out of range to be refused",
                "OK",
            ));
        }
        Err(e) => {
            expect_eq("the refusal's code", Some(Code::InvalidArgument), e.code())?;
            expect(
                e.to_string().contains("sub-env 2"),
                "the refusal to name sub-env 2",
                e.to_string(),
            )?;
        }
    }
    let step = envs
        .step(&actions(&[space.start; N]))
        .await
        .during("a valid Step after the refused one")?;
    let (steps, _) = vector_info(&step.info, EPISODE_STEPS)?;
    expect_eq(
        "episode_steps after the refused Step and one valid one (nothing stepped before)",
        &TensorData::I64(vec![1; N]),
        steps.data(),
    )
}

pub(crate) async fn official_refused(ctx: &Ctx) -> Outcome {
    let task = discrete_task(ctx)?;
    let mut raw = ctx.harness().await?.raw();
    expect_code(
        "CreateEnv official with num_envs 4",
        raw.create_env(pb::CreateEnvRequest {
            task_id: task.id.clone(),
            official: true,
            num_envs: N as u32,
            ..Default::default()
        })
        .await,
        Code::InvalidArgument,
    )
}

pub(crate) async fn disabled_mode_refuses_ended(ctx: &Ctx) -> Outcome {
    let task = discrete_task(ctx)?;
    let client = ctx.agent().await?;
    let mut envs = client
        .create_vec(&task.id, N as u32, AutoresetMode::Disabled)
        .await
        .during("CreateEnv with num_envs 4, DISABLED")?;
    expect_eq(
        "GetSpec's autoreset mode",
        AutoresetMode::Disabled,
        envs.autoreset_mode(),
    )?;
    envs.reset(VecReset::seeded(SEED))
        .await
        .during("Reset of the vector")?;
    let mut ended = None;
    for _ in 0..=task.max_steps_per_episode {
        let step = envs
            .step(&actions(&[0; N]))
            .await
            .during("Step of the vector")?;
        let done: Vec<bool> = (0..N)
            .map(|i| step.terminations[i] || step.truncations[i])
            .collect();
        if done.contains(&true) {
            ended = Some(done);
            break;
        }
    }
    let ended = ended.ok_or_else(|| {
        Problem::fail(
            "an episode to end within the task's step limit",
            "none ended",
        )
    })?;
    match envs.step(&actions(&[0; N])).await {
        Ok(_) => {
            return Err(Problem::fail(
                "a Step over an ended episode in DISABLED mode to be refused",
                "OK",
            ));
        }
        Err(e) => expect_eq(
            "the refusal's code",
            Some(Code::FailedPrecondition),
            e.code(),
        )?,
    }
    envs.reset(VecReset {
        mask: ended,
        ..VecReset::default()
    })
    .await
    .during("a masked Reset of the ended sub-envs")?;
    envs.step(&actions(&[0; N]))
        .await
        .during("a Step once they were reset")?;
    Ok(())
}
