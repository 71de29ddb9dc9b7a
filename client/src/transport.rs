//! The client's TCP transport, tuned for many small sequential requests.
//!
//! hyper's HTTP/2 client queues a request's HEADERS frame and its DATA frame from different
//! tasks, and flushes in between, so every unary call left as two TCP segments and woke the
//! server twice. [`Coalescing`] buffers writes and, on a flush, first yields once to the
//! scheduler so the frame still on its way joins the buffer; the call then leaves in a single
//! `write`. On a single-threaded runtime this halves the syscalls and wake-ups per call.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpStream, UnixStream};
use tonic::transport::{Channel, Endpoint, Uri};

/// Flushes below this size may be deferred one scheduler turn; larger buffers go out at once.
const COALESCE_LIMIT: usize = 16 * 1024;

pub struct Coalescing<S> {
    inner: S,
    buf: Vec<u8>,
    /// Bytes of `buf` already written to `inner`.
    sent: usize,
    /// A flush has already yielded once; the next poll writes.
    yielded: bool,
}

impl<S> Coalescing<S> {
    pub fn new(inner: S) -> Self {
        Coalescing {
            inner,
            buf: Vec::with_capacity(4096),
            sent: 0,
            yielded: false,
        }
    }
}

impl<S: AsyncWrite + Unpin> Coalescing<S> {
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.buf.len() {
            match Pin::new(&mut self.inner).poll_write(cx, &self.buf[self.sent..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => self.sent += n,
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        self.buf.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Coalescing<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Coalescing<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.buf.len() >= COALESCE_LIMIT {
            // Apply backpressure instead of growing without bound.
            match this.poll_drain(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        this.buf.extend_from_slice(data);
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.buf.is_empty() {
            return Pin::new(&mut this.inner).poll_flush(cx);
        }
        if !this.yielded && this.buf.len() < COALESCE_LIMIT {
            this.yielded = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        this.yielded = false;
        match this.poll_drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_flush(cx),
            other => other,
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        match this.poll_drain(cx) {
            Poll::Ready(Ok(())) => Pin::new(&mut this.inner).poll_shutdown(cx),
            other => other,
        }
    }
}

/// The socket path of a `unix:///PATH` or `unix:/PATH` endpoint; `None` for any other URL.
pub fn unix_socket_path(endpoint: &str) -> Option<&Path> {
    let rest = endpoint.strip_prefix("unix:")?;
    // `unix:///p` and `unix:/p` both name the absolute path `/p`.
    let path = rest.strip_prefix("//").unwrap_or(rest);
    Some(Path::new(path))
}

/// A channel over the Unix socket at `path`, with the same write coalescing as TCP.
pub async fn connect_unix(path: &Path) -> Result<Channel, tonic::transport::Error> {
    let path: PathBuf = path.to_path_buf();
    // The URI is required by the API but unused: the connector always dials the socket.
    Endpoint::from_static("http://localhost")
        .connect_with_connector(tower::service_fn(move |_: Uri| {
            let path = path.clone();
            async move {
                // Held while connecting: a path past `sun_path` is reached through it.
                let address = ale_proto::socket_path::SocketPath::new(&path)?;
                let stream = UnixStream::connect(address.as_path()).await?;
                Ok::<_, io::Error>(TokioIo::new(Coalescing::new(stream)))
            }
        }))
        .await
}

/// A channel to `endpoint` over a coalescing TCP connection with Nagle off.
pub async fn connect(endpoint: Endpoint) -> Result<Channel, tonic::transport::Error> {
    endpoint
        .connect_with_connector(tower::service_fn(|uri: Uri| async move {
            let host = uri.host().unwrap_or("127.0.0.1").trim_matches(['[', ']']);
            let port = uri.port_u16().unwrap_or(80);
            let stream = TcpStream::connect((host, port)).await?;
            stream.set_nodelay(true)?;
            Ok::<_, io::Error>(TokioIo::new(Coalescing::new(stream)))
        }))
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_endpoints_name_their_socket() {
        assert_eq!(
            unix_socket_path("unix:///run/ale/agent.sock"),
            Some(Path::new("/run/ale/agent.sock"))
        );
        assert_eq!(
            unix_socket_path("unix:/run/ale/agent.sock"),
            Some(Path::new("/run/ale/agent.sock"))
        );
        assert_eq!(unix_socket_path("http://127.0.0.1:50051"), None);
    }
}
