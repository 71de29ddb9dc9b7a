//! Each official run's own agent channel: a Unix socket `<state>/agents/<run_id>.sock` (0666
//! in the 0700 `agents/`, reachable only where the harness binds it), opened before the run's
//! `CreateEnv` answers and closed when the run ends.
//!
//! Its connections are agent-privileged and belong to that run, decided by the listener they
//! arrived on: every request on them is served as [`Channel::Run`]. The channel has caps of
//! its own — connections ([`ServeOptions::max_run_connections`]), streams per connection (as
//! every listener), request bytes ([`ServeOptions::max_run_request_bytes`], its own pool) and
//! practice envs (`Limits::max_run_practice_envs`) — counted apart from the shared agent
//! channel and from every other run's, so one run's agent that exhausts its share leaves all
//! others whole.
//!
//! Once its listener has closed and its connections are gone, the channel tells the evaluator
//! ([`Evaluator::run_channel_closed`]), which forgets the run's scope and drops any practice
//! env made over it.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, Weak};

use tokio::net::UnixListener;
use tokio::runtime::Handle;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::connections::{Admission, ConnectionGate, Incoming};
use super::options::ServeOptions;
use super::requests::RequestBytesPool;
use super::router;
use crate::channel::{Channel, RunScope};
use crate::error::Error;
use crate::evaluator::Evaluator;
use crate::run_resources::{RunChannel, RunChannels};
use crate::sync::lock;

/// What every run channel shares with the evaluator's other listeners.
pub(super) struct Opener {
    pub evaluator: Weak<Evaluator>,
    pub runtime: Handle,
    pub options: ServeOptions,
    pub next_id: Arc<AtomicU64>,
    /// The evaluator's stop (true: stop accepting) and drop (true: drop connections) signals.
    pub stop: watch::Receiver<bool>,
    pub dropped: watch::Receiver<bool>,
    /// The serving task of every run channel opened, for the shutdown to wait on.
    pub tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

/// How a run's channel is told to close: `Some(linger)` once closing, connections kept that
/// long first.
type Closing = watch::Sender<Option<std::time::Duration>>;

/// An open run channel; see [`RunChannel`].
struct OpenChannel {
    closing: Closing,
    socket: PathBuf,
    linger: std::time::Duration,
}

impl RunChannel for OpenChannel {
    fn close(&mut self, run_ended: bool) {
        // The name goes at once: no new connection reaches an ended run.
        if let Err(e) = std::fs::remove_file(&self.socket)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(socket = %self.socket.display(), error = %e, "cannot remove a run's agent socket");
        }
        let linger = if run_ended {
            self.linger
        } else {
            std::time::Duration::ZERO
        };
        let _ = self.closing.send(Some(linger));
    }
}

impl Drop for OpenChannel {
    fn drop(&mut self) {
        if self.closing.borrow().is_none() {
            self.close(false);
        }
    }
}

/// Binds `socket` (nothing may be there: run ids are never reused) and gives it mode 0666.
fn bind(socket: &Path) -> std::io::Result<std::os::unix::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let listener = ale_proto::socket_path::bind(socket)?;
    let ready = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666))
        .and_then(|()| listener.set_nonblocking(true));
    if let Err(e) = ready {
        let _ = std::fs::remove_file(socket);
        return Err(e);
    }
    Ok(listener)
}

impl RunChannels for Opener {
    fn open(&self, run: RunScope, socket: &Path) -> Result<Box<dyn RunChannel>, Error> {
        let failed = |cause: std::io::Error| Error::RunSocket {
            path: socket.to_path_buf(),
            cause,
        };
        let Some(evaluator) = self.evaluator.upgrade() else {
            return Err(failed(std::io::Error::other(
                "the evaluator is shutting down",
            )));
        };
        let listener = bind(socket).map_err(failed)?;
        let (closing, closed) = watch::channel(None);
        let serving = self.runtime.spawn(serve_then_forget(
            evaluator,
            listener,
            run,
            self.options.clone(),
            Arc::clone(&self.next_id),
            closed,
            self.stop.clone(),
            self.dropped.clone(),
        ));
        let mut tasks = lock(&self.tasks);
        tasks.retain(|t| !t.is_finished());
        tasks.push(serving);
        Ok(Box::new(OpenChannel {
            closing,
            socket: socket.to_path_buf(),
            linger: self.options.run_linger,
        }))
    }
}

