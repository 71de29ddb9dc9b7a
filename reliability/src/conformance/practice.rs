//! Practice envs: episodes, observations, info maps, determinism, lifecycle errors, unknown
//! ids and the per-connection cap.

use ale_client::{Client, EnvHandle, Info, InfoValue, ResetResult, Rng, StepResult, TaskSpec};
use ale_proto::info_keys::{EPISODE_RETURN, EPISODE_STEPS};
use ale_proto::{BatchId, pb};
use tonic::Code;

use super::Ctx;
use super::check::{During, Outcome, Problem, expect, expect_code, expect_eq};

/// The seed of every seeded practice episode the suite plays.
pub(crate) const SEED: u64 = 1_234_567;

/// A handle no evaluator hands out by chance: 128 bits, all zero.
pub(crate) const UNKNOWN_HANDLE: &str = "env-00000000000000000000000000000000";

/// One seeded practice episode of a task, played with random actions, as the evaluator
/// answered it.
pub(crate) struct Played {
    pub task: TaskSpec,
    pub handle: EnvHandle,
    /// The episode, or the call that failed.
    pub episode: Result<Episode, String>,
}

pub(crate) struct Episode {
    pub reset: ResetResult,
    /// Every step until the episode ended, or one past the task's step limit.
    pub steps: Vec<StepResult>,
}

/// Plays one episode of every task (each on a practice env of its own, all on one
/// connection).
pub(crate) async fn play_all(endpoint: &str, tasks: &[TaskSpec]) -> Vec<Played> {
    let client = Client::connect(endpoint).await;
    let mut played = Vec::with_capacity(tasks.len());
    for task in tasks {
        let (handle, episode) = match &client {
            Ok(client) => play(client, task).await,
            Err(e) => (EnvHandle::from_wire(""), Err(e.to_string())),
        };
        played.push(Played {
            task: task.clone(),
            handle,
            episode,
        });
    }
    played
}

async fn play(client: &Client, task: &TaskSpec) -> (EnvHandle, Result<Episode, String>) {
    let mut env = match client.create(&task.id).await {
        Ok(env) => env,
        Err(e) => return (EnvHandle::from_wire(""), Err(format!("CreateEnv: {e}"))),
    };
    let handle = env.handle().clone();
    let episode = async {
        let reset = env
            .reset(Some(SEED))
            .await
            .map_err(|e| format!("Reset: {e}"))?;
        let mut rng = Rng::new(SEED);
        let mut steps = Vec::new();
        let limit = task.max_steps_per_episode as usize + 1;
        while steps.len() < limit {
            let action = task.action_space.sample(&mut rng);
            let step = env
                .step(&action)
                .await
                .map_err(|e| format!("Step {}: {e}", steps.len() + 1))?;
            let done = step.is_done();
            steps.push(step);
            if done {
                break;
            }
        }
        Ok(Episode { reset, steps })
    }
    .await;
    (handle, episode)
}

fn episode(played: &Played) -> Result<&Episode, Problem> {
    played.episode.as_ref().map_err(|e| {
        Problem::fail(
            format!("a seeded practice episode of {} to play", played.task.id),
            e,
        )
    })
}

pub(crate) async fn observations_in_space(ctx: &Ctx) -> Outcome {
    for played in ctx.episodes().await? {
        let episode = episode(played)?;
        let space = &played.task.observation_space;
        let observations = std::iter::once(&episode.reset.observation)
            .chain(episode.steps.iter().map(|s| &s.observation));
        for (i, observation) in observations.enumerate() {
            space.check(observation).map_err(|e| {
                Problem::fail(
                    format!(
                        "{}'s observation after {i} steps to lie in its space",
                        played.task.id
                    ),
                    e,
                )
            })?;
        }
    }
    Ok(())
}

fn integer(info: &Info, key: &str) -> Option<i64> {
    match info.get(key) {
        Some(InfoValue::Integer(v)) => Some(*v),
        _ => None,
    }
}

