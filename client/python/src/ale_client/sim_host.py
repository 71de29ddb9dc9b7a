"""A sim host: serves Gymnasium envs to the evaluator over the sim-host protocol.

    python -m ale_client.sim_host --env CartPole-v1
    python -m ale_client.sim_host --env gymnasium_robotics:PointMaze_UMaze-v3 --counter success:last
    python -m ale_client.sim_host --module my_envs --env MyEnv-v0 --kwargs '{"size": 5}'

The evaluator starts this process and speaks to it over its stdin and stdout: frames of a 4-byte
little-endian length and an encoded `ale.simhost.v1.Request` (on stdin) or `Reply` (on stdout),
one reply per request (`proto/proto/ale/simhost/v1/sim_host.proto`). stderr is the host's log;
anything the envs print goes there too, so it never corrupts a frame.

Every env is `gymnasium.make(ENV, **KWARGS)`, made after importing `--module` (for third-party
registrations; `--env module:EnvId` does the same). Values travel as `ale_client.wire` sends
them: a Box value as a tensor of the box's dtype and shape, a Discrete one as a scalar int64, a
MultiDiscrete one as int64, a MultiBinary one as uint8, a Dict one flattened into one 1-D
float64 tensor (entries in the space's order). Spaces the wire cannot carry (Tuple, Text, Graph,
Sequence, OneOf, nested Dicts, Box dtypes such as float16 or bool) are refused at start: the
message goes to stderr and answers the first request, and the host exits with status 2.

`--counter KEY` (or `KEY:last`) reports `info[KEY]` of the latest reset or step as a float (0
when absent); `KEY:sum` its sum over the episode's steps (0 after reset). The evaluator reads
them as metrics and safety metrics.

Exit status: 0 when stdin ends, 2 when the envs cannot be served, 3 on a frame the host will
not read (longer than 64 MiB, or cut short).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import struct
import sys
import traceback
from typing import Any, Callable, NoReturn

PROG = "ale_client.sim_host"
# The longest request the host reads; the evaluator's requests are far shorter.
MAX_FRAME = 64 << 20
EXIT_CANNOT_SERVE = 2
EXIT_BAD_FRAME = 3


def _log(message: str) -> None:
    sys.stderr.write(f"{PROG}: {message}\n")
    sys.stderr.flush()


class _Pipes:
    """The protocol's two pipes: frames in on `fd_in`, frames out on `fd_out`."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in = fd_in
        self.fd_out = fd_out
        self.pending = b""

    def read(self) -> bytes | None:
        """The next frame's body, or None when stdin ended between frames."""
        buf = self.pending
        while len(buf) < 4:
            chunk = os.read(self.fd_in, 4096)
            if not chunk:
                if buf:
                    self._cut_short(len(buf), 4)
                return None
            buf += chunk
        n = int.from_bytes(buf[:4], "little")
        if n > MAX_FRAME:
            _log(f"refusing a frame of {n} bytes, more than the {MAX_FRAME} allowed")
            sys.exit(EXIT_BAD_FRAME)
        end = 4 + n
        if len(buf) >= end:
            self.pending = buf[end:]
            return buf[4:end]
        # The rest of a long frame, read into place.
        body = bytearray(n)
        have = len(buf) - 4
        body[:have] = buf[4:]
        view = memoryview(body)
        while have < n:
            got = os.readv(self.fd_in, [view[have:]])
            if got == 0:
                self._cut_short(have + 4, end)
            have += got
        self.pending = b""
        return bytes(body)

    def write(self, body: bytes) -> None:
        data = memoryview(len(body).to_bytes(4, "little") + body)
        while data:
            data = data[os.write(self.fd_out, data) :]

    @staticmethod
    def _cut_short(have: int, want: int) -> NoReturn:
        _log(f"stdin ended within a frame ({have} of {want} bytes)")
        sys.exit(EXIT_BAD_FRAME)


def _take_stdio() -> _Pipes:
    """Moves the protocol off fds 0 and 1: env code that prints (to fd 1 or `sys.stdout`) writes
    to stderr, and env code that reads stdin reads nothing."""
    fd_in, fd_out = os.dup(0), os.dup(1)  # not inherited by children
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    return _Pipes(fd_in, fd_out)


