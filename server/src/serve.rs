//! Runs the evaluator on its two listeners: the agent channel on TCP and the harness channel
//! on a Unix socket inside the private state dir, each with health and reflection.

use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use ale_proto::pb::{ale_env_server::AleEnvServer, catalog_server::CatalogServer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::UnixListenerStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::Server;
use tonic::transport::server::{Connected, Router, TcpIncoming};
use tower::layer::util::{Identity, Stack};
use tower::util::MapResponseLayer;

use crate::env_table::ConnectionId;
use crate::evaluator::{Channel, Evaluator};
use crate::service::{AleEnvService, CatalogService};
use crate::state_dir;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {cause}")]
    Listen {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error("another evaluator is already serving {0}; stop it or use another --state-dir")]
    SocketInUse(PathBuf),
    #[error("cannot create the harness socket {path}: {cause}")]
    Socket {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot build the reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
}

/// A running evaluator. Dropping it does not stop it; call [`RunningServer::shutdown`].
pub struct RunningServer {
    agent_addr: SocketAddr,
    agent_socket: PathBuf,
    harness_socket: PathBuf,
    evaluator: Arc<Evaluator>,
    stop: watch::Sender<bool>,
    tasks: Vec<JoinHandle<Result<(), tonic::transport::Error>>>,
}

impl RunningServer {
    /// The bound agent-channel address (useful when listening on port 0).
    pub fn agent_addr(&self) -> SocketAddr {
        self.agent_addr
    }

    /// `http://ADDR`, for clients.
    pub fn agent_endpoint(&self) -> String {
        format!("http://{}", self.agent_addr)
    }

    pub fn harness_socket(&self) -> &std::path::Path {
        &self.harness_socket
    }

    /// The agent channel's Unix socket (what sandboxed agents reach).
    pub fn agent_socket(&self) -> &std::path::Path {
        &self.agent_socket
    }

    pub fn evaluator(&self) -> &Arc<Evaluator> {
        &self.evaluator
    }

    /// Stops both listeners, ends running eval sessions (recorded as ended early) with their
    /// trajectories synced, and removes the socket.
    pub async fn shutdown(self) {
        let _ = self.stop.send(true);
        for task in self.tasks {
            match task.await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::error!(error = %e, "listener stopped with an error"),
                Err(e) => tracing::error!(error = %e, "listener task failed"),
            }
        }
        self.evaluator.shutdown();
        let _ = std::fs::remove_file(&self.harness_socket);
        let _ = std::fs::remove_file(&self.agent_socket);
        let _ = std::fs::remove_file(state_dir::agent_endpoint_file(self.evaluator.state_dir()));
        tracing::info!("evaluator stopped");
    }
}

/// Binds `<state>/harness.sock` (0600), replacing a stale socket file but never a live one.
fn bind_harness_socket(path: &std::path::Path) -> Result<UnixListener, ServeError> {
    bind_socket(path, 0o600)
}

