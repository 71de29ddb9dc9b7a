from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AutoresetMode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    AUTORESET_MODE_UNSPECIFIED: _ClassVar[AutoresetMode]
    AUTORESET_MODE_NEXT_STEP: _ClassVar[AutoresetMode]
    AUTORESET_MODE_SAME_STEP: _ClassVar[AutoresetMode]
    AUTORESET_MODE_DISABLED: _ClassVar[AutoresetMode]

class BatchState(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    BATCH_STATE_UNSPECIFIED: _ClassVar[BatchState]
    BATCH_STATE_QUEUED: _ClassVar[BatchState]
    BATCH_STATE_RUNNING: _ClassVar[BatchState]
    BATCH_STATE_SUCCEEDED: _ClassVar[BatchState]
    BATCH_STATE_FAILED: _ClassVar[BatchState]
AUTORESET_MODE_UNSPECIFIED: AutoresetMode
AUTORESET_MODE_NEXT_STEP: AutoresetMode
AUTORESET_MODE_SAME_STEP: AutoresetMode
AUTORESET_MODE_DISABLED: AutoresetMode
BATCH_STATE_UNSPECIFIED: BatchState
BATCH_STATE_QUEUED: BatchState
BATCH_STATE_RUNNING: BatchState
BATCH_STATE_SUCCEEDED: BatchState
BATCH_STATE_FAILED: BatchState

class CreateEnvRequest(_message.Message):
    __slots__ = ("task_id", "official", "num_envs", "autoreset_mode", "vector", "seed_set")
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    OFFICIAL_FIELD_NUMBER: _ClassVar[int]
    NUM_ENVS_FIELD_NUMBER: _ClassVar[int]
    AUTORESET_MODE_FIELD_NUMBER: _ClassVar[int]
    VECTOR_FIELD_NUMBER: _ClassVar[int]
    SEED_SET_FIELD_NUMBER: _ClassVar[int]
    task_id: str
    official: bool
    num_envs: int
    autoreset_mode: AutoresetMode
    vector: bool
    seed_set: str
    def __init__(self, task_id: _Optional[str] = ..., official: _Optional[bool] = ..., num_envs: _Optional[int] = ..., autoreset_mode: _Optional[_Union[AutoresetMode, str]] = ..., vector: _Optional[bool] = ..., seed_set: _Optional[str] = ...) -> None: ...

class CreateEnvResponse(_message.Message):
    __slots__ = ("handle", "official", "task_id", "session_id", "run_id", "num_envs", "autoreset_mode")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    OFFICIAL_FIELD_NUMBER: _ClassVar[int]
    TASK_ID_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_ENVS_FIELD_NUMBER: _ClassVar[int]
    AUTORESET_MODE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    official: bool
    task_id: str
    session_id: str
    run_id: str
    num_envs: int
    autoreset_mode: AutoresetMode
    def __init__(self, handle: _Optional[str] = ..., official: _Optional[bool] = ..., task_id: _Optional[str] = ..., session_id: _Optional[str] = ..., run_id: _Optional[str] = ..., num_envs: _Optional[int] = ..., autoreset_mode: _Optional[_Union[AutoresetMode, str]] = ...) -> None: ...

class GetSpecRequest(_message.Message):
    __slots__ = ("handle",)
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    def __init__(self, handle: _Optional[str] = ...) -> None: ...

class GetSpecResponse(_message.Message):
    __slots__ = ("observation_space", "action_space", "task", "official", "num_envs", "autoreset_mode")
    OBSERVATION_SPACE_FIELD_NUMBER: _ClassVar[int]
    ACTION_SPACE_FIELD_NUMBER: _ClassVar[int]
    TASK_FIELD_NUMBER: _ClassVar[int]
    OFFICIAL_FIELD_NUMBER: _ClassVar[int]
    NUM_ENVS_FIELD_NUMBER: _ClassVar[int]
    AUTORESET_MODE_FIELD_NUMBER: _ClassVar[int]
    observation_space: _types_pb2.Space
    action_space: _types_pb2.Space
    task: _types_pb2.TaskMetadata
    official: bool
    num_envs: int
    autoreset_mode: AutoresetMode
    def __init__(self, observation_space: _Optional[_Union[_types_pb2.Space, _Mapping]] = ..., action_space: _Optional[_Union[_types_pb2.Space, _Mapping]] = ..., task: _Optional[_Union[_types_pb2.TaskMetadata, _Mapping]] = ..., official: _Optional[bool] = ..., num_envs: _Optional[int] = ..., autoreset_mode: _Optional[_Union[AutoresetMode, str]] = ...) -> None: ...

class ResetRequest(_message.Message):
    __slots__ = ("handle", "seed", "seeds", "reset_mask")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SEEDS_FIELD_NUMBER: _ClassVar[int]
    RESET_MASK_FIELD_NUMBER: _ClassVar[int]
    handle: str
    seed: int
    seeds: _containers.RepeatedScalarFieldContainer[int]
    reset_mask: _containers.RepeatedScalarFieldContainer[bool]
    def __init__(self, handle: _Optional[str] = ..., seed: _Optional[int] = ..., seeds: _Optional[_Iterable[int]] = ..., reset_mask: _Optional[_Iterable[bool]] = ...) -> None: ...

class ResetResponse(_message.Message):
    __slots__ = ("observation", "info")
    class InfoEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _types_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.Value, _Mapping]] = ...) -> None: ...
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    observation: _types_pb2.Tensor
    info: _containers.MessageMap[str, _types_pb2.Value]
    def __init__(self, observation: _Optional[_Union[_types_pb2.Tensor, _Mapping]] = ..., info: _Optional[_Mapping[str, _types_pb2.Value]] = ...) -> None: ...

