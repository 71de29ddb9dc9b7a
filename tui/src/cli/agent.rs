//! `ale agent`: a built-in agent as its own process, for `ale harness run --policy`.
//!
//! Launched by a harness (ALE_ENDPOINT and ALE_ENV_HANDLE set) it starts the official session
//! and plays every planned rollout with a built-in policy.

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
    /// After playing, try to read the session's result itself, as a cheating agent would, and
    /// report the evaluator's answer on stderr.
    #[arg(long, hide = true)]
    pub try_reading_result: bool,
    /// Kill this process with SIGKILL after this many steps (for testing crash handling).
    #[arg(long, hide = true, value_name = "STEPS")]
    pub crash_after_steps: Option<u64>,
}

pub fn run(args: AgentArgs) -> anyhow::Result<ExitCode> {
    let rt = super::runtime(1)?;
    rt.block_on(play(args))
}

async fn play(args: AgentArgs) -> anyhow::Result<ExitCode> {
    let mut env = Env::from_agent_env().await?;
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
    for _ in 0..session.episodes {
        if let Some(limit) = args.crash_after_steps {
            let mut observation = env.reset(None).await?.observation;
            loop {
                if steps >= limit {
                    // SAFETY: raising a signal on ourselves.
                    unsafe {
                        libc::raise(libc::SIGKILL);
                    }
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
        let answer = env
            .raw_client()
            .get_eval_result(ale_proto::pb::GetEvalResultRequest {
                session_id: session.session_id.to_string(),
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
    Ok(ExitCode::SUCCESS)
}