/// Resolves once `signal` turns true; never if its sender is gone without that.
async fn turned_true(mut signal: watch::Receiver<bool>) {
    if signal.wait_for(|on| *on).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// Serves one run's channel (see [`serve`]), then tells the evaluator it has closed.
#[allow(clippy::too_many_arguments)]
async fn serve_then_forget(
    evaluator: Arc<Evaluator>,
    listener: std::os::unix::net::UnixListener,
    run: RunScope,
    options: ServeOptions,
    next_id: Arc<AtomicU64>,
    closed: watch::Receiver<Option<std::time::Duration>>,
    stop: watch::Receiver<bool>,
    dropped: watch::Receiver<bool>,
) {
    let weak = Arc::downgrade(&evaluator);
    serve(
        evaluator, listener, run, options, next_id, closed, stop, dropped,
    )
    .await;
    if let Some(evaluator) = weak.upgrade() {
        // Takes the env table's lock: off the runtime's threads.
        let _ = tokio::task::spawn_blocking(move || evaluator.run_channel_closed(run)).await;
    }
}

/// Serves one run's channel until it closes (after the linger) or the evaluator stops.
#[allow(clippy::too_many_arguments)]
async fn serve(
    evaluator: Arc<Evaluator>,
    listener: std::os::unix::net::UnixListener,
    run: RunScope,
    options: ServeOptions,
    next_id: Arc<AtomicU64>,
    mut closed: watch::Receiver<Option<std::time::Duration>>,
    stop: watch::Receiver<bool>,
    dropped: watch::Receiver<bool>,
) {
    let listener = match UnixListener::from_std(listener) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::error!(error = %e, "cannot serve a run's agent socket");
            return;
        }
    };
    let router = match router(&evaluator, Channel::Run(run), &options).await {
        Ok(router) => router,
        Err(e) => {
            tracing::error!(error = %e, "cannot serve a run's agent socket");
            return;
        }
    };
    let on_close = super::connection_closed(&evaluator);
    drop(evaluator);
    let (drop_connections, connections_dropped) = watch::channel(false);
    let admission = Admission {
        gate: ConnectionGate::new(
            "run agent",
            "--max-run-connections",
            options.max_run_connections,
        ),
        next_id,
        pool: RequestBytesPool::new(options.max_run_request_bytes),
        max_connection_request_bytes: options.max_connection_request_bytes,
        idle_timeout: Some(options.idle_timeout),
        drop_connections: connections_dropped,
        on_close: Some(on_close),
    };
    let (stop_serving, serving_stopped) = watch::channel(false);
    let mut serving = tokio::spawn(router.serve_with_incoming_shutdown(
        Incoming::new(listener, admission),
        turned_true(serving_stopped),
    ));
    let linger = tokio::select! {
        // A sender gone without a word closes at once.
        linger = closed.wait_for(Option::is_some) => {
            Some(linger.map(|l| (*l).unwrap_or_default()).unwrap_or_default())
        }
        () = turned_true(stop.clone()) => None,
        _ = &mut serving => return,
    };
    match linger {
        // The run ended: its agent may read its last answers, then everything goes.
        Some(linger) => {
            tokio::select! {
                () = tokio::time::sleep(linger) => {}
                () = turned_true(stop) => {}
            }
            let _ = stop_serving.send(true);
            let _ = drop_connections.send(true);
        }
        // The evaluator is stopping: as its other listeners, drain until its deadline.
        None => {
            let _ = stop_serving.send(true);
            tokio::select! {
                () = turned_true(dropped) => { let _ = drop_connections.send(true); }
                _ = &mut serving => return,
            }
        }
    }
    if let Ok(Err(e)) = serving.await {
        tracing::debug!(error = %e, "a run's agent socket stopped with an error");
    }
}
