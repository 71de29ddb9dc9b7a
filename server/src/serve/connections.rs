//! Accepting connections under a cap, and what each accepted connection carries: its id, its
//! place under its channel's cap, its account of request bytes, its idle timer, and the switch
//! that drops it when a shutdown's deadline has passed.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};
use tokio_stream::Stream;
use tonic::transport::server::Connected;

use super::requests::{ConnectionRequestBytes, RequestBytesPool};
use crate::env_table::ConnectionId;
use crate::sync::lock;

/// At most one line a second about refused connections or failing accepts, so a flood of
/// them cannot flood the log; each line carries the running count.
const REPORT_INTERVAL: Duration = Duration::from_secs(1);

/// How long a listener rests after an accept fails for want of resources (file descriptors,
/// memory) before it tries again, instead of spinning on the same error.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// Connections refused in one go before the listener lets other tasks run.
const REFUSALS_PER_POLL: usize = 64;

/// What a request learns of the connection it came on: tonic hands it to every request on the
/// connection as a request extension.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionInfo {
    pub id: ConnectionId,
    pub request_bytes: Arc<ConnectionRequestBytes>,
}

/// The cap on one channel's open connections, and the count of those it refused.
#[derive(Debug)]
pub(super) struct ConnectionGate {
    channel: &'static str,
    flag: &'static str,
    cap: usize,
    open: AtomicUsize,
    refused: AtomicU64,
    last_report: Mutex<Option<Instant>>,
}

impl ConnectionGate {
    /// `flag` is the `ale serve` flag that sets `cap`, named in the log line about refusals.
    pub(super) fn new(channel: &'static str, flag: &'static str, cap: usize) -> Arc<Self> {
        Arc::new(ConnectionGate {
            channel,
            flag,
            cap,
            open: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            last_report: Mutex::new(None),
        })
    }

    /// A place under the cap, held until the connection is dropped; `None` when the cap is
    /// reached.
    fn admit(self: &Arc<Self>) -> Option<Slot> {
        self.open
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < self.cap).then_some(open + 1)
            })
            .ok()
            .map(|_| Slot(self.clone()))
    }

    fn count_refusal(&self) {
        let refused = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        let mut last = lock(&self.last_report);
        let now = Instant::now();
        if last.is_none_or(|t| now.duration_since(t) >= REPORT_INTERVAL) {
            *last = Some(now);
            tracing::warn!(
                channel = self.channel,
                cap = self.cap,
                refused,
                "refused a connection: {} {} connections are open, the cap (ale serve {}); \
                 {refused} refused since start",
                self.cap,
                self.channel,
                self.flag,
            );
        }
    }
}

/// A connection's place under its channel's cap.
#[derive(Debug)]
struct Slot(Arc<ConnectionGate>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Told the id of each connection of a channel as it closes.
pub(super) type OnClose = Arc<dyn Fn(ConnectionId) + Send + Sync>;

/// How one channel admits connections and what each admitted one gets.
#[derive(Clone)]
pub(super) struct Admission {
    pub gate: Arc<ConnectionGate>,
    /// Shared by every listener, so an id names one connection of this evaluator.
    pub next_id: Arc<AtomicU64>,
    pub pool: Arc<RequestBytesPool>,
    pub max_connection_request_bytes: usize,
    /// `None`: connections of this channel are never closed for being idle.
    pub idle_timeout: Option<Duration>,
    /// Turns true when a shutdown's deadline has passed.
    pub drop_connections: watch::Receiver<bool>,
    /// Called as each connection closes (its practice envs may go first when room is needed).
    pub on_close: Option<OnClose>,
}

impl Admission {
    fn admit<IO>(&self, io: IO) -> Option<Connection<IO>> {
        let slot = self.gate.admit()?;
        let info = ConnectionInfo {
            id: ConnectionId(self.next_id.fetch_add(1, Ordering::Relaxed)),
            request_bytes: Arc::new(ConnectionRequestBytes::new(
                self.max_connection_request_bytes,
                self.pool.clone(),
            )),
        };
        Some(Connection {
            io,
            info,
            idle: self.idle_timeout.map(IdleTimer::new),
            dropped: Box::pin(deadline_passed(self.drop_connections.clone())),
            on_close: self.on_close.clone(),
            _slot: slot,
        })
    }
}

/// Resolves once `drop_connections` turns true; never if the server is dropped without a
/// shutdown.
async fn deadline_passed(mut drop_connections: watch::Receiver<bool>) {
    if drop_connections.wait_for(|dropped| *dropped).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// A listening socket, TCP or Unix.
pub(super) trait Listener: Unpin {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Self::Io>>;
}

impl Listener for TcpListener {
    type Io = TcpStream;

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<TcpStream>> {
        let (stream, peer) = ready!(TcpListener::poll_accept(self, cx))?;
        // Replies are small; Nagle's algorithm would hold each one back.
        if let Err(e) = stream.set_nodelay(true) {
            tracing::debug!(%peer, error = %e, "cannot turn Nagle's algorithm off");
        }
        Poll::Ready(Ok(stream))
    }
}

impl Listener for UnixListener {
    type Io = UnixStream;

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<UnixStream>> {
        let (stream, _) = ready!(UnixListener::poll_accept(self, cx))?;
        Poll::Ready(Ok(stream))
    }
}

/// The connections a listener accepts and its channel admits. A connection over the cap is
/// closed at once, never queued; an accept that fails for want of resources is retried after
/// a pause.
pub(super) struct Incoming<L> {
    listener: L,
    admission: Admission,
    backoff: Option<Pin<Box<Sleep>>>,
    last_error_report: Option<Instant>,
}

impl<L> Incoming<L> {
    pub(super) fn new(listener: L, admission: Admission) -> Self {
        Incoming {
            listener,
            admission,
            backoff: None,
            last_error_report: None,
        }
    }
}

/// An accept error that concerns one connection only (it was reset before it was accepted),
/// not the listener.
fn is_per_connection(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    )
}

impl<L: Listener> Stream for Incoming<L> {
    type Item = io::Result<Connection<L::Io>>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let mut refused = 0;
        loop {
            if let Some(backoff) = &mut this.backoff {
                ready!(backoff.as_mut().poll(cx));
                this.backoff = None;
            }
            match ready!(this.listener.poll_accept(cx)) {
                Ok(io) => match this.admission.admit(io) {
                    Some(connection) => return Poll::Ready(Some(Ok(connection))),
                    None => {
                        this.admission.gate.count_refusal();
                        refused += 1;
                        if refused == REFUSALS_PER_POLL {
                            cx.waker().wake_by_ref();
                            return Poll::Pending;
                        }
                    }
                },
                Err(e) if is_per_connection(&e) => {}
                Err(e) => {
                    let now = Instant::now();
                    if this
                        .last_error_report
                        .is_none_or(|t| now.duration_since(t) >= REPORT_INTERVAL)
                    {
                        this.last_error_report = Some(now);
                        tracing::error!(
                            channel = this.admission.gate.channel,
                            error = %e,
                            "cannot accept a connection; retrying every {ACCEPT_BACKOFF:?}"
                        );
                    }
                    this.backoff = Some(Box::pin(tokio::time::sleep(ACCEPT_BACKOFF)));
                }
            }
        }
    }
}