def _parse_counters(specs: list[str]) -> list[tuple[str, bool]]:
    """`KEY`, `KEY:last` or `KEY:sum` as (KEY, summed)."""
    out: list[tuple[str, bool]] = []
    for spec in specs:
        key, sep, mode = spec.rpartition(":")
        if not sep or mode not in ("last", "sum"):
            key, mode = spec, "last"
        if not key:
            raise ValueError(f"--counter {spec!r} names no info key")
        if any(k == key for k, _ in out):
            raise ValueError(f"--counter {key!r} is given twice")
        out.append((key, mode == "sum"))
    return out


class _Failed(Exception):
    """A request the host refuses; its message answers it."""


class Host:
    """The protocol's state: the spec, the open envs, and the handlers of each request."""

    def __init__(self, args: argparse.Namespace) -> None:
        # Imported here, after the protocol moved off stdout: importing env code may print.
        import gymnasium
        import numpy as np

        from . import __version__, wire
        from ._proto import sim_host_pb2 as sh
        from ._proto import types_pb2 as pb

        self.np, self.sh, self.pb, self.wire = np, sh, pb, wire
        self.env_arg = args.env
        kwargs = json.loads(args.kwargs) if args.kwargs else {}
        if not isinstance(kwargs, dict):
            raise ValueError(f"--kwargs must be a JSON object, got {args.kwargs}")
        self.kwargs = kwargs
        self.counters = _parse_counters(args.counter)
        for module in args.module:
            importlib.import_module(module)
        self.gymnasium = gymnasium
        probe = gymnasium.make(args.env, **kwargs)
        self.spare = probe  # the first env opened, rather than making and dropping one
        self.envs: dict[int, _EnvState] = {}
        self.next_env = 0
        self.said_hello = False

        spec = probe.spec
        self.env_id = spec.id if spec is not None and spec.id else args.env
        wire_spaces = []
        for which, space in (("observation", probe.observation_space), ("action", probe.action_space)):
            try:
                wire_spaces.append(wire.space_to_wire(space))
            except TypeError as e:
                raise _Unservable(f"{args.env}'s {which} space {e}") from None
        self.encode = _encoder(probe.observation_space, np, pb)
        self.decode = _decoder(probe.action_space, np, pb, wire)
        self.spec = sh.Spec(
            env_id=self.env_id,
            observation_space=wire_spaces[0],
            action_space=wire_spaces[1],
            counters=[key for key, _ in self.counters],
            max_episode_steps=int(spec.max_episode_steps or 0) if spec is not None else 0,
        )
        self.host = f"{PROG} {__version__} (gymnasium {gymnasium.__version__})"

    # The handlers: each fills `reply` or raises.

    def hello(self, req: Any) -> bytes:
        want = self.sh.PROTOCOL_VERSION_1
        if req.version != want:
            raise _Failed(
                f"this host speaks sim-host protocol version {want} ({self.sh.ProtocolVersion.Name(want)}); "
                f"the evaluator asked for version {req.version} ({_version_name(self.sh, req.version)})"
            )
        self.said_hello = True
        return self.sh.Reply(hello=self.sh.HelloReply(version=want, host=self.host, spec=self.spec)).SerializeToString()

    def open(self, req: Any) -> bytes:
        if not self.said_hello:
            raise _Failed("the first request must be Hello")
        opened = self.sh.Opened()
        for _ in range(req.count):
            if self.spare is not None:
                env, self.spare = self.spare, None
            else:
                env = self.gymnasium.make(self.env_arg, **self.kwargs)
            number = self.next_env
            self.next_env += 1
            self.envs[number] = _EnvState(env, len(self.counters))
            opened.envs.append(number)
        return self.sh.Reply(opened=opened).SerializeToString()

    # Reset and Step answer with bytes encoded here rather than through `Reply` messages:
    # building a message field by field costs more than the env's own step on small envs. The
    # tests parse these replies with the generated `Reply` class.

    def reset(self, req: Any) -> bytes:
        envs, seeds = req.envs, req.seeds
        states = self._states(envs, len(seeds), "seeds")
        encode, counters = self.encode, self.counters
        observations, rows = [], []
        for state, seed in zip(states, seeds):
            obs, info = state.env.reset(seed=int(seed))
            observations.append(encode(obs))
            if counters:
                values = state.values
                for i, (key, summed) in enumerate(counters):
                    values[i] = 0.0 if summed else _number(info, key)
            rows.append(_counters(state.values))
        out = b"".join(observations) + b"".join(_field(0x12, r) for r in rows)
        return _field(0x1A, out)  # Reply.reset

    def step(self, envs: list[int], actions: list[bytes]) -> bytes:
        states = self._states(envs, len(actions), "actions")
        encode, decode, counters = self.encode, self.decode, self.counters
        parts, rewards, terminated, truncated = [], [], bytearray(), bytearray()
        for state, action in zip(states, actions):
            obs, reward, term, trunc, info = state.env.step(decode(action))
            parts.append(encode(obs))
            rewards.append(float(reward))
            terminated.append(1 if term else 0)
            truncated.append(1 if trunc else 0)
            if counters:
                values = state.values
                for i, (key, summed) in enumerate(counters):
                    if summed:
                        values[i] += _number(info, key)
                    else:
                        values[i] = _number(info, key)
        n = len(rewards)
        parts.append(_field(0x12, _pack_doubles(n, rewards)))
        parts.append(_field(0x1A, terminated))
        parts.append(_field(0x22, truncated))
        if counters:
            parts.extend(_field(0x2A, _counters(state.values)) for state in states)
        else:
            parts.append(b"\x2a\x00" * n)  # an empty Counters per env
        return _field(0x22, b"".join(parts))  # Reply.step

    def close(self, req: Any) -> bytes:
        states = self._states(req.envs, len(req.envs), "envs")
        for number in req.envs:
            del self.envs[number]
        for state in states:
            state.env.close()
        return _CLOSED

    def close_all(self) -> None:
        for number, state in list(self.envs.items()):
            try:
                state.env.close()
            except Exception as e:  # noqa: BLE001 - leaving anyway; say why
                _log(f"closing env {number} raised {type(e).__name__}: {e}")
        self.envs.clear()
        if self.spare is not None:
            try:
                self.spare.close()
            except Exception:  # noqa: BLE001
                pass
            self.spare = None

    def _states(self, envs: Any, count: int, what: str) -> list[_EnvState]:
        if not self.said_hello:
            raise _Failed("the first request must be Hello")
        if count != len(envs):
            raise _Failed(f"the request lists {len(envs)} envs but {count} {what}")
        table = self.envs
        try:
            states = [table[n] for n in envs]
        except KeyError as e:
            raise _Failed(f"no open env {e.args[0]} (open: {sorted(table)})") from None
        if len(states) > 1 and len(set(envs)) != len(states):
            raise _Failed(f"the request lists an env twice: {list(envs)}")
        return states


