//! A raw HTTP/2 client, to send what no gRPC client would: a call whose request body stops
//! halfway and never ends.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::Path;

use h2::client::{ResponseFuture, SendRequest};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, UnixStream};
use tokio::task::JoinHandle;
use tonic::codegen::Bytes;
use tonic::codegen::http;

/// The largest body a stalled call sends; zeros, shared by every call.
pub const MAX_BODY: usize = 4 * 1024 * 1024;
static ZEROS: [u8; MAX_BODY] = [0; MAX_BODY];

/// One HTTP/2 connection; its frames are read and written by a task of its own.
pub struct RawConnection {
    send: SendRequest<Bytes>,
    /// Ends when the connection does: `Ok` if the server closed it, `Err` if it broke.
    pub driver: JoinHandle<Result<(), h2::Error>>,
}

impl RawConnection {
    pub async fn tcp(addr: SocketAddr) -> Result<RawConnection, h2::Error> {
        let io = TcpStream::connect(addr)
            .await
            .expect("the evaluator listens");
        Self::over(io).await
    }

    pub async fn unix(path: &Path) -> Result<RawConnection, h2::Error> {
        let io = UnixStream::connect(path)
            .await
            .expect("the evaluator listens");
        Self::over(io).await
    }

    async fn over<IO>(io: IO) -> Result<RawConnection, h2::Error>
    where
        IO: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let (send, connection) = h2::client::handshake(io).await?;
        let driver = tokio::spawn(connection);
        // The handshake is only written above; a server that refused the connection shows it
        // when the first frames are exchanged.
        let send = send.ready().await?;
        Ok(RawConnection { send, driver })
    }

    /// Opens a call to `method` (`"/ale.v1.AleEnv/Step"`), sends the gRPC prefix announcing a
    /// message of `announced` bytes and then `sent` bytes of it, and stops: the request never
    /// ends. h2 sends the bytes as the server's flow-control windows let it.
    pub async fn stalled_call(
        &mut self,
        method: &str,
        announced: usize,
        sent: usize,
    ) -> Result<StalledCall, h2::Error> {
        let request = http::Request::post(format!("http://localhost{method}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("a valid request");
        let mut send = self.send.clone().ready().await?;
        let (response, mut body) = send.send_request(request, false)?;
        let mut prefix = vec![0u8];
        prefix.extend_from_slice(&u32::try_from(announced).unwrap().to_be_bytes());
        body.send_data(Bytes::from(prefix), false)?;
        body.send_data(Bytes::from_static(&ZEROS[..sent]), false)?;
        Ok(StalledCall { response, body })
    }
}

impl RawConnection {
    /// A handle that makes whole calls on this connection, for as long as it is open.
    pub fn caller(&self) -> Caller {
        Caller {
            send: self.send.clone(),
        }
    }
}

/// Makes whole calls on a [`RawConnection`]; clones share it.
#[derive(Clone)]
pub struct Caller {
    send: SendRequest<Bytes>,
}

impl Caller {
    /// Sends one whole call to `method` with `message` (the gRPC prefix added) and waits for
    /// its answer's status, as `(code, message)`.
    pub async fn call(&mut self, method: &str, message: Bytes) -> Result<(i32, String), h2::Error> {
        let request = http::Request::post(format!("http://localhost{method}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .expect("a valid request");
        let mut send = self.send.clone().ready().await?;
        let (response, mut body) = send.send_request(request, false)?;
        let mut prefix = vec![0u8];
        prefix.extend_from_slice(&u32::try_from(message.len()).unwrap().to_be_bytes());
        body.send_data(Bytes::from(prefix), false)?;
        body.send_data(message, true)?;
        let response = response.await?;
        let (head, mut answer) = response.into_parts();
        // A trailers-only answer carries its status in the headers; others in the trailers.
        let status = match head.headers.get("grpc-status") {
            Some(_) => head.headers,
            None => {
                while let Some(data) = answer.data().await {
                    let data = data?;
                    let _ = answer.flow_control().release_capacity(data.len());
                }
                answer.trailers().await?.unwrap_or_default()
            }
        };
        let header = |name: &str| {
            status
                .get(name)
                .map(|v| v.to_str().unwrap_or_default().to_string())
        };
        let code = header("grpc-status").map_or(-1, |c| c.parse().unwrap_or(-1));
        Ok((
            code,
            percent_decode(&header("grpc-message").unwrap_or_default()),
        ))
    }
}

/// A call whose request is left unfinished.
pub struct StalledCall {
    pub response: ResponseFuture,
    /// Held so the request stays open; dropping it would end the stream.
    pub body: h2::SendStream<Bytes>,
}

impl StalledCall {
    /// The gRPC status the server answered with, as `(code, message)`; waits for the answer.
    pub async fn status(self) -> Result<(i32, String), h2::Error> {
        let response = self.response.await?;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .map(|v| v.to_str().unwrap_or_default().to_string())
        };
        let code = header("grpc-status")
            .expect("an answer to an unfinished request is trailers-only")
            .parse()
            .unwrap();
        let message = header("grpc-message").unwrap_or_default();
        let message = percent_decode(&message);
        Ok((code, message))
    }
}

/// gRPC percent-encodes `grpc-message`.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], bytes.get(i + 1..i + 3)) {
            (b'%', Some(hex)) => {
                let hex = std::str::from_utf8(hex).unwrap();
                out.push(u8::from_str_radix(hex, 16).unwrap());
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
