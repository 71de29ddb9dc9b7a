//! `ale agent`: a built-in agent as its own process, for `ale harness run --policy`.
//!
//! Launched by a harness (ALE_ENDPOINT and ALE_ENV_HANDLE set) it starts the official session
//! and plays every planned rollout with a built-in policy; for a batch task, `--submit FILE`
//! hands a policy file over instead (into ALE_SUBMISSION_DIR, then SubmitBatchEval).

use std::process::ExitCode;

use ale_client::policy::{self, PolicyKind};
use ale_client::{Env, play_episode};
use anyhow::Context;

#[derive(clap::Args, Debug)]
pub struct AgentArgs {
    /// The built-in policy to play.
    #[arg(long, value_parser = ["random", "heuristic"], default_value = "heuristic")]
    pub policy: String,
    /// Seed of the random policy.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// For a batch task: copy this policy file to the task's entrypoint in the submission
    /// folder, submit it, and exit (the evaluator plays it; the harness reads the result).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["policy", "crash_after_steps"])]
    pub submit: Option<std::path::PathBuf>,
    /// After playing, try to read the session's result itself, as a cheating agent would, and
    /// report the evaluator's answer on stderr.
    #[arg(long, hide = true)]
    pub try_reading_result: bool,
    /// For a batch task: submit whatever the submission folder holds, writing nothing (for
    /// testing that an agent can only ever submit its own run's folder).
    #[arg(long, hide = true, conflicts_with_all = ["policy", "submit"])]
    pub submit_as_is: bool,
    /// Before playing, create this many practice envs of the task over the agent's channel and
    /// step each once (for testing that a run's practice share is its own).
    #[arg(long, hide = true, value_name = "N", default_value_t = 0)]
    pub practice_envs: usize,
    /// Create practice envs over fresh connections until the evaluator refuses, report how
    /// many it holds, and wait to be killed (for testing per-run practice shares).
    #[arg(long, hide = true)]
    pub hold_practice_envs: bool,
    /// Kill this process with SIGKILL after this many steps (for testing crash handling).
    #[arg(long, hide = true, value_name = "STEPS")]
    pub crash_after_steps: Option<u64>,
    /// Stop playing, and wait to be killed, after this many steps: mid-rollout, unless the
    /// count ends one (for testing what a harness does with an agent killed from outside).
    #[arg(long, hide = true, value_name = "STEPS")]
    pub hang_after_steps: Option<u64>,
    /// Stop playing, and wait to be killed, after this many whole rollouts, before the next
    /// Reset (for testing an agent killed between rollouts).
    #[arg(long, hide = true, value_name = "ROLLOUTS")]
    pub hang_after_rollouts: Option<u32>,
}

/// What a test agent does once it has played as far as it was told: nothing, until killed.
async fn hang() -> ! {
    eprintln!("agent: hanging until killed");
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(3600)).await;
    }
}

pub fn run(args: AgentArgs) -> anyhow::Result<ExitCode> {
    let rt = super::runtime(1)?;
    rt.block_on(play(args))
}

async fn play(args: AgentArgs) -> anyhow::Result<ExitCode> {
    let mut env = Env::from_agent_env().await?;
    if args.hold_practice_envs {
        hold_practice_envs(&env.spec().task.id).await?;
    }
    if let Some(file) = &args.submit {
        return submit(&mut env, Some(file), args.try_reading_result).await;
    }
    if args.submit_as_is {
        return submit(&mut env, None, args.try_reading_result).await;
    }
    if args.practice_envs > 0 {
        practice(&env.spec().task.id, args.practice_envs).await?;
    }
    let kind = PolicyKind::from_name(&args.policy).context("unknown policy")?;
    let mut agent = policy::build(kind, env.spec(), args.seed)?;
    let session = env.start_eval_session().await?;
    eprintln!(
        "agent: {} policy on {} ({} rollouts)",
        kind.name(),
        env.spec().task.id,
        session.episodes
    );
    let mut steps = 0;
    let counts_steps = args.crash_after_steps.is_some() || args.hang_after_steps.is_some();
    for played in 0..session.episodes {
        if args.hang_after_rollouts == Some(played) {
            hang().await;
        }
        if counts_steps {
            let mut observation = env.reset(None).await?.observation;
            loop {
                if args.crash_after_steps.is_some_and(|limit| steps >= limit) {
                    // SAFETY: raising a signal on ourselves.
                    unsafe {
                        libc::raise(libc::SIGKILL);
                    }
                }
                if args.hang_after_steps.is_some_and(|limit| steps >= limit) {
                    hang().await;
                }
                let step = env.step(&agent.act(&observation)).await?;
                steps += 1;
                if step.is_done() {
                    break;
                }
                observation = step.observation;
            }
            continue;
        }
        play_episode(&mut env, agent.as_mut(), None).await?;
    }
    if args.try_reading_result {
        try_reading_result(&env, &session.session_id).await;
    }
    Ok(ExitCode::SUCCESS)
}

