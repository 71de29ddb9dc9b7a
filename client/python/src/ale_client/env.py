"""`AleEnv`: one evaluator env as a `gymnasium.Env`.

    env = ale_client.make("cartpole-balance", endpoint="http://127.0.0.1:50051")
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(env.action_space.sample())

The same class drives an official env a harness hands over (`ale_client.from_env()`): there
`reset` starts the next hidden rollout and its seed is ignored, as the protocol says.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable, Optional, SupportsFloat

import gymnasium
import numpy as np

from . import wire
from ._proto import ale_env_pb2 as pb
from .channel import ENDPOINT_VAR, Connection, resolve_endpoint
from .errors import AleError, Closed, MissingEnvVar
from .types import BatchStatus, EvalSession, Task

#: Environment variables a harness sets for the agent it launches (besides `ALE_ENDPOINT`).
HANDLE_VAR = "ALE_ENV_HANDLE"
SUBMISSION_DIR_VAR = "ALE_SUBMISSION_DIR"


def poll(fetch: Callable[[], Any], what: str, *, poll_seconds: float, timeout: Optional[float]) -> Any:
    """Calls `fetch` until its answer is `finished`; `TimeoutError` after `timeout` seconds."""
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        answer = fetch()
        if answer.finished:
            return answer
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"{what} still unfinished after {timeout}s")
        time.sleep(poll_seconds)


class AleEnv(gymnasium.Env):
    """An env on an ALE evaluator, stepped over gRPC.

    Build one with `ale_client.make(task_id)` (a new practice env), `ale_client.from_env()`
    (the env a harness launched this process for) or `AleEnv.attach(handle)`.

    Observations are NumPy arrays of the declared dtype; actions are cast to the wire dtype of
    the action space (a float64 array for a float32 Box is sent as float32) and checked by the
    server, which refuses a wrong shape, a value out of bounds or NaN with `InvalidArgument`.
    `render_mode="rgb_array"` makes `render()` return a picture drawn from the last observation,
    as the console draws it, for the sims that have a drawing (`metadata["render_modes"]` is
    empty for the others, such as the MuJoCo envs).
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 30}

    def __init__(
        self,
        handle: str,
        *,
        connection: Optional[Connection],
        owns_connection: bool = False,
        render_mode: Optional[str] = None,
        spec: Optional[pb.GetSpecResponse] = None,
    ) -> None:
        """Drives the env `handle` over `connection` (which `close()` closes only if
        `owns_connection`). `spec` is its `GetSpec` answer when the caller has it already; with
        no connection (a vector env's sub-env, whose calls the vector env makes) it is needed."""
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode {render_mode!r}: supported are {self.metadata['render_modes']}")
        self._connection = connection
        self._owns_connection = owns_connection
        self.handle = handle
        self.render_mode = render_mode
        if spec is None:
            if connection is None:
                raise ValueError("an AleEnv without a connection needs its spec")
            spec = connection.call("GetSpec", pb.GetSpecRequest(handle=handle))
        if not spec.HasField("task"):
            raise AleError(f"GetSpec of {handle}: no task metadata")
        self.task = Task.from_wire(spec.task)
        from . import render

        not_drawn = render.why_not_drawn(self.task.sim)
        if not_drawn is not None:
            # No drawing of this sim to render (render.py ports the console's drawings).
            self.metadata = {**self.metadata, "render_modes": []}
            if render_mode is not None:
                raise ValueError(
                    f"render_mode {render_mode!r}: {not_drawn}, so it renders in no mode"
                )
        self.official = spec.official
        self.observation_space = wire.space_from_wire(spec.observation_space)
        self.action_space = wire.space_from_wire(spec.action_space)
        self._last_observation: Any = None
        self._seeded = False
        self._closed = False

    # -- construction --------------------------------------------------------------------------

    @classmethod
    def create(
        cls,
        task_id: str,
        endpoint: Optional[str] = None,
        *,
        render_mode: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> "AleEnv":
        """A new practice env of `task_id` on the evaluator at `endpoint`."""

        def handle(connection: Connection) -> str:
            return connection.call("CreateEnv", pb.CreateEnvRequest(task_id=task_id)).handle

        return cls._on_own_connection(endpoint, timeout, handle, render_mode)

    @classmethod
    def attach(
        cls,
        handle: str,
        endpoint: Optional[str] = None,
        *,
        render_mode: Optional[str] = None,
        timeout: Optional[float] = None,
    ) -> "AleEnv":
        """The existing env `handle` (an official env a harness created, or a practice env)."""
        return cls._on_own_connection(endpoint, timeout, lambda _: handle, render_mode)

    @classmethod
    def _on_own_connection(
        cls,
        endpoint: Optional[str],
        timeout: Optional[float],
        handle: Callable[[Connection], str],
        render_mode: Optional[str],
    ) -> "AleEnv":
        """An env on a connection of its own, which is closed again if building the env fails."""
        connection = Connection(resolve_endpoint(endpoint), timeout=timeout)
        try:
            return cls(handle(connection), connection=connection, owns_connection=True, render_mode=render_mode)
        except BaseException:
            connection.close()
            raise

    # -- the Gymnasium API ---------------------------------------------------------------------

    def reset(
        self, *, seed: Optional[int] = None, options: Optional[dict[str, Any]] = None
    ) -> tuple[Any, dict[str, Any]]:
        """Begins an episode.

        A practice episode is determined by its seed. As in Gymnasium, once seeded the env
        stays deterministic: later resets without a seed draw their seeds from `np_random`.
        Never seeded, the evaluator draws a seed itself. In an eval session every seed is
        ignored and the next hidden rollout begins. `options` is accepted and unused.
        """
        return self._reset_answer(self._call("Reset", self._reset_request(seed)))

    def step(self, action: Any) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        return self._step_answer(self._call("Step", self._step_request(action)))

    # The halves of reset and step: the request, then what its answer holds.

    def _reset_request(self, seed: Optional[int]) -> pb.ResetRequest:
        if seed is not None and not 0 <= seed < 2**64:
            raise ValueError(f"seed {seed} is outside 0..2**64-1 (the wire's uint64)")
        self._check_open()
        super().reset(seed=seed)
        if seed is not None:
            self._seeded = True
            wire_seed: Optional[int] = seed
        elif self._seeded:
            wire_seed = int(self.np_random.integers(0, 2**63))
        else:
            wire_seed = None
        request = pb.ResetRequest(handle=self.handle)
        if wire_seed is not None:
            request.seed = wire_seed
        return request

    def _reset_answer(self, answer: pb.ResetResponse) -> tuple[Any, dict[str, Any]]:
        observation = wire.observation_from_wire(answer.observation, self.observation_space)
        self._last_observation = observation
        return observation, wire.info_from_wire(answer.info)

    def _step_request(self, action: Any) -> pb.StepRequest:
        return pb.StepRequest(handle=self.handle, action=wire.action_to_wire(action, self.action_space))

    def _step_answer(self, answer: pb.StepResponse) -> tuple[Any, SupportsFloat, bool, bool, dict[str, Any]]:
        observation = wire.observation_from_wire(answer.observation, self.observation_space)
        self._last_observation = observation
        return (
            observation,
            float(answer.reward),
            bool(answer.terminated),
            bool(answer.truncated),
            wire.info_from_wire(answer.info),
        )

    def render(self) -> Optional[np.ndarray]:
        """With `render_mode="rgb_array"`, an RGB picture (H×W×3 uint8) of the last observation.

        The picture is drawn from the observation alone, by the same drawing as the console's,
        so it never shows more than the agent was given.
        """
        if self.render_mode is None:
            gymnasium.logger.warn(
                "render() called without a render mode; create the env with render_mode='rgb_array'"
            )
            return None
        if self._last_observation is None:
            raise AleError("render() before reset(): there is no observation to draw")
        from . import render

        return render.rgb_array(self.task.sim, wire.flatten(self._last_observation))

    def close(self) -> None:
        """Closes the connection (if this env opened it). Calling it again does nothing.

        The evaluator keeps a practice env until it has been unused for a while (there is no
        RPC to drop one), so closing frees this process's channel, not the server's env.
        """
        if self._closed:
            return
        self._closed = True
        if self._owns_connection and self._connection is not None:
            self._connection.close()

    # -- official sessions and batch runs ------------------------------------------------------

    def start_eval_session(self) -> EvalSession:
        """Opens the official session on this (official, interactive-task) env."""
        answer = self._call("StartEvalSession", pb.StartEvalSessionRequest(handle=self.handle))
        return EvalSession(session_id=answer.session_id, episodes=answer.episodes)

    def submission_path(self) -> Path:
        """Where this batch task's policy file goes: the contract's entrypoint in the folder
        `ALE_SUBMISSION_DIR` names (set by the harness; in its sandbox `/run/ale/submission`)."""
        contract = self.task.submission_contract
        if contract is None:
            raise AleError(f"task {self.task.id} is not a batch task: it has no submission contract")
        folder = os.environ.get(SUBMISSION_DIR_VAR)
        if not folder:
            raise MissingEnvVar(
                SUBMISSION_DIR_VAR,
                f"the harness names the submission folder with it; the contract says {contract.submission_path}",
            )
        return Path(folder) / contract.entrypoint

    def submit_batch(self, policy_file: Optional[os.PathLike[str] | str] = None) -> "BatchRun":
        """Submits a policy for this official batch-task env and returns the run to follow.

        `policy_file` is copied to `submission_path()` first (leave it out if the file is there
        already). The evaluator reads the file once, now; the result is the harness's to read.
        """
        if policy_file is not None:
            target = self.submission_path()
            source = Path(policy_file)
            if not source.is_file():
                raise FileNotFoundError(f"policy file {source} does not exist or is not a file")
            if not (target.exists() and os.path.samefile(source, target)):
                shutil.copyfile(source, target)
        answer = self._call("SubmitBatchEval", pb.SubmitBatchEvalRequest(handle=self.handle))
        assert self._connection is not None  # _call checked it
        return BatchRun(answer.batch_id, self._connection)

    # -- plumbing ------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise Closed(f"env {self.handle} is closed")

    def _call(self, method: str, request: Any) -> Any:
        self._check_open()
        if self._connection is None:
            raise AleError(f"env {self.handle} belongs to a vector env, which makes its calls")
        return self._connection.call(method, request)

    def __repr__(self) -> str:
        kind = "official" if self.official else "practice"
        return f"<AleEnv {self.task.id} {kind} {self.handle}>"


class BatchRun:
    """A submitted batch run: poll it with `status()`, or block with `wait()`."""

    def __init__(self, batch_id: str, connection: Connection) -> None:
        self.batch_id = batch_id
        self._connection = connection

    def status(self) -> BatchStatus:
        """The run's state; `Closed` once the env it was submitted from is closed."""
        answer = self._connection.call("GetBatchEvalStatus", pb.GetBatchEvalStatusRequest(batch_id=self.batch_id))
        return BatchStatus.from_wire(answer)

    def wait(self, *, poll_seconds: float = 0.2, timeout: Optional[float] = None) -> BatchStatus:
        """Polls until the run succeeds or fails; `TimeoutError` after `timeout` seconds."""
        return poll(self.status, f"batch run {self.batch_id}", poll_seconds=poll_seconds, timeout=timeout)

    def __repr__(self) -> str:
        return f"<BatchRun {self.batch_id}>"


def make(
    task_id: str,
    endpoint: Optional[str] = None,
    *,
    render_mode: Optional[str] = None,
    timeout: Optional[float] = None,
) -> AleEnv:
    """A new practice env of `task_id`. `endpoint` defaults to `ALE_ENDPOINT`, else
    `http://127.0.0.1:50051`; `unix:///PATH` names a Unix socket."""
    return AleEnv.create(task_id, endpoint, render_mode=render_mode, timeout=timeout)


def from_env(*, render_mode: Optional[str] = None, timeout: Optional[float] = None) -> AleEnv:
    """The env a harness launched this process for: `ALE_ENV_HANDLE` on `ALE_ENDPOINT`.

    The same script then runs as a practice agent (`make`) or under `ale harness run`.
    """
    endpoint = os.environ.get(ENDPOINT_VAR)
    handle = os.environ.get(HANDLE_VAR)
    if not endpoint:
        raise MissingEnvVar(ENDPOINT_VAR, "run this agent under `ale harness run`, or use ale_client.make()")
    if not handle:
        raise MissingEnvVar(HANDLE_VAR, "run this agent under `ale harness run`, or use ale_client.make()")
    return AleEnv.attach(handle, endpoint, render_mode=render_mode, timeout=timeout)


def list_tasks(endpoint: Optional[str] = None, *, timeout: Optional[float] = None) -> list[Task]:
    """Every task the evaluator at `endpoint` hosts, in its order."""
    with Connection(resolve_endpoint(endpoint), timeout=timeout) as connection:
        return [Task.from_wire(t) for t in connection.task_messages()]
