"""`python -m ale_client.sim_host`, driven over real pipes as the evaluator drives it.

Each test starts the host process and speaks the framed protocol to it (a 4-byte little-endian
length, then an encoded Request or Reply). The envs in tests/hosted_envs.py are imported by the
host with `--module hosted_envs`; the same envs, made in this process, are the reference.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
from collections import OrderedDict

import gymnasium
import hosted_envs  # noqa: F401 - registers the HostTest/ envs here too
import numpy as np
import pytest
from gymnasium import spaces

from ale_client import wire
from ale_client._proto import sim_host_pb2 as sh
from ale_client._proto import types_pb2 as pb

TESTS = pathlib.Path(__file__).resolve().parent
V1 = sh.PROTOCOL_VERSION_1


class Host:
    """A sim host process and the evaluator's end of its pipes."""

    def __init__(self, *args: str) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(TESTS), *filter(None, [env.get("PYTHONPATH")])])
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ale_client.sim_host", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
        )

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def call(self, **kind) -> sh.Reply:
        body = sh.Request(**kind).SerializeToString()
        self.send_raw(len(body).to_bytes(4, "little") + body)
        return self.reply()

    def reply(self) -> sh.Reply:
        header = self._read(4)
        return sh.Reply.FromString(self._read(int.from_bytes(header, "little")))

    def _read(self, n: int) -> bytes:
        data = self.proc.stdout.read(n)
        if len(data) != n:
            raise EOFError(f"the host's stdout ended; its stderr:\n{self.finish()[1]}")
        return data

    def ok(self, kind: str, **request) -> object:
        """The `kind` part of the reply to `request`, which must not be a Failure."""
        reply = self.call(**request)
        assert reply.WhichOneof("kind") == kind, reply
        return getattr(reply, kind)

    def start(self, count: int = 1) -> tuple[sh.HelloReply, list[int]]:
        hello = self.ok("hello", hello=sh.Hello(version=V1))
        opened = self.ok("opened", open=sh.Open(count=count))
        return hello, list(opened.envs)

    def step(self, envs: list[int], actions: list[pb.Tensor]) -> sh.StepReply:
        return self.ok("step", step=sh.Step(envs=envs, actions=actions))

    def reset(self, envs: list[int], seeds: list[int]) -> sh.ResetReply:
        return self.ok("reset", reset=sh.Reset(envs=envs, seeds=seeds))

    def finish(self, timeout: float = 30) -> tuple[int, str]:
        """Closes stdin; the host's exit status and its whole stderr."""
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        err = self.proc.stderr.read()  # until the host exits, so that its log never fills the pipe
        return self.proc.wait(timeout=timeout), err.decode(errors="replace")


@pytest.fixture
def host():
    """Starts hosts (`host(*args)`) and ends those a test leaves running."""
    started: list[Host] = []

    def start(*args: str) -> Host:
        h = Host(*args)
        started.append(h)
        return h

    yield start
    for h in started:
        if h.proc.poll() is None:
            h.proc.kill()
        h.proc.wait()
        for pipe in (h.proc.stdin, h.proc.stdout, h.proc.stderr):
            try:
                pipe.close()
            except BrokenPipeError:
                pass


def same_value(got, want) -> None:
    """`got` (decoded from the wire) is `want` (from the env in this process), bit for bit."""
    if isinstance(want, dict):
        assert list(got) == list(want) or set(got) == set(want)
        for key in want:
            same_value(got[key], want[key])
        return
    got, want = np.asarray(got), np.asarray(want)
    assert got.shape == want.shape
    assert got.tobytes() == want.astype(got.dtype).tobytes(), (got, want)


# The spec.