/// Binds a Unix socket at `path` with `mode`, replacing a stale socket file but never a live one.
fn bind_socket(path: &std::path::Path, mode: u32) -> Result<UnixListener, ServeError> {
    let socket_err = |cause| ServeError::Socket {
        path: path.to_path_buf(),
        cause,
    };
    if path.exists() {
        if std::os::unix::net::UnixStream::connect(path).is_ok() {
            return Err(ServeError::SocketInUse(path.to_path_buf()));
        }
        std::fs::remove_file(path).map_err(socket_err)?;
    }
    let listener = UnixListener::bind(path).map_err(socket_err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(socket_err)?;
    Ok(listener)
}

/// The largest request a client may send.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// tonic refuses an oversized request with `OUT_OF_RANGE` before any handler runs; the protocol
/// names caps `RESOURCE_EXHAUSTED`. No handler answers `OUT_OF_RANGE`, so the rewrite is exact.
fn size_cap_is_resource_exhausted(mut response: HttpResponse) -> HttpResponse {
    use tonic::codegen::http::HeaderValue;
    let out_of_range = HeaderValue::from(tonic::Code::OutOfRange as i32);
    if response.headers().get("grpc-status") == Some(&out_of_range) {
        response.headers_mut().insert(
            "grpc-status",
            HeaderValue::from(tonic::Code::ResourceExhausted as i32),
        );
    }
    response
}

type HttpResponse = tonic::codegen::http::Response<tonic::body::Body>;
type HttpResponseMap = fn(HttpResponse) -> HttpResponse;

/// The services one listener serves: `AleEnv` with that listener's privilege, `Catalog`,
/// health and reflection.
async fn router(
    evaluator: &Arc<Evaluator>,
    channel: Channel,
) -> Result<Router<Stack<MapResponseLayer<HttpResponseMap>, Identity>>, ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<AleEnvServer<AleEnvService>>().await;
    health.set_serving::<CatalogServer<CatalogService>>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(ale_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    Ok(Server::builder()
        .layer(MapResponseLayer::new(
            size_cap_is_resource_exhausted as HttpResponseMap,
        ))
        .add_service(
            AleEnvServer::new(AleEnvService::new(evaluator.clone(), channel))
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
        )
        .add_service(CatalogServer::new(CatalogService::new(evaluator.clone())))
        .add_service(health_service)
        .add_service(reflection))
}

/// An accepted connection tagged with its [`ConnectionId`], which tonic hands to every request
/// on it as a request extension.
struct IdentifiedIo<IO> {
    io: IO,
    id: ConnectionId,
}

impl<IO> Connected for IdentifiedIo<IO> {
    type ConnectInfo = ConnectionId;

    fn connect_info(&self) -> ConnectionId {
        self.id
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for IdentifiedIo<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for IdentifiedIo<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}

/// Tags each connection `incoming` accepts with a fresh id from `next_id`, which both
/// listeners share so an id names one connection of this evaluator.
fn identified<IO>(
    incoming: impl Stream<Item = std::io::Result<IO>>,
    next_id: Arc<AtomicU64>,
) -> impl Stream<Item = std::io::Result<IdentifiedIo<IO>>> {
    incoming.map(move |accepted| {
        accepted.map(|io| IdentifiedIo {
            io,
            id: ConnectionId(next_id.fetch_add(1, Ordering::Relaxed)),
        })
    })
}

/// Starts serving `evaluator`: the agent channel on `listen` (TCP) and on its state dir's
/// `agent.sock`, the harness channel on its state dir's harness socket.
pub async fn start(
    evaluator: Arc<Evaluator>,
    listen: SocketAddr,
) -> Result<RunningServer, ServeError> {
    let agent_socket = state_dir::agent_socket(evaluator.state_dir());
    start_with_agent_socket(evaluator, listen, agent_socket).await
}

/// Like [`start`], with the agent channel's Unix socket at `agent_socket`.
pub async fn start_with_agent_socket(
    evaluator: Arc<Evaluator>,
    listen: SocketAddr,
    agent_socket: PathBuf,
) -> Result<RunningServer, ServeError> {
    let listen_err = |cause| ServeError::Listen {
        addr: listen,
        cause,
    };
    let tcp = TcpListener::bind(listen).await.map_err(listen_err)?;
    let agent_addr = tcp.local_addr().map_err(listen_err)?;
    let harness_socket = state_dir::harness_socket(evaluator.state_dir());
    let unix = bind_harness_socket(&harness_socket)?;
    // Sandboxed agents run as another user; the socket is reachable only where it is
    // bind-mounted (or by whoever may enter the folder it is in), like the TCP port.
    let agent_unix = bind_socket(&agent_socket, 0o666)?;

    let endpoint_file = state_dir::agent_endpoint_file(evaluator.state_dir());
    let endpoints = ale_proto::layout::AgentEndpoints {
        tcp: format!("http://{agent_addr}"),
        unix: agent_socket.clone(),
    };
    std::fs::write(&endpoint_file, endpoints.render()).map_err(|cause| {
        ServeError::Socket {
            path: endpoint_file.clone(),
            cause,
        }
    })?;
    let (stop, stopped) = watch::channel(false);
    let signal = move || {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        }
    };
    let agent = router(&evaluator, Channel::Agent).await?;
    let agent_local = router(&evaluator, Channel::Agent).await?;
    let harness = router(&evaluator, Channel::Harness).await?;
    let next_id = Arc::new(AtomicU64::new(0));
    let tcp = identified(
        TcpIncoming::from(tcp).with_nodelay(Some(true)),
        next_id.clone(),
    );
    let agent_unix = identified(UnixListenerStream::new(agent_unix), next_id.clone());
    let unix = identified(UnixListenerStream::new(unix), next_id);
    let tasks = vec![
        tokio::spawn(agent.serve_with_incoming_shutdown(tcp, signal())),
        tokio::spawn(agent_local.serve_with_incoming_shutdown(agent_unix, signal())),
        tokio::spawn(harness.serve_with_incoming_shutdown(unix, signal())),
    ];
    tracing::info!(agent = %agent_addr, harness = %harness_socket.display(), "evaluator listening");
    Ok(RunningServer {
        agent_addr,
        agent_socket,
        harness_socket,
        evaluator,
        stop,
        tasks,
    })
}
