"""Gymnasium registration: `gymnasium.make("ale/<task id>", endpoint=...)`.

Importing `ale_client` registers the tasks every evaluator hosts (`BUILTIN_TASKS`), each as
`ale/<task id>`. An evaluator with tasks of its own (`ale serve --tasks-dir`) registers them
with `ale_client.register_tasks(endpoint)`, which asks it for its task list.

    import gymnasium, ale_client
    env = gymnasium.make("ale/cartpole-balance", endpoint="http://127.0.0.1:50051")

Episodes are truncated by the evaluator at the task's `max_steps_per_episode`, so no
`TimeLimit` wrapper is added.
"""

from __future__ import annotations

from typing import Any, Optional

import gymnasium

from .env import AleEnv, list_tasks
from .vector import AleVectorEnv

NAMESPACE = "ale"

#: The tasks built into every evaluator (server/tasks/*.toml); a test checks this list against
#: a running evaluator's.
BUILTIN_TASKS = (
    "acrobot-swingup",
    "ant-walk",
    "cartpole-balance",
    "go1-joystick",
    "halfcheetah-run",
    "hopper-hop",
    "humanoid-standup",
    "humanoid-walk",
    "inverted-double-pendulum",
    "inverted-pendulum",
    "mountaincar",
    "mountaincar-continuous",
    "mountaincar-sarsa-reproduction",
    "nav2d-barn",
    "pendulum-swingup",
    "pusher-push",
    "reacher-mujoco",
    "reacher-reach",
    "swarm-goals",
    "swimmer-swim",
    "walker2d-walk",
)


def make_registered(task_id: str, endpoint: Optional[str] = None, **kwargs: Any) -> AleEnv:
    """The entry point Gymnasium calls for `ale/<task id>`."""
    return AleEnv.create(task_id, endpoint, **kwargs)


def make_registered_vec(task_id: str, num_envs: int, endpoint: Optional[str] = None, **kwargs: Any) -> AleVectorEnv:
    """The vector entry point: `gymnasium.make_vec("ale/<task id>", num_envs, vectorization_mode="vector_entry_point")`."""
    return AleVectorEnv(task_id, num_envs, endpoint, **kwargs)


def gym_id(task_id: str) -> str:
    return f"{NAMESPACE}/{task_id}"


def register_task(task_id: str) -> str:
    """Registers `ale/<task_id>` (again registering an id is a no-op); returns the id."""
    env_id = gym_id(task_id)
    if env_id not in gymnasium.registry:
        gymnasium.register(
            id=env_id,
            entry_point="ale_client.registration:make_registered",
            vector_entry_point="ale_client.registration:make_registered_vec",
            kwargs={"task_id": task_id},
            disable_env_checker=False,
        )
    return env_id


def register_tasks(endpoint: Optional[str] = None) -> list[str]:
    """Registers every task the evaluator at `endpoint` hosts; returns their Gymnasium ids."""
    return [register_task(task.id) for task in list_tasks(endpoint)]


for _task in BUILTIN_TASKS:
    register_task(_task)