fn number(info: &Info, key: &str) -> Option<f64> {
    match info.get(key) {
        Some(InfoValue::Number(v)) => Some(*v),
        _ => None,
    }
}

/// Whether two sums of the same rewards agree, whatever order they were added in.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// No key of an info map names a seed.
pub(crate) fn expect_no_seed(info: &Info, what: &str) -> Outcome {
    match info
        .keys()
        .find(|k| k.to_ascii_lowercase().contains("seed"))
    {
        Some(key) => Err(Problem::fail(
            format!("{what}: no info key that carries a seed"),
            key,
        )),
        None => Ok(()),
    }
}

pub(crate) async fn info_map_keys(ctx: &Ctx) -> Outcome {
    for played in ctx.episodes().await? {
        let episode = episode(played)?;
        let id = &played.task.id;
        let infos =
            std::iter::once(&episode.reset.info).chain(episode.steps.iter().map(|s| &s.info));
        let mut episode_return = 0.0;
        for (i, info) in infos.enumerate() {
            if i > 0 {
                episode_return += episode.steps[i - 1].reward;
            }
            let what = format!("{id}'s info map after {i} steps");
            expect_eq(
                &format!("{what}: integer {EPISODE_STEPS}"),
                Some(i as i64),
                integer(info, EPISODE_STEPS),
            )?;
            let got = number(info, EPISODE_RETURN);
            expect(
                got.is_some_and(|r| close(r, episode_return)),
                format!("{what}: number {EPISODE_RETURN} {episode_return}"),
                format!("{got:?}"),
            )?;
            expect_no_seed(info, &what)?;
        }
    }
    Ok(())
}

pub(crate) async fn episodes_end(ctx: &Ctx) -> Outcome {
    for played in ctx.episodes().await? {
        let episode = episode(played)?;
        let id = &played.task.id;
        let max = played.task.max_steps_per_episode as usize;
        let n = episode.steps.len();
        if let Some(i) = episode.steps[..n.saturating_sub(1)]
            .iter()
            .position(StepResult::is_done)
        {
            return Err(Problem::fail(
                format!("{id}'s episode to end once"),
                format!("an end at step {} and steps after it", i + 1),
            ));
        }
        let Some(last) = episode.steps.last() else {
            return Err(Problem::fail(format!("{id} to take a step"), "none"));
        };
        expect(
            last.is_done() && n <= max,
            format!("{id}'s episode to end by step {max} (max_steps_per_episode)"),
            format!("no end after {n} steps"),
        )?;
        if last.truncated && !last.terminated {
            expect_eq(
                &format!("{id}'s episode to be truncated only at step"),
                max,
                n,
            )?;
        }
    }
    Ok(())
}

/// A valid action for `task`.
pub(crate) fn any_action(task: &TaskSpec) -> pb::Tensor {
    task.action_space.sample(&mut Rng::new(SEED)).into()
}

fn step_request(handle: &EnvHandle, action: pb::Tensor) -> pb::StepRequest {
    pb::StepRequest {
        handle: handle.to_string(),
        action: Some(action),
    }
}

pub(crate) async fn step_after_episode_end(ctx: &Ctx) -> Outcome {
    let episodes = ctx.episodes().await?;
    let played = episodes
        .iter()
        .find(|p| p.task.id == super::PREFERRED_TASK)
        .or_else(|| episodes.first())
        .ok_or_else(|| Problem::fail("a played episode", "none"))?;
    let episode = episode(played)?;
    if !episode.steps.last().is_some_and(StepResult::is_done) {
        return Err(Problem::fail(
            format!("{}'s episode to end", played.task.id),
            "no end",
        ));
    }
    let client = ctx.agent().await?;
    let mut raw = client.raw();
    let action = any_action(&played.task);
    expect_code(
        "Step after the episode ended",
        raw.step(step_request(&played.handle, action.clone())).await,
        Code::FailedPrecondition,
    )?;
    let mut env = client
        .attach(played.handle.clone())
        .await
        .during("GetSpec of the ended env")?;
    env.reset(Some(SEED))
        .await
        .during("Reset after the episode ended")?;
    raw.step(step_request(&played.handle, action))
        .await
        .during("Step of the next episode")?;
    Ok(())
}

