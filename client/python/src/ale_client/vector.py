"""`AleVectorEnv`: a practice vector env, N sub-envs of one task behind one handle, as a
`gymnasium.vector.VectorEnv`.

Each `reset` and `step` is one RPC for all N sub-envs: the evaluator steps them together and
answers with batched tensors, which decode into NumPy without a copy (Box observations,
rewards and flags are read-only views of the answer's bytes; copy one to write into it).

    envs = ale_client.make_vec("cartpole-balance", num_envs=64, endpoint=...)
    obs, infos = envs.reset(seed=0)            # sub-env i on seed 0 + i
    obs, rewards, terminations, truncations, infos = envs.step(envs.action_space.sample())

Autoreset follows Gymnasium 1.x's modes, done by the evaluator: `NEXT_STEP` (the default, as
`SyncVectorEnv`): the step after an episode ends resets that sub-env and returns its first
observation with reward 0; `SAME_STEP`: the reset happens in the same step, and
`infos["final_obs"]`/`["final_info"]` carry the last observation and info; `DISABLED`: the
caller resets ended sub-envs with `options={"reset_mask": ...}`. Unseeded resets (autoresets
among them) continue each sub-env's own generator, as Gymnasium's do.

Every action is checked before any sub-env steps: one bad action refuses the whole step with
`InvalidArgument` naming its sub-env, and nothing moves.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space, iterate

from . import wire
from ._proto import ale_env_pb2 as pb
from .channel import Connection, resolve_endpoint
from .env import Task
from .errors import AleError, Closed

_MODE_TO_WIRE = {
    AutoresetMode.NEXT_STEP: pb.AUTORESET_MODE_NEXT_STEP,
    AutoresetMode.SAME_STEP: pb.AUTORESET_MODE_SAME_STEP,
    AutoresetMode.DISABLED: pb.AUTORESET_MODE_DISABLED,
}


class AleVectorEnv(VectorEnv):
    """`num_envs` practice envs of `task_id` behind one vector handle, one RPC a step."""

    def __init__(
        self,
        task_id: str,
        num_envs: int,
        endpoint: Optional[str] = None,
        *,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        timeout: Optional[float] = None,
    ) -> None:
        if num_envs < 1:
            raise ValueError(f"num_envs must be at least 1, got {num_envs}")
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self._closed = True
        self._connection = Connection(resolve_endpoint(endpoint), timeout=timeout)
        try:
            created = self._connection.call(
                "CreateEnv",
                pb.CreateEnvRequest(
                    task_id=task_id,
                    num_envs=num_envs,
                    autoreset_mode=_MODE_TO_WIRE[self.autoreset_mode],
                    vector=True,
                ),
            )
            self.handle = created.handle
            spec = self._connection.call("GetSpec", pb.GetSpecRequest(handle=self.handle))
        except BaseException:
            self._connection.close()
            raise
        self._closed = False
        if spec.num_envs != num_envs:
            self.close()
            raise AleError(
                f"asked for {num_envs} sub-envs, the evaluator made {spec.num_envs}: "
                "an evaluator older than vector envs makes single envs only"
            )
        self.num_envs = num_envs
        self.task = Task.from_wire(spec.task)
        self.metadata = {"autoreset_mode": self.autoreset_mode}
        self.render_mode = None
        self.single_observation_space = wire.space_from_wire(spec.observation_space)
        self.single_action_space = wire.space_from_wire(spec.action_space)
        self.observation_space = batch_space(self.single_observation_space, num_envs)
        self.action_space = batch_space(self.single_action_space, num_envs)
        self._action_dtype = _wire_dtype(self.single_action_space)

    def reset(
        self,
        *,
        seed: int | Sequence[int] | None = None,
        options: Optional[dict[str, Any]] = None,
    ) -> tuple[Any, dict[str, Any]]:
        """Resets every sub-env (or those `options["reset_mask"]` marks). An int seed gives
        sub-env i the seed `seed + i`; a list gives one seed per sub-env; none continues each
        sub-env's own generator (a fresh seed for one never seeded)."""
        request = pb.ResetRequest(handle=self.handle)
        if isinstance(seed, (int, np.integer)):
            request.seed = _seed(int(seed))
        elif seed is not None:
            seeds = list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for {self.num_envs} envs")
            if any(s is None for s in seeds):
                raise ValueError("a list of seeds gives one int per sub-env; pass seed=None to seed none")
            request.seeds.extend(_seed(int(s)) for s in seeds)
        if options and "reset_mask" in options:
            mask = options["reset_mask"]
            if not isinstance(mask, np.ndarray) or mask.shape != (self.num_envs,) or mask.dtype != np.bool_:
                raise ValueError(f"options['reset_mask'] must be a bool array of shape ({self.num_envs},)")
            if not mask.any():
                raise ValueError("options['reset_mask'] must mark at least one sub-env")
            request.reset_mask.extend(mask.tolist())
        answer = self._call("Reset", request)
        return self._observations(answer.observation), _vector_info(answer.info)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        answer = self._call("Step", pb.StepRequest(handle=self.handle, action=self._actions(actions)))
        infos = _vector_info(answer.info)
        if self.autoreset_mode == AutoresetMode.SAME_STEP and len(answer.final_index):
            index = np.asarray(answer.final_index, dtype=np.int64)
            finals = self._observations(answer.final_observation, len(index))
            final_obs = np.full(self.num_envs, fill_value=None, dtype=object)
            for k, i in enumerate(index):
                final_obs[i] = _row(finals, k)
            ended = np.zeros(self.num_envs, dtype=np.bool_)
            ended[index] = True
            infos["final_obs"], infos["_final_obs"] = final_obs, ended
            infos["final_info"], infos["_final_info"] = _vector_info(answer.final_info), ended.copy()
        return (
            self._observations(answer.observation),
            wire.to_numpy(answer.rewards),
            wire.to_numpy(answer.terminations),
            wire.to_numpy(answer.truncations),
            infos,
        )

    def _actions(self, actions: Any) -> Any:
        """The batched action as one raw tensor `[num_envs, ...]` of the wire's dtype."""
        space = self.single_action_space
        if isinstance(space, spaces.Dict):
            rows = [wire.flatten({k: a[k] for k in space.spaces}) for a in iterate(self.action_space, actions)]
            array = np.stack(rows).astype(np.float64)
        else:
            array = np.asarray(actions)
            if array.dtype != self._action_dtype:
                if np.issubdtype(self._action_dtype, np.floating):
                    array = array.astype(self._action_dtype)
                else:
                    # Integers (and bools) that fit are cast, as a single env's are; anything
                    # else (a float for a Discrete space) goes as it is, for the evaluator to
                    # refuse naming the sub-env.
                    array = wire._cast_integers(array, self._action_dtype)
        return wire.raw_from_numpy(array)

    def _observations(self, tensor: Any, n: Optional[int] = None) -> Any:
        """A batched observation as the batched space's value, a view where the dtype allows."""
        n = self.num_envs if n is None else n
        array = wire.to_numpy(tensor)
        space = self.single_observation_space
        if isinstance(space, spaces.Dict):
            out: dict[str, Any] = {}
            offset = 0
            for name, sub in space.spaces.items():
                width = wire._flat_len(sub)
                out[name] = array[:, offset : offset + width].astype(_wire_dtype(sub)).reshape((n, *sub.shape))
                offset += width
            return out
        if isinstance(space, spaces.MultiBinary):
            return array.astype(np.int8)
        return array

    def _call(self, method: str, request: Any) -> Any:
        if self._closed:
            raise Closed("the vector env is closed")
        return self._connection.call(method, request)

    def close_extras(self, **kwargs: Any) -> None:
        if self._closed:
            return
        self._closed = True
        self._connection.close()

    def __repr__(self) -> str:
        return f"AleVectorEnv({self.task.id!r}, num_envs={self.num_envs}, autoreset_mode={self.autoreset_mode})"


