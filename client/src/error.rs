//! Errors an agent sees.

use ale_proto::convert::WireError;

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot connect to the evaluator at {endpoint}: {}", ale_proto::error_chain(.cause))]
    Connect {
        endpoint: String,
        cause: tonic::transport::Error,
    },
    #[error("{}: {}", .0.code(), .0.message())]
    Rpc(#[from] tonic::Status),
    #[error("the evaluator sent a malformed {what}: {cause}")]
    Wire {
        what: &'static str,
        cause: WireError,
    },
    #[error("the evaluator sent a malformed info value {key:?}: {cause}")]
    InfoValue { key: String, cause: WireError },
    #[error("the evaluator sent an empty info value {0:?} (no kind set)")]
    EmptyInfoValue(String),
    #[error("the evaluator's answer lacks {0}")]
    Missing(&'static str),
    #[error(
        "environment variable {0} is not set; run this agent under `ale harness run` or set it yourself"
    )]
    MissingEnvVar(&'static str),
    #[error("this env's task is not a batch task: it has no submission contract")]
    NotBatch,
    #[error("cannot start a runtime for the blocking client: {0}")]
    Runtime(std::io::Error),
}

impl ClientError {
    /// The gRPC code, if the evaluator answered with an error status.
    pub fn code(&self) -> Option<tonic::Code> {
        match self {
            ClientError::Rpc(status) => Some(status.code()),
            _ => None,
        }
    }
}
