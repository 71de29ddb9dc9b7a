"""Opening a channel to an evaluator, over TCP or a Unix socket.

Endpoints are named as the Rust client and the harness name them:

* `http://HOST:PORT` or `HOST:PORT` — the agent channel over TCP;
* `unix:///ABSOLUTE/PATH` (or `unix:/ABSOLUTE/PATH`) — a Unix socket: the agent socket a
  sandboxed agent is handed, or the harness socket.

On a `unix:` target grpc-core sends the socket path as the HTTP/2 `:authority`
(`tmp%2Fale%2Fharness.sock`); the evaluator's HTTP/2 stack refuses that as malformed and every
call fails with `INTERNAL`. This module names the authority `localhost` for every Unix socket
(the `grpc.default_authority` channel option), which is what any grpc-core client must do; see
docs/protocol.md.
"""

from __future__ import annotations

import os
from typing import Any, Optional, Sequence

import grpc

from ._proto import ale_env_pb2_grpc, catalog_pb2, catalog_pb2_grpc
from .errors import Closed, from_grpc

#: The agent channel an evaluator listens on unless told otherwise (`ale serve --listen`).
DEFAULT_ENDPOINT = "http://127.0.0.1:50051"
#: The environment variable a harness names the agent channel with.
ENDPOINT_VAR = "ALE_ENDPOINT"
#: The eight `AleEnv` RPCs.
ENV_RPCS = (
    "CreateEnv",
    "GetSpec",
    "Reset",
    "Step",
    "StartEvalSession",
    "GetEvalResult",
    "SubmitBatchEval",
    "GetBatchEvalStatus",
)

# The evaluator refuses messages over 4 MiB; grpcio's own default send limit is unlimited.
MAX_MESSAGE_BYTES = 4 * 1024 * 1024
UNIX_AUTHORITY = "localhost"


def grpc_target(endpoint: str) -> tuple[str, list[tuple[str, Any]]]:
    """The grpcio target string and the channel options an endpoint needs."""
    if not endpoint:
        raise ValueError("an empty endpoint; expected http://HOST:PORT or unix:///PATH")
    if endpoint.startswith("unix:"):
        path = endpoint[len("unix:") :]
        # `unix:///p` and `unix:/p` both name the absolute path `/p`.
        if path.startswith("//"):
            path = path[2:]
        if not path.startswith("/"):
            raise ValueError(f"{endpoint!r}: a Unix socket endpoint names an absolute path, unix:///PATH")
        return f"unix:{path}", [("grpc.default_authority", UNIX_AUTHORITY)]
    if endpoint.startswith("https://"):
        raise ValueError(f"{endpoint!r}: the evaluator serves plaintext gRPC; use http://")
    if endpoint.startswith("http://"):
        endpoint = endpoint[len("http://") :]
    endpoint = endpoint.rstrip("/")
    if "/" in endpoint or ":" not in endpoint:
        raise ValueError(f"{endpoint!r}: expected http://HOST:PORT or unix:///PATH")
    return endpoint, []


def channel_args(endpoint: str, options: Sequence[tuple[str, Any]] = ()) -> tuple[str, list[tuple[str, Any]]]:
    """The grpcio target and the full channel options for `endpoint`."""
    target, extra = grpc_target(endpoint)
    base = [
        ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
        ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        # grpcio otherwise pools connections process-wide: two channels to one target would
        # share one TCP connection, and the evaluator's per-connection caps with it.
        ("grpc.use_local_subchannel_pool", 1),
    ]
    return target, [*base, *extra, *options]


class Connection:
    """One gRPC channel (one HTTP/2 connection) to an evaluator.

    Calls are named by their RPC (`connection.call("Step", request)`); a failure is raised as
    this package's `RpcError` hierarchy. Many envs may share a connection; `close` closes it,
    after which every call raises `Closed`.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        timeout: Optional[float] = None,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        target, channel_options = channel_args(endpoint, options)
        self.endpoint = endpoint
        self.timeout = timeout
        self.channel = grpc.insecure_channel(target, options=channel_options)
        env = ale_env_pb2_grpc.AleEnvStub(self.channel)
        catalog = catalog_pb2_grpc.CatalogStub(self.channel)
        self._rpcs: dict[str, Any] = {name: getattr(env, name) for name in ENV_RPCS}
        self._rpcs["ListTasks"] = catalog.ListTasks
        self._closed = False

    @property
    def closed(self) -> bool:
        return self._closed

    def _rpc(self, method: str) -> Any:
        if self._closed:
            raise Closed(f"{method} on a closed connection to {self.endpoint}")
        return self._rpcs[method]

    def call(self, method: str, request: Any, *, timeout: Optional[float] = None) -> Any:
        """Calls `method` (e.g. `"Step"`); a failure is raised as an `RpcError` subclass."""
        rpc = self._rpc(method)
        try:
            return rpc(request, timeout=timeout if timeout is not None else self.timeout)
        except grpc.RpcError as e:
            raise from_grpc(e, method) from None

    def task_messages(self) -> list:
        """Every task's `TaskMetadata` message, in the evaluator's order."""
        return list(self.call("ListTasks", catalog_pb2.ListTasksRequest()).tasks)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.channel.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def resolve_endpoint(endpoint: Optional[str]) -> str:
    """`endpoint`, or when it is None `ALE_ENDPOINT` if set, else the default agent channel."""
    if endpoint is not None:
        return endpoint
    return os.environ.get(ENDPOINT_VAR) or DEFAULT_ENDPOINT
