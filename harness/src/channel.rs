//! The harness channel: gRPC over the evaluator's private Unix socket.

use std::path::{Path, PathBuf};

use ale_proto::pb::ale_env_client::AleEnvClient;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint};

use crate::error::HarnessError;

/// Connects to the harness socket at `path`.
pub async fn connect(path: &Path) -> Result<AleEnvClient<Channel>, HarnessError> {
    let socket: PathBuf = path.to_path_buf();
    // The URI is required by the API but unused: the connector always dials the socket.
    let channel = Endpoint::from_static("http://harness.sock")
        .connect_with_connector(tower::service_fn(move |_| {
            let socket = socket.clone();
            async move {
                let stream = tokio::net::UnixStream::connect(socket).await?;
                Ok::<_, std::io::Error>(TokioIo::new(stream))
            }
        }))
        .await
        .map_err(|cause| HarnessError::Connect {
            socket: path.to_path_buf(),
            cause,
        })?;
    Ok(AleEnvClient::new(channel))
}
