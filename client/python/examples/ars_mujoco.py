"""Augmented Random Search (ARS V2-t) on a linear policy for a MuJoCo task, NumPy only.

    python examples/ars_mujoco.py --endpoint http://127.0.0.1:50051 --task hopper-hop

Each iteration samples `--directions` perturbations δ of the policy matrix M and plays one
practice episode with each of M + νδ and M − νδ, all 2 × directions of them at once in one
vector env (one `Step` a step for all of them); M moves along the best directions' return
differences, scaled by their spread (Mania, Guy & Recht 2018). Observations are normalised by
their running mean and standard deviation (the "V2" of the paper), which the saved policy
carries. `--out DIR` writes `DIR/policy.safetensors`, an `mlp-safetensors` file of one linear
layer with `obs_mean`/`obs_std`: the policy a batch submission of the task plays (its output is
clipped to the action bounds by the evaluator, as here).

It prints one line per iteration; `--json` adds the outcome as one JSON line last.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

import numpy as np

import ale_client


class RunningStats:
    """Running mean and variance of observations (Welford, batched)."""

    def __init__(self, dim: int) -> None:
        self.n = 0
        self.mean = np.zeros(dim)
        self.m2 = np.zeros(dim)

    def add(self, batch: np.ndarray) -> None:
        for x in batch:
            self.n += 1
            delta = x - self.mean
            self.mean += delta / self.n
            self.m2 += delta * (x - self.mean)

    @property
    def std(self) -> np.ndarray:
        if self.n < 2:
            return np.ones_like(self.mean)
        return np.sqrt(np.maximum(self.m2 / (self.n - 1), 1e-8))


def episode_returns(envs: ale_client.AleVectorEnv, policies: np.ndarray, stats: RunningStats, seed: int) -> tuple[np.ndarray, int]:
    """Each sub-env's first episode's return under its policy (`policies[i]`, act × obs, on
    normalised observations), and the env steps taken; the observations seen feed `stats`."""
    obs, _ = envs.reset(seed=seed)
    low, high = envs.single_action_space.low, envs.single_action_space.high
    mean, std = stats.mean.copy(), stats.std.copy()
    returns = np.zeros(envs.num_envs)
    playing = np.ones(envs.num_envs, dtype=bool)
    steps = 0
    seen = []
    while playing.any():
        normalised = (np.asarray(obs, dtype=np.float64) - mean) / std
        actions = np.clip(np.einsum("kao,ko->ka", policies, normalised), low, high)
        seen.append(np.asarray(obs)[playing])
        obs, rewards, terminations, truncations, _ = envs.step(actions.astype(np.float32))
        steps += int(playing.sum())
        returns += rewards * playing
        playing &= ~(terminations | truncations)
    stats.add(np.concatenate(seen))
    return returns, steps


def learn(endpoint: str | None, task: str, iterations: int, directions: int, top: int, step_size: float,
          noise: float, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    envs = ale_client.make_vec(task, 2 * directions, endpoint=endpoint)
    obs_dim = envs.single_observation_space.shape[0]
    act_dim = envs.single_action_space.shape[0]
    policy = np.zeros((act_dim, obs_dim))
    stats = RunningStats(obs_dim)
    steps = 0
    history = []
    try:
        for iteration in range(iterations):
            deltas = rng.standard_normal((directions, act_dim, obs_dim))
            candidates = np.concatenate([policy + noise * deltas, policy - noise * deltas])
            returns, used = episode_returns(envs, candidates, stats, seed=10_000 * iteration)
            steps += used
            plus, minus = returns[:directions], returns[directions:]
            best = np.argsort(np.maximum(plus, minus))[-top:]
            spread = np.concatenate([plus[best], minus[best]]).std() + 1e-8
            policy += step_size / (top * spread) * np.einsum("k,kao->ao", plus[best] - minus[best], deltas[best])
            mean_return = float(returns.mean())
            history.append(mean_return)
            print(f"iteration {iteration}: mean return {mean_return:.1f} over {2 * directions} episodes, {steps} env steps",
                  flush=True)
    finally:
        envs.close()
    return {"task": task, "iterations": iterations, "env_steps": steps, "returns": history,
            "policy": policy.tolist(), "obs_mean": stats.mean.tolist(), "obs_std": stats.std.tolist()}


def save_policy(outcome: dict, path: pathlib.Path) -> None:
    weight = np.asarray(outcome["policy"], dtype=np.float32)
    ale_client.save_mlp(
        {"0.weight": weight, "0.bias": np.zeros(weight.shape[0], dtype=np.float32)},
        path,
        obs_mean=np.asarray(outcome["obs_mean"], dtype=np.float32),
        obs_std=np.asarray(outcome["obs_std"], dtype=np.float32),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", default=None, help="default: ALE_ENDPOINT, else http://127.0.0.1:50051")
    parser.add_argument("--task", default="hopper-hop", help="a task with a float Box action space")
    parser.add_argument("--iterations", type=int, default=100)
    parser.add_argument("--directions", type=int, default=8)
    parser.add_argument("--top", type=int, default=4, help="best directions used in an update")
    parser.add_argument("--step-size", type=float, default=0.02)
    parser.add_argument("--noise", type=float, default=0.03)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the policy to OUT/policy.safetensors")
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON line last")
    args = parser.parse_args()
    if not 0 < args.top <= args.directions:
        parser.error("--top must be between 1 and --directions")
    outcome = learn(args.endpoint, args.task, args.iterations, args.directions, args.top, args.step_size,
                    args.noise, args.seed)
    if args.out:
        path = pathlib.Path(args.out) / "policy.safetensors"
        path.parent.mkdir(parents=True, exist_ok=True)
        save_policy(outcome, path)
        print(f"wrote {path}", flush=True)
    if args.json:
        print(json.dumps({k: v for k, v in outcome.items() if k not in ("policy", "obs_mean", "obs_std")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
