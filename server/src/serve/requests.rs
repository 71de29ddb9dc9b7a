//! What one request may hold while it arrives: its body's bytes, under its connection's cap and
//! the evaluator's, and its time, under the request timeout.
//!
//! A request's body is read into memory as its frames arrive, until the whole message is there.
//! Each connection has a small reserve of its own ([`CONNECTION_RESERVE_BYTES`]); bytes beyond it
//! come from one pool all connections share. A request holds its bytes until it is answered,
//! not only until its body is read: decoding the message and the handler's work cost memory in
//! proportion to it, so what is being decoded and handled at once is bounded by the same caps. A frame that would pass the connection's cap or
//! the pool's fails its request at once with `RESOURCE_EXHAUSTED`: nothing waits for room, so
//! a stalled upload holds only what it was granted, and only until the request timeout ends it.
//! Ordinary requests fit in their connection's reserve, so no amount of stalled uploads on other
//! connections can refuse them.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http_body::{Frame, SizeHint};
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::Bytes;
use tonic::codegen::http::{Request, Response};
use tower::{Layer, Service};

use super::connections::ConnectionInfo;
use super::options::CONNECTION_RESERVE_BYTES;
use crate::error::{Error, RequestBytesCap};
use crate::sync::lock;

/// The bytes of unfinished requests all connections hold beyond their reserves.
#[derive(Debug)]
pub(super) struct RequestBytesPool {
    cap: usize,
    held: AtomicUsize,
}

impl RequestBytesPool {
    pub(super) fn new(cap: usize) -> Arc<Self> {
        Arc::new(RequestBytesPool {
            cap,
            held: AtomicUsize::new(0),
        })
    }

    fn take(&self, n: usize) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(n).filter(|&after| after <= self.cap)
            })
            .is_ok()
    }

    fn give_back(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::AcqRel);
    }

    #[cfg(test)]
    fn held(&self) -> usize {
        self.held.load(Ordering::Acquire)
    }
}

/// The bytes of unfinished requests one connection holds: at most `cap`, the first
/// `reserve` of them its own, the rest from the shared pool.
#[derive(Debug)]
pub struct ConnectionRequestBytes {
    cap: usize,
    reserve: usize,
    pool: Arc<RequestBytesPool>,
    held: Mutex<Held>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Held {
    own: usize,
    pooled: usize,
}

impl Held {
    fn total(self) -> usize {
        self.own + self.pooled
    }
}

impl ConnectionRequestBytes {
    pub(super) fn new(cap: usize, pool: Arc<RequestBytesPool>) -> Self {
        ConnectionRequestBytes {
            cap,
            reserve: CONNECTION_RESERVE_BYTES.min(cap),
            pool,
            held: Mutex::new(Held::default()),
        }
    }

    /// Grants `n` more bytes, from the reserve first; refused if a cap would be passed, and then
    /// nothing is taken.
    fn take(&self, n: usize) -> Result<Held, RequestBytesCap> {
        let mut held = lock(&self.held);
        if held.total().saturating_add(n) > self.cap {
            return Err(RequestBytesCap::Connection { cap: self.cap });
        }
        let own = n.min(self.reserve.saturating_sub(held.own));
        let pooled = n - own;
        if pooled > 0 && !self.pool.take(pooled) {
            return Err(RequestBytesCap::Evaluator {
                cap: self.pool.cap,
                reserve: self.reserve,
            });
        }
        held.own += own;
        held.pooled += pooled;
        Ok(Held { own, pooled })
    }

    fn give_back(&self, grant: Held) {
        let mut held = lock(&self.held);
        held.own -= grant.own;
        held.pooled -= grant.pooled;
        self.pool.give_back(grant.pooled);
    }
}

/// Counts every request's body against its connection's bytes and bounds its time.
#[derive(Debug, Clone, Copy)]
pub(super) struct RequestBoundsLayer {
    pub timeout: Duration,
}

impl<S> Layer<S> for RequestBoundsLayer {
    type Service = RequestBounds<S>;

