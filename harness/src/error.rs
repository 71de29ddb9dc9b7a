use std::path::PathBuf;

use crate::evaluator_process::EvaluatorError;
use crate::verify::RecordsIncomplete;
use crate::verify::{SignatureCheckError, VerifyError};

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(
        "cannot reach the evaluator's harness socket {socket} ({}); is `ale serve` running on that state dir?", ale_proto::error_chain(.cause)
    )]
    Connect {
        socket: PathBuf,
        cause: tonic::transport::Error,
    },
    #[error("the evaluator refused {rpc}: {}: {}", .status.code(), .status.message())]
    Rpc {
        rpc: &'static str,
        status: tonic::Status,
    },
    #[error("the evaluator's answer to {0} is malformed: a required field is missing")]
    Malformed(&'static str),
    #[error("the evaluator's answer to {rpc} is malformed: {cause}")]
    Wire {
        rpc: &'static str,
        cause: ale_proto::convert::WireError,
    },
    #[error("cannot launch the agent {command:?}: {cause}")]
    Launch {
        command: String,
        cause: std::io::Error,
    },
    #[error("no agent command given: pass it after `--`")]
    NoAgent,
    #[error(
        "task {task} is a batch task: its evaluator plays a submitted policy file and takes no \
         steps, so the built-in policy {policy} cannot play it; give a submission folder \
         (--submission DIR) or an agent that writes and submits one (after `--`)"
    )]
    BuiltinOnBatch { policy: String, task: String },
    /// The run's `--name` or a `--tag` cannot be recorded (the message says why).
    #[error("{0}")]
    Labels(String),
    #[error(
        "a batch run takes a submission folder (--submission DIR) and no agent; an agent that \
         submits from inside the sandbox is not supported yet"
    )]
    SubmissionWithAgent,
    #[error("no submission folder given: a batch run needs --submission DIR")]
    NoSubmission,
    #[error(
        "task {task} is {mode}: {}",
        if *.mode == ale_proto::task_spec::TaskMode::Batch {
            "give its submission folder with --submission DIR"
        } else {
            "run it with an agent (--policy or a command after `--`), not --submission"
        }
    )]
    WrongMode {
        task: String,
        mode: ale_proto::task_spec::TaskMode,
    },
    #[error("cannot copy the submission {} into the evaluator's submission dir: {cause}", .path.display())]
    Submission {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "--endpoint is for --sandbox none: a sandboxed agent always reaches the evaluator \
         through the agent socket bind-mounted into its sandbox"
    )]
    EndpointWithSandbox,
    #[error(transparent)]
    Evaluator(#[from] EvaluatorError),
    #[error("the evaluator's agent socket {} is unusable: {cause}", .socket.display())]
    AgentSocket {
        socket: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "the evaluator made no folder {} for this run's submission ({cause}); an evaluator that \
         predates per-run submission folders cannot run batch tasks with this harness: upgrade it",
        .path.display()
    )]
    NoRunFolder {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error(
        "refusing to start the run: cannot reserve {bytes} bytes for its records in {} ({cause}); \
         free some space on that disk and run it again",
        .path.display()
    )]
    NoRoom {
        path: PathBuf,
        bytes: u64,
        cause: std::io::Error,
    },
    #[error("cannot write the run's records in {path}: {cause}")]
    Records {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot write the run's plots: {0}")]
    Plots(#[from] crate::plot::PlotError),
    #[error("the run's trajectory does not verify: {0}")]
    Unverified(#[from] Unverified),
    #[error(transparent)]
    Sandbox(#[from] ale_sandbox::SandboxError),
    #[error("refusing to write the run's records: {0}")]
    NotPrivate(ale_records::private_files::PrivateFileError),
    #[error(transparent)]
    Keys(#[from] ale_records::signing_keys::KeyError),
}

/// Why the harness does not accept the records of the run it just followed.
#[derive(Debug, thiserror::Error)]
pub enum Unverified {
    #[error("{0}")]
    Trajectory(VerifyError),
    #[error("the harness log: {0}")]
    HarnessLog(VerifyError),
    #[error(transparent)]
    Signature(#[from] SignatureCheckError),
    #[error("the trajectory's result differs from the one the evaluator returned")]
    DiffersFromWire,
    #[error("the trajectory has no session_finished event")]
    Unfinished,
    #[error(transparent)]
    Incomplete(#[from] RecordsIncomplete),
}

impl HarnessError {
    pub fn rpc(rpc: &'static str) -> impl FnOnce(tonic::Status) -> HarnessError {
        move |status| HarnessError::Rpc { rpc, status }
    }

    pub fn wire(rpc: &'static str) -> impl FnOnce(ale_proto::convert::WireError) -> HarnessError {
        move |cause| HarnessError::Wire { rpc, cause }
    }
}
