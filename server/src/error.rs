//! The evaluator's one error type, and the one place it becomes a gRPC status.

use std::time::Duration;

use ale_proto::{BatchId, EnvHandle, SessionId};
use ale_sim::Echo;
use tonic::{Code, Status};

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("unknown task {}; known tasks: {known}", Echo(.id.as_str()))]
    UnknownTask { id: String, known: String },
    #[error("unknown env handle {}: create an env with CreateEnv first", Echo(.0.as_str()))]
    UnknownHandle(EnvHandle),
    #[error("unknown eval session {}", Echo(.0.as_str()))]
    UnknownSession(SessionId),
    #[error(
        "unknown batch id {}: no such batch evaluation was submitted to this evaluator",
        Echo(.0.as_str())
    )]
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
    #[error(
        "{0} is a practice env; only the official env the harness created can be submitted \
         for batch evaluation"
    )]
    PracticeEnvInBatch(EnvHandle),
    #[error(
        "task {0} is interactive: call StartEvalSession and drive the episodes with \
         Reset/Step; SubmitBatchEval is for batch tasks"
    )]
    NotABatchTask(String),
    #[error(
        "{handle} is the official env of batch task {task}: the evaluator plays its episodes \
         itself. Write the submission the task's contract names and call SubmitBatchEval; \
         a practice env of the task takes Reset/Step"
    )]
    BatchEnvNotInteractive { handle: EnvHandle, task: String },
    #[error(
        "{0} was already submitted; an official env runs exactly one batch evaluation: poll \
         GetBatchEvalStatus with the batch id SubmitBatchEval returned"
    )]
    AlreadySubmitted(EnvHandle),
    #[error("task {task}'s simulator {sim} failed: {cause}")]
    SimUnavailable {
        task: String,
        sim: String,
        cause: String,
    },
    /// The sim failed in the middle of its work (a hosted sim's process crashed, hung, or
    /// answered what it must not). `cause` is for the agent: in an official env it carries
    /// none of the host's own words (its stderr could hold what it was given).
    #[error("task {task}'s simulator {sim} failed: {cause}")]
    SimFault {
        task: String,
        sim: String,
        cause: String,
    },
    /// Another call on the env is still in progress (an evaluator hosting sims in processes
    /// answers one call on an env at a time).
    #[error(
        "{0} is busy with another call (its sim may be waiting on its host process): wait for \
         that call's answer before sending the next"
    )]
    EnvBusy(EnvHandle),
    /// Every sim-host slot of the evaluator is taken.
    #[error("task {task}'s simulator cannot start: {cause}")]
    SimHostsExhausted { task: String, cause: String },
    #[error("internal error: {0}")]
    Internal(String),
    #[error("official envs can only be created over the harness channel")]
    OfficialNeedsHarness,
    #[error("eval results can only be read over the harness channel")]
    ResultNeedsHarness,
    #[error("{0}")]
    TooManyEnvs(EnvCap),
    /// A vector env bigger than a practice cap could ever hold.
    #[error(
        "a vector env of {envs} sub-envs can never fit: each sub-env counts against the \
         practice caps, and {what} is {cap} (ale serve {flag}); ask for at most {cap}"
    )]
    VectorOverCap {
        envs: usize,
        cap: usize,
        what: &'static str,
        flag: &'static str,
    },
    /// Other requests are building vector envs of as many sub-envs as the total practice cap.
    #[error(
        "the evaluator is building vector envs of {building} sub-envs for other requests; \
         {asked} more would pass the total practice cap of {cap} (ale serve \
         --max-practice-envs): retry once they are made"
    )]
    BuildingTooMany {
        building: usize,
        asked: usize,
        cap: usize,
    },
    /// A vector env whose batched answers would not fit in one message.
    #[error(
        "a vector env of {envs} sub-envs of task {task} would answer {bytes} bytes a step \
         ({per_env} per sub-env, final observations included), more than one message may \
         carry ({max} bytes): ask for at most {fits} sub-envs"
    )]
    VectorTooLarge {
        task: String,
        envs: usize,
        per_env: usize,
        bytes: usize,
        max: usize,
        fits: usize,
    },
    /// `num_envs` above 1 for an official env.
    #[error(
        "official envs are single: an eval session plays its hidden rollouts one at a time; \
         vector envs (num_envs above 1, or vector) are for practice"
    )]
    OfficialVector,
    /// A seed set asked for a practice env: only official runs are played on seed sets.
    #[error("a seed set is for official envs: a practice env's seeds are the caller's own")]
    SeedSetForPractice,
    /// A seed set the task does not declare.
    #[error(
        "task {task} has no evaluation seed set {name:?} (it declares: {})",
        if declared.is_empty() { "none".to_string() } else { declared.join(", ") }
    )]
    UnknownSeedSet {
        task: String,
        name: String,
        declared: Vec<String>,
    },
    /// One sub-env of a vector env failed: the error is its, its code the error's.
    #[error("sub-env {index}: {error}")]
    SubEnv { index: usize, error: Box<Error> },
    /// A Step on a vector env in DISABLED autoreset mode while some sub-envs' episodes are over.
    #[error(
        "sub-envs {} ended their episodes and the vector env's autoreset mode is DISABLED: \
         reset them (ResetRequest.reset_mask) before the next Step; nothing was stepped",
        Echo(format!("{:?}", .0).as_str())
    )]
    SubEnvsEnded(Vec<usize>),
    #[error(
        "the evaluator cannot reserve {bytes} bytes in its state dir {} for the new run's \
         record ({cause}), so it starts no run it could not finish recording: free space \
         there, then create the official env again",
        .dir.display()
    )]
    NoRoomForRecord {
        bytes: u64,
        dir: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "the evaluator could not make the new run's submission folder {} ({cause}), so it \
         starts no batch run there: its state dir's submissions/ must be a folder of its own \
         (0700, not a link) on a disk with room; repair it, then create the official env again",
        .path.display()
    )]
    SubmissionFolder {
        path: std::path::PathBuf,
        cause: ale_records::private_files::PrivateFileError,
    },
    #[error(
        "the evaluator could not listen on the new run's agent socket {} ({cause}), so it \
         starts no run its agent could not reach: its state dir's agents/ must be a folder of \
         its own with no socket of that name, and the open-file limit must have room (ulimit \
         -n); repair it, then create the official env again",
        .path.display()
    )]
    RunSocket {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "the run this agent socket served ({run_id}) has ended, so no practice env can be \
         created over it: its socket closes in a moment; an agent still running is done"
    )]
    RunEnded { run_id: ale_proto::RunId },
    #[error(
        "the run this agent socket served has ended and its socket has closed, so no practice \
         env can be created over it: an agent still running is done"
    )]
    RunSocketClosed,
    #[error("cannot write the trajectory: {0}")]
    Trajectory(#[from] std::io::Error),
    #[error("{0}")]
    TooManyRequestBytes(RequestBytesCap),
    #[error(
        "the request was not received and answered within {0:?}, the evaluator's request \
         timeout (ale serve --request-timeout): send each request whole, without pausing"
    )]
    RequestTimeout(Duration),
    #[error(
        "the request is compressed with {}, and the evaluator reads only uncompressed \
         messages: send them with no grpc-encoding (or \"identity\")",
        Echo(.0.as_str())
    )]
    UnsupportedEncoding(String),
}

