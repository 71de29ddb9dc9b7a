"""How fast a Python agent steps through the package, beside two baselines.

    python client/python/tools/bench.py --ale target/release/ale [--seconds 5]

Prints one line per measurement (and `--json` a JSON object last):

* `package → Rust server`: sequential `AleEnv.step()` calls per second on CartPole through
  this package against `ale serve` (TCP loopback, and the agent's Unix socket);
* `gymnasium in-process`: `gymnasium.make("CartPole-v1")` stepped in this process, no RPC;
* `package → Python grpcio server`: the same client against an `AleEnv` served by grpcio in
  Python (a thread-pool unary server stepping Gymnasium's CartPole): what the calls cost when
  the server side is Python too;
* `vector env, N envs`: env-steps per second of `AleVectorEnv` with `--vector-envs` envs
  (default 16), each vector step sending its N calls at once.

Each figure is the best of `--repeats` runs of `--seconds` seconds.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys
import tempfile
import time
from concurrent import futures

import grpc
import gymnasium
import numpy as np

import ale_client
from ale_client import wire
from ale_client._proto import ale_env_pb2 as pb
from ale_client._proto import ale_env_pb2_grpc, types_pb2
from ale_client.local import LocalEvaluator


def rate(step, seconds: float, repeats: int) -> float:
    """Best calls per second of `step` over `repeats` runs of about `seconds` each."""
    best = 0.0
    for _ in range(repeats):
        n, start = 0, time.perf_counter()
        while True:
            for _ in range(100):
                step()
            n += 100
            elapsed = time.perf_counter() - start
            if elapsed >= seconds:
                break
        best = max(best, n / elapsed)
    return best


def stepper(env):
    """A step function that resets when the episode ends and alternates actions."""
    state = {"t": 0}
    env.reset(seed=0)

    def step():
        state["t"] += 1
        _, _, terminated, truncated, _ = env.step(state["t"] % 2)
        if terminated or truncated:
            env.reset()

    return step


class GymnasiumServicer(ale_env_pb2_grpc.AleEnvServicer):
    """The baseline: an AleEnv in Python, stepping Gymnasium's CartPole (one env is enough)."""

    def __init__(self) -> None:
        self.env = gymnasium.make("CartPole-v1")

    def CreateEnv(self, request, context):
        return pb.CreateEnvResponse(handle="env-py", task_id=request.task_id)

    def GetSpec(self, request, context):
        box = types_pb2.BoxSpace(
            shape=[4], dtype=types_pb2.DTYPE_FLOAT32, low=[-4.8, -np.inf, -0.42, -np.inf], high=[4.8, np.inf, 0.42, np.inf]
        )
        task = types_pb2.TaskMetadata(
            id="cartpole-balance",
            sim="CartPole-v1",
            mode=types_pb2.TASK_MODE_INTERACTIVE,
            genre=types_pb2.TASK_GENRE_OPEN,
            metric=types_pb2.Metric(name="mean_return", direction=types_pb2.DIRECTION_HIGHER_IS_BETTER, target=475, cap=1.5),
            budgets=types_pb2.Budgets(),
            observation_space=types_pb2.Space(box=box),
            action_space=types_pb2.Space(discrete=types_pb2.DiscreteSpace(n=2)),
        )
        return pb.GetSpecResponse(
            observation_space=task.observation_space, action_space=task.action_space, task=task
        )

    def Reset(self, request, context):
        obs, _ = self.env.reset(seed=request.seed if request.HasField("seed") else None)
        return pb.ResetResponse(observation=wire.from_numpy(obs))

    def Step(self, request, context):
        action = int(wire.to_numpy(request.action))
        obs, reward, terminated, truncated, _ = self.env.step(action)
        return pb.StepResponse(
            observation=wire.from_numpy(obs), reward=reward, terminated=terminated, truncated=truncated
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ale", required=True, help="the ale binary (a release build measures the server as shipped)")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--vector-envs", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    results: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        server = LocalEvaluator.start(args.ale, state_dir=pathlib.Path(tmp) / "state")
        tcp, unix = server.endpoint, server.unix_endpoint
        try:
            for name, endpoint in [("package → Rust server (TCP)", tcp), ("package → Rust server (Unix socket)", unix)]:
                env = ale_client.make("cartpole-balance", endpoint=endpoint)
                results[name] = rate(stepper(env), args.seconds, args.repeats)
                env.close()
            envs = ale_client.make_vec("cartpole-balance", args.vector_envs, endpoint=tcp)
            envs.reset(seed=0)
            actions = np.zeros(args.vector_envs, dtype=np.int64)
            vector_rate = rate(lambda: envs.step(actions), args.seconds, args.repeats)
            results[f"vector env, {args.vector_envs} envs (env-steps/s)"] = vector_rate * args.vector_envs
            envs.close()
        finally:
            server.stop()

    results["gymnasium in-process (no RPC)"] = rate(stepper(gymnasium.make("CartPole-v1")), args.seconds, args.repeats)

    grpc_server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    ale_env_pb2_grpc.add_AleEnvServicer_to_server(GymnasiumServicer(), grpc_server)
    port = grpc_server.add_insecure_port("127.0.0.1:0")
    grpc_server.start()
    try:
        env = ale_client.AleEnv.attach("env-py", f"http://127.0.0.1:{port}")
        results["package → Python grpcio server"] = rate(stepper(env), args.seconds, args.repeats)
        env.close()
    finally:
        grpc_server.stop(None)

    for name, value in results.items():
        print(f"{name:<48} {value:>12,.0f} /s")
    if args.json:
        print(json.dumps(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
