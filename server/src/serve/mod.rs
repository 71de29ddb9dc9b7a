//! Runs the evaluator on its two listeners: the agent channel on TCP and the harness channel
//! on a Unix socket inside the private state dir, each with health and reflection, each under
//! the bounds of [`ServeOptions`].

mod connections;
pub mod fd_limit;
pub mod memory;
mod options;
mod requests;
mod run_channels;

use std::net::SocketAddr;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ale_proto::pb::{ale_env_server::AleEnvServer, catalog_server::CatalogServer};
use ale_records::private_files::{PrivateFileError, replace_private_file};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::transport::Server;
use tonic::transport::server::Router;
use tower::layer::util::{Identity, Stack};
use tower::util::MapResponseLayer;

use crate::channel::Channel;
use crate::evaluator::Evaluator;
use crate::service::{AleEnvService, CatalogService};
use ale_records::layout;
pub(crate) use connections::ConnectionInfo;
use connections::{Admission, ConnectionGate, Incoming};
pub use options::{
    CONNECTION_RESERVE_BYTES, CONNECTION_WINDOW_BYTES, MAX_HEADER_LIST_BYTES, MAX_MESSAGE_BYTES,
    STREAM_WINDOW_BYTES, ServeOptions,
};
use requests::{RequestBoundsLayer, RequestBytesPool};

/// How long a shutdown waits, once its deadline has passed and the connections are being
/// dropped, for the listeners to finish.
const DROP_WAIT: Duration = Duration::from_secs(1);

/// How often a serving evaluator sweeps its runs ([`Evaluator::sweep`]): a run past its time
/// budget gives back its folder, socket and connections within this of its deadline, whether
/// or not anyone sends a request.
pub const SWEEP_INTERVAL: Duration = Duration::from_secs(1);

/// Sweeps `evaluator` every [`SWEEP_INTERVAL`] until `stop` turns true or the evaluator is
/// gone.
async fn sweep_until_stopped(
    evaluator: std::sync::Weak<Evaluator>,
    mut stop: watch::Receiver<bool>,
) {
    let mut ticks = tokio::time::interval(SWEEP_INTERVAL);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = stop.wait_for(|stopped| *stopped) => return,
        }
        let Some(evaluator) = evaluator.upgrade() else {
            return;
        };
        // Takes the envs' locks and removes folders: off the runtime's threads.
        let swept = tokio::task::spawn_blocking(move || evaluator.sweep(std::time::Instant::now()));
        if let Err(e) = swept.await {
            tracing::error!(error = %e, "a sweep of the runs failed");
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("cannot listen on {addr}: {cause}")]
    Listen {
        addr: SocketAddr,
        cause: std::io::Error,
    },
    #[error("another evaluator is already serving {0}; stop it or use another --state-dir")]
    SocketInUse(PathBuf),
    #[error(
        "{} is {found}, expected a socket or nothing; it was left untouched. Remove it (rm {}) if nothing needs it, or use another --state-dir",
        .path.display(), .path.display()
    )]
    SocketPathTaken { path: PathBuf, found: &'static str },
    #[error("cannot create the socket {}: {cause}", .path.display())]
    Socket {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot prepare the runs' folders in the state dir: {0}")]
    RunFolders(PrivateFileError),
    #[error("cannot record the agent endpoint: {0}")]
    EndpointFile(PrivateFileError),
    #[error("cannot build the reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    #[error(
        "the open-file limit ({limit}) leaves no file descriptor for agent connections beside \
         the {reserved} set aside for the harness channel, official envs and the evaluator \
         itself and every run's own agent socket: raise it (ulimit -n), or lower \
         --max-harness-connections, --max-official-envs or --max-run-connections"
    )]
    NoRoomForAgents { limit: u64, reserved: u64 },
}

/// A running evaluator. Dropping it does not stop it; call [`RunningServer::shutdown`].
pub struct RunningServer {
    agent_addr: SocketAddr,
    agent_socket: PathBuf,
    harness_socket: PathBuf,
    evaluator: Arc<Evaluator>,
    agent_connection_cap: usize,
    shutdown_deadline: Duration,
    stop: watch::Sender<bool>,
    drop_connections: watch::Sender<bool>,
    tasks: Vec<JoinHandle<Result<(), tonic::transport::Error>>>,
    /// The runs' own agent sockets' serving tasks.
    run_tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
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

