"""`AleVectorEnv`: N practice envs of one task as a `gymnasium.vector.VectorEnv`.

Each `step` sends the N `Step` requests at once (grpc's asyncio API, multiplexed over HTTP/2)
and waits for all of them, so a step costs about one round trip, not N.

    envs = ale_client.make_vec("cartpole-balance", num_envs=16, endpoint=...)
    obs, infos = envs.reset(seed=0)            # sub-env i on seed 0 + i
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

Autoreset follows Gymnasium's modes: `NEXT_STEP` (the default, as `SyncVectorEnv`): the step
after an episode ends resets that sub-env and returns its first observation with reward 0;
`SAME_STEP`: the reset happens in the same step, and `infos["final_obs"]`/`["final_info"]`
carry the last observation and info; `DISABLED`: the caller resets with
`options={"reset_mask": ...}`.

When some sub-envs' calls fail (a refused action, say), the others' answers are kept and
`SubEnvErrors` is raised naming the failed sub-envs; those are left where they were.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any, Optional, Sequence

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from ._proto import ale_env_pb2 as pb
from .channel import ParallelCalls, resolve_endpoint
from .env import AleEnv
from .errors import Closed, RpcError, SubEnvErrors

#: Practice envs the evaluator lets one connection hold (`ale serve
#: --max-practice-envs-per-connection`, default 64); a larger vector env opens more connections.
ENVS_PER_CONNECTION = 64


class AleVectorEnv(VectorEnv):
    """`num_envs` practice envs of `task_id`, stepped in parallel gRPC calls."""

    def __init__(
        self,
        task_id: str,
        num_envs: int,
        endpoint: Optional[str] = None,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        envs_per_connection: int = ENVS_PER_CONNECTION,
        timeout: Optional[float] = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        if envs_per_connection < 1:
            raise ValueError(f"envs_per_connection must be at least 1, got {envs_per_connection}")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        endpoint = resolve_endpoint(endpoint)
        self._per_connection = envs_per_connection
        self._calls = ParallelCalls(endpoint, -(-num_envs // envs_per_connection), timeout=timeout)
        self._closed = False
        try:
            self.envs = self._create(task_id, num_envs)
        except BaseException:
            self.close_extras()
            raise
        first = self.envs[0]
        self.num_envs = num_envs
        self.task = first.task
        self.metadata = {"autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.single_observation_space = first.observation_space
        self.single_action_space = first.action_space
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._observations = create_empty_array(self.single_observation_space, n=num_envs, fn=np.zeros)
        # Until a sub-env's first reset, its slot holds zeros.
        zeros = create_empty_array(self.single_observation_space, n=1, fn=np.zeros)
        self._env_obs: list[Any] = [next(iter(iterate(batch_space(self.single_observation_space, 1), zeros)))] * num_envs
        self._rewards = np.zeros(num_envs, dtype=np.float64)
        self._terminations = np.zeros(num_envs, dtype=np.bool_)
        self._truncations = np.zeros(num_envs, dtype=np.bool_)
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)

    def _create(self, task_id: str, num_envs: int) -> list[AleEnv]:
        """Creates the envs, every CreateEnv at once, then every GetSpec at once."""
        lanes = [i // self._per_connection for i in range(num_envs)]
        created = self._calls.call_all([(lane, "CreateEnv", pb.CreateEnvRequest(task_id=task_id)) for lane in lanes])
        handles = [self._raise_first(c).handle for c in created]
        specs = self._calls.call_all([(lane, "GetSpec", pb.GetSpecRequest(handle=h)) for lane, h in zip(lanes, handles)])
        return [AleEnv(h, connection=None, spec=self._raise_first(spec)) for h, spec in zip(handles, specs)]

    @staticmethod
    def _raise_first(answer: Any) -> Any:
        if isinstance(answer, RpcError):
            raise answer
        return answer

    @property
    def handles(self) -> list[str]:
        return [env.handle for env in self.envs]

    def reset(
        self,
        *,
        seed: int | Sequence[Optional[int]] | None = None,
        options: Optional[dict[str, Any]] = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Resets every sub-env (or those `options["reset_mask"]` marks). An int seed gives
        sub-env i the seed `seed + i`; a list gives one seed (or None) per sub-env."""
        seeds: list[Optional[int]]
        if seed is None:
            seeds = [None] * self.num_envs
        elif isinstance(seed, (int, np.integer)):
            seeds = [int(seed) + i for i in range(self.num_envs)]
        else:
            seeds = list(seed)
        if len(seeds) != self.num_envs:
            raise ValueError(f"{len(seeds)} seeds for {self.num_envs} envs")
        mask = np.ones(self.num_envs, dtype=np.bool_)
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"])
            if mask.shape != (self.num_envs,) or mask.dtype != np.bool_ or not mask.any():
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},) with a True")
        self._check_open()
        chosen = [i for i in range(self.num_envs) if mask[i]]
        answers = self._send({i: ("Reset", self.envs[i]._reset_request(seeds[i])) for i in chosen})
        infos: dict[str, Any] = {}
        errors: dict[int, RpcError] = {}
        for i, answer in answers.items():
            if isinstance(answer, RpcError):
                errors[i] = answer
                continue
            self._env_obs[i], info = self.envs[i]._reset_answer(answer)
            self._terminations[i] = self._truncations[i] = self._autoreset[i] = False
            infos = self._add_info(infos, info, i)
        self._finish(errors)
        return deepcopy(self._observations), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = list(iterate(self.action_space, actions))
        if len(actions) != self.num_envs:
            raise ValueError(f"{len(actions)} actions for {self.num_envs} envs")
        self._check_open()
        resetting = self._autoreset.copy() if self.autoreset_mode == AutoresetMode.NEXT_STEP else np.zeros_like(self._autoreset)
        if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset.any():
            ended = np.flatnonzero(self._autoreset).tolist()
            raise RuntimeError(f"sub-envs {ended} ended their episodes; reset them with options['reset_mask'] first")
        # Every action is converted before anything is sent or any seed drawn, so a bad one
        # changes nothing.
        calls = {i: ("Step", self.envs[i]._step_request(a)) for i, a in enumerate(actions) if not resetting[i]}
        calls.update({i: ("Reset", self.envs[i]._reset_request(None)) for i in np.flatnonzero(resetting)})
        answers = self._send(calls)
        infos: dict[str, Any] = {}
        errors: dict[int, RpcError] = {}
        ended: list[int] = []
        for i in range(self.num_envs):
            answer = answers[i]
            if isinstance(answer, RpcError):
                errors[i] = answer
                self._rewards[i] = 0.0
                continue
            if resetting[i]:
                self._env_obs[i], info = self.envs[i]._reset_answer(answer)
                self._rewards[i] = 0.0
                self._terminations[i] = self._truncations[i] = False
            else:
                (self._env_obs[i], self._rewards[i], self._terminations[i], self._truncations[i], info) = self.envs[
                    i
                ]._step_answer(answer)
                if self.autoreset_mode == AutoresetMode.SAME_STEP and (self._terminations[i] or self._truncations[i]):
                    infos = self._add_info(infos, {"final_obs": self._env_obs[i], "final_info": info}, i)
                    ended.append(i)
                    continue  # its info is the new episode's, added below
            infos = self._add_info(infos, info, i)
        if ended:
            # SAME_STEP: the ended sub-envs start their next episode now, all in one go.
            resets = self._send({i: ("Reset", self.envs[i]._reset_request(None)) for i in ended})
            for i, answer in resets.items():
                if isinstance(answer, RpcError):
                    errors[i] = answer
                    continue
                self._env_obs[i], info = self.envs[i]._reset_answer(answer)
                infos = self._add_info(infos, info, i)
        self._autoreset = np.logical_or(self._terminations, self._truncations)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            self._autoreset[:] = False
        self._finish(errors)
        return (
            deepcopy(self._observations),
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def _send(self, calls: dict[int, tuple[str, Any]]) -> dict[int, Any]:
        """Sends every sub-env's call at once (over all connections), then waits for all."""
        order = list(calls)
        answers = self._calls.call_all([(i // self._per_connection, *calls[i]) for i in order])
        return dict(zip(order, answers))

    def _finish(self, errors: dict[int, RpcError]) -> None:
        """Batches the observations and raises for the sub-envs whose calls failed."""
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        if errors:
            raise SubEnvErrors(errors)

    def _check_open(self) -> None:
        if self._closed:
            raise Closed("the vector env is closed")

    def close_extras(self, **kwargs: Any) -> None:
        if self._closed:
            return
        self._closed = True
        for env in getattr(self, "envs", []):
            env.close()
        self._calls.close()


def make_vec(
    task_id: str,
    num_envs: int,
    endpoint: Optional[str] = None,
    *,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    envs_per_connection: int = ENVS_PER_CONNECTION,
    timeout: Optional[float] = None,
) -> AleVectorEnv:
    """`num_envs` practice envs of `task_id` as one vector env."""
    return AleVectorEnv(
        task_id,
        num_envs,
        endpoint,
        autoreset_mode=autoreset_mode,
        envs_per_connection=envs_per_connection,
        timeout=timeout,
    )
