//! A blocking (no tokio in sight) agent that acts at random in any task.
//!
//! Under `ale harness run` it plays the official eval session; otherwise it plays one practice
//! episode of the task named by its first argument (default cartpole-balance):
//!
//!     cargo run -p ale-client --example random_agent -- cartpole-balance

use ale_client::blocking::{Client, Env};
use ale_client::policy::{Policy, RandomPolicy};
use ale_proto::agent_env;

fn play(
    env: &mut Env,
    policy: &mut dyn Policy,
    seed: Option<u64>,
) -> Result<f64, ale_client::ClientError> {
    let mut observation = env.reset(seed)?.observation;
    let mut episode_return = 0.0;
    loop {
        let step = env.step(&policy.act(&observation))?;
        episode_return += step.reward;
        if step.is_done() {
            return Ok(episode_return);
        }
        observation = step.observation;
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::var_os(agent_env::ENV_HANDLE).is_some() {
        let mut env = Env::from_agent_env()?;
        let session = env.start_eval_session()?;
        let mut policy = RandomPolicy::new(env.spec().action_space.clone(), 1);
        for i in 0..session.episodes {
            eprintln!("episode {i}: return {}", play(&mut env, &mut policy, None)?);
        }
        return Ok(());
    }
    let task = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "cartpole-balance".into());
    let endpoint =
        std::env::var(agent_env::ENDPOINT).unwrap_or_else(|_| "http://127.0.0.1:50051".into());
    let client = Client::connect(&endpoint)?;
    let mut env = client.create(&task)?;
    println!(
        "{task}: observation {} action {}",
        env.spec().observation_space,
        env.spec().action_space
    );
    let mut policy = RandomPolicy::new(env.spec().action_space.clone(), 1);
    println!(
        "practice episode (seed 0): return {}",
        play(&mut env, &mut policy, Some(0))?
    );
    Ok(())
}