    /// The agent connections served at once: `--max-agent-connections`, or fewer if the
    /// open-file limit could not hold that many beside the harness's reserve.
    pub fn agent_connection_cap(&self) -> usize {
        self.agent_connection_cap
    }

    /// Stops both listeners and lets requests in flight finish, for at most the shutdown
    /// deadline; then drops the connections still open. Cancels batch runs at once, ends
    /// running eval sessions (recorded as ended early) with their trajectories synced, waits
    /// for batch runs to close their records until the deadline, and removes the sockets.
    pub async fn shutdown(self) {
        let deadline = std::time::Instant::now() + self.shutdown_deadline;
        let _ = self.stop.send(true);
        let evaluator = Arc::clone(&self.evaluator);
        // Takes the envs' locks: off the runtime's threads, as every blocking call is.
        let _ = tokio::task::spawn_blocking(move || evaluator.begin_shutdown()).await;
        let mut tasks = self.tasks;
        let drained = tokio::time::timeout(self.shutdown_deadline, join_listeners(&mut tasks));
        if drained.await.is_err() {
            tracing::warn!(
                deadline = ?self.shutdown_deadline,
                "requests were still in flight at the shutdown deadline; dropping their connections"
            );
            let _ = self.drop_connections.send(true);
            if tokio::time::timeout(DROP_WAIT, join_listeners(&mut tasks))
                .await
                .is_err()
            {
                tracing::error!("a listener did not stop once its connections were dropped");
                tasks.iter().for_each(JoinHandle::abort);
            }
        }
        let evaluator = Arc::clone(&self.evaluator);
        // Waits on batch runs' condition variables: off the runtime's threads.
        let ended = tokio::task::spawn_blocking(move || evaluator.shutdown(deadline)).await;
        if let Err(e) = ended {
            tracing::error!(error = %e, "ending the sessions at shutdown failed");
        }
        // The runs' sockets stopped with the others (and were dropped with them at the
        // deadline); their runs have ended now.
        let _ = self.drop_connections.send(true);
        let run_tasks = std::mem::take(&mut *crate::sync::lock(&self.run_tasks));
        for task in run_tasks {
            if tokio::time::timeout(DROP_WAIT, task).await.is_err() {
                tracing::error!(
                    "a run's agent socket did not stop once its connections were dropped"
                );
            }
        }
        let sockets = layout::run_agent_sockets_dir(self.evaluator.state_dir());
        if let Err(e) = crate::run_resources::submission_folder::remove_all_entries(&sockets) {
            tracing::warn!(dir = %sockets.display(), error = %e, "cannot remove the runs' agent sockets");
        }
        let _ = std::fs::remove_file(&self.harness_socket);
        let _ = std::fs::remove_file(&self.agent_socket);
        let _ = std::fs::remove_file(layout::agent_endpoint_file(self.evaluator.state_dir()));
        tracing::info!("evaluator stopped");
    }
}

/// Waits for the listener tasks, removing each as it finishes, so that a wait cut short can
/// be resumed.
async fn join_listeners(tasks: &mut Vec<JoinHandle<Result<(), tonic::transport::Error>>>) {
    while let Some(task) = tasks.last_mut() {
        let result = task.await;
        tasks.pop();
        match result {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::error!(error = %e, "listener stopped with an error"),
            Err(e) => tracing::error!(error = %e, "listener task failed"),
        }
    }
}