class _Unservable(Exception):
    """The envs cannot be served (a space the wire cannot carry, ...); said once, then exit 2."""


class _EnvState:
    __slots__ = ("env", "values")

    def __init__(self, env: Any, counters: int) -> None:
        self.env = env
        self.values = [0.0] * counters


def _number(info: dict, key: str) -> float:
    value = info.get(key)
    if value is None:
        return 0.0
    if type(value) in (float, int, bool):
        return float(value)
    import numpy as np

    array = np.asarray(value, dtype=np.float64)
    if array.size != 1:
        raise ValueError(f"info[{key!r}] holds {array.size} numbers; a counter is one number")
    return float(array.reshape(-1)[0])


def _version_name(sh: Any, version: int) -> str:
    try:
        return sh.ProtocolVersion.Name(version)
    except ValueError:
        return "unknown"


# Protobuf's wire format, for the replies encoded here: a field's key byte (its number and wire
# type; every key used here fits one byte), then a varint length for a length-delimited one.


def _varint(n: int) -> bytes:
    """`n` as a protobuf varint (a negative int64 as its 64-bit two's complement)."""
    if 0 <= n < 0x80:
        return bytes((n,))
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(key: int, payload: bytes) -> bytes:
    """A length-delimited field: its key byte, the payload's length, the payload."""
    n = len(payload)
    if n < 0x80:
        return bytes((key, n)) + payload
    return bytes((key,)) + _varint(n) + payload


_DOUBLES: dict[int, struct.Struct] = {}


def _pack_doubles(n: int, values: list[float]) -> bytes:
    packer = _DOUBLES.get(n)
    if packer is None:
        packer = _DOUBLES[n] = struct.Struct(f"<{n}d")
    return packer.pack(*values)


def _counters(values: list[float]) -> bytes:
    """A `Counters` message of `values`."""
    return _field(0x0A, _pack_doubles(len(values), values)) if values else b""


def _shape(shape: tuple[int, ...]) -> bytes:
    """A `Tensor.shape` field (none for a scalar's empty shape)."""
    return _field(0x12, b"".join(_varint(d) for d in shape)) if shape else b""


