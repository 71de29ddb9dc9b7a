//! An async agent that balances CartPole with the built-in heuristic.
//!
//! Under `ale harness run` (ALE_ENV_HANDLE set) it plays the official eval session; otherwise
//! it plays three practice episodes on the evaluator at ALE_ENDPOINT (default
//! http://127.0.0.1:50051):
//!
//!     cargo run -p ale-client --example cartpole_agent

use ale_client::policy::{Policy, PolicyKind, build};
use ale_client::{Client, Env, play_episode};
use ale_proto::agent_env;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os(agent_env::ENV_HANDLE).is_some() {
        let mut env = Env::from_agent_env().await?;
        let session = env.start_eval_session().await?;
        eprintln!(
            "eval session {} with {} episodes",
            session.session_id, session.episodes
        );
        let mut policy: Box<dyn Policy> = build(PolicyKind::Heuristic, env.spec(), 0)?;
        for i in 0..session.episodes {
            let summary = play_episode(&mut env, policy.as_mut(), None).await?;
            eprintln!("episode {i}: return {}", summary.episode_return);
        }
        return Ok(());
    }
    let endpoint =
        std::env::var(agent_env::ENDPOINT).unwrap_or_else(|_| "http://127.0.0.1:50051".into());
    let client = Client::connect(&endpoint).await?;
    let mut env = client.create("cartpole-balance").await?;
    let mut policy = build(PolicyKind::Heuristic, env.spec(), 0)?;
    for seed in 0..3 {
        let summary = play_episode(&mut env, policy.as_mut(), Some(seed)).await?;
        println!(
            "practice seed {seed}: return {} in {} steps",
            summary.episode_return, summary.steps
        );
    }
    Ok(())
}