/// Binds a Unix socket at `path` and gives it `mode` (the harness socket is 0600; a socket
/// others must reach, 0666). What is already at `path` decides:
///
/// - nothing: bind;
/// - a socket that answers: [`ServeError::SocketInUse`] (another server is using it);
/// - a socket nobody answers on (left by a server that died): removed, then bind;
/// - anything else, a symbolic link included (dangling or not): [`ServeError::SocketPathTaken`],
///   and it is left in place; it is never removed on a guess.
///
/// Must be called inside a tokio runtime. The directory holding `path` is what keeps others
/// from swapping the socket between `bind` and `chmod`; put it in a private directory.
pub fn bind_private_socket(path: &Path, mode: u32) -> Result<UnixListener, ServeError> {
    let socket_err = |cause| ServeError::Socket {
        path: path.to_path_buf(),
        cause,
    };
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(socket_err(e)),
        Ok(metadata) if metadata.file_type().is_socket() => {
            match ale_proto::socket_path::connect(path) {
                Ok(_) => return Err(ServeError::SocketInUse(path.to_path_buf())),
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                    tracing::info!(socket = %path.display(), "removing a stale socket nobody answers on");
                    // unlink removes the name itself, never what it might point to.
                    std::fs::remove_file(path).map_err(socket_err)?;
                }
                Err(e) => return Err(socket_err(e)),
            }
        }
        Ok(metadata) => {
            let t = metadata.file_type();
            let found = if t.is_symlink() {
                "a symbolic link"
            } else if t.is_dir() {
                "a directory"
            } else if t.is_file() {
                "a regular file"
            } else {
                "not a socket"
            };
            return Err(ServeError::SocketPathTaken {
                path: path.to_path_buf(),
                found,
            });
        }
    }
    let listener = ale_proto::socket_path::bind(path)
        .and_then(|listener| {
            listener.set_nonblocking(true)?;
            UnixListener::from_std(listener)
        })
        .map_err(socket_err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(socket_err)?;
    Ok(listener)
}

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
type Layers = Stack<RequestBoundsLayer, Stack<MapResponseLayer<HttpResponseMap>, Identity>>;

/// The services one listener serves: `AleEnv` with that listener's privilege, `Catalog`,
/// health and reflection, under the HTTP/2 bounds of `options`.
async fn router(
    evaluator: &Arc<Evaluator>,
    channel: Channel,
    options: &ServeOptions,
) -> Result<Router<Layers>, ServeError> {
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<AleEnvServer<AleEnvService>>().await;
    health.set_serving::<CatalogServer<CatalogService>>().await;
    // Both reflection versions: v1, and v1alpha, the only one many tools speak (Python's
    // grpcio-reflection, several GUI and CLI clients).
    let reflection = || {
        tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(ale_proto::FILE_DESCRIPTOR_SET)
            .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
    };
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;
    Ok(Server::builder()
        .max_concurrent_streams(options.max_concurrent_streams)
        .initial_stream_window_size(STREAM_WINDOW_BYTES)
        .initial_connection_window_size(CONNECTION_WINDOW_BYTES)
        .http2_max_header_list_size(MAX_HEADER_LIST_BYTES)
        .layer(MapResponseLayer::new(
            size_cap_is_resource_exhausted as HttpResponseMap,
        ))
        .layer(RequestBoundsLayer {
            timeout: options.request_timeout,
        })
        .add_service(
            AleEnvServer::new(AleEnvService::new(evaluator.clone(), channel))
                .max_decoding_message_size(MAX_MESSAGE_BYTES),
        )
        .add_service(CatalogServer::new(CatalogService::new(evaluator.clone())))
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha))
}

/// Starts serving `evaluator` with the default [`ServeOptions`]: the agent channel on `listen`
/// (TCP) and on its state dir's `agent.sock`, the harness channel on its state dir's harness
/// socket.
pub async fn start(
    evaluator: Arc<Evaluator>,
    listen: SocketAddr,
) -> Result<RunningServer, ServeError> {
    let agent_socket = layout::agent_socket(evaluator.state_dir());
    start_with(evaluator, listen, agent_socket, ServeOptions::default()).await
}

