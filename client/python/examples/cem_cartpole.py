"""The cross-entropy method on a linear policy, NumPy only, learning through the evaluator.

    python examples/cem_cartpole.py --endpoint http://127.0.0.1:50051

Each generation samples `--population` linear policies (`action = 1 if w·obs + b > 0`), plays
one practice episode with each, all at once in a vector env (one `Step` a step for the whole
population), and refits the sampling distribution to the best quarter. When the elites reach
the task's target, the mean policy is checked on fresh seeds; the script stops once it reaches
the target there too, and prints the policy and the number of env steps it took. Exit status 0
means the target was reached.

`--out DIR` also writes the policy as `DIR/policy.safetensors` (an `mlp-safetensors` file of
one layer: two logits, push left at 0 and push right at w·obs + b, so the evaluator's argmax
plays what the script played). Run under a harness on a batch CartPole task, the script is the
submitting agent: it learns on its run's practice channel and submits the policy, which the
evaluator then rolls out itself on hidden seeds:

    ale harness run --task cartpole-batch -- .venv/bin/python "$PWD/examples/cem_cartpole.py"

(`cartpole-batch` is a task file of yours: `cartpole-balance` with `mode = "batch"` and a
`[submission]` of format `mlp-safetensors`, served with `ale serve --tasks-dir`.)
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import sys

import numpy as np

import ale_client


def episode_returns(envs: ale_client.AleVectorEnv, policies: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    """Each sub-env's first episode's return under its policy (row of `policies`), and the
    env steps taken."""
    obs, _ = envs.reset(seed=seed)
    returns = np.zeros(envs.num_envs)
    playing = np.ones(envs.num_envs, dtype=bool)
    steps = 0
    while playing.any():
        actions = (np.einsum("ij,ij->i", obs, policies[:, :-1]) + policies[:, -1] > 0).astype(np.int64)
        obs, rewards, terminations, truncations, _ = envs.step(actions)
        steps += int(playing.sum())
        returns += rewards * playing
        playing &= ~(terminations | truncations)
    return returns, steps


def learn(endpoint: str | None, population: int, generations: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    envs = ale_client.make_vec("cartpole-balance", population, endpoint=endpoint)
    target = envs.task.metric.target
    dim = envs.single_observation_space.shape[0] + 1
    mean, std = np.zeros(dim), np.ones(dim)
    n_elite = max(2, population // 4)
    steps = 0
    try:
        for generation in range(generations):
            candidates = mean + std * rng.standard_normal((population, dim))
            returns, used = episode_returns(envs, candidates, seed=1000 * generation)
            steps += used
            elites = candidates[np.argsort(returns)[-n_elite:]]
            mean = elites.mean(axis=0)
            std = elites.std(axis=0) + 0.5 / (generation + 1)  # extra noise that fades
            elite_mean = float(np.sort(returns)[-n_elite:].mean())
            print(f"generation {generation}: elite mean return {elite_mean:.1f}, {steps} env steps", flush=True)
            if elite_mean >= target:
                # Check the mean policy on seeds no generation has used.
                check, used = episode_returns(envs, np.tile(mean, (population, 1)), seed=10**6 + generation)
                steps += used
                print(f"  mean policy on fresh seeds: {check.mean():.1f} (target {target})", flush=True)
                if check.mean() >= target:
                    return {"reached": True, "return": float(check.mean()), "target": target, "env_steps": steps,
                            "generations": generation + 1, "policy": mean.tolist()}
        return {"reached": False, "target": target, "env_steps": steps, "generations": generations}
    finally:
        envs.close()


def save_policy(policy: list[float], path: pathlib.Path) -> None:
    """The linear policy as a one-layer MLP: logits [0, w·obs + b], argmax is the action."""
    w = np.asarray(policy, dtype=np.float32)
    weight = np.zeros((2, w.size - 1), dtype=np.float32)
    weight[1] = w[:-1]
    bias = np.array([0.0, w[-1]], dtype=np.float32)
    ale_client.save_mlp({"0.weight": weight, "0.bias": bias}, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default=None, help="default: ALE_ENDPOINT, else http://127.0.0.1:50051")
    parser.add_argument("--population", type=int, default=32)
    parser.add_argument("--generations", type=int, default=30)
    # Seed 0 misses the target in 30 generations (its mean policy overfits the elites' starts,
    # on Gymnasium's own CartPole-v1 too); seeds 1 to 8 reach it in 33,000 to 127,000 steps.
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON line last")
    parser.add_argument("--out", default=None, help="also write the policy to OUT/policy.safetensors")
    args = parser.parse_args()
    # Under a harness on a batch task: the official env to submit to (practice goes over the
    # run's own channel, ALE_ENDPOINT).
    official = ale_client.from_env() if os.environ.get("ALE_ENV_HANDLE") else None
    outcome = learn(args.endpoint, args.population, args.generations, args.seed)
    if outcome["reached"] and (official is not None or args.out):
        if official is not None:
            path = official.submission_path()
        else:
            path = pathlib.Path(args.out) / "policy.safetensors"
            path.parent.mkdir(parents=True, exist_ok=True)
        save_policy(outcome["policy"], path)
        print(f"wrote {path}", flush=True)
        if official is not None:
            run = official.submit_batch()
            status = run.wait(timeout=600)
            print(f"batch run {run.batch_id}: {status.state} {status.message}", flush=True)
            outcome["batch_state"] = str(status.state)
    if args.json:
        print(json.dumps(outcome))
    elif outcome["reached"]:
        print(f"reached {outcome['return']:.1f} >= {outcome['target']} in {outcome['env_steps']} env steps")
    else:
        print(f"did not reach {outcome['target']} in {outcome['generations']} generations")
    return 0 if outcome["reached"] else 1


if __name__ == "__main__":
    sys.exit(main())