def test_space_to_wire_is_space_from_wire_reversed():
    for space in [
        spaces.Box(-1, 1, (2, 3), np.float32),
        spaces.Box(-np.inf, np.inf, (3,), np.float64),
        spaces.Box(np.array([-np.inf, 0.0], np.float32), np.array([1.0, np.inf], np.float32), (2,), np.float32),
        spaces.Box(0, 255, (4, 4, 3), np.uint8),
        spaces.Box(-5, 7, (2,), np.int64),
        spaces.Box(np.iinfo(np.int64).min, np.iinfo(np.int64).max, (2,), np.int64),
        spaces.Box(-3, 3, (1,), np.int32),
        spaces.Discrete(4),
        spaces.Discrete(5, start=-2),
        spaces.MultiDiscrete([3, 4], start=[1, -1]),
        spaces.MultiBinary(4),
        spaces.MultiBinary([2, 3]),
        hosted_envs.DictEnv.observation_space,
        hosted_envs.DictEnv.action_space,
    ]:
        assert wire.space_from_wire(wire.space_to_wire(space)) == space, space
    # And the other way, from the wire.
    message = pb.Space(
        dict=pb.DictSpace(
            entries=[
                pb.NamedSpace(name="z", space=pb.Space(discrete=pb.DiscreteSpace(n=3, start=1))),
                pb.NamedSpace(name="a", space=pb.Space(multi_binary=pb.MultiBinarySpace(shape=[2]))),
            ]
        )
    )
    assert wire.space_to_wire(wire.space_from_wire(message)) == message


@pytest.mark.parametrize(
    "space, named",
    [
        (spaces.Tuple((spaces.Discrete(2),)), "not Tuple"),
        (spaces.Text(4), "not Text"),
        (spaces.Sequence(spaces.Discrete(2)), "not Sequence"),
        (spaces.Box(0, 1, (2,), np.float16), "Box of float16"),
        (spaces.Box(0, 1, (2,), np.bool_), "use MultiBinary"),
        (spaces.MultiDiscrete([[2, 3], [4, 5]]), "1-D ones only"),
        (spaces.Dict(a=spaces.Dict(b=spaces.Discrete(2))), "entry 'a' is itself a Dict"),
        (spaces.Dict(a=spaces.Tuple((spaces.Discrete(2),))), "entry 'a' is a Tuple space"),
    ],
)
def test_spaces_the_wire_cannot_carry_are_refused_by_name(space, named):
    with pytest.raises(TypeError, match="cannot travel on the wire") as e:
        wire.space_to_wire(space)
    assert str(e.value).startswith(str(space)) and named in str(e.value)


def test_cartpole_spec(host):
    local = gymnasium.make("CartPole-v1")
    h = host("--env", "CartPole-v1")
    reply = h.ok("hello", hello=sh.Hello(version=V1))
    assert reply.version == V1
    assert reply.host == f"ale_client.sim_host 0.1.0 (gymnasium {gymnasium.__version__})"
    spec = reply.spec
    assert spec.env_id == "CartPole-v1"
    assert spec.max_episode_steps == 500
    assert list(spec.counters) == []
    assert spec.observation_space == wire.space_to_wire(local.observation_space)
    assert wire.space_from_wire(spec.observation_space) == local.observation_space
    assert wire.space_from_wire(spec.action_space) == spaces.Discrete(2)
    assert h.finish()[0] == 0


# Episodes, against the same envs in this process.


def test_a_cartpole_episode_is_bit_identical_to_gymnasium(host):
    local = gymnasium.make("CartPole-v1")
    h = host("--env", "CartPole-v1")
    _, (env,) = h.start()
    rng = np.random.default_rng(3)
    obs, _ = local.reset(seed=7)
    reply = h.reset([env], [7])
    same_value(wire.to_numpy(reply.observations[0]), obs)
    assert reply.observations[0].dtype == pb.DTYPE_FLOAT32 and list(reply.observations[0].shape) == [4]
    steps = 0
    while True:
        action = int(rng.integers(2))
        obs, reward, terminated, truncated, _ = local.step(action)
        step = h.step([env], [wire.action_to_wire(action, local.action_space)])
        same_value(wire.to_numpy(step.observations[0]), obs)
        assert (step.rewards[0], step.terminated[0], step.truncated[0]) == (reward, terminated, truncated)
        assert len(step.counters) == 1 and list(step.counters[0].values) == []
        steps += 1
        if terminated or truncated:
            break
    assert steps > 5
    assert h.finish()[0] == 0