/// Like [`start`], with the agent channel's Unix socket at `agent_socket` and the bounds of
/// `options`. Raises the process's soft open-file limit to its hard limit first.
pub async fn start_with(
    evaluator: Arc<Evaluator>,
    listen: SocketAddr,
    agent_socket: PathBuf,
    mut options: ServeOptions,
) -> Result<RunningServer, ServeError> {
    let agent_connection_cap = agent_connection_cap(&evaluator, &mut options)?;
    let listen_err = |cause| ServeError::Listen {
        addr: listen,
        cause,
    };
    let tcp = TcpListener::bind(listen).await.map_err(listen_err)?;
    let agent_addr = tcp.local_addr().map_err(listen_err)?;
    let harness_socket = layout::harness_socket(evaluator.state_dir());
    let unix = bind_private_socket(&harness_socket, 0o600)?;
    // Bound: this is the state dir's only evaluator, so no run is live and whatever runs'
    // folders and sockets are there belong to runs that ended.
    crate::run_resources::remove_stale(evaluator.state_dir()).map_err(ServeError::RunFolders)?;
    // Sandboxed agents run as another user; the socket is reachable only where it is
    // bind-mounted (or by whoever may enter the folder it is in), like the TCP port.
    let agent_unix = bind_private_socket(&agent_socket, 0o666)?;

    let endpoint_file = layout::agent_endpoint_file(evaluator.state_dir());
    let endpoints = ale_records::layout::AgentEndpoints {
        tcp: format!("http://{agent_addr}"),
        unix: agent_socket.clone(),
    };
    replace_private_file(&endpoint_file, endpoints.render().as_bytes(), 0o600)
        .map_err(ServeError::EndpointFile)?;
    let (stop, stopped) = watch::channel(false);
    let run_stop = stopped.clone();
    tokio::spawn(sweep_until_stopped(
        Arc::downgrade(&evaluator),
        stopped.clone(),
    ));
    let signal = move || {
        let mut stopped = stopped.clone();
        async move {
            let _ = stopped.wait_for(|s| *s).await;
        }
    };
    let (drop_connections, dropped) = watch::channel(false);
    let agent_admission = Admission {
        gate: ConnectionGate::new("agent", "--max-agent-connections", agent_connection_cap),
        next_id: Arc::new(AtomicU64::new(0)),
        pool: RequestBytesPool::new(options.max_request_bytes),
        max_connection_request_bytes: options.max_connection_request_bytes,
        idle_timeout: Some(options.idle_timeout),
        drop_connections: dropped,
        on_close: Some(connection_closed(&evaluator)),
    };
    // The harness's connections have their own cap and are never closed for being idle.
    let harness_admission = Admission {
        gate: ConnectionGate::new(
            "harness",
            "--max-harness-connections",
            options.max_harness_connections,
        ),
        idle_timeout: None,
        ..agent_admission.clone()
    };
    let run_tasks = Arc::default();
    let opener = run_channels::Opener {
        evaluator: Arc::downgrade(&evaluator),
        runtime: tokio::runtime::Handle::current(),
        options: options.clone(),
        next_id: Arc::clone(&agent_admission.next_id),
        stop: run_stop,
        dropped: agent_admission.drop_connections.clone(),
        tasks: Arc::clone(&run_tasks),
    };
    if !evaluator.set_run_channels(Box::new(opener)) {
        tracing::warn!(
            "this evaluator is already served elsewhere; its runs' agent sockets stay with that server"
        );
    }
    let agent = router(&evaluator, Channel::Agent, &options).await?;
    let agent_local = router(&evaluator, Channel::Agent, &options).await?;
    let harness = router(&evaluator, Channel::Harness, &options).await?;
    let tasks = vec![
        tokio::spawn(
            agent.serve_with_incoming_shutdown(
                Incoming::new(tcp, agent_admission.clone()),
                signal(),
            ),
        ),
        tokio::spawn(
            agent_local
                .serve_with_incoming_shutdown(Incoming::new(agent_unix, agent_admission), signal()),
        ),
        tokio::spawn(
            harness.serve_with_incoming_shutdown(Incoming::new(unix, harness_admission), signal()),
        ),
    ];
    tracing::info!(agent = %agent_addr, harness = %harness_socket.display(), "evaluator listening");
    Ok(RunningServer {
        agent_addr,
        agent_socket,
        harness_socket,
        evaluator,
        agent_connection_cap,
        shutdown_deadline: options.shutdown_deadline,
        stop,
        drop_connections,
        tasks,
        run_tasks,
    })
}

/// What a channel's listener calls as each connection closes: the evaluator lets that
/// connection's practice envs go first when room is needed.
pub(super) fn connection_closed(evaluator: &Arc<Evaluator>) -> connections::OnClose {
    let evaluator = Arc::downgrade(evaluator);
    Arc::new(move |id| {
        if let Some(evaluator) = evaluator.upgrade() {
            evaluator.connection_closed(id);
        }
    })
}