/// Tries to read the session's result, as a cheating agent would, and reports the answer.
async fn try_reading_result(env: &Env, session_id: &ale_client::SessionId) {
    let answer = env
        .raw_client()
        .get_eval_result(ale_proto::pb::GetEvalResultRequest {
            session_id: session_id.to_string(),
            end_session: false,
        })
        .await;
    match answer {
        Ok(_) => eprintln!("agent: GetEvalResult answered with the result"),
        Err(status) => eprintln!(
            "agent: GetEvalResult refused: {:?}: {}",
            status.code(),
            status.message()
        ),
    }
}

/// The agent channel's endpoint, as the harness handed it over.
fn agent_endpoint() -> anyhow::Result<String> {
    std::env::var(ale_proto::agent_env::ENDPOINT)
        .with_context(|| format!("{} is not set", ale_proto::agent_env::ENDPOINT))
}

/// Creates `count` practice envs of `task_id` on one connection and steps each once.
async fn practice(task_id: &str, count: usize) -> anyhow::Result<()> {
    let client = ale_client::Client::connect(&agent_endpoint()?).await?;
    let mut envs = Vec::with_capacity(count);
    for _ in 0..count {
        let mut env = client
            .create(task_id)
            .await
            .context("cannot create a practice env")?;
        let observation = env.reset(Some(0)).await?.observation;
        let action = policy::build(PolicyKind::Random, env.spec(), 0)?.act(&observation);
        env.step(&action).await?;
        envs.push(env);
    }
    eprintln!("agent: stepped {count} practice envs of {task_id}");
    Ok(())
}

/// Creates practice envs, on a fresh connection whenever one is refused, until a fresh
/// connection's first env is refused too; reports the count and hangs.
async fn hold_practice_envs(task_id: &str) -> anyhow::Result<()> {
    let endpoint = agent_endpoint()?;
    let mut held = Vec::new();
    let mut clients = Vec::new();
    'connections: for _ in 0..64 {
        let Ok(client) = ale_client::Client::connect(&endpoint).await else {
            break;
        };
        let mut on_this_one = 0;
        loop {
            match client.create(task_id).await {
                Ok(env) => {
                    held.push(env);
                    on_this_one += 1;
                }
                Err(e) => {
                    eprintln!("agent: practice env refused after {}: {e}", held.len());
                    if on_this_one == 0 {
                        break 'connections;
                    }
                    break;
                }
            }
        }
        clients.push(client);
    }
    println!("HOLDING {} practice envs", held.len());
    hang().await
}

async fn submit(
    env: &mut Env,
    file: Option<&std::path::Path>,
    probe_result: bool,
) -> anyhow::Result<ExitCode> {
    let target = env.submission_path()?;
    if let Some(file) = file {
        std::fs::copy(file, &target)
            .with_context(|| format!("cannot copy {} to {}", file.display(), target.display()))?;
    }
    let batch_id = env.submit_batch().await?;
    eprintln!(
        "agent: submitted {} for {} as batch run {batch_id}",
        target.display(),
        env.spec().task.id
    );
    if !probe_result {
        return Ok(ExitCode::SUCCESS);
    }
    // Follow the run as the agent channel shows it, then try what a cheating agent would.
    let status = loop {
        let status = env.batch_status(&batch_id).await?;
        if status.state.is_finished() {
            break status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    eprintln!(
        "agent: batch run {:?} ({}), progress {:.2}",
        status.state, status.message, status.progress
    );
    {
        // The agent holds the batch id; the status it may read must not carry the result.
        let answer = env
            .raw_client()
            .get_batch_eval_status(ale_proto::pb::GetBatchEvalStatusRequest {
                batch_id: batch_id.to_string(),
            })
            .await?
            .into_inner();
        eprintln!(
            "agent: GetBatchEvalStatus answered {} result",
            if answer.result.is_some() {
                "with the"
            } else {
                "with no"
            }
        );
        // GetEvalResult is the harness's; the agent does not even hold the session id, and
        // asking by the batch run's id is refused on its channel all the same.
        try_reading_result(env, &ale_client::SessionId::from_wire(batch_id.to_string())).await;
    }
    Ok(ExitCode::SUCCESS)
}