def test_a_block_of_envs_is_reset_and_stepped_in_one_message(host):
    h = host("--env", "CartPole-v1")
    _, envs = h.start(3)
    assert envs == [0, 1, 2]
    local = {e: gymnasium.make("CartPole-v1") for e in envs}
    order, seeds = [2, 0, 1], [12, 10, 11]
    reply = h.reset(order, seeds)
    assert len(reply.observations) == 3 and len(reply.counters) == 3
    for e, seed, tensor in zip(order, seeds, reply.observations):
        same_value(wire.to_numpy(tensor), local[e].reset(seed=seed)[0])
    for t in range(8):
        actions = [(e + t) % 2 for e in order]
        step = h.step(order, [wire.action_to_wire(a, spaces.Discrete(2)) for a in actions])
        assert len(step.observations) == len(step.rewards) == len(step.terminated) == len(step.counters) == 3
        for i, (e, a) in enumerate(zip(order, actions)):
            obs, reward, terminated, truncated, _ = local[e].step(a)
            same_value(wire.to_numpy(step.observations[i]), obs)
            assert (step.rewards[i], step.terminated[i], step.truncated[i]) == (reward, terminated, truncated)
    # More envs: new numbers; closed numbers are not reused.
    assert isinstance(h.ok("closed", close=sh.Close(envs=[1])), sh.Closed)
    assert list(h.ok("opened", open=sh.Open(count=2)).envs) == [3, 4]
    failure = h.call(step=sh.Step(envs=[1], actions=[wire.action_to_wire(0, spaces.Discrete(2))])).failure
    assert "no open env 1" in failure.message
    assert h.finish()[0] == 0


@pytest.mark.parametrize(
    "env_id, kwargs",
    [
        ("HostTest/Dict-v0", None),
        ("HostTest/Multi-v0", None),
        ("HostTest/IntBox-v0", '{"size": 3}'),
        ("HostTest/Frame-v0", None),
    ],
)
def test_every_space_kind_round_trips(host, env_id, kwargs):
    args = ["--module", "hosted_envs", "--env", env_id] + (["--kwargs", kwargs] if kwargs else [])
    h = host(*args)
    local = gymnasium.make(env_id, **({"size": 3} if kwargs else {}))
    hello, (env,) = h.start()
    obs_space = wire.space_from_wire(hello.spec.observation_space)
    act_space = wire.space_from_wire(hello.spec.action_space)
    assert obs_space == local.observation_space and act_space == local.action_space
    if env_id == "HostTest/IntBox-v0":
        assert obs_space.shape == (3, 3)  # --kwargs reached gymnasium.make
    reply = h.reset([env], [5])
    same_value(wire.observation_from_wire(reply.observations[0], obs_space), local.reset(seed=5)[0])
    act_space.seed(1)
    for _ in range(5):
        action = act_space.sample()
        step = h.step([env], [wire.action_to_wire(action, act_space)])
        obs, reward, terminated, truncated, _ = local.step(action)
        got = wire.observation_from_wire(step.observations[0], obs_space)
        same_value(got, obs)
        assert (step.rewards[0], step.terminated[0], step.truncated[0]) == (reward, terminated, truncated)
        if terminated or truncated:
            break
    assert h.finish()[0] == 0


def test_a_dict_value_travels_flat_as_float64_in_the_space_order(host):
    h = host("--module", "hosted_envs", "--env", "HostTest/Dict-v0")
    hello, (env,) = h.start()
    assert [e.name for e in hello.spec.observation_space.dict.entries] == ["pos", "count", "flags", "level"]
    h.reset([env], [0])
    action = OrderedDict(move=np.array([0.5, -0.25], dtype=np.float32), pick=2)
    step = h.step([env], [wire.action_to_wire(action, hosted_envs.DictEnv.action_space)])
    tensor = step.observations[0]
    assert tensor.dtype == pb.DTYPE_FLOAT64 and list(tensor.shape) == [2 + 1 + 3 + 2]
    # pos, count (pick - 1), flags (pick % 2, 1, 0), level (t % 4, pick)
    assert list(tensor.f64) == [0.5, -0.25, 1.0, 0.0, 1.0, 0.0, 1.0, 2.0]
    assert step.rewards[0] == 2.25
    h.finish()