pub(crate) async fn step_before_reset(ctx: &Ctx) -> Outcome {
    let client = ctx.agent().await?;
    let mut raw = client.raw();
    for task in ctx.tasks()? {
        let env = client
            .create(&task.id)
            .await
            .during(&format!("CreateEnv {}", task.id))?;
        expect_code(
            &format!("Step of a new {} env before Reset", task.id),
            raw.step(step_request(env.handle(), any_action(task))).await,
            Code::FailedPrecondition,
        )?;
    }
    Ok(())
}

/// Steps compared between two envs reset with the same seed.
const TWIN_STEPS: usize = 30;

pub(crate) async fn reset_deterministic(ctx: &Ctx) -> Outcome {
    let client = ctx.agent().await?;
    for task in ctx.tasks()? {
        let id = &task.id;
        let mut a = client.create(id).await.during(&format!("CreateEnv {id}"))?;
        let mut b = client.create(id).await.during(&format!("CreateEnv {id}"))?;
        let first_a = a.reset(Some(SEED)).await.during("Reset")?;
        let first_b = b.reset(Some(SEED)).await.during("Reset")?;
        expect_eq(
            &format!("{id}: two envs reset with seed {SEED} to start at"),
            &first_a.observation,
            &first_b.observation,
        )?;
        let mut rng = Rng::new(SEED);
        for i in 1..=TWIN_STEPS {
            let action = task.action_space.sample(&mut rng);
            let sa = a.step(&action).await.during("Step")?;
            let sb = b.step(&action).await.during("Step")?;
            let what = format!("{id}: step {i} of two envs with seed {SEED} and the same actions");
            expect_eq(
                &format!("{what} to agree:"),
                (&sa.observation, sa.reward, sa.terminated, sa.truncated),
                (&sb.observation, sb.reward, sb.terminated, sb.truncated),
            )?;
            if sa.is_done() {
                break;
            }
        }
        let again = a.reset(Some(SEED)).await.during("Reset")?;
        expect_eq(
            &format!("{id}: the same env reset with seed {SEED} again to start at"),
            &first_a.observation,
            &again.observation,
        )?;
    }
    Ok(())
}

pub(crate) async fn reset_without_seed(ctx: &Ctx) -> Outcome {
    let client = ctx.agent().await?;
    let mut random_starts = 0;
    for task in ctx.tasks()? {
        let id = &task.id;
        let mut env = client.create(id).await.during(&format!("CreateEnv {id}"))?;
        let one = env.reset(Some(1)).await.during("Reset")?.observation;
        let two = env.reset(Some(2)).await.during("Reset")?.observation;
        if one == two {
            // This task starts the same whatever the seed: nothing to tell apart.
            continue;
        }
        random_starts += 1;
        let first = env.reset(None).await.during("Reset without a seed")?;
        let second = env.reset(None).await.during("Reset without a seed")?;
        expect(
            first.observation != second.observation,
            format!("{id}: two Resets without a seed to draw two starts"),
            format!("the same start twice: {:?}", first.observation),
        )?;
    }
    if random_starts == 0 {
        return Err(Problem::Skip(
            "no task's first observation depends on its seed".into(),
        ));
    }
    Ok(())
}

pub(crate) async fn unknown_handle(ctx: &Ctx) -> Outcome {
    let task = &ctx.tasks()?[0];
    let mut raw = ctx.agent().await?.raw();
    for handle in [UNKNOWN_HANDLE, ""] {
        let name = |rpc: &str| format!("{rpc} of the unknown handle {handle:?}");
        let h = || handle.to_string();
        expect_code(
            &name("GetSpec"),
            raw.get_spec(pb::GetSpecRequest { handle: h() }).await,
            Code::NotFound,
        )?;
        expect_code(
            &name("Reset"),
            raw.reset(pb::ResetRequest {
                handle: h(),
                seed: Some(SEED),
                ..Default::default()
            })
            .await,
            Code::NotFound,
        )?;
        expect_code(
            &name("Step"),
            raw.step(step_request(&EnvHandle::from_wire(h()), any_action(task)))
                .await,
            Code::NotFound,
        )?;
        expect_code(
            &name("StartEvalSession"),
            raw.start_eval_session(pb::StartEvalSessionRequest { handle: h() })
                .await,
            Code::NotFound,
        )?;
        expect_code(
            &name("SubmitBatchEval"),
            raw.submit_batch_eval(pb::SubmitBatchEvalRequest { handle: h() })
                .await,
            Code::NotFound,
        )?;
    }
    Ok(())
}

