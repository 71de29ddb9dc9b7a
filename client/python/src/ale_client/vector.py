"""`AleVectorEnv`: N practice envs of one task as a `gymnasium.vector.VectorEnv`.

Each `step` sends the N `Step` requests at once (grpcio futures multiplexed over HTTP/2) and
waits for all of them, so a step costs about one round trip, not N.

    envs = ale_client.make_vec("cartpole-balance", num_envs=16, endpoint=...)
    obs, infos = envs.reset(seed=0)            # sub-env i on seed 0 + i
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

Autoreset follows Gymnasium's modes: `NEXT_STEP` (the default, as `SyncVectorEnv`): the step
after an episode ends resets that sub-env and returns its first observation with reward 0;
`SAME_STEP`: the reset happens in the same step, and `infos["final_obs"]`/`["final_info"]`
carry the last observation; `DISABLED`: the caller resets with `options={"reset_mask": ...}`.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any, Optional, Sequence

import numpy as np
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, concatenate, create_empty_array, iterate

from ._proto import ale_env_pb2 as pb
from .channel import Connection
from .env import AleEnv, default_endpoint

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
        endpoint = endpoint if endpoint is not None else default_endpoint()
        self.autoreset_mode = autoreset_mode if isinstance(autoreset_mode, AutoresetMode) else AutoresetMode(autoreset_mode)
        self._connections: list[Connection] = []
        self.envs: list[AleEnv] = []
        try:
            for i in range(num_envs):
                if i % envs_per_connection == 0:
                    self._connections.append(Connection(endpoint, timeout=timeout))
                connection = self._connections[-1]
                created = connection.call(connection.env.CreateEnv, pb.CreateEnvRequest(task_id=task_id))
                self.envs.append(AleEnv(created.handle, connection=connection, owns_connection=False))
        except BaseException:
            for c in self._connections:
                c.close()
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
        self._env_obs: list[Any] = [None] * num_envs
        self._rewards = np.zeros(num_envs, dtype=np.float64)
        self._terminations = np.zeros(num_envs, dtype=np.bool_)
        self._truncations = np.zeros(num_envs, dtype=np.bool_)
        self._autoreset = np.zeros(num_envs, dtype=np.bool_)
        self._closed = False

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
        chosen = [i for i in range(self.num_envs) if mask[i]]
        answers = self._gather(
            [(self.envs[i], "Reset", self.envs[i]._reset_request(seeds[i])) for i in chosen]
        )
        infos: dict[str, Any] = {}
        for i, answer in zip(chosen, answers):
            self._env_obs[i], info = self.envs[i]._reset_answer(answer)
            self._terminations[i] = self._truncations[i] = self._autoreset[i] = False
            infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        return deepcopy(self._observations), infos

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        actions = list(iterate(self.action_space, actions))
        if len(actions) != self.num_envs:
            raise ValueError(f"{len(actions)} actions for {self.num_envs} envs")
        calls = []
        for i, env in enumerate(self.envs):
            if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._autoreset[i]:
                calls.append((env, "Reset", env._reset_request(None)))
            else:
                if self.autoreset_mode == AutoresetMode.DISABLED and self._autoreset[i]:
                    raise RuntimeError(f"sub-env {i} ended its episode; reset it with options['reset_mask'] first")
                calls.append((env, "Step", env._step_request(actions[i])))
        answers = self._gather(calls)
        infos: dict[str, Any] = {}
        finished: list[int] = []
        for i, ((env, kind, _), answer) in enumerate(zip(calls, answers)):
            if kind == "Reset":
                self._env_obs[i], info = env._reset_answer(answer)
                self._rewards[i] = 0.0
                self._terminations[i] = self._truncations[i] = False
            else:
                (self._env_obs[i], self._rewards[i], self._terminations[i], self._truncations[i], info) = env._step_answer(
                    answer
                )
                if self.autoreset_mode == AutoresetMode.SAME_STEP and (self._terminations[i] or self._truncations[i]):
                    infos = self._add_info(infos, {"final_obs": self._env_obs[i], "final_info": info}, i)
                    finished.append(i)
            infos = self._add_info(infos, info, i)
        if finished:
            # SAME_STEP: the ended sub-envs start their next episode now, all in one go.
            resets = self._gather([(self.envs[i], "Reset", self.envs[i]._reset_request(None)) for i in finished])
            for i, answer in zip(finished, resets):
                self._env_obs[i], info = self.envs[i]._reset_answer(answer)
                infos = self._add_info(infos, info, i)
        self._observations = concatenate(self.single_observation_space, self._env_obs, self._observations)
        self._autoreset = np.logical_or(self._terminations, self._truncations)
        if self.autoreset_mode == AutoresetMode.SAME_STEP:
            self._autoreset[:] = False
        return (
            deepcopy(self._observations),
            np.copy(self._rewards),
            np.copy(self._terminations),
            np.copy(self._truncations),
            infos,
        )

    def _gather(self, calls: list[tuple[AleEnv, str, Any]]) -> list[Any]:
        """Sends every request at once, then waits for each answer in order."""
        if self._closed:
            raise RuntimeError("the vector env is closed")
        futures = []
        for env, method, request in calls:
            connection = env._connection
            futures.append(connection.future(getattr(connection.env, method), request))
        return [Connection.result_of(f, method) for f, (_, method, _) in zip(futures, calls)]

    def close_extras(self, **kwargs: Any) -> None:
        if self._closed:
            return
        self._closed = True
        for env in self.envs:
            env.close()
        for connection in self._connections:
            connection.close()


def make_vec(
    task_id: str,
    num_envs: int,
    endpoint: Optional[str] = None,
    *,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    timeout: Optional[float] = None,
) -> AleVectorEnv:
    """`num_envs` practice envs of `task_id` as one vector env."""
    return AleVectorEnv(task_id, num_envs, endpoint, autoreset_mode=autoreset_mode, timeout=timeout)
