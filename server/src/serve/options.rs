//! What an operator tunes about the listeners: how much any client can make the evaluator hold
//! (connections, streams, request bytes, time) and how long a shutdown waits. docs/reliability.md
//! gives the reasons for each default and the worst case they add up to.

use std::time::Duration;

/// The largest request a client may send, in bytes.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// Bytes of unfinished request bodies each connection may hold without drawing on the shared
/// pool ([`ServeOptions::max_request_bytes`]): every request of the protocol but a hostile one
/// fits, so a connection sending ordinary requests is never refused because others filled the
/// pool.
pub const CONNECTION_RESERVE_BYTES: usize = 64 * 1024;

/// The HTTP/2 flow-control window the evaluator grants each stream: what a client may send on a
/// stream before the evaluator has read it.
pub const STREAM_WINDOW_BYTES: u32 = 64 * 1024;

/// The HTTP/2 flow-control window of a whole connection: what a client may send on all its
/// streams together before the evaluator has read it.
pub const CONNECTION_WINDOW_BYTES: u32 = 256 * 1024;

/// The largest header block (decoded) one request may carry; gRPC metadata is a few hundred
/// bytes.
pub const MAX_HEADER_LIST_BYTES: u32 = 16 * 1024;

/// The bounds on what clients can make the evaluator hold, and the shutdown deadline. Each field
/// is an `ale serve` flag.
///
/// ```
/// use std::time::Duration;
/// use ale_server::serve::ServeOptions;
/// let options = ServeOptions {
///     max_agent_connections: 16,
///     shutdown_deadline: Duration::from_secs(1),
///     ..ServeOptions::default()
/// };
/// assert!(options.max_connection_request_bytes > ale_server::serve::MAX_MESSAGE_BYTES);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeOptions {
    /// Agent-channel connections open at once, TCP and Unix socket together
    /// (`--max-agent-connections`). A connection beyond it is closed as soon as it is accepted.
    /// Lowered at start if the open-file limit cannot hold it beside the harness's reserve.
    pub max_agent_connections: usize,
    /// Harness-channel connections open at once (`--max-harness-connections`); they are never
    /// counted against the agent cap, and file descriptors are set aside for them.
    pub max_harness_connections: usize,
    /// Requests (HTTP/2 streams) one connection may have open at once
    /// (`--max-concurrent-streams`); clients queue the rest on their side.
    pub max_concurrent_streams: u32,
    /// Bytes of unfinished request bodies one connection may hold
    /// (`--max-connection-request-bytes`); at least one largest message.
    pub max_connection_request_bytes: usize,
    /// Bytes of unfinished request bodies all connections together may hold beyond each one's
    /// [`CONNECTION_RESERVE_BYTES`] (`--max-request-bytes`).
    pub max_request_bytes: usize,
    /// How long one request may take from its headers to its answer (`--request-timeout`).
    pub request_timeout: Duration,
    /// An agent-channel connection that sends and receives nothing for this long is closed
    /// (`--idle-timeout`); clients reconnect on their next call.
    pub idle_timeout: Duration,
    /// How long a shutdown waits for requests in flight before it drops the connections and
    /// ends the sessions anyway (`--shutdown-deadline`).
    pub shutdown_deadline: Duration,
    /// Connections open at once on one run's own agent socket (`--max-run-connections`);
    /// counted apart from the shared agent channel's and every other run's.
    pub max_run_connections: usize,
    /// Bytes of unfinished request bodies all connections of one run's agent socket may hold
    /// beyond each one's [`CONNECTION_RESERVE_BYTES`] (`--max-run-request-bytes`): each run's
    /// own pool, so no run's agent can drain another's or the shared one.
    pub max_run_request_bytes: usize,
    /// How long a run's agent socket keeps its connections once the run has ended, so the
    /// agent can read its last answers (a batch run's final status); no new connection is
    /// accepted meanwhile (`--run-linger`).
    pub run_linger: Duration,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_agent_connections: 256,
            max_harness_connections: 64,
            max_concurrent_streams: 16,
            max_connection_request_bytes: MAX_MESSAGE_BYTES + CONNECTION_RESERVE_BYTES,
            max_request_bytes: 64 * 1024 * 1024,
            request_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
            shutdown_deadline: Duration::from_secs(5),
            max_run_connections: 16,
            max_run_request_bytes: 2 * MAX_MESSAGE_BYTES,
            run_linger: Duration::from_secs(10),
        }
    }
}
