"""The harness's side of the protocol, for harness scripts written in Python.

Only a process that can reach the evaluator's state dir can open its harness socket
(`<state-dir>/harness.sock`, 0600 in a 0700 folder); over it one may create official envs and
read the authoritative result, which the agent channel refuses (`PERMISSION_DENIED`).

    with ale_client.HarnessChannel("/var/lib/ale/harness.sock") as harness:
        official = harness.create_official("cartpole-balance")
        ... hand official.handle to an agent, which plays the session ...
        result = harness.eval_result(official.session_id)
        print(result.status, result.value)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional

from ._proto import ale_env_pb2 as pb
from .channel import Connection
from .env import poll
from .types import BatchStatus, EvalResult


@dataclass(frozen=True)
class OfficialEnv:
    """An official env the harness created: the handle to give an agent, and the ids of its
    one session and of the run folder it records into."""

    handle: str
    task_id: str
    session_id: str
    run_id: str


class HarnessChannel:
    """A connection over the evaluator's harness socket."""

    def __init__(self, socket_path: os.PathLike[str] | str, *, timeout: Optional[float] = 30.0) -> None:
        path = os.path.abspath(os.fspath(socket_path))
        self.socket_path = path
        self._connection = Connection(f"unix://{path}", timeout=timeout)

    @classmethod
    def for_state_dir(cls, state_dir: os.PathLike[str] | str, **kwargs: object) -> "HarnessChannel":
        """The harness channel of the evaluator serving `state_dir`."""
        return cls(os.path.join(os.fspath(state_dir), "harness.sock"), **kwargs)  # type: ignore[arg-type]

    @property
    def connection(self) -> Connection:
        """The underlying connection: `AleEnv(handle, connection=...)` drives an env over it
        (closing that env leaves the connection open)."""
        return self._connection

    def create_official(self, task_id: str) -> OfficialEnv:
        """Creates an official env of `task_id` and the run folder it records into."""
        c = self._connection
        answer = c.call("CreateEnv", pb.CreateEnvRequest(task_id=task_id, official=True))
        return OfficialEnv(answer.handle, answer.task_id, answer.session_id, answer.run_id)

    def eval_result(self, session_id: str, *, end_session: bool = False) -> EvalResult:
        """The session's result as it stands (`status == "running"` while it runs).

        `end_session=True` first ends a running session: the rollout in progress is aborted,
        the rest not run. A harness sends it once its agent has exited.
        """
        c = self._connection
        answer = c.call("GetEvalResult", pb.GetEvalResultRequest(session_id=session_id, end_session=end_session))
        return EvalResult.from_wire(answer.result)

    def wait_for_result(
        self, session_id: str, *, poll_seconds: float = 0.2, timeout: Optional[float] = None
    ) -> EvalResult:
        """Polls until the session is finished; `TimeoutError` after `timeout` seconds."""
        return poll(lambda: self.eval_result(session_id), f"session {session_id}", poll_seconds=poll_seconds, timeout=timeout)

    def batch_status(self, batch_id: str) -> BatchStatus:
        """A batch run's state; on this channel it carries the result once the run finished."""
        c = self._connection
        answer = c.call("GetBatchEvalStatus", pb.GetBatchEvalStatusRequest(batch_id=batch_id))
        return BatchStatus.from_wire(answer)

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> "HarnessChannel":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