def test_discrete_and_multi_binary_values_travel_as_int64_and_uint8(host):
    h = host("--module", "hosted_envs", "--env", "HostTest/Multi-v0")
    _, (env,) = h.start()
    h.reset([env], [0])
    # A MultiBinary action as uint8 and as bool, as the evaluator may send either.
    for action in [pb.Tensor(dtype=pb.DTYPE_UINT8, shape=[3], u8=bytes([1, 1, 0])), pb.Tensor(dtype=pb.DTYPE_BOOL, shape=[3], bool=[True, True, False])]:
        tensor = h.step([env], [action]).observations[0]
        assert tensor.dtype == pb.DTYPE_INT64 and list(tensor.shape) == [3] and list(tensor.i64) == [2, 1, 0]
    h.finish()
    h = host("--module", "hosted_envs", "--env", "HostTest/Noisy-v0")
    _, (env,) = h.start()
    h.reset([env], [0])
    tensor = h.step([env], [pb.Tensor(dtype=pb.DTYPE_INT64, i64=[1])]).observations[0]
    assert tensor.dtype == pb.DTYPE_FLOAT64 and list(tensor.f64) == [1.0]
    h.finish()


# Refusals and failures.


def test_a_tuple_space_is_refused_naming_it_and_the_env(host):
    h = host("--module", "hosted_envs", "--env", "HostTest/Tuple-v0")
    failure = h.call(hello=sh.Hello(version=V1)).failure
    assert "HostTest/Tuple-v0's observation space Tuple(" in failure.message
    assert "cannot travel on the wire" in failure.message
    status, err = h.finish()
    assert status == 2
    assert f"ale_client.sim_host: {failure.message}" in err


def test_a_float16_box_is_refused(host):
    h = host("--module", "hosted_envs", "--env", "HostTest/Float16-v0")
    failure = h.call(hello=sh.Hello(version=V1)).failure
    assert "action space Box(0.0, 1.0, (2,), float16) cannot travel on the wire" in failure.message
    assert h.finish()[0] == 2


def test_an_env_that_cannot_be_made_is_refused(host):
    h = host("--env", "NoSuchEnv-v0")
    failure = h.call(hello=sh.Hello(version=V1)).failure
    assert failure.message.startswith("cannot serve NoSuchEnv-v0: ") and "NoSuchEnv" in failure.message[30:]
    assert h.finish()[0] == 2


def test_an_exception_in_step_is_a_failure_and_the_host_serves_on(host):
    h = host("--module", "hosted_envs", "--env", "HostTest/Noisy-v0")
    _, (env,) = h.start()
    h.reset([env], [0])
    act = lambda a: [pb.Tensor(dtype=pb.DTYPE_INT64, i64=[a])]  # noqa: E731
    h.step([env], act(0))
    reply = h.call(step=sh.Step(envs=[env], actions=act(2)))
    assert reply.failure.message == "ValueError: boom at step 1"
    assert list(h.step([env], act(1)).observations[0].f64) == [2.0]
    assert list(h.reset([env], [1]).observations[0].f64) == [0.0]
    status, err = h.finish()
    assert status == 0
    assert "ValueError: boom at step 1" in err  # with its traceback, in the log


def test_requests_that_make_no_sense_are_failures(host):
    h = host("--env", "CartPole-v1")
    act = wire.action_to_wire(0, spaces.Discrete(2))
    assert "the first request must be Hello" in h.call(open=sh.Open(count=1)).failure.message
    _, envs = h.start(2)
    h.reset(envs, [0, 1])
    assert "no open env 7" in h.call(step=sh.Step(envs=[7], actions=[act])).failure.message
    assert "lists 2 envs but 1 actions" in h.call(step=sh.Step(envs=envs, actions=[act])).failure.message
    assert "lists 2 envs but 1 seeds" in h.call(reset=sh.Reset(envs=envs, seeds=[3])).failure.message
    assert "an env twice" in h.call(step=sh.Step(envs=[0, 0], actions=[act, act])).failure.message
    assert "no open env 9" in h.call(close=sh.Close(envs=[9])).failure.message
    assert "no kind set" in h.call().failure.message
    # An action outside the space: the env's own assertion, as a Failure.
    bad = pb.Tensor(dtype=pb.DTYPE_INT64, i64=[5])
    assert h.call(step=sh.Step(envs=[0], actions=[bad])).failure.message.startswith("AssertionError: ")
    # Still serving.
    assert len(h.step(envs, [act, act]).observations) == 2
    assert h.finish()[0] == 0


