"""Plain Python forms of what the wire describes: tasks, eval results, batch runs.

Each is a frozen dataclass built from its protobuf message by a `from_wire` class method, with
enums as lowercase strings (`"interactive"`, `"higher_is_better"`, `"completed"`) and "no limit"
as `None` rather than 0, so agent code never touches generated classes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from gymnasium import spaces

from ._proto import ale_env_pb2, types_pb2 as pb
from .errors import WireError
from .wire import space_from_wire, space_labels


def _enum_name(enum: object, value: int, prefix: str, field_name: str) -> str:
    """`EVAL_STATUS_BUDGET_EXCEEDED` → `budget_exceeded`; unspecified or unknown is an error."""
    try:
        name = enum.Name(value)  # type: ignore[attr-defined]
    except ValueError:
        raise WireError(f"{field_name}: unknown value {value}") from None
    short = name[len(prefix) :].lower()
    if short == "unspecified":
        raise WireError(f"{field_name} is unspecified")
    return short


@dataclass(frozen=True)
class Metric:
    """The task's headline metric: what one rollout measures and how the run is scored."""

    name: str
    direction: str  # "higher_is_better" or "lower_is_better"
    target: float
    cap: float
    failure_value: float
    description: str

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "higher_is_better"


@dataclass(frozen=True)
class SafetyMetric:
    name: str
    penalty_factor: float
    description: str


@dataclass(frozen=True)
class SubmissionContract:
    """Where and in what form a batch task expects its policy file."""

    submission_path: str
    entrypoint: str
    format: str
    notes: str


@dataclass(frozen=True)
class Task:
    """A task the evaluator hosts (`TaskMetadata`)."""

    id: str
    title: str
    description: str
    sim: str
    mode: str  # "interactive" or "batch"
    genre: str  # "open" or "reproduction"
    metric: Metric
    episodes_per_eval: int
    max_steps_per_episode: int
    max_total_steps: Optional[int]  # None: no step budget
    time_budget_seconds: Optional[int]  # None: no time budget
    safety_metrics: tuple[SafetyMetric, ...]
    submission_contract: Optional[SubmissionContract]
    observation_space: spaces.Space
    action_space: spaces.Space
    observation_labels: tuple[str, ...] = ()
    action_labels: tuple[str, ...] = ()

    @property
    def is_batch(self) -> bool:
        return self.mode == "batch"

    @classmethod
    def from_wire(cls, t: pb.TaskMetadata) -> "Task":
        for part in ("metric", "budgets", "observation_space", "action_space"):
            if not t.HasField(part):
                raise WireError(f"task {t.id!r}: {part} is missing")
        m = t.metric
        contract = None
        if t.HasField("submission_contract"):
            c = t.submission_contract
            contract = SubmissionContract(c.submission_path, c.entrypoint, c.format, c.notes)
        return cls(
            id=t.id,
            title=t.title,
            description=t.description,
            sim=t.sim,
            mode=_enum_name(pb.TaskMode, t.mode, "TASK_MODE_", "task mode"),
            genre=_enum_name(pb.TaskGenre, t.genre, "TASK_GENRE_", "task genre"),
            metric=Metric(
                name=m.name,
                direction=_enum_name(pb.Direction, m.direction, "DIRECTION_", "metric direction"),
                target=m.target,
                cap=m.cap,
                failure_value=m.failure_value,
                description=m.description,
            ),
            episodes_per_eval=t.episodes_per_eval,
            max_steps_per_episode=t.max_steps_per_episode,
            max_total_steps=t.budgets.max_total_steps or None,
            time_budget_seconds=t.budgets.time_budget_seconds or None,
            safety_metrics=tuple(SafetyMetric(s.name, s.penalty_factor, s.description) for s in t.safety_metrics),
            submission_contract=contract,
            observation_space=space_from_wire(t.observation_space),
            action_space=space_from_wire(t.action_space),
            observation_labels=tuple(space_labels(t.observation_space)),
            action_labels=tuple(space_labels(t.action_space)),
        )


@dataclass(frozen=True)
class EvalSession:
    """An official env's one eval session, as `StartEvalSession` answers it."""

    session_id: str
    episodes: int


@dataclass(frozen=True)
class EpisodeOutcome:
    """One planned rollout of a session."""

    index: int
    outcome: str  # "completed", "aborted", "budget_exceeded", "not_run", "in_progress", "sim_fault"
    metric: float
    steps: int
    episode_return: float
    seed_commitment: str
    safety: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class EvalResult:
    """A session's authoritative result, as the harness channel reads it."""

    session_id: str
    run_id: str
    task_id: str
    metric_name: str
    value: float
    direction: str
    status: str  # "running", "completed", "budget_exceeded", "ended_early"
    episodes: tuple[EpisodeOutcome, ...]
    seed_commitments: tuple[str, ...]
    trajectory_head: str
    total_steps: int
    safety: dict[str, float]
    status_message: str

    @property
    def finished(self) -> bool:
        return self.status != "running"

    @classmethod
    def from_wire(cls, r: pb.EvalResult) -> "EvalResult":
        return cls(
            session_id=r.session_id,
            run_id=r.run_id,
            task_id=r.task_id,
            metric_name=r.metric_name,
            value=r.value,
            direction=_enum_name(pb.Direction, r.direction, "DIRECTION_", "result direction"),
            status=_enum_name(pb.EvalStatus, r.status, "EVAL_STATUS_", "result status"),
            episodes=tuple(
                EpisodeOutcome(
                    index=e.index,
                    outcome=_enum_name(pb.Outcome, e.outcome, "OUTCOME_", f"episode {e.index} outcome"),
                    metric=e.metric,
                    steps=e.steps,
                    episode_return=e.episode_return,
                    seed_commitment=e.seed_commitment,
                    safety=dict(e.safety),
                )
                for e in r.episodes
            ),
            seed_commitments=tuple(r.seed_commitments),
            trajectory_head=r.trajectory_head,
            total_steps=r.total_steps,
            safety=dict(r.safety),
            status_message=r.status_message,
        )


@dataclass(frozen=True)
class BatchStatus:
    """A batch run's state. `result` is present only on the harness channel, once finished."""

    state: str  # "queued", "running", "succeeded", "failed"
    progress: float
    message: str
    result: Optional[EvalResult] = None

    @property
    def finished(self) -> bool:
        return self.state in ("succeeded", "failed")

    @classmethod
    def from_wire(cls, s: ale_env_pb2.GetBatchEvalStatusResponse) -> "BatchStatus":
        return cls(
            state=_enum_name(ale_env_pb2.BatchState, s.state, "BATCH_STATE_", "batch state"),
            progress=s.progress,
            message=s.message,
            result=EvalResult.from_wire(s.result) if s.HasField("result") else None,
        )