_CLOSED = b"\x2a\x00"  # Reply(closed=Closed())

# Tensor fields: dtype (1, varint) and the key byte of each dtype's packed data field.
_DATA_KEY = {1: 0x1A, 2: 0x22, 3: 0x2A, 4: 0x32, 5: 0x3A, 6: 0x42}


def _encoder(space: Any, np: Any, pb: Any) -> Callable[[Any], bytes]:
    """A function encoding a value of `space` as the wire tensor `ale_client.wire` would make of
    it, as field 1 (`observations`) of a ResetReply or StepReply: key, length, `Tensor` bytes."""
    from gymnasium import spaces

    from .wire import _WIRE_OF, from_numpy

    def raw_encoder(dtype: Any, wire_dtype: int) -> Callable[[Any], bytes]:
        """Float and uint8 values: their bytes are the packed data field's bytes, and everything
        before them depends only on the value's shape."""
        dtype = np.dtype(dtype).newbyteorder("<")
        key, head = _DATA_KEY[wire_dtype], bytes((0x08, wire_dtype))
        prefixes: dict[tuple[int, ...], bytes] = {}

        def encode_raw(obs: Any) -> bytes:
            array = np.asarray(obs, dtype=dtype)
            prefix = prefixes.get(array.shape)
            if prefix is None:
                nbytes = array.size * dtype.itemsize
                tensor = head + _shape(array.shape) + bytes((key,)) + _varint(nbytes)
                prefix = bytes((0x0A,)) + _varint(len(tensor) + nbytes) + tensor
                if len(prefixes) < 16:
                    prefixes[array.shape] = prefix
            return prefix + array.tobytes()

        return encode_raw

    if isinstance(space, spaces.Box):
        dtype = space.dtype
        wire_dtype = _WIRE_OF[dtype]
        if wire_dtype in (pb.DTYPE_FLOAT32, pb.DTYPE_FLOAT64, pb.DTYPE_UINT8):
            return raw_encoder(dtype, wire_dtype)
        return lambda obs: _field(0x0A, from_numpy(np.asarray(obs, dtype=dtype)).SerializeToString())
    if isinstance(space, spaces.Discrete):
        head = bytes((0x08, pb.DTYPE_INT64))
        return lambda obs: _field(0x0A, head + _field(0x2A, _varint(int(obs))))
    if isinstance(space, spaces.MultiDiscrete):
        return lambda obs: _field(0x0A, from_numpy(np.asarray(obs, dtype=np.int64)).SerializeToString())
    if isinstance(space, spaces.MultiBinary):
        encode_bytes = raw_encoder(np.uint8, pb.DTYPE_UINT8)
        return lambda obs: encode_bytes(np.asarray(obs).astype(np.uint8))
    # A Dict: its entries' values, as float64, one after another in the space's order.
    keys = list(space.spaces)
    encode_flat = raw_encoder(np.float64, pb.DTYPE_FLOAT64)
    return lambda obs: encode_flat(np.concatenate([np.asarray(obs[k], dtype=np.float64).reshape(-1) for k in keys]))


def _decoder(space: Any, np: Any, pb: Any, wire: Any) -> Callable[[bytes], Any]:
    """A function turning an encoded wire tensor (an action the evaluator checked) into what a
    Gymnasium env of `space` takes: an int for a Discrete space, a dict for a Dict one, else an
    array of the space's dtype."""
    from gymnasium import spaces

    parse = pb.Tensor.FromString
    if isinstance(space, spaces.Discrete):
        int64 = pb.DTYPE_INT64
        known: dict[bytes, int] = {}  # a Discrete space's actions are few: each decoded once

        def decode_discrete(raw: bytes) -> Any:
            action = known.get(raw)
            if action is None:
                tensor = parse(raw)
                if tensor.dtype == int64 and len(tensor.i64) == 1 and not tensor.shape:
                    action = int(tensor.i64[0])
                else:
                    action = int(wire.to_numpy(tensor).reshape(()))
                if len(known) < 4096:
                    known[raw] = action
            return action

        return decode_discrete
    if isinstance(space, spaces.Box):
        dtype, shape = space.dtype, space.shape
        wire_dtype = wire._WIRE_OF[dtype]
        field = wire._FIELD_OF[wire_dtype]
        if wire_dtype != pb.DTYPE_UINT8:

            def decode_box(raw: bytes) -> Any:
                tensor = parse(raw)
                if tensor.dtype == wire_dtype:
                    return np.array(getattr(tensor, field), dtype=dtype).reshape(shape)
                return wire.to_numpy(tensor).astype(dtype).reshape(shape)

            return decode_box
    return lambda raw: wire.observation_from_wire(parse(raw), space)


