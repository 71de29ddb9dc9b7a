from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class DType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DTYPE_UNSPECIFIED: _ClassVar[DType]
    DTYPE_FLOAT32: _ClassVar[DType]
    DTYPE_FLOAT64: _ClassVar[DType]
    DTYPE_INT64: _ClassVar[DType]
    DTYPE_INT32: _ClassVar[DType]
    DTYPE_UINT8: _ClassVar[DType]
    DTYPE_BOOL: _ClassVar[DType]

class TaskMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_MODE_UNSPECIFIED: _ClassVar[TaskMode]
    TASK_MODE_INTERACTIVE: _ClassVar[TaskMode]
    TASK_MODE_BATCH: _ClassVar[TaskMode]

class TaskGenre(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_GENRE_UNSPECIFIED: _ClassVar[TaskGenre]
    TASK_GENRE_OPEN: _ClassVar[TaskGenre]
    TASK_GENRE_REPRODUCTION: _ClassVar[TaskGenre]

class Direction(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DIRECTION_UNSPECIFIED: _ClassVar[Direction]
    DIRECTION_HIGHER_IS_BETTER: _ClassVar[Direction]
    DIRECTION_LOWER_IS_BETTER: _ClassVar[Direction]

class EvalStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    EVAL_STATUS_UNSPECIFIED: _ClassVar[EvalStatus]
    EVAL_STATUS_RUNNING: _ClassVar[EvalStatus]
    EVAL_STATUS_COMPLETED: _ClassVar[EvalStatus]
    EVAL_STATUS_BUDGET_EXCEEDED: _ClassVar[EvalStatus]
    EVAL_STATUS_ENDED_EARLY: _ClassVar[EvalStatus]
    EVAL_STATUS_EVALUATOR_ENDED: _ClassVar[EvalStatus]

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    OUTCOME_UNSPECIFIED: _ClassVar[Outcome]
    OUTCOME_COMPLETED: _ClassVar[Outcome]
    OUTCOME_ABORTED: _ClassVar[Outcome]
    OUTCOME_BUDGET_EXCEEDED: _ClassVar[Outcome]
    OUTCOME_NOT_RUN: _ClassVar[Outcome]
    OUTCOME_IN_PROGRESS: _ClassVar[Outcome]
    OUTCOME_SIM_FAULT: _ClassVar[Outcome]
DTYPE_UNSPECIFIED: DType
DTYPE_FLOAT32: DType
DTYPE_FLOAT64: DType
DTYPE_INT64: DType
DTYPE_INT32: DType
DTYPE_UINT8: DType
DTYPE_BOOL: DType
TASK_MODE_UNSPECIFIED: TaskMode
TASK_MODE_INTERACTIVE: TaskMode
TASK_MODE_BATCH: TaskMode
TASK_GENRE_UNSPECIFIED: TaskGenre
TASK_GENRE_OPEN: TaskGenre
TASK_GENRE_REPRODUCTION: TaskGenre
DIRECTION_UNSPECIFIED: Direction
DIRECTION_HIGHER_IS_BETTER: Direction
DIRECTION_LOWER_IS_BETTER: Direction
EVAL_STATUS_UNSPECIFIED: EvalStatus
EVAL_STATUS_RUNNING: EvalStatus
EVAL_STATUS_COMPLETED: EvalStatus
EVAL_STATUS_BUDGET_EXCEEDED: EvalStatus
EVAL_STATUS_ENDED_EARLY: EvalStatus
EVAL_STATUS_EVALUATOR_ENDED: EvalStatus
OUTCOME_UNSPECIFIED: Outcome
OUTCOME_COMPLETED: Outcome
OUTCOME_ABORTED: Outcome
OUTCOME_BUDGET_EXCEEDED: Outcome
OUTCOME_NOT_RUN: Outcome
OUTCOME_IN_PROGRESS: Outcome
OUTCOME_SIM_FAULT: Outcome

class Tensor(_message.Message):
    __slots__ = ("dtype", "shape", "f32", "f64", "i64", "i32", "u8", "bool", "raw")
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    F32_FIELD_NUMBER: _ClassVar[int]
    F64_FIELD_NUMBER: _ClassVar[int]
    I64_FIELD_NUMBER: _ClassVar[int]
    I32_FIELD_NUMBER: _ClassVar[int]
    U8_FIELD_NUMBER: _ClassVar[int]
    BOOL_FIELD_NUMBER: _ClassVar[int]
    RAW_FIELD_NUMBER: _ClassVar[int]
    dtype: DType
    shape: _containers.RepeatedScalarFieldContainer[int]
    f32: _containers.RepeatedScalarFieldContainer[float]
    f64: _containers.RepeatedScalarFieldContainer[float]
    i64: _containers.RepeatedScalarFieldContainer[int]
    i32: _containers.RepeatedScalarFieldContainer[int]
    u8: bytes
    bool: _containers.RepeatedScalarFieldContainer[bool]
    raw: bytes
    def __init__(self, dtype: _Optional[_Union[DType, str]] = ..., shape: _Optional[_Iterable[int]] = ..., f32: _Optional[_Iterable[float]] = ..., f64: _Optional[_Iterable[float]] = ..., i64: _Optional[_Iterable[int]] = ..., i32: _Optional[_Iterable[int]] = ..., u8: _Optional[bytes] = ..., bool: _Optional[_Iterable[bool]] = ..., raw: _Optional[bytes] = ...) -> None: ...

class Value(_message.Message):
    __slots__ = ("number", "integer", "flag", "text", "tensor")
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    INTEGER_FIELD_NUMBER: _ClassVar[int]
    FLAG_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    TENSOR_FIELD_NUMBER: _ClassVar[int]
    number: float
    integer: int
    flag: bool
    text: str
    tensor: Tensor
    def __init__(self, number: _Optional[float] = ..., integer: _Optional[int] = ..., flag: _Optional[bool] = ..., text: _Optional[str] = ..., tensor: _Optional[_Union[Tensor, _Mapping]] = ...) -> None: ...

class Space(_message.Message):
    __slots__ = ("box", "discrete", "multi_discrete", "multi_binary", "dict")
    BOX_FIELD_NUMBER: _ClassVar[int]
    DISCRETE_FIELD_NUMBER: _ClassVar[int]
    MULTI_DISCRETE_FIELD_NUMBER: _ClassVar[int]
    MULTI_BINARY_FIELD_NUMBER: _ClassVar[int]
    DICT_FIELD_NUMBER: _ClassVar[int]
    box: BoxSpace
    discrete: DiscreteSpace
    multi_discrete: MultiDiscreteSpace
    multi_binary: MultiBinarySpace
    dict: DictSpace
    def __init__(self, box: _Optional[_Union[BoxSpace, _Mapping]] = ..., discrete: _Optional[_Union[DiscreteSpace, _Mapping]] = ..., multi_discrete: _Optional[_Union[MultiDiscreteSpace, _Mapping]] = ..., multi_binary: _Optional[_Union[MultiBinarySpace, _Mapping]] = ..., dict: _Optional[_Union[DictSpace, _Mapping]] = ...) -> None: ...

class BoxSpace(_message.Message):
    __slots__ = ("shape", "dtype", "low", "high", "labels")
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    DTYPE_FIELD_NUMBER: _ClassVar[int]
    LOW_FIELD_NUMBER: _ClassVar[int]
    HIGH_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    shape: _containers.RepeatedScalarFieldContainer[int]
    dtype: DType
    low: _containers.RepeatedScalarFieldContainer[float]
    high: _containers.RepeatedScalarFieldContainer[float]
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, shape: _Optional[_Iterable[int]] = ..., dtype: _Optional[_Union[DType, str]] = ..., low: _Optional[_Iterable[float]] = ..., high: _Optional[_Iterable[float]] = ..., labels: _Optional[_Iterable[str]] = ...) -> None: ...

class DiscreteSpace(_message.Message):
    __slots__ = ("n", "start", "labels")
    N_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    n: int
    start: int
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, n: _Optional[int] = ..., start: _Optional[int] = ..., labels: _Optional[_Iterable[str]] = ...) -> None: ...