/// Raises the open-file limit and answers how many agent connections fit under it beside the
/// file descriptors the harness channel and official envs (each with its run's connections)
/// may need. A limit too low for every run's share of connections lowers that share in
/// `options`, with a warning, before it refuses to serve.
fn agent_connection_cap(
    evaluator: &Evaluator,
    options: &mut ServeOptions,
) -> Result<usize, ServeError> {
    let limit = match fd_limit::raise_open_file_limit() {
        Ok(limit) => limit.soft,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the open-file limit; assuming the caps fit");
            return Ok(options.max_agent_connections);
        }
    };
    let official_envs = evaluator.limits().max_official_envs;
    let fitted = fd_limit::run_connections_that_fit(
        limit,
        options.max_harness_connections,
        official_envs,
        options.max_run_connections,
    );
    if let Some(fitted) = fitted.filter(|&n| n < options.max_run_connections) {
        tracing::warn!(
            limit,
            fitted,
            "the open-file limit holds only {fitted} connections for each of \
             --max-official-envs {official_envs} runs, fewer than --max-run-connections {}; \
             raise the hard limit (ulimit -Hn) or lower --max-official-envs",
            options.max_run_connections
        );
        options.max_run_connections = fitted;
    }
    let reserved = fd_limit::reserved_fds(
        options.max_harness_connections,
        evaluator.limits().max_official_envs,
        options.max_run_connections,
    );
    let cap = fd_limit::agent_connections_that_fit(limit, reserved, options.max_agent_connections);
    if cap == 0 {
        return Err(ServeError::NoRoomForAgents { limit, reserved });
    }
    if cap < options.max_agent_connections {
        tracing::warn!(
            limit,
            reserved,
            cap,
            "the open-file limit holds only {cap} agent connections beside the harness's \
             reserve, fewer than --max-agent-connections {}",
            options.max_agent_connections
        );
    }
    Ok(cap)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, symlink};

    fn state() -> (tempfile::TempDir, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("harness.sock");
        (tmp, path)
    }

    #[tokio::test]
    async fn a_stale_socket_is_replaced_and_the_new_one_is_private() {
        let (_tmp, path) = state();
        // A server that died: its socket file stays, nobody listens.
        drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_socket()
        );
        let listener = bind_private_socket(&path, 0o600).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        // The new socket is live.
        std::os::unix::net::UnixStream::connect(&path).unwrap();
        drop(listener);
    }

    #[tokio::test]
    async fn a_live_socket_is_already_serving() {
        let (_tmp, path) = state();
        let _live = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let e = bind_private_socket(&path, 0o600).unwrap_err();
        assert!(matches!(e, ServeError::SocketInUse(_)), "{e}");
        assert!(e.to_string().contains("already serving"), "{e}");
        std::os::unix::net::UnixStream::connect(&path).expect("still the old server's");
    }

    #[tokio::test]
    async fn a_regular_file_at_the_socket_path_is_refused_and_kept() {
        let (_tmp, path) = state();
        std::fs::write(&path, "not a socket").unwrap();
        let e = bind_private_socket(&path, 0o600).unwrap_err();
        let message = e.to_string();
        assert!(
            message.contains(&format!("{} is a regular file", path.display()))
                && message.contains(&format!("rm {}", path.display())),
            "{message}"
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "not a socket");
    }

    #[tokio::test]
    async fn a_link_at_the_socket_path_is_refused_and_kept_dangling_or_not() {
        let (tmp, path) = state();
        let nowhere = tmp.path().join("nowhere.sock");
        symlink(&nowhere, &path).unwrap();
        let e = bind_private_socket(&path, 0o600).unwrap_err();
        assert!(
            matches!(
                e,
                ServeError::SocketPathTaken {
                    found: "a symbolic link",
                    ..
                }
            ),
            "{e}"
        );
        assert!(!e.to_string().contains("already serving"), "{e}");
        assert_eq!(std::fs::read_link(&path).unwrap(), nowhere);
        assert!(!nowhere.exists(), "nothing was bound through the link");

        // A link to a live socket is not this server's socket either.
        std::fs::remove_file(&path).unwrap();
        let _live = std::os::unix::net::UnixListener::bind(&nowhere).unwrap();
        symlink(&nowhere, &path).unwrap();
        let e = bind_private_socket(&path, 0o600).unwrap_err();
        assert!(matches!(e, ServeError::SocketPathTaken { .. }), "{e}");
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink()
        );
    }

    #[tokio::test]
    async fn a_socket_others_must_reach_gets_its_mode() {
        let (_tmp, path) = state();
        let _listener = bind_private_socket(&path, 0o666).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o666);
    }
}
