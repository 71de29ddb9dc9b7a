"""ALE evaluator client for Python: practice and official envs as Gymnasium envs.

    import ale_client
    env = ale_client.make("cartpole-balance", endpoint="http://127.0.0.1:50051")
    obs, info = env.reset(seed=0)

Under `ale harness run`, `ale_client.from_env()` attaches to the official env the harness
created (`ALE_ENDPOINT`, `ALE_ENV_HANDLE`). Importing the package also registers every
built-in task with Gymnasium as `ale/<task id>`.
"""

from .channel import DEFAULT_ENDPOINT, Connection
from .env import AleEnv, BatchRun, from_env, list_tasks, make
from .errors import (
    AleError,
    Closed,
    DeadlineExceeded,
    FailedPrecondition,
    InvalidArgument,
    MissingEnvVar,
    NotFound,
    PermissionDenied,
    ResourceExhausted,
    RpcError,
    SimFault,
    Unavailable,
    WireError,
)
from .harness import HarnessChannel, OfficialEnv
from .local import LocalEvaluator
from .policy_file import save_mlp, save_tensors
from .registration import BUILTIN_TASKS, register_tasks
from .types import BatchStatus, EpisodeOutcome, EvalResult, EvalSession, Metric, SubmissionContract, Task
from .vector import AleVectorEnv, make_vec

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ENDPOINT",
    "AleEnv",
    "AleError",
    "AleVectorEnv",
    "BUILTIN_TASKS",
    "BatchRun",
    "BatchStatus",
    "Closed",
    "Connection",
    "DeadlineExceeded",
    "EpisodeOutcome",
    "EvalResult",
    "EvalSession",
    "FailedPrecondition",
    "HarnessChannel",
    "InvalidArgument",
    "LocalEvaluator",
    "Metric",
    "MissingEnvVar",
    "NotFound",
    "OfficialEnv",
    "PermissionDenied",
    "ResourceExhausted",
    "SimFault",
    "RpcError",
    "SubmissionContract",
    "Task",
    "Unavailable",
    "WireError",
    "from_env",
    "list_tasks",
    "make",
    "make_vec",
    "register_tasks",
    "save_mlp",
    "save_tensors",
]
