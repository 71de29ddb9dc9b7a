"""Small Gymnasium envs for tests/test_sim_host.py, registered on import.

The sim host imports this module (`--module hosted_envs`, with tests/ on PYTHONPATH) to serve
them. Each env's observation echoes the action it was given, and each checks that the action
arrived as Gymnasium would hand it over (types and dtypes), raising otherwise.
"""

from __future__ import annotations

from collections import OrderedDict

import gymnasium
import numpy as np
from gymnasium import spaces


class DictEnv(gymnasium.Env):
    """Dict observations and actions; info counts steps ("cost") and hits."""

    observation_space = spaces.Dict(
        OrderedDict(
            pos=spaces.Box(-1.0, 1.0, (2,), np.float32),
            count=spaces.Discrete(5, start=-1),
            flags=spaces.MultiBinary(3),
            level=spaces.MultiDiscrete([4, 6]),
        )
    )
    action_space = spaces.Dict(
        OrderedDict(move=spaces.Box(-1.0, 1.0, (2,), np.float32), pick=spaces.Discrete(3))
    )

    def __init__(self) -> None:
        self.t = 0

    def _obs(self, move: np.ndarray, pick: int) -> OrderedDict:
        # Keys in another order than the space's: the host lays them out in the space's.
        return OrderedDict(
            level=np.array([self.t % 4, pick], dtype=np.int64),
            flags=np.array([pick % 2, 1, 0], dtype=np.int8),
            count=np.int64(pick - 1),
            pos=move.astype(np.float32),
        )

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        start = self.np_random.uniform(-1, 1, size=2).astype(np.float32)
        return self._obs(start, 0), {"hits": 0, "cost": 0.0}

    def step(self, action):
        assert isinstance(action, dict), type(action)
        move, pick = action["move"], action["pick"]
        assert isinstance(move, np.ndarray) and move.dtype == np.float32 and move.shape == (2,), move
        assert isinstance(pick, (int, np.integer)), type(pick)
        self.t += 1
        info = {"hits": np.float32(pick == 2), "cost": float(self.t)}
        return self._obs(move, int(pick)), float(move.sum()) + int(pick), False, self.t >= 6, info


class MultiEnv(gymnasium.Env):
    """MultiDiscrete observations (with starts), MultiBinary actions."""

    observation_space = spaces.MultiDiscrete([3, 4, 5], start=[1, -1, 0])
    action_space = spaces.MultiBinary(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.integers(0, [3, 4, 5]) + np.array([1, -1, 0]), {}

    def step(self, action):
        assert isinstance(action, np.ndarray) and action.dtype == np.int8 and action.shape == (3,), action
        obs = np.array([1 + action[0], -1 + 2 * action[1], 4 * action[2]], dtype=np.int64)
        return obs, float(action.sum()), bool(action.all()), False, {}


class IntBoxEnv(gymnasium.Env):
    """int32 Box observations of a shape set by `size`, int64 Box actions, uint8 frames."""

    def __init__(self, size: int = 2) -> None:
        self.size = size
        self.observation_space = spaces.Box(-100, 100, (size, size), np.int32)
        self.action_space = spaces.Box(np.array([-5, 0]), np.array([5, 2**40]), (2,), np.int64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.integers(-100, 101, size=(self.size, self.size)).astype(np.int32), {}

    def step(self, action):
        assert isinstance(action, np.ndarray) and action.dtype == np.int64 and action.shape == (2,), action
        obs = np.full((self.size, self.size), int(action[0]), dtype=np.int32)
        obs[0, 0] = -100
        return obs, float(action[1]), False, False, {}


class FrameEnv(gymnasium.Env):
    """uint8 image observations, float64 Box actions."""

    observation_space = spaces.Box(0, 255, (3, 4, 2), np.uint8)
    action_space = spaces.Box(-np.inf, np.inf, (1,), np.float64)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return self.np_random.integers(0, 256, size=(3, 4, 2), dtype=np.uint8), {}

    def step(self, action):
        assert isinstance(action, np.ndarray) and action.dtype == np.float64 and action.shape == (1,), action
        frame = np.full((3, 4, 2), int(abs(action[0])) % 256, dtype=np.uint8)
        return frame, float(action[0]), False, False, {}


class TupleEnv(gymnasium.Env):
    """A Tuple observation space, which the wire cannot carry."""

    observation_space = spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 1, (1,))))
    action_space = spaces.Discrete(2)

    def reset(self, *, seed=None, options=None):
        return self.observation_space.sample(), {}

    def step(self, action):
        return self.observation_space.sample(), 0.0, False, False, {}


class Float16Env(TupleEnv):
    """A float16 Box action space, which the wire cannot carry."""

    observation_space = spaces.Discrete(2)
    action_space = spaces.Box(0, 1, (2,), np.float16)


class NoisyEnv(gymnasium.Env):
    """Prints to stdout (as env code may) and raises ValueError when action 2 is taken."""

    observation_space = spaces.Box(-np.inf, np.inf, (1,), np.float64)
    action_space = spaces.Discrete(3)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        print("NoisyEnv: reset, printing to stdout")
        self.t = 0
        return np.zeros(1), {}

    def step(self, action):
        print("NoisyEnv: step", action, flush=True)
        if action == 2:
            raise ValueError(f"boom at step {self.t}")
        self.t += 1
        return np.array([float(self.t)]), 1.0, False, False, {}


class SpyEnv(gymnasium.Env):
    """Task code that tries to read the evaluator's state dir and to reach the network, and
    reports what it managed in its info (read by the host as counters `saw_state_dir`,
    `reached_network`)."""

    observation_space = spaces.Box(-1, 1, (1,), np.float32)
    action_space = spaces.Discrete(2)

    def __init__(self, state_dir: str = "/nonexistent", port: int = 1) -> None:
        self.state_dir, self.port = state_dir, port

    def _look(self) -> dict:
        import os
        import socket

        saw = 0.0
        try:
            saw = float(len(os.listdir(self.state_dir)) > 0)
        except OSError:
            pass
        for name in ("evaluator.key", "evaluator.secret"):
            try:
                with open(os.path.join(self.state_dir, name), "rb") as f:
                    saw = float(len(f.read()) > 0) or saw
            except OSError:
                pass
        reached = 0.0
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                reached = 1.0
        except OSError:
            pass
        return {"saw_state_dir": saw, "reached_network": reached}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), self._look()

    def step(self, action):
        return np.zeros(1, np.float32), 0.0, True, False, self._look()


for name, entry, steps in [
    ("HostTest/Spy-v0", SpyEnv, 10),
    ("HostTest/Dict-v0", DictEnv, None),
    ("HostTest/Multi-v0", MultiEnv, 20),
    ("HostTest/IntBox-v0", IntBoxEnv, None),
    ("HostTest/Frame-v0", FrameEnv, None),
    ("HostTest/Tuple-v0", TupleEnv, None),
    ("HostTest/Float16-v0", Float16Env, None),
    ("HostTest/Noisy-v0", NoisyEnv, None),
]:
    if name not in gymnasium.registry:
        gymnasium.register(name, entry_point=entry, max_episode_steps=steps)