class StepRequest(_message.Message):
    __slots__ = ("handle", "action")
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    ACTION_FIELD_NUMBER: _ClassVar[int]
    handle: str
    action: _types_pb2.Tensor
    def __init__(self, handle: _Optional[str] = ..., action: _Optional[_Union[_types_pb2.Tensor, _Mapping]] = ...) -> None: ...

class StepResponse(_message.Message):
    __slots__ = ("observation", "reward", "terminated", "truncated", "info", "rewards", "terminations", "truncations", "final_index", "final_observation", "final_info")
    class InfoEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _types_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.Value, _Mapping]] = ...) -> None: ...
    class FinalInfoEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _types_pb2.Value
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_types_pb2.Value, _Mapping]] = ...) -> None: ...
    OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    REWARD_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    REWARDS_FIELD_NUMBER: _ClassVar[int]
    TERMINATIONS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATIONS_FIELD_NUMBER: _ClassVar[int]
    FINAL_INDEX_FIELD_NUMBER: _ClassVar[int]
    FINAL_OBSERVATION_FIELD_NUMBER: _ClassVar[int]
    FINAL_INFO_FIELD_NUMBER: _ClassVar[int]
    observation: _types_pb2.Tensor
    reward: float
    terminated: bool
    truncated: bool
    info: _containers.MessageMap[str, _types_pb2.Value]
    rewards: _types_pb2.Tensor
    terminations: _types_pb2.Tensor
    truncations: _types_pb2.Tensor
    final_index: _containers.RepeatedScalarFieldContainer[int]
    final_observation: _types_pb2.Tensor
    final_info: _containers.MessageMap[str, _types_pb2.Value]
    def __init__(self, observation: _Optional[_Union[_types_pb2.Tensor, _Mapping]] = ..., reward: _Optional[float] = ..., terminated: _Optional[bool] = ..., truncated: _Optional[bool] = ..., info: _Optional[_Mapping[str, _types_pb2.Value]] = ..., rewards: _Optional[_Union[_types_pb2.Tensor, _Mapping]] = ..., terminations: _Optional[_Union[_types_pb2.Tensor, _Mapping]] = ..., truncations: _Optional[_Union[_types_pb2.Tensor, _Mapping]] = ..., final_index: _Optional[_Iterable[int]] = ..., final_observation: _Optional[_Union[_types_pb2.Tensor, _Mapping]] = ..., final_info: _Optional[_Mapping[str, _types_pb2.Value]] = ...) -> None: ...

class StartEvalSessionRequest(_message.Message):
    __slots__ = ("handle",)
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    def __init__(self, handle: _Optional[str] = ...) -> None: ...

class StartEvalSessionResponse(_message.Message):
    __slots__ = ("session_id", "episodes")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    EPISODES_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    episodes: int
    def __init__(self, session_id: _Optional[str] = ..., episodes: _Optional[int] = ...) -> None: ...

class GetEvalResultRequest(_message.Message):
    __slots__ = ("session_id", "end_session")
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    END_SESSION_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    end_session: bool
    def __init__(self, session_id: _Optional[str] = ..., end_session: _Optional[bool] = ...) -> None: ...

class GetEvalResultResponse(_message.Message):
    __slots__ = ("result",)
    RESULT_FIELD_NUMBER: _ClassVar[int]
    result: _types_pb2.EvalResult
    def __init__(self, result: _Optional[_Union[_types_pb2.EvalResult, _Mapping]] = ...) -> None: ...

class SubmitBatchEvalRequest(_message.Message):
    __slots__ = ("handle",)
    HANDLE_FIELD_NUMBER: _ClassVar[int]
    handle: str
    def __init__(self, handle: _Optional[str] = ...) -> None: ...

class SubmitBatchEvalResponse(_message.Message):
    __slots__ = ("batch_id",)
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class GetBatchEvalStatusRequest(_message.Message):
    __slots__ = ("batch_id",)
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    batch_id: str
    def __init__(self, batch_id: _Optional[str] = ...) -> None: ...

class GetBatchEvalStatusResponse(_message.Message):
    __slots__ = ("state", "progress", "message", "result")
    STATE_FIELD_NUMBER: _ClassVar[int]
    PROGRESS_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    state: BatchState
    progress: float
    message: str
    result: _types_pb2.EvalResult
    def __init__(self, state: _Optional[_Union[BatchState, str]] = ..., progress: _Optional[float] = ..., message: _Optional[str] = ..., result: _Optional[_Union[_types_pb2.EvalResult, _Mapping]] = ...) -> None: ...
