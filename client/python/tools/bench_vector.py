"""Env-steps per second of CartPole from one Python process, every way at once.

    python client/python/tools/bench_vector.py --ale target/release/ale [--seconds 2]

Through this package against a real `ale serve` (a vector env: one `Step` RPC for all N
sub-envs, over TCP and over the agent socket), beside N single envs stepped one call each (how
`make_vec` worked before vector envs), Gymnasium's in-process `CartPole-v1`, its NumPy vector
env (`gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`) and EnvPool where it
installs. Every row steps with the same fixed actions (push right), so episodes end and
autoreset often. Prints a Markdown table for docs/performance.md.
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile
import time
from typing import Callable

import gymnasium
import numpy as np

import ale_client
from ale_client.local import LocalEvaluator

SIZES = [1, 16, 64, 256, 1024, 4096]


def rate(step: Callable[[], None], n: int, seconds: float) -> float:
    """Env-steps per second of `step` (which steps `n` envs), after a short warm-up."""
    warm = time.perf_counter() + 0.2
    while time.perf_counter() < warm:
        step()
    calls = 0
    start = time.perf_counter()
    end = start + seconds
    while time.perf_counter() < end:
        step()
        calls += 1
    return calls * n / (time.perf_counter() - start)


def ours(endpoint: str, n: int, seconds: float) -> float:
    envs = ale_client.make_vec("cartpole-balance", n, endpoint)
    envs.reset(seed=0)
    actions = np.ones(n, dtype=np.int64)
    try:
        return rate(lambda: envs.step(actions), n, seconds)
    finally:
        envs.close()


def singles(endpoint: str, n: int, seconds: float) -> float:
    """N single envs, one Step call each per vector step (the pre-vector `make_vec`'s cost,
    less its asyncio overlap)."""
    envs = [ale_client.make("cartpole-balance", endpoint=endpoint) for _ in range(n)]
    for i, env in enumerate(envs):
        env.reset(seed=i)

    def step() -> None:
        for env in envs:
            _, _, terminated, truncated, _ = env.step(1)
            if terminated or truncated:
                env.reset()

    try:
        return rate(step, n, seconds)
    finally:
        for env in envs:
            env.close()


def gymnasium_single(seconds: float) -> float:
    env = gymnasium.make("CartPole-v1")
    env.reset(seed=0)

    def step() -> None:
        _, _, terminated, truncated, _ = env.step(1)
        if terminated or truncated:
            env.reset()

    return rate(step, 1, seconds)


def gymnasium_vector(n: int, seconds: float) -> float:
    envs = gymnasium.make_vec("CartPole-v1", num_envs=n, vectorization_mode="vector_entry_point")
    envs.reset(seed=0)
    actions = np.ones(n, dtype=np.int64)
    return rate(lambda: envs.step(actions), n, seconds)


def envpool_vector(n: int, seconds: float) -> float | None:
    try:
        import envpool  # type: ignore[import-not-found]
    except ImportError:
        return None
    envs = envpool.make("CartPole-v1", env_type="gymnasium", num_envs=n)
    envs.reset()
    actions = np.ones(n, dtype=np.int32)
    return rate(lambda: envs.step(actions), n, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ale", default="target/release/ale", help="the ale binary to serve with")
    parser.add_argument("--seconds", type=float, default=2.0, help="seconds per measurement")
    parser.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=SIZES)
    parser.add_argument("--singles-up-to", type=int, default=64, help="largest N for the one-call-per-env row")
    args = parser.parse_args()
    most = str(2 * max(args.sizes))
    with tempfile.TemporaryDirectory() as tmp:
        evaluator = LocalEvaluator.start(
            args.ale,
            state_dir=pathlib.Path(tmp) / "state",
            args=("--max-practice-envs", most, "--max-practice-envs-per-connection", most),
        )
        try:
            rows: list[tuple[str, int, float | None]] = []
            rows.append(("Gymnasium `CartPole-v1`, in process, one env", 1, gymnasium_single(args.seconds)))
            for n in args.sizes:
                rows.append(("ale vector env, TCP", n, ours(evaluator.endpoint, n, args.seconds)))
                rows.append(("ale vector env, agent socket", n, ours(evaluator.unix_endpoint, n, args.seconds)))
                if n <= args.singles_up_to:
                    rows.append(("ale, N single envs, one call each, TCP", n, singles(evaluator.endpoint, n, args.seconds)))
                rows.append(("Gymnasium NumPy vector env, in process", n, gymnasium_vector(n, args.seconds)))
                rows.append(("EnvPool, in process", n, envpool_vector(n, args.seconds)))
        finally:
            evaluator.stop()
    print("| what | N | env-steps/s |")
    print("|---|---:|---:|")
    for what, n, value in rows:
        shown = "not installed" if value is None else f"{value:,.0f}"
        print(f"| {what} | {n} | {shown} |")


if __name__ == "__main__":
    main()