    fn layer(&self, inner: S) -> RequestBounds<S> {
        RequestBounds {
            inner,
            timeout: self.timeout,
        }
    }
}

#[derive(Debug, Clone)]
pub(super) struct RequestBounds<S> {
    inner: S,
    timeout: Duration,
}

type HttpResponse = Response<Body>;

impl<S> Service<Request<Body>> for RequestBounds<S>
where
    S: Service<Request<Body>, Response = HttpResponse, Error = Infallible>,
    S::Future: Send + 'static,
{
    type Response = HttpResponse;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<HttpResponse, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        // Refused here rather than by tonic, whose message repeats the header whole (up to the
        // header block's 16 KiB).
        if let Some(encoding) = request.headers().get("grpc-encoding")
            && encoding.as_bytes() != b"identity"
        {
            let encoding = String::from_utf8_lossy(encoding.as_bytes()).into_owned();
            let mut refused = Status::from(Error::UnsupportedEncoding(encoding)).into_http();
            refused.headers_mut().insert(
                "grpc-accept-encoding",
                tonic::codegen::http::HeaderValue::from_static("identity"),
            );
            return Box::pin(std::future::ready(Ok(refused)));
        }
        // Every connection a listener accepts carries its info; an in-process caller has none.
        let account = request
            .extensions()
            .get::<ConnectionInfo>()
            .map(|info| info.request_bytes.clone());
        let grant = account.map(Grant::new);
        let request = match &grant {
            Some(grant) => request.map(|body| Body::new(CountedBody::new(body, grant.clone()))),
            None => request,
        };
        let timeout = self.timeout;
        let answer = self.inner.call(request);
        Box::pin(async move {
            let answer = match tokio::time::timeout(timeout, answer).await {
                Ok(answer) => answer,
                Err(_) => Ok(Status::from(Error::RequestTimeout(timeout)).into_http()),
            };
            // Held until here (or until the body, should it outlive the answer, is dropped).
            drop(grant);
            answer
        })
    }
}

/// The bytes one request was granted, given back when the last of its holders (the body, the
/// request's answer) is dropped.
#[derive(Debug)]
struct Grant {
    account: Arc<ConnectionRequestBytes>,
    held: Mutex<Held>,
}

impl Grant {
    fn new(account: Arc<ConnectionRequestBytes>) -> Arc<Self> {
        Arc::new(Grant {
            account,
            held: Mutex::new(Held::default()),
        })
    }

    /// Grants `n` more bytes to the request.
    fn take(&self, n: usize) -> Result<(), RequestBytesCap> {
        let grant = self.account.take(n)?;
        let mut held = lock(&self.held);
        held.own += grant.own;
        held.pooled += grant.pooled;
        Ok(())
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        let held = *lock(&self.held);
        self.account.give_back(held);
    }
}

/// A request body whose frames are granted against its connection's bytes as they arrive.
struct CountedBody {
    inner: Body,
    grant: Arc<Grant>,
}

impl CountedBody {
    fn new(inner: Body, grant: Arc<Grant>) -> Self {
        CountedBody { inner, grant }
    }
}

impl http_body::Body for CountedBody {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        let frame = ready!(Pin::new(&mut this.inner).poll_frame(cx));
        let arrived = match &frame {
            Some(Ok(frame)) => frame.data_ref().map_or(0, Bytes::len),
            _ => 0,
        };
        if arrived > 0
            && let Err(cap) = this.grant.take(arrived)
        {
            return Poll::Ready(Some(Err(Error::TooManyRequestBytes(cap).into())));
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: usize = 1024;

    #[test]
    fn a_connection_uses_its_reserve_first_then_the_pool_and_gives_both_back() {
        let pool = RequestBytesPool::new(100 * KIB);
        let conn = ConnectionRequestBytes::new(200 * KIB, pool.clone());
        let small = conn.take(CONNECTION_RESERVE_BYTES - 1).unwrap();
        assert_eq!(pool.held(), 0, "the reserve comes first");
        let big = conn.take(10 * KIB).unwrap();
        assert_eq!(big.own, 1);
        assert_eq!(pool.held(), 10 * KIB - 1);
        conn.give_back(big);
        conn.give_back(small);
        assert_eq!(pool.held(), 0);
        assert_eq!(*lock(&conn.held), Held::default());
    }

    #[test]
    fn a_full_pool_refuses_large_requests_but_never_a_connections_reserve() {
        let pool = RequestBytesPool::new(100 * KIB);
        let hog = ConnectionRequestBytes::new(1024 * KIB, pool.clone());
        hog.take(CONNECTION_RESERVE_BYTES + 100 * KIB).unwrap();
        assert_eq!(
            hog.take(1),
            Err(RequestBytesCap::Evaluator {
                cap: 100 * KIB,
                reserve: CONNECTION_RESERVE_BYTES
            })
        );
        let other = ConnectionRequestBytes::new(1024 * KIB, pool.clone());
        other.take(CONNECTION_RESERVE_BYTES).unwrap();
        assert!(
            other.take(1).is_err(),
            "beyond its reserve, the pool is full"
        );
        assert_eq!(pool.held(), 100 * KIB, "a refusal takes nothing");
    }

    #[test]
    fn a_connection_never_holds_more_than_its_cap() {
        let pool = RequestBytesPool::new(1024 * KIB);
        let conn = ConnectionRequestBytes::new(100 * KIB, pool.clone());
        conn.take(100 * KIB).unwrap();
        assert_eq!(
            conn.take(1),
            Err(RequestBytesCap::Connection { cap: 100 * KIB })
        );
        assert_eq!(pool.held(), 100 * KIB - CONNECTION_RESERVE_BYTES);
    }
}