def test_a_protocol_version_mismatch_is_a_failure_naming_both(host):
    h = host("--env", "CartPole-v1")
    message = h.call(hello=sh.Hello(version=2)).failure.message
    assert "version 1 (PROTOCOL_VERSION_1)" in message and "version 2" in message
    assert h.ok("hello", hello=sh.Hello(version=V1)).version == V1
    assert h.finish()[0] == 0


def test_eof_ends_the_host_cleanly(host):
    h = host("--env", "CartPole-v1")
    assert h.finish()[0] == 0
    h = host("--env", "CartPole-v1")
    _, envs = h.start(2)
    h.reset(envs, [0, 1])
    assert h.finish()[0] == 0


def test_an_overlong_frame_ends_the_host_with_status_3(host):
    h = host("--env", "CartPole-v1")
    h.start()
    h.send_raw(((64 << 20) + 1).to_bytes(4, "little"))
    status, err = h.finish()
    assert status == 3 and "refusing a frame of 67108865 bytes" in err


def test_a_long_frame_is_read_whole(host):
    # A Step naming many envs: a frame longer than one read of the pipe.
    h = host("--env", "CartPole-v1")
    _, envs = h.start(3000)
    reply = h.reset(envs, list(range(3000)))
    assert len(reply.observations) == 3000
    step = h.step(envs, [wire.action_to_wire(i % 2, spaces.Discrete(2)) for i in range(3000)])
    assert len(step.rewards) == 3000
    assert h.finish()[0] == 0


def test_prints_in_env_code_go_to_stderr_not_into_frames(host):
    h = host("--module", "hosted_envs", "--env", "HostTest/Noisy-v0")
    _, (env,) = h.start()
    h.reset([env], [0])
    for _ in range(3):
        h.step([env], [pb.Tensor(dtype=pb.DTYPE_INT64, i64=[1])])
    status, err = h.finish()
    assert status == 0
    assert "NoisyEnv: reset, printing to stdout" in err and "NoisyEnv: step 1" in err


# Counters, options.


def test_counters_report_the_last_value_or_the_episode_sum(host):
    h = host("--module", "hosted_envs", "--env", "HostTest/Dict-v0", "--counter", "hits:sum", "--counter", "cost", "--counter", "absent:last")
    hello, (env,) = h.start()
    assert list(hello.spec.counters) == ["hits", "cost", "absent"]
    space = hosted_envs.DictEnv.action_space
    assert [list(c.values) for c in h.reset([env], [0]).counters] == [[0.0, 0.0, 0.0]]
    rows = []
    for pick in [2, 0, 2, 2]:
        action = OrderedDict(move=np.zeros(2, dtype=np.float32), pick=pick)
        rows.append(list(h.step([env], [wire.action_to_wire(action, space)]).counters[0].values))
    assert rows == [[1.0, 1.0, 0.0], [1.0, 2.0, 0.0], [2.0, 3.0, 0.0], [3.0, 4.0, 0.0]]
    # A new episode starts the sum again.
    assert [list(c.values) for c in h.reset([env], [0]).counters] == [[0.0, 0.0, 0.0]]
    assert h.finish()[0] == 0


def test_the_module_colon_env_syntax(host):
    h = host("--env", "hosted_envs:HostTest/Multi-v0")
    hello, (env,) = h.start()
    assert hello.spec.env_id == "HostTest/Multi-v0"
    assert hello.spec.max_episode_steps == 20
    assert wire.space_from_wire(hello.spec.action_space) == spaces.MultiBinary(3)
    h.reset([env], [0])
    assert h.finish()[0] == 0