/// The cap on request bytes a request's body ran into while it arrived; the message names the
/// cap, its value and the `ale serve` flag that sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestBytesCap {
    #[error(
        "this connection already holds {cap} bytes of requests not yet answered, its cap \
         (ale serve --max-connection-request-bytes): send large requests one at a time"
    )]
    Connection { cap: usize },
    #[error(
        "the evaluator already holds {cap} bytes of requests not yet answered, beyond each \
         connection's own {reserve}, its cap (ale serve --max-request-bytes): retry shortly; \
         a connection's first {reserve} bytes in flight are never refused this way"
    )]
    Evaluator { cap: usize, reserve: usize },
}

/// The env cap a `CreateEnv` ran into; the message names the cap, its value, the `ale serve`
/// flag that sets it, and what the client can do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum EnvCap {
    #[error(
        "this connection's practice envs would pass the per-connection cap of {cap} (ale serve \
         --max-practice-envs-per-connection; a vector env counts its sub-envs): reuse one of \
         them with Reset; a practice env unused for {idle:?} is reclaimed when room is needed"
    )]
    PracticePerConnection { cap: usize, idle: Duration },
    #[error(
        "the evaluator's practice envs would pass its total practice cap of {cap} (ale serve \
         --max-practice-envs; a vector env counts its sub-envs), and not enough have been \
         unused for {idle:?}: reuse an env you hold with Reset, or retry later"
    )]
    PracticeTotal { cap: usize, idle: Duration },
    #[error(
        "this connection's practice envs would pass the per-connection cap of {cap} (ale serve \
         --max-practice-envs-per-connection; a vector env counts its sub-envs): reuse one of \
         them with Reset; a practice env unused for {idle:?} is reclaimed when room is needed"
    )]
    RunPracticePerConnection { cap: usize, idle: Duration },
    #[error(
        "this run's practice envs would pass a run's share of {cap} (ale serve \
         --max-run-practice-envs; a vector env counts its sub-envs), and not enough have been \
         unused for {idle:?}: reuse an env you hold with Reset"
    )]
    RunPractice { cap: usize, idle: Duration },
    #[error(
        "the evaluator already holds {cap} official envs, its official cap \
         (ale serve --max-official-envs), and none is done with (its final result read by its \
         harness, or at rest, its session finished or never started, and unused for {idle:?}): \
         retry once running sessions have finished, or restart the evaluator with a larger cap"
    )]
    Official { cap: usize, idle: Duration },
}

