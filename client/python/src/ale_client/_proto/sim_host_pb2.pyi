from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ProtocolVersion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PROTOCOL_VERSION_UNSPECIFIED: _ClassVar[ProtocolVersion]
    PROTOCOL_VERSION_1: _ClassVar[ProtocolVersion]
PROTOCOL_VERSION_UNSPECIFIED: ProtocolVersion
PROTOCOL_VERSION_1: ProtocolVersion

class Request(_message.Message):
    __slots__ = ("hello", "open", "reset", "step", "close")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    OPEN_FIELD_NUMBER: _ClassVar[int]
    RESET_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    CLOSE_FIELD_NUMBER: _ClassVar[int]
    hello: Hello
    open: Open
    reset: Reset
    step: Step
    close: Close
    def __init__(self, hello: _Optional[_Union[Hello, _Mapping]] = ..., open: _Optional[_Union[Open, _Mapping]] = ..., reset: _Optional[_Union[Reset, _Mapping]] = ..., step: _Optional[_Union[Step, _Mapping]] = ..., close: _Optional[_Union[Close, _Mapping]] = ...) -> None: ...

class Reply(_message.Message):
    __slots__ = ("hello", "opened", "reset", "step", "closed", "failure")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    OPENED_FIELD_NUMBER: _ClassVar[int]
    RESET_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    CLOSED_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    hello: HelloReply
    opened: Opened
    reset: ResetReply
    step: StepReply
    closed: Closed
    failure: Failure
    def __init__(self, hello: _Optional[_Union[HelloReply, _Mapping]] = ..., opened: _Optional[_Union[Opened, _Mapping]] = ..., reset: _Optional[_Union[ResetReply, _Mapping]] = ..., step: _Optional[_Union[StepReply, _Mapping]] = ..., closed: _Optional[_Union[Closed, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("version",)
    VERSION_FIELD_NUMBER: _ClassVar[int]
    version: ProtocolVersion
    def __init__(self, version: _Optional[_Union[ProtocolVersion, str]] = ...) -> None: ...

class HelloReply(_message.Message):
    __slots__ = ("version", "host", "spec")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    version: ProtocolVersion
    host: str
    spec: Spec
    def __init__(self, version: _Optional[_Union[ProtocolVersion, str]] = ..., host: _Optional[str] = ..., spec: _Optional[_Union[Spec, _Mapping]] = ...) -> None: ...

class Spec(_message.Message):
    __slots__ = ("env_id", "observation_space", "action_space", "counters", "max_episode_steps")
    ENV_ID_FIELD_NUMBER: _ClassVar[int]
    OBSERVATION_SPACE_FIELD_NUMBER: _ClassVar[int]
    ACTION_SPACE_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    MAX_EPISODE_STEPS_FIELD_NUMBER: _ClassVar[int]
    env_id: str
    observation_space: _types_pb2.Space
    action_space: _types_pb2.Space
    counters: _containers.RepeatedScalarFieldContainer[str]
    max_episode_steps: int
    def __init__(self, env_id: _Optional[str] = ..., observation_space: _Optional[_Union[_types_pb2.Space, _Mapping]] = ..., action_space: _Optional[_Union[_types_pb2.Space, _Mapping]] = ..., counters: _Optional[_Iterable[str]] = ..., max_episode_steps: _Optional[int] = ...) -> None: ...

class Open(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class Opened(_message.Message):
    __slots__ = ("envs",)
    ENVS_FIELD_NUMBER: _ClassVar[int]
    envs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, envs: _Optional[_Iterable[int]] = ...) -> None: ...

class Reset(_message.Message):
    __slots__ = ("envs", "seeds")
    ENVS_FIELD_NUMBER: _ClassVar[int]
    SEEDS_FIELD_NUMBER: _ClassVar[int]
    envs: _containers.RepeatedScalarFieldContainer[int]
    seeds: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, envs: _Optional[_Iterable[int]] = ..., seeds: _Optional[_Iterable[int]] = ...) -> None: ...

class ResetReply(_message.Message):
    __slots__ = ("observations", "counters")
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    observations: _containers.RepeatedCompositeFieldContainer[_types_pb2.Tensor]
    counters: _containers.RepeatedCompositeFieldContainer[Counters]
    def __init__(self, observations: _Optional[_Iterable[_Union[_types_pb2.Tensor, _Mapping]]] = ..., counters: _Optional[_Iterable[_Union[Counters, _Mapping]]] = ...) -> None: ...

class Step(_message.Message):
    __slots__ = ("envs", "actions")
    ENVS_FIELD_NUMBER: _ClassVar[int]
    ACTIONS_FIELD_NUMBER: _ClassVar[int]
    envs: _containers.RepeatedScalarFieldContainer[int]
    actions: _containers.RepeatedCompositeFieldContainer[_types_pb2.Tensor]
    def __init__(self, envs: _Optional[_Iterable[int]] = ..., actions: _Optional[_Iterable[_Union[_types_pb2.Tensor, _Mapping]]] = ...) -> None: ...

class StepReply(_message.Message):
    __slots__ = ("observations", "rewards", "terminated", "truncated", "counters")
    OBSERVATIONS_FIELD_NUMBER: _ClassVar[int]
    REWARDS_FIELD_NUMBER: _ClassVar[int]
    TERMINATED_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    observations: _containers.RepeatedCompositeFieldContainer[_types_pb2.Tensor]
    rewards: _containers.RepeatedScalarFieldContainer[float]
    terminated: _containers.RepeatedScalarFieldContainer[bool]
    truncated: _containers.RepeatedScalarFieldContainer[bool]
    counters: _containers.RepeatedCompositeFieldContainer[Counters]
    def __init__(self, observations: _Optional[_Iterable[_Union[_types_pb2.Tensor, _Mapping]]] = ..., rewards: _Optional[_Iterable[float]] = ..., terminated: _Optional[_Iterable[bool]] = ..., truncated: _Optional[_Iterable[bool]] = ..., counters: _Optional[_Iterable[_Union[Counters, _Mapping]]] = ...) -> None: ...

class Counters(_message.Message):
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ...) -> None: ...

class Close(_message.Message):
    __slots__ = ("envs",)
    ENVS_FIELD_NUMBER: _ClassVar[int]
    envs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, envs: _Optional[_Iterable[int]] = ...) -> None: ...

class Closed(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Failure(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: str
    def __init__(self, message: _Optional[str] = ...) -> None: ...