class _Unusual(Exception):
    """A Step request not in the encoding `_parse_step` reads; the generated parser reads it."""


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7
        if shift >= 64:
            raise _Unusual


def _parse_step(buf: bytes) -> tuple[list[int], list[bytes]]:
    """A `Request` holding a `Step` (its first byte 0x22) as its env numbers and the encoded
    action tensors; `_Unusual` (or IndexError) for anything but the plain encoding."""
    n, pos = _read_varint(buf, 1)
    end = pos + n
    if end != len(buf):
        raise _Unusual
    envs: list[int] = []
    actions: list[bytes] = []
    while pos < end:
        key = buf[pos]
        pos += 1
        if key == 0x0A:  # envs, packed
            n, pos = _read_varint(buf, pos)
            stop = pos + n
            while pos < stop:
                value, pos = _read_varint(buf, pos)
                envs.append(value)
            if pos != stop:
                raise _Unusual
        elif key == 0x12:  # an action
            n, pos = _read_varint(buf, pos)
            actions.append(buf[pos : pos + n])
            pos += n
        elif key == 0x08:  # an env, unpacked
            value, pos = _read_varint(buf, pos)
            envs.append(value)
        else:
            raise _Unusual
    if pos != end:
        raise _Unusual
    return envs, actions


def serve(host: Host, pipes: _Pipes) -> int:
    """Answers requests until stdin ends."""
    sh = host.sh
    handlers = {"hello": host.hello, "open": host.open, "reset": host.reset, "close": host.close}
    parse = sh.Request.FromString
    read, write, step = pipes.read, pipes.write, host.step

    def answer(body: bytes) -> bytes:
        request = parse(body)
        kind = request.WhichOneof("kind")
        if kind is None:
            raise _Failed("a request with no kind set (a newer evaluator?)")
        if kind == "step":
            return step(list(request.step.envs), [a.SerializeToString() for a in request.step.actions])
        return handlers[kind](getattr(request, kind))

    while True:
        body = read()
        if body is None:
            host.close_all()
            return 0
        try:
            parsed = None
            if body[:1] == b"\x22":
                try:
                    parsed = _parse_step(body)
                except (_Unusual, IndexError):
                    pass
            out = step(*parsed) if parsed is not None else answer(body)
        except _Failed as e:
            out = sh.Reply(failure=sh.Failure(message=str(e))).SerializeToString()
        except Exception as e:  # noqa: BLE001 - the env's error is the reply
            traceback.print_exc()
            out = sh.Reply(failure=sh.Failure(message=f"{type(e).__name__}: {e}")).SerializeToString()
        write(out)


def _refuse(pipes: _Pipes, message: str) -> int:
    """Says why the envs cannot be served: on stderr, and as the answer to the first request."""
    _log(message)
    from ._proto import sim_host_pb2 as sh

    if pipes.read() is not None:
        pipes.write(sh.Reply(failure=sh.Failure(message=message)).SerializeToString())
    return EXIT_CANNOT_SERVE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=f"python -m {PROG}", description=__doc__.splitlines()[0])
    parser.add_argument("--env", required=True, help="the env id gymnasium.make builds, or module:EnvId")
    parser.add_argument("--kwargs", default=None, help="a JSON object of keyword arguments for gymnasium.make")
    parser.add_argument(
        "--module", action="append", default=[], help="a module to import first (third-party registrations)"
    )
    parser.add_argument(
        "--counter",
        action="append",
        default=[],
        metavar="KEY[:last|:sum]",
        help="report info[KEY] (its last value, or its sum over the episode) with every reply",
    )
    args = parser.parse_args(argv)
    pipes = _take_stdio()
    try:
        host = Host(args)
    except _Unservable as e:
        return _refuse(pipes, str(e))
    except Exception as e:  # noqa: BLE001 - whatever stops the env being made is the message
        traceback.print_exc()
        return _refuse(pipes, f"cannot serve {args.env}: {type(e).__name__}: {e}")
    try:
        return serve(host, pipes)
    except BrokenPipeError:
        _log("the evaluator closed its end of the pipe")
        return 1


if __name__ == "__main__":
    sys.exit(main())