impl Error {
    pub fn code(&self) -> Code {
        match self {
            Error::SubEnv { error, .. } => error.code(),
            Error::UnknownTask { .. }
            | Error::UnknownHandle(_)
            | Error::UnknownSession(_)
            | Error::UnknownBatch(_) => Code::NotFound,
            Error::BadAction { .. }
            | Error::InvalidRequest(_)
            | Error::OfficialVector
            | Error::SeedSetForPractice
            | Error::UnknownSeedSet { .. }
            | Error::VectorTooLarge { .. } => Code::InvalidArgument,
            Error::StepBeforeReset
            | Error::EpisodeOver
            | Error::PracticeEnvInEval(_)
            | Error::SessionNotStarted(_)
            | Error::SessionAlreadyStarted(_)
            | Error::SessionFinished(_)
            | Error::PracticeEnvInBatch(_)
            | Error::NotABatchTask(_)
            | Error::BatchEnvNotInteractive { .. }
            | Error::AlreadySubmitted(_)
            | Error::RunEnded { .. }
            | Error::RunSocketClosed
            | Error::EnvBusy(_)
            | Error::SubEnvsEnded(_)
            | Error::SimUnavailable { .. } => Code::FailedPrecondition,
            Error::OfficialNeedsHarness | Error::ResultNeedsHarness => Code::PermissionDenied,
            Error::TooManyEnvs(_)
            | Error::VectorOverCap { .. }
            | Error::BuildingTooMany { .. }
            | Error::TooManyRequestBytes(_)
            | Error::NoRoomForRecord { .. }
            | Error::SimHostsExhausted { .. } => Code::ResourceExhausted,
            Error::SimFault { .. } => Code::Aborted,
            Error::RequestTimeout(_) => Code::DeadlineExceeded,
            Error::UnsupportedEncoding(_) => Code::Unimplemented,
            Error::Trajectory(_)
            | Error::Internal(_)
            | Error::SubmissionFolder { .. }
            | Error::RunSocket { .. } => Code::Internal,
        }
    }
}

impl From<Error> for Status {
    fn from(e: Error) -> Status {
        let inner = match &e {
            Error::SubEnv { error, .. } => error.as_ref(),
            other => other,
        };
        if matches!(
            inner,
            Error::Trajectory(_)
                | Error::Internal(_)
                | Error::SubmissionFolder { .. }
                | Error::RunSocket { .. }
        ) {
            tracing::error!(error = %e, "evaluator failure");
        }
        Status::new(e.code(), e.to_string())
    }
}