/// Closes a connection on which nothing was read or written for `timeout`.
struct IdleTimer {
    timeout: Duration,
    last_activity: Instant,
    sleep: Pin<Box<Sleep>>,
}

impl IdleTimer {
    fn new(timeout: Duration) -> Self {
        let now = Instant::now();
        IdleTimer {
            timeout,
            last_activity: now,
            sleep: Box::pin(tokio::time::sleep_until(now + timeout)),
        }
    }

    fn touch(&mut self) {
        // The timer is moved only when it fires, not on every read.
        self.last_activity = Instant::now();
    }

    /// Whether the connection has been idle for the timeout; registers for a wake-up if not.
    fn poll_expired(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            if self.sleep.as_mut().poll(cx).is_pending() {
                return false;
            }
            let deadline = self.last_activity + self.timeout;
            if deadline <= Instant::now() {
                return true;
            }
            self.sleep.as_mut().reset(deadline);
        }
    }
}

/// An accepted, admitted connection.
pub(super) struct Connection<IO> {
    io: IO,
    info: ConnectionInfo,
    idle: Option<IdleTimer>,
    dropped: Pin<Box<dyn Future<Output = ()> + Send>>,
    on_close: Option<OnClose>,
    _slot: Slot,
}

impl<IO> Drop for Connection<IO> {
    fn drop(&mut self) {
        if let Some(on_close) = &self.on_close {
            on_close(self.info.id);
        }
    }
}

impl<IO> Connection<IO> {
    fn check_open(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.dropped.as_mut().poll(cx).is_ready() {
            return Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "the evaluator's shutdown deadline passed",
            ));
        }
        Ok(())
    }

    fn touch(&mut self) {
        if let Some(idle) = &mut self.idle {
            idle.touch();
        }
    }

    /// A write's outcome: bytes written count as traffic; a write that cannot go on closes the
    /// connection once it has been idle for the timeout.
    fn wrote(
        &mut self,
        cx: &mut Context<'_>,
        written: Poll<io::Result<usize>>,
    ) -> Poll<io::Result<usize>> {
        match written {
            Poll::Pending => self
                .poll_idle(cx)
                .map_or(Poll::Pending, |e| Poll::Ready(Err(e))),
            Poll::Ready(Ok(n)) => {
                self.touch();
                Poll::Ready(Ok(n))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        }
    }

    /// For a read or a write that cannot go on: the error that closes the connection once
    /// nothing has moved either way for the idle timeout. Checked on both sides, since a
    /// server blocked on writing to a client that does not read stops reading from it.
    fn poll_idle(&mut self, cx: &mut Context<'_>) -> Option<io::Error> {
        if !self.idle.as_mut().is_some_and(|idle| idle.poll_expired(cx)) {
            return None;
        }
        tracing::debug!(connection = self.info.id.0, "closing an idle connection");
        Some(io::Error::new(
            io::ErrorKind::TimedOut,
            "the connection was idle for the idle timeout",
        ))
    }
}

impl<IO> Connected for Connection<IO> {
    type ConnectInfo = ConnectionInfo;

    fn connect_info(&self) -> ConnectionInfo {
        self.info.clone()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Connection<IO> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.check_open(cx)?;
        let before = buf.filled().len();
        match Pin::new(&mut this.io).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                if buf.filled().len() > before {
                    this.touch();
                }
                Poll::Ready(Ok(()))
            }
            Poll::Pending => match this.poll_idle(cx) {
                Some(idle) => Poll::Ready(Err(idle)),
                None => Poll::Pending,
            },
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
        }
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Connection<IO> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check_open(cx)?;
        let written = Pin::new(&mut this.io).poll_write(cx, buf);
        this.wrote(cx, written)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        this.check_open(cx)?;
        let written = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.wrote(cx, written)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }
}
