//! The evaluator's one error type, and the one place it becomes a gRPC status.

use ale_proto::{BatchId, EnvHandle, SessionId};
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown task {id:?}; known tasks: {known}")]
    UnknownTask { id: String, known: String },
    #[error("unknown env handle {0:?}: create an env with CreateEnv first")]
    UnknownHandle(EnvHandle),
    #[error("unknown eval session {0:?}")]
    UnknownSession(SessionId),
    #[error("unknown batch id {0:?}: no such batch evaluation was submitted to this evaluator")]
    UnknownBatch(BatchId),
    #[error("bad action for {task}: {detail}")]
    BadAction { task: String, detail: String },
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("step before reset: call Reset to begin an episode")]
    StepBeforeReset,
    #[error("the episode is over (terminated or truncated): call Reset to begin another")]
    EpisodeOver,
    #[error(
        "{0} is a practice env; only the official env the harness created can run an eval session"
    )]
    PracticeEnvInEval(EnvHandle),
    #[error("official env {0} has no eval session yet: call StartEvalSession before Reset or Step")]
    SessionNotStarted(EnvHandle),
    #[error("the eval session of {0} has already been started; an official env runs exactly one")]
    SessionAlreadyStarted(EnvHandle),
    #[error("the eval session is finished ({0})")]
    SessionFinished(String),
    #[error("official envs can only be created over the harness channel")]
    OfficialNeedsHarness,
    #[error("eval results can only be read over the harness channel")]
    ResultNeedsHarness,
    #[error("{0}")]
    Unimplemented(String),
    #[error(
        "the evaluator holds its maximum of {0} envs; reuse an env or let idle practice envs expire"
    )]
    TooManyEnvs(usize),
    #[error("cannot write the trajectory: {0}")]
    Trajectory(#[from] std::io::Error),
}

impl Error {
    pub fn code(&self) -> Code {
        match self {
            Error::UnknownTask { .. }
            | Error::UnknownHandle(_)
            | Error::UnknownSession(_)
            | Error::UnknownBatch(_) => Code::NotFound,
            Error::BadAction { .. } | Error::InvalidRequest(_) => Code::InvalidArgument,
            Error::StepBeforeReset
            | Error::EpisodeOver
            | Error::PracticeEnvInEval(_)
            | Error::SessionNotStarted(_)
            | Error::SessionAlreadyStarted(_)
            | Error::SessionFinished(_) => Code::FailedPrecondition,
            Error::OfficialNeedsHarness | Error::ResultNeedsHarness => Code::PermissionDenied,
            Error::Unimplemented(_) => Code::Unimplemented,
            Error::TooManyEnvs(_) => Code::ResourceExhausted,
            Error::Trajectory(_) => Code::Internal,
        }
    }
}

impl From<Error> for Status {
    fn from(e: Error) -> Status {
        if matches!(e, Error::Trajectory(_)) {
            tracing::error!(error = %e, "trajectory write failed");
        }
        Status::new(e.code(), e.to_string())
    }
}
