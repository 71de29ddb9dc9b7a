"""What `python -m ale_client.sim_host` adds to each step, over real pipes.

    python client/python/tools/bench_sim_host.py [--env CartPole-v1] [--steps 20000] [--block 1]

Drives a host with Step requests (a block of `--block` envs each, reset when one ends) and
reports, per env step (quantiles over requests): the round trip the client sees, the host's own
CPU time per request (from a frame read to its reply written, syscalls included, measured in the
host by wrapping its pipes), and `env.step` itself (the same env, in this process, with the same
actions). The host's overhead is its CPU time per request minus `env.step`'s; CPU time, not wall
time, because on a busy machine the two processes preempt each other inside a request. The
round trip adds the pipes' latency (two process wake-ups) and this client's reading.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

import gymnasium
import numpy as np

from ale_client._proto import sim_host_pb2 as sh
from ale_client._proto import types_pb2 as pb

# Run as the host: time each request from its frame read to its reply written, and report the
# total on stderr at exit.
HOST = """
import sys, time
from ale_client import sim_host
spent = []
read, write = sim_host._Pipes.read, sim_host._Pipes.write
def timed_read(self):
    body = read(self)
    self.t0 = time.thread_time()
    return body
def timed_write(self, body):
    write(self, body)
    spent.append(time.thread_time() - self.t0)
sim_host._Pipes.read, sim_host._Pipes.write = timed_read, timed_write
try:
    sim_host.main(sys.argv[1:])
finally:
    print("HOST " + " ".join(map(repr, spent)), file=sys.stderr)
"""


class Client:
    def __init__(self, args: list[str], host_code: str | None = None) -> None:
        cmd = [sys.executable, "-c", host_code, *args] if host_code else [sys.executable, "-m", "ale_client.sim_host", *args]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.w, self.r = self.proc.stdin.fileno(), self.proc.stdout.fileno()

    def send(self, body: bytes) -> sh.Reply:
        os.write(self.w, len(body).to_bytes(4, "little") + body)
        n = int.from_bytes(self._read(4), "little")
        return sh.Reply.FromString(self._read(n))

    def call(self, **kind) -> sh.Reply:
        return self.send(sh.Request(**kind).SerializeToString())

    def _read(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = os.read(self.r, n - len(out))
            if not chunk:
                raise EOFError(self.proc.stderr.read().decode())
            out += chunk
        return out

    def finish(self) -> str:
        self.proc.stdin.close()
        log = self.proc.stderr.read().decode()  # before waiting: the log may fill the pipe
        self.proc.wait()
        return log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--block", type=int, default=1)
    args = parser.parse_args()

    client = Client(["--env", args.env], HOST)
    hello = client.call(hello=sh.Hello(version=sh.PROTOCOL_VERSION_1)).hello
    assert hello.spec.action_space.WhichOneof("kind") == "discrete", "this bench sends Discrete actions"
    n = hello.spec.action_space.discrete.n
    envs = list(client.call(open=sh.Open(count=args.block)).opened.envs)
    client.call(reset=sh.Reset(envs=envs, seeds=envs))
    rng = np.random.default_rng(0)
    actions = rng.integers(0, n, size=(args.steps, args.block)).tolist()
    # Requests made up front, so the round trip counts this client's I/O, not its encoding.
    steps = [
        sh.Request(step=sh.Step(envs=envs, actions=[pb.Tensor(dtype=pb.DTYPE_INT64, i64=[a]) for a in row])).SerializeToString()
        for row in actions
    ]
    resets = 0
    round_trips, is_step = [], []
    for body in steps:
        t = time.perf_counter()
        reply = client.send(body).step
        round_trips.append(time.perf_counter() - t)
        is_step.append(True)
        done = [e for e, te, tr in zip(envs, reply.terminated, reply.truncated) if te or tr]
        if done:
            resets += 1
            client.call(reset=sh.Reset(envs=done, seeds=done))
            is_step.append(False)
    log = client.finish()
    host_line = [line for line in log.splitlines() if line.startswith("HOST ")][-1].split()
    # The host's times of the Step requests (it also answered Hello, Open and the resets).
    host_times = [float(x) for x in host_line[1:]][2:][1:]
    host_steps = [t for t, step in zip(host_times, is_step) if step]

    # env.step alone, same env, same actions, same resets.
    env = [gymnasium.make(args.env) for _ in range(args.block)]
    for i, e in enumerate(env):
        e.reset(seed=i)
    step_times, step_cpu = [], []
    for row in actions:
        t, c = time.perf_counter(), time.thread_time()
        for i, (e, a) in enumerate(zip(env, row)):
            _, _, te, tr, _ = e.step(a)
            if te or tr:
                e.reset(seed=i)
        step_cpu.append(time.thread_time() - c)
        step_times.append(time.perf_counter() - t)

    def at(times: list[float], q: float) -> float:
        return sorted(times)[int(q * (len(times) - 1))] * 1e6 / args.block

    print(f"{args.env}, {args.steps} Step requests of {args.block} env(s), {resets} resets between")
    print("  us per env step                 min     p10  median    mean")
    def mean(times: list[float]) -> float:
        return sum(times) / len(times) * 1e6 / args.block

    for name, times in [
        ("env.step, in process, wall", step_times),
        ("env.step, in process, CPU", step_cpu),
        ("host, frame in to reply out, CPU", host_steps),
        ("round trip, client side, wall", round_trips),
    ]:
        print(f"  {name:33} {at(times, 0):7.2f} {at(times, 0.1):7.2f} {at(times, 0.5):7.2f} {mean(times):7.2f}")
    for name, times, base in [
        ("host CPU - env.step CPU", host_steps, step_cpu),
        ("round trip - env.step, wall", round_trips, step_times),
    ]:
        print(
            f"  {name:33} {at(times, 0) - at(base, 0):7.2f} {at(times, 0.1) - at(base, 0.1):7.2f}"
            f" {at(times, 0.5) - at(base, 0.5):7.2f} {mean(times) - mean(base):7.2f}"
        )


if __name__ == "__main__":
    main()
