"""A random agent: plays episodes with `action_space.sample()`.

Practice (an evaluator on the default endpoint, or --endpoint):

    python examples/random_agent.py --task cartpole-balance --episodes 3

Official, under the harness (the same script; it sees ALE_ENV_HANDLE and plays the session):

    ale harness run --task cartpole-balance -- .venv/bin/python "$PWD/examples/random_agent.py"
"""

from __future__ import annotations

import argparse
import os

import ale_client


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default="cartpole-balance")
    parser.add_argument("--endpoint", default=None, help="default: ALE_ENDPOINT, else http://127.0.0.1:50051")
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    if os.environ.get("ALE_ENV_HANDLE"):
        env = ale_client.from_env()
        episodes = env.start_eval_session().episodes
        print(f"official session on {env.task.id}: {episodes} rollouts")
    else:
        env = ale_client.make(args.task, endpoint=args.endpoint)
        episodes = args.episodes
    env.action_space.seed(args.seed)
    for episode in range(episodes):
        env.reset(seed=args.seed + episode)
        total, done = 0.0, False
        while not done:
            _, reward, terminated, truncated, info = env.step(env.action_space.sample())
            total += reward
            done = terminated or truncated
        print(f"episode {episode}: return {total:.1f} in {info['episode_steps']} steps")
    env.close()


if __name__ == "__main__":
    main()
