use std::path::PathBuf;

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
    #[error("{0}")]
    Evaluator(String),
    #[error("cannot write the run's records in {path}: {cause}")]
    Records {
        path: std::path::PathBuf,
        cause: std::io::Error,
    },
    #[error("the run's trajectory does not verify: {0}")]
    Unverified(String),
    #[error(transparent)]
    Sandbox(#[from] crate::sandbox::SandboxError),
    #[error("refusing to write the run's records: {0}")]
    NotPrivate(ale_proto::private_files::PrivateFileError),
    #[error("{0}")]
    Keys(String),
}

impl HarnessError {
    pub fn rpc(rpc: &'static str) -> impl FnOnce(tonic::Status) -> HarnessError {
        move |status| HarnessError::Rpc { rpc, status }
    }

    pub fn wire(rpc: &'static str) -> impl FnOnce(ale_proto::convert::WireError) -> HarnessError {
        move |cause| HarnessError::Wire { rpc, cause }
    }
}