pub(crate) async fn unknown_task(ctx: &Ctx) -> Outcome {
    let tasks = ctx.tasks()?;
    let mut raw = ctx.agent().await?.raw();
    let answer = raw
        .create_env(pb::CreateEnvRequest {
            task_id: "no-such-task".into(),
            official: false,
            ..Default::default()
        })
        .await;
    let message = match &answer {
        Err(status) => status.message().to_string(),
        Ok(_) => String::new(),
    };
    expect_code("CreateEnv of an unknown task", answer, Code::NotFound)?;
    for task in tasks {
        expect(
            message.contains(&task.id),
            format!(
                "the unknown-task message to list the known task {}",
                task.id
            ),
            &message,
        )?;
    }
    Ok(())
}

pub(crate) async fn unknown_batch(ctx: &Ctx) -> Outcome {
    let mut raw = ctx.agent().await?.raw();
    expect_code(
        "GetBatchEvalStatus of an unknown batch id",
        raw.get_batch_eval_status(pb::GetBatchEvalStatusRequest {
            batch_id: format!("{}00000000000000000000000000000000", BatchId::PREFIX),
        })
        .await,
        Code::NotFound,
    )
}

/// The most envs the cap case creates on one connection before it concludes there is no
/// per-connection cap to check.
const CAP_PROBE: usize = 128;

/// Sub-envs of each env the cap case creates: caps count sub-envs, so vectors reach a cap of
/// thousands in a few calls (an evaluator without vector envs makes single envs of them).
const CAP_PROBE_SUB_ENVS: u32 = 256;

pub(crate) async fn cap_per_connection(ctx: &Ctx) -> Outcome {
    let task = ctx
        .task_where(|t| !t.is_batch())?
        .unwrap_or(&ctx.tasks()?[0]);
    let client = ctx.agent().await?;
    let mut raw = client.raw();
    let mut held = Vec::new();
    // Vectors first, then single envs for what is left of the cap.
    let mut size = CAP_PROBE_SUB_ENVS;
    let refusal = loop {
        if held.len() == CAP_PROBE {
            return Err(Problem::Skip(format!(
                "one connection created {CAP_PROBE} practice envs (vector envs of \
                 {CAP_PROBE_SUB_ENVS} sub-envs while they fitted) without being refused: no \
                 per-connection cap to check"
            )));
        }
        match raw
            .create_env(pb::CreateEnvRequest {
                task_id: task.id.clone(),
                official: false,
                num_envs: size,
                ..Default::default()
            })
            .await
        {
            Ok(created) => held.push(EnvHandle::from_wire(created.into_inner().handle)),
            Err(status) if size > 1 && status.code() == Code::ResourceExhausted => size = 1,
            Err(status) => break status,
        }
    };
    let n = held.len();
    expect_code(
        &format!("CreateEnv beyond the cap, after {n} envs on one connection,"),
        Err::<(), _>(refusal),
        Code::ResourceExhausted,
    )?;
    // The refusal dropped nothing: an env this connection holds still plays.
    let mut env = client
        .attach(held[0].clone())
        .await
        .during("GetSpec of an env held at the cap")?;
    env.reset(Some(SEED))
        .await
        .during("Reset of an env held at the cap")?;
    // The cap is the connection's: another connection still gets an env.
    ctx.agent()
        .await?
        .create(&task.id)
        .await
        .during("CreateEnv on another connection while the first is at its cap")?;
    Ok(())
}
