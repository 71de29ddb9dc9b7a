"""The package's exceptions.

Every failed RPC is raised as an `RpcError` subclass chosen by its gRPC status code, carrying the
code and the server's message, so an agent can catch exactly what it can handle:

    try:
        env.step(action)
    except ale_client.InvalidArgument as e:   # the action does not fit the space
        print(e.code, e.details)
"""

from __future__ import annotations

import grpc


class AleError(Exception):
    """Base of every error this package raises on its own account."""


class WireError(AleError):
    """The server sent something this package cannot read (a protocol mismatch)."""


class Closed(AleError, RuntimeError):
    """The env, vector env or connection was closed before this call."""


class MissingEnvVar(AleError, KeyError):
    """An environment variable the harness sets (for example `ALE_ENV_HANDLE`) is not set."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"{name} is not set: {why}")
        self.name = name

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class RpcError(AleError):
    """A gRPC call failed. `code` is the `grpc.StatusCode`, `details` the server's message."""

    def __init__(self, code: grpc.StatusCode, details: str, method: str = "") -> None:
        self.code = code
        self.details = details
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{code.name}: {details}")


class NotFound(RpcError):
    """Unknown task, handle, session or batch id (`NOT_FOUND`)."""


class InvalidArgument(RpcError):
    """The request does not fit: a wrong action dtype, shape, bound or NaN (`INVALID_ARGUMENT`)."""


class FailedPrecondition(RpcError):
    """Not now: stepping an ended episode, resetting a finished session (`FAILED_PRECONDITION`)."""


class PermissionDenied(RpcError):
    """Not on this channel: an official env or a result asked for by an agent (`PERMISSION_DENIED`)."""


class ResourceExhausted(RpcError):
    """A cap is reached: env caps, queued batch runs, message size (`RESOURCE_EXHAUSTED`)."""


class Unavailable(RpcError):
    """The evaluator cannot be reached (`UNAVAILABLE`): not running, or the connection dropped."""


class SimFault(RpcError):
    """The simulator failed during the episode (`ABORTED`): a hosted sim's process crashed, hung
    or answered what it must not. The episode is lost (in an eval session, recorded as ended by
    the sim's fault); `reset()` starts the next one on a fresh host."""


class DeadlineExceeded(RpcError):
    """The call took longer than its timeout (`DEADLINE_EXCEEDED`)."""


_BY_CODE = {
    grpc.StatusCode.NOT_FOUND: NotFound,
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgument,
    grpc.StatusCode.FAILED_PRECONDITION: FailedPrecondition,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDenied,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhausted,
    grpc.StatusCode.UNAVAILABLE: Unavailable,
    grpc.StatusCode.ABORTED: SimFault,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceeded,
}


def from_grpc(error: grpc.RpcError, method: str = "") -> RpcError:
    """The `RpcError` subclass for a failed grpcio call."""
    code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
    details = (error.details() if hasattr(error, "details") else None) or str(error)
    return _BY_CODE.get(code, RpcError)(code, details, method)