class MultiDiscreteSpace(_message.Message):
    __slots__ = ("nvec", "start")
    NVEC_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    nvec: _containers.RepeatedScalarFieldContainer[int]
    start: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, nvec: _Optional[_Iterable[int]] = ..., start: _Optional[_Iterable[int]] = ...) -> None: ...

class MultiBinarySpace(_message.Message):
    __slots__ = ("shape",)
    SHAPE_FIELD_NUMBER: _ClassVar[int]
    shape: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, shape: _Optional[_Iterable[int]] = ...) -> None: ...

class DictSpace(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[NamedSpace]
    def __init__(self, entries: _Optional[_Iterable[_Union[NamedSpace, _Mapping]]] = ...) -> None: ...

class NamedSpace(_message.Message):
    __slots__ = ("name", "space")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SPACE_FIELD_NUMBER: _ClassVar[int]
    name: str
    space: Space
    def __init__(self, name: _Optional[str] = ..., space: _Optional[_Union[Space, _Mapping]] = ...) -> None: ...

class Metric(_message.Message):
    __slots__ = ("name", "direction", "target", "cap", "failure_value", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    CAP_FIELD_NUMBER: _ClassVar[int]
    FAILURE_VALUE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    direction: Direction
    target: float
    cap: float
    failure_value: float
    description: str
    def __init__(self, name: _Optional[str] = ..., direction: _Optional[_Union[Direction, str]] = ..., target: _Optional[float] = ..., cap: _Optional[float] = ..., failure_value: _Optional[float] = ..., description: _Optional[str] = ...) -> None: ...

class SafetyMetric(_message.Message):
    __slots__ = ("name", "penalty_factor", "description")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PENALTY_FACTOR_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    name: str
    penalty_factor: float
    description: str
    def __init__(self, name: _Optional[str] = ..., penalty_factor: _Optional[float] = ..., description: _Optional[str] = ...) -> None: ...

class Budgets(_message.Message):
    __slots__ = ("max_total_steps", "time_budget_seconds")
    MAX_TOTAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    TIME_BUDGET_SECONDS_FIELD_NUMBER: _ClassVar[int]
    max_total_steps: int
    time_budget_seconds: int
    def __init__(self, max_total_steps: _Optional[int] = ..., time_budget_seconds: _Optional[int] = ...) -> None: ...

class SubmissionContract(_message.Message):
    __slots__ = ("submission_path", "entrypoint", "format", "notes")
    SUBMISSION_PATH_FIELD_NUMBER: _ClassVar[int]
    ENTRYPOINT_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    NOTES_FIELD_NUMBER: _ClassVar[int]
    submission_path: str
    entrypoint: str
    format: str
    notes: str
    def __init__(self, submission_path: _Optional[str] = ..., entrypoint: _Optional[str] = ..., format: _Optional[str] = ..., notes: _Optional[str] = ...) -> None: ...

class TaskMetadata(_message.Message):
    __slots__ = ("id", "title", "description", "sim", "mode", "genre", "metric", "episodes_per_eval", "max_steps_per_episode", "budgets", "safety_metrics", "submission_contract", "observation_space", "action_space", "seed_sets")
    ID_FIELD_NUMBER: _ClassVar[int]
    TITLE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SIM_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    GENRE_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    EPISODES_PER_EVAL_FIELD_NUMBER: _ClassVar[int]
    MAX_STEPS_PER_EPISODE_FIELD_NUMBER: _ClassVar[int]
    BUDGETS_FIELD_NUMBER: _ClassVar[int]
    SAFETY_METRICS_FIELD_NUMBER: _ClassVar[int]
    SUBMISSION_CONTRACT_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_SPACE_FIELD_NUMBER: _ClassVar[int]
    ACTION_SPACE_FIELD_NUMBER: _ClassVar[int]
    SEED_SETS_FIELD_NUMBER: _ClassVar[int]
    id: str
    title: str
    description: str
    sim: str
    mode: TaskMode
    genre: TaskGenre
    metric: Metric
    episodes_per_eval: int
    max_steps_per_episode: int
    budgets: Budgets
    safety_metrics: _containers.RepeatedCompositeFieldContainer[SafetyMetric]
    submission_contract: SubmissionContract
    observation_space: Space
    action_space: Space
    seed_sets: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., title: _Optional[str] = ..., description: _Optional[str] = ..., sim: _Optional[str] = ..., mode: _Optional[_Union[TaskMode, str]] = ..., genre: _Optional[_Union[TaskGenre, str]] = ..., metric: _Optional[_Union[Metric, _Mapping]] = ..., episodes_per_eval: _Optional[int] = ..., max_steps_per_episode: _Optional[int] = ..., budgets: _Optional[_Union[Budgets, _Mapping]] = ..., safety_metrics: _Optional[_Iterable[_Union[SafetyMetric, _Mapping]]] = ..., submission_contract: _Optional[_Union[SubmissionContract, _Mapping]] = ..., observation_space: _Optional[_Union[Space, _Mapping]] = ..., action_space: _Optional[_Union[Space, _Mapping]] = ..., seed_sets: _Optional[_Iterable[str]] = ...) -> None: ...

class EpisodeOutcome(_message.Message):
    __slots__ = ("index", "outcome", "metric", "steps", "episode_return", "seed_commitment", "safety")
    class SafetyEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    METRIC_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    EPISODE_RETURN_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENT_FIELD_NUMBER: _ClassVar[int]
    SAFETY_FIELD_NUMBER: _ClassVar[int]
    index: int
    outcome: Outcome
    metric: float
    steps: int
    episode_return: float
    seed_commitment: str
    safety: _containers.ScalarMap[str, float]
    def __init__(self, index: _Optional[int] = ..., outcome: _Optional[_Union[Outcome, str]] = ..., metric: _Optional[float] = ..., steps: _Optional[int] = ..., episode_return: _Optional[float] = ..., seed_commitment: _Optional[str] = ..., safety: _Optional[_Mapping[str, float]] = ...) -> None: ...

class EvalResult(_message.Message):
    __slots__ = ("session_id", "run_id", "task_id", "metric_name", "value", "direction", "status", "episodes", "seed_commitments", "trajectory_head", "total_steps", "safety", "status_message")
    class SafetyEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    METRIC_NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    DIRECTION_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    SEED_COMMITMENTS_FIELD_NUMBER: _ClassVar[int]
    TRAJECTORY_HEAD_FIELD_NUMBER: _ClassVar[int]
    TOTAL_STEPS_FIELD_NUMBER: _ClassVar[int]
    SAFETY_FIELD_NUMBER: _ClassVar[int]
    STATUS_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    run_id: str
    task_id: str
    metric_name: str
    value: float
    direction: Direction
    status: EvalStatus
    episodes: _containers.RepeatedCompositeFieldContainer[EpisodeOutcome]
    seed_commitments: _containers.RepeatedScalarFieldContainer[str]
    trajectory_head: str
    total_steps: int
    safety: _containers.ScalarMap[str, float]
    status_message: str
    def __init__(self, session_id: _Optional[str] = ..., run_id: _Optional[str] = ..., task_id: _Optional[str] = ..., metric_name: _Optional[str] = ..., value: _Optional[float] = ..., direction: _Optional[_Union[Direction, str]] = ..., status: _Optional[_Union[EvalStatus, str]] = ..., episodes: _Optional[_Iterable[_Union[EpisodeOutcome, _Mapping]]] = ..., seed_commitments: _Optional[_Iterable[str]] = ..., trajectory_head: _Optional[str] = ..., total_steps: _Optional[int] = ..., safety: _Optional[_Mapping[str, float]] = ..., status_message: _Optional[str] = ...) -> None: ...