def _seed(seed: int) -> int:
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed {seed} is outside 0..2**64-1 (the wire's uint64)")
    return seed


def _wire_dtype(space: spaces.Space) -> np.dtype:
    if isinstance(space, (spaces.Discrete, spaces.MultiDiscrete)):
        return np.dtype(np.int64)
    if isinstance(space, spaces.MultiBinary):
        return np.dtype(np.uint8)
    if isinstance(space, spaces.Dict):
        return np.dtype(np.float64)
    return np.dtype(space.dtype)


def _row(batch: Any, k: int) -> Any:
    if isinstance(batch, dict):
        return {name: value[k] for name, value in batch.items()}
    return batch[k]


def _vector_info(info: Any) -> dict[str, Any]:
    """A vector info map: each key an array over the sub-envs, `_key` its mask."""
    return {key: wire.to_numpy(value.tensor) if value.HasField("tensor") else wire.info_from_wire({key: value})[key]
            for key, value in info.items()}


def make_vec(
    task_id: str,
    num_envs: int,
    endpoint: Optional[str] = None,
    *,
    autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
    timeout: Optional[float] = None,
) -> AleVectorEnv:
    """`num_envs` practice envs of `task_id` as one vector env (one handle, one RPC a step)."""
    return AleVectorEnv(task_id, num_envs, endpoint, autoreset_mode=autoreset_mode, timeout=timeout)
