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

from typing import Any, Callable, Optional, Sequence

import grpc

from ._proto import ale_env_pb2_grpc, catalog_pb2, catalog_pb2_grpc
from .errors import from_grpc

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


class Connection:
    """One gRPC channel to an evaluator with its two services' stubs.

    Every call goes through `call`, which turns a grpcio error into this package's
    `RpcError` hierarchy. A connection may be shared by many envs; `close` closes the channel.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        timeout: Optional[float] = None,
        options: Sequence[tuple[str, Any]] = (),
    ) -> None:
        target, extra = grpc_target(endpoint)
        base = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ]
        self.endpoint = endpoint
        self.timeout = timeout
        self.channel = grpc.insecure_channel(target, options=[*base, *extra, *options])
        self.env = ale_env_pb2_grpc.AleEnvStub(self.channel)
        self.catalog = catalog_pb2_grpc.CatalogStub(self.channel)
        self._closed = False

    def call(self, rpc: Callable[..., Any], request: Any, *, timeout: Optional[float] = None) -> Any:
        """Calls a stub method; a failure is raised as an `RpcError` subclass."""
        try:
            return rpc(request, timeout=timeout if timeout is not None else self.timeout)
        except grpc.RpcError as e:
            name = getattr(rpc, "_method", b"")
            method = name.decode() if isinstance(name, bytes) else str(name)
            raise from_grpc(e, method.rsplit("/", 1)[-1]) from None

    def future(self, rpc: Any, request: Any) -> Any:
        """Starts a call without waiting (`rpc.future`); `result_of` waits for it."""
        return rpc.future(request, timeout=self.timeout)

    @staticmethod
    def result_of(future: Any, method: str = "") -> Any:
        try:
            return future.result()
        except grpc.RpcError as e:
            raise from_grpc(e, method) from None

    def list_tasks(self) -> list:
        """Every task's `TaskMetadata` message, in the evaluator's order."""
        return list(self.call(self.catalog.ListTasks, catalog_pb2.ListTasksRequest()).tasks)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self.channel.close()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
