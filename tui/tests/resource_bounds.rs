//! `ale serve` as a process under hostile load: floods of uploads that stall, a SIGTERM while a
//! request is stalled, more idle connections than the open-file limit. The figures these tests
//! print are the ones docs/reliability.md quotes:
//!
//! ```sh
//! cargo test -p ale-tui --test resource_bounds -- --nocapture
//! ```

mod common;
#[path = "../../server/tests/common/raw_h2.rs"]
mod raw_h2;

use std::fs::File;
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ale_proto::pb;

use common::{ALE, private_tempdir};
use raw_h2::{MAX_BODY, RawConnection, StalledCall};

const STEP: &str = "/ale.v1.AleEnv/Step";
const MB: f64 = 1e6;

/// A running `ale serve` and what it announced; its log goes to `log`.
struct Served {
    child: Child,
    agent: SocketAddr,
    state: PathBuf,
    log: PathBuf,
}

impl Served {
    /// Starts `ale serve` on a free port with `flags`; `soft_open_files` lowers the soft
    /// open-file limit it starts with.
    fn start(dir: &Path, flags: &[&str], soft_open_files: Option<u64>) -> Served {
        let state = dir.join("state");
        let log = dir.join("serve.log");
        let mut command = Command::new(ALE);
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--state-dir"])
            .arg(&state)
            .args(flags)
            .env("RUST_LOG", "info")
            .stdout(Stdio::piped())
            .stderr(File::create(&log).unwrap());
        if let Some(soft) = soft_open_files {
            let hard = open_file_limit().1;
            // SAFETY: setrlimit is async-signal-safe; nothing else runs between fork and exec.
            unsafe {
                command.pre_exec(move || {
                    let limit = libc::rlimit {
                        rlim_cur: soft.min(hard),
                        rlim_max: hard,
                    };
                    if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let agent = BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                l.trim()
                    .strip_prefix("agent channel:")
                    .map(|e| e.trim().trim_start_matches("http://").parse().unwrap())
            })
            .expect("serve announces its agent channel");
        Served {
            child,
            agent,
            state,
            log,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://{}", self.agent)
    }

    fn harness_socket(&self) -> PathBuf {
        self.state.join("harness.sock")
    }

    /// Resident memory, in bytes (`VmRSS` of /proc/PID/status).
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let kib: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().strip_suffix("kB"))
            .map(|v| v.trim().parse().unwrap())
            .expect("VmRSS in /proc/PID/status");
        kib * 1024
    }

    /// Sends SIGTERM; answers how long the process took to exit, and whether it exited cleanly.
    fn terminate(&mut self) -> (Duration, bool) {
        let sent = Instant::now();
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return (sent.elapsed(), status.success());
            }
            assert!(
                sent.elapsed() < Duration::from_secs(30),
                "serve did not stop"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// This process's open-file limit, (soft, hard).
fn open_file_limit() -> (u64, u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    assert_eq!(
        unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
        0
    );
    (limit.rlim_cur, limit.rlim_max)
}

/// A practice env of cartpole that keeps stepping (reset when an episode ends) until `stop`;
/// counts the steps that succeeded and panics on any that failed.
async fn step_until(endpoint: String, stop: Arc<AtomicBool>, steps: Arc<AtomicUsize>) {
    let client = ale_client::Client::connect(&endpoint).await.unwrap();
    let mut env = client.create("cartpole-balance").await.unwrap();
    env.reset(Some(0)).await.unwrap();
    let mut i = 0i64;
    while !stop.load(Ordering::Relaxed) {
        let step = env
            .step(&ale_sim::Tensor::scalar_i64(i % 2))
            .await
            .expect("a normal client keeps stepping");
        i += 1;
        steps.fetch_add(1, Ordering::Relaxed);
        if step.is_done() {
            env.reset(None).await.unwrap();
        }
    }
}

/// How a flood's calls stall.
#[derive(Debug, Clone, Copy)]
struct Flood {
    connections: usize,
    streams: usize,
    /// Bytes of its 4 MiB message each call sends before it stalls.
    sent: usize,
}

/// Opens the flood's calls; answers the connections (held open) and the calls.
async fn flood(addr: SocketAddr, flood: Flood) -> (Vec<RawConnection>, Vec<StalledCall>) {
    let mut held = Vec::new();
    let mut calls = Vec::new();
    for _ in 0..flood.connections {
        let mut connection = RawConnection::tcp(addr).await.unwrap();
        for _ in 0..flood.streams {
            calls.push(
                connection
                    .stalled_call(STEP, MAX_BODY, flood.sent)
                    .await
                    .unwrap(),
            );
        }
        held.push(connection);
    }
    (held, calls)
}

/// What floods do to the evaluator's memory, sampled every 50 ms for `hold`, while a normal
/// client steps: (RSS before, highest RSS, steps taken meanwhile).
async fn attack(served: &Served, floods: &[Flood], hold: Duration) -> (u64, u64, usize) {
    let stop = Arc::new(AtomicBool::new(false));
    let steps = Arc::new(AtomicUsize::new(0));
    let stepper = tokio::spawn(step_until(served.endpoint(), stop.clone(), steps.clone()));
    while steps.load(Ordering::Relaxed) < 10 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = served.rss();
    let steps_before = steps.load(Ordering::Relaxed);
    let mut held = Vec::new();
    for how in floods {
        held.push(flood(served.agent, *how).await);
    }
    let mut peak = before;
    let until = Instant::now() + hold;
    while Instant::now() < until {
        peak = peak.max(served.rss());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stepped = steps.load(Ordering::Relaxed) - steps_before;
    stop.store(true, Ordering::Relaxed);
    stepper.await.unwrap();
    drop(held);
    (before, peak, stepped)
}

fn report(bounds: &str, floods: &[Flood], before: u64, peak: u64, stepped: usize) {
    let floods: Vec<String> = floods
        .iter()
        .map(|f| {
            format!(
                "{} connections x {} streams sending {} bytes of 4 MiB",
                f.connections, f.streams, f.sent
            )
        })
        .collect();
    eprintln!(
        "slow-request flood, {bounds}: {}; RSS {:.1} MB before, {:.1} MB at most; \
         {stepped} steps by a normal client meanwhile",
        floods.join(" + "),
        before as f64 / MB,
        peak as f64 / MB,
    );
}

/// How far the evaluator's memory may grow under a flood, with the default bounds: the pool of
/// request bytes (64 MiB), 64 KiB reserved per connection, and what connections and their
/// streams cost. docs/reliability.md has the measured figures and the worst case. Growth, not
/// the total: the evaluator's own footprint before any client is not the clients' to spend
/// ([`EVALUATOR_OWN_BOUND`]).
const RSS_GROWTH_BOUND: u64 = 200_000_000;

/// The evaluator's own memory once serving, before any client, its catalog's compiled MuJoCo
/// models among it: about 22 MB in a release build, 31 MB in a debug one (docs/reliability.md).
#[cfg(feature = "mujoco")]
const EVALUATOR_OWN_BOUND: u64 = 80_000_000;

#[cfg(feature = "mujoco")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_evaluators_own_footprint_before_any_client_is_small() {
    let dir = private_tempdir();
    let served = Served::start(dir.path(), &[], None);
    // A first call: the evaluator is serving, every task loaded.
    let client = ale_client::Client::connect(&served.endpoint())
        .await
        .unwrap();
    assert!(!client.list_tasks().await.unwrap().is_empty());
    let own = served.rss();
    eprintln!("the evaluator's own RSS: {:.1} MB", own as f64 / MB);
    assert!(
        own < EVALUATOR_OWN_BOUND,
        "the evaluator holds {:.1} MB before any client's work",
        own as f64 / MB
    );
}

/// Regression: streams that each sent most of a 4 MiB request and stalled were held forever,
/// about 4 MiB each (811 MB for 200 streams).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_stalled_uploads_holds_memory_bounded_while_a_client_steps() {
    let dir = private_tempdir();
    let served = Served::start(dir.path(), &[], None);
    // 32 connections × 16 streams (the default cap per connection) × 4 MiB = 2 GiB announced.
    let floods = [Flood {
        connections: 32,
        streams: 16,
        sent: MAX_BODY - 1024,
    }];
    let (before, peak, stepped) = attack(&served, &floods, Duration::from_secs(4)).await;
    report("default bounds", &floods, before, peak, stepped);
    assert!(
        peak.saturating_sub(before) < RSS_GROWTH_BOUND,
        "RSS grew from {:.1} MB to {:.1} MB",
        before as f64 / MB,
        peak as f64 / MB
    );
    assert!(stepped >= 100, "the normal client made {stepped} steps");
}

/// The most the default caps let clients hold: uploads that fill the shared pool, and every
/// other stream of every other agent connection open, stalled after 4 KiB (so that each
/// connection's reserve is full too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_most_stalled_calls_the_caps_allow_hold_memory_bounded() {
    let dir = private_tempdir();
    let served = Served::start(dir.path(), &[], None);
    // 16 + 239 = 255 connections: the normal client holds the 256th.
    let floods = [
        Flood {
            connections: 16,
            streams: 16,
            sent: MAX_BODY - 1024,
        },
        Flood {
            connections: 239,
            streams: 16,
            sent: 4 * 1024,
        },
    ];
    let (before, peak, stepped) = attack(&served, &floods, Duration::from_secs(4)).await;
    report("default bounds", &floods, before, peak, stepped);
    assert!(
        peak.saturating_sub(before) < RSS_GROWTH_BOUND,
        "RSS grew from {:.1} MB to {:.1} MB",
        before as f64 / MB,
        peak as f64 / MB
    );
    assert!(stepped >= 100, "the normal client made {stepped} steps");
}

/// The first flood with the bounds lifted, to show what they prevent:
/// `cargo test -p ale-tui --test resource_bounds -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "uses about 1 GB of memory; run by hand"]
async fn the_same_flood_without_bounds() {
    let dir = private_tempdir();
    let lifted = [
        "--max-concurrent-streams",
        "1000000",
        "--max-connection-request-bytes",
        "100000000000",
        "--max-request-bytes",
        "100000000000",
    ];
    let served = Served::start(dir.path(), &lifted, None);
    let floods = [Flood {
        connections: 8,
        streams: 25,
        sent: MAX_BODY - 1024,
    }];
    let (before, peak, stepped) = attack(&served, &floods, Duration::from_secs(8)).await;
    report("bounds lifted", &floods, before, peak, stepped);
}

/// Regression: one stalled request kept `ale serve` running 20 s and more after SIGTERM, its
/// session open until the client closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_ends_a_stalled_request_at_the_deadline_and_the_session_verifies() {
    let dir = private_tempdir();
    let mut served = Served::start(dir.path(), &[], None);
    let mut harness = ale_harness::channel::connect(&served.harness_socket())
        .await
        .unwrap();
    let official = harness
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let client = ale_client::Client::connect(&served.endpoint())
        .await
        .unwrap();
    let mut env = client
        .attach(ale_proto::EnvHandle::from_wire(official.handle))
        .await
        .unwrap();
    env.start_eval_session().await.unwrap();
    env.reset(None).await.unwrap();
    for _ in 0..5 {
        env.step(&ale_sim::Tensor::scalar_i64(1)).await.unwrap();
    }
    let mut raw = RawConnection::tcp(served.agent).await.unwrap();
    let _stalled = raw.stalled_call(STEP, 1000, 10).await.unwrap();
    // Time for the evaluator to read the call, so SIGTERM finds it in flight.
    tokio::time::sleep(Duration::from_millis(300)).await;

    let deadline = Duration::from_secs(5);
    let (took, clean) = served.terminate();
    eprintln!("SIGTERM with a stalled request: exited after {took:?} (deadline {deadline:?})");
    assert!(clean, "exited cleanly");
    assert!(
        took >= deadline - Duration::from_millis(500),
        "{took:?}: the stall held it"
    );
    assert!(took < deadline + Duration::from_secs(2), "{took:?}");

    let trajectory = served
        .state
        .join("runs")
        .join(&official.run_id)
        .join("trajectory.jsonl");
    let out = Command::new(ALE)
        .args(["harness", "verify", "--json", "--state-dir"])
        .arg(&served.state)
        .arg(&trajectory)
        .output()
        .unwrap();
    let verdict: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(verdict["verdict"], "verified", "{verdict}");
    let key =
        ale_records::signing_keys::read_public_key(&served.state.join("evaluator.pub")).unwrap();
    let verified = ale_harness::verify::verify_trajectory_file(&trajectory, &key).unwrap();
    let result = verified
        .trajectory
        .result
        .expect("the session was finished");
    assert_eq!(result.status, ale_proto::eval::EvalStatus::EvaluatorEnded);
    assert!(
        result.status_message.contains("shut down"),
        "{}",
        result.status_message
    );
}

/// Regression: with the soft open-file limit at 1,024, 1,100 idle TCP connections made both
/// channels time out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_connections_past_the_cap_are_closed_and_the_harness_still_answers() {
    let dir = private_tempdir();
    let served = Served::start(dir.path(), &[], Some(1024));
    let limits = std::fs::read_to_string(format!("/proc/{}/limits", served.child.id())).unwrap();
    let open_files: Vec<&str> = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap()
        .split_whitespace()
        .collect();
    assert_eq!(
        open_files[3], open_files[4],
        "soft raised to hard: {limits}"
    );

    let cap = 256; // --max-agent-connections
    let attempts = 1100;
    let (_, hard) = open_file_limit();
    // SAFETY: raising this test's own soft limit to its hard limit, to hold 1,100 sockets.
    unsafe {
        let limit = libc::rlimit {
            rlim_cur: hard,
            rlim_max: hard,
        };
        libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
    }
    let mut idle = Vec::new();
    for _ in 0..attempts {
        idle.push(tokio::net::TcpStream::connect(served.agent).await.unwrap());
    }
    // The harness channel answers at once: its connections are not counted against the agent
    // cap, and file descriptors are kept for them.
    let started = Instant::now();
    let mut harness = tokio::time::timeout(
        Duration::from_secs(5),
        ale_harness::channel::connect(&served.harness_socket()),
    )
    .await
    .expect("the harness channel answers")
    .unwrap();
    harness
        .create_env(pb::CreateEnvRequest {
            task_id: "cartpole-balance".into(),
            official: true,
            ..Default::default()
        })
        .await
        .unwrap();
    eprintln!(
        "{attempts} idle agent connections: the harness channel answered in {:?}",
        started.elapsed()
    );

    let closed = || {
        let mut buf = [0u8; 64];
        idle.iter()
            .filter(|stream| match stream.try_read(&mut buf) {
                Ok(0) => true,
                Ok(_) => false,
                Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
            })
            .count()
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while closed() < attempts - cap && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        closed(),
        attempts - cap,
        "the connections past the cap are closed"
    );
    let log = std::fs::read_to_string(&served.log).unwrap();
    assert!(
        log.contains("refused a connection") && log.contains("--max-agent-connections"),
        "{log}"
    );
}

/// HTTP/2 frames, written by hand for a client that breaks the rules a library keeps.
mod frames {
    pub const DATA: u8 = 0;
    pub const HEADERS: u8 = 1;
    pub const SETTINGS: u8 = 4;
    pub const WINDOW_UPDATE: u8 = 8;
    pub const END_STREAM: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
    pub const ACK: u8 = 0x1;
    pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

    pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let len = payload.len() as u32;
        let mut out = len.to_be_bytes()[1..].to_vec();
        out.extend([kind, flags]);
        out.extend(stream.to_be_bytes());
        out.extend(payload);
        out
    }

    /// A header block of literal fields (never indexed, no Huffman), each name and value
    /// under 127 bytes.
    pub fn headers(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        for (name, value) in fields {
            out.push(0x00);
            out.push(name.len() as u8);
            out.extend(name.as_bytes());
            out.push(value.len() as u8);
            out.extend(value.as_bytes());
        }
        out
    }
}

/// Found by an attacker helper: a client that sends requests and never reads their answers
/// blocked the evaluator's writes, the evaluator then stopped reading, and the idle timer,
/// checked only when a read waited, never fired: the connection (its place under the cap,
/// megabytes of socket buffers) was held for good. Now a write that cannot go on for the idle
/// timeout closes the connection too.
#[test]
fn a_client_that_never_reads_its_answers_is_closed_at_the_idle_timeout() {
    use frames::*;
    use std::io::{Read, Write};
    let dir = private_tempdir();
    let served = Served::start(dir.path(), &["--idle-timeout", "2"], None);
    let mut stream = std::net::TcpStream::connect(served.agent).unwrap();
    // The largest windows there are, so only the socket buffers hold the answers back.
    let mut hello = PREFACE.to_vec();
    hello.extend(frame(SETTINGS, 0, 0, &[0, 4, 0x7f, 0xff, 0xff, 0xff]));
    hello.extend(frame(
        WINDOW_UPDATE,
        0,
        0,
        &(0x7fff_ffffu32 - 65_535).to_be_bytes(),
    ));
    stream.write_all(&hello).unwrap();
    // Read up to the evaluator's SETTINGS, and acknowledge them; nothing is read after that.
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !(seen.len() >= 9 && seen[3] == SETTINGS) {
        let n = stream.read(&mut buf).unwrap();
        assert!(n > 0, "the evaluator closed the connection at once");
        seen.extend_from_slice(&buf[..n]);
    }
    stream.write_all(&frame(SETTINGS, ACK, 0, &[])).unwrap();

    // ListTasks (15 KB an answer) again and again, for three seconds, never reading.
    let request = headers(&[
        (":method", "POST"),
        (":scheme", "http"),
        (":path", "/ale.v1.Catalog/ListTasks"),
        (":authority", "localhost"),
        ("content-type", "application/grpc"),
        ("te", "trailers"),
    ]);
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut id = 1u32;
            while started.elapsed() < Duration::from_secs(3) {
                let mut batch = Vec::new();
                for _ in 0..8 {
                    batch.extend(frame(HEADERS, END_HEADERS, id, &request));
                    batch.extend(frame(DATA, END_STREAM, id, &[0; 5]));
                    id += 2;
                }
                // Once the evaluator stops reading, this blocks: the requests are all sent.
                if stream.write_all(&batch).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            id / 2
        })
    };
    // The writer may be blocked for good; it is left behind, the connection decides.
    std::thread::sleep(Duration::from_secs(3) + Duration::from_secs(2) + Duration::from_secs(2));

    // Now read: a closed connection gives its buffered answers and then its end, at once; one
    // still open would give its answers and then fall silent.
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut answered = 0usize;
    let closed = loop {
        match stream.read(&mut buf) {
            Ok(0) => break true,
            Ok(n) => answered += n,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => break true,
            Err(e) => {
                assert!(
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ),
                    "{e}"
                );
                break false;
            }
        }
    };
    eprintln!(
        "{} requests sent; {answered} bytes of answers were waiting",
        if writer.is_finished() {
            writer.join().unwrap().to_string()
        } else {
            "more than the evaluator read".to_string()
        }
    );
    // More than HTTP/2's default window (65,535 bytes) was waiting: the windows were open,
    // and the socket buffers, full, held the answers back.
    assert!(
        answered > 65_535,
        "the answers never filled the buffers ({answered} bytes): the test proves nothing"
    );
    assert!(closed, "the connection is still open past its idle timeout");
}

/// A `StepRequest` of exactly `len` bytes whose action's shape is `len / 2` dimensions of 1,
/// each a field of its own (unpacked): 2 bytes on the wire, 8 once decoded, the costliest
/// message there is to decode.
fn costly_step(len: usize) -> tonic::codegen::Bytes {
    let varint = |mut n: usize| {
        let mut out = Vec::new();
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return out;
            }
            out.push(byte | 0x80);
        }
    };
    // handle = "x"; action = Tensor { shape: [1, 1, …] }.
    let mut message = vec![0x0a, 0x01, b'x', 0x12];
    let dims = (len - 12) / 2;
    message.extend(varint(dims * 2));
    for _ in 0..dims {
        message.extend([0x10, 0x01]);
    }
    message.into()
}

/// Found by an attacker helper: complete 4 MiB requests, sent back to back on 256
/// connections, took the evaluator to 440–700 MB, and it kept most of it after the flood. A
/// request's bytes were counted only while it arrived, not while it was decoded (a shape
/// unpacked on the wire decodes to four times its size) and handled, and the allocator kept the
/// freed buffers. Now a request holds its bytes until it is answered, and large buffers go back
/// to the system when freed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_whole_large_requests_holds_memory_bounded_and_gives_it_back() {
    let dir = private_tempdir();
    let served = Served::start(dir.path(), &[], None);
    let message = costly_step(MAX_BODY - 64);
    let before = served.rss();
    let stop = Arc::new(AtomicBool::new(false));
    let answered = Arc::new(AtomicUsize::new(0));
    let mut callers = Vec::new();
    let mut connections = Vec::new();
    for _ in 0..32 {
        let connection = RawConnection::tcp(served.agent).await.unwrap();
        for _ in 0..8 {
            let (mut connection, message) = (connection.caller(), message.clone());
            let (stop, answered) = (stop.clone(), answered.clone());
            callers.push(tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let (code, why) = connection
                        .call(STEP, message.clone())
                        .await
                        .expect("the evaluator answers every call; no connection is broken");
                    // INVALID_ARGUMENT (the tensor has no data), or RESOURCE_EXHAUSTED from a
                    // full pool.
                    assert!(code == 3 || code == 8, "code {code}: {why}");
                    answered.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        connections.push(connection);
    }
    let mut peak = before;
    let until = Instant::now() + Duration::from_secs(8);
    while Instant::now() < until {
        peak = peak.max(served.rss());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for caller in callers {
        caller.await.expect("a caller failed");
    }
    drop(connections);
    // The connections close and their buffers go back; on a loaded machine that takes a while.
    let mut after = served.rss();
    for _ in 0..50 {
        if after < before + 25_000_000 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        after = served.rss();
    }
    eprintln!(
        "whole-request flood: 32 connections x 8 calls of a 4 MiB Step at a time, {} answered \
         in 8 s; RSS {:.1} MB before, {:.1} MB at most, {:.1} MB after",
        answered.load(Ordering::Relaxed),
        before as f64 / MB,
        peak as f64 / MB,
        after as f64 / MB
    );
    assert!(
        answered.load(Ordering::Relaxed) > 100,
        "the flood was answered"
    );
    assert!(
        peak.saturating_sub(before) < RSS_GROWTH_BOUND,
        "RSS grew from {:.1} MB to {:.1} MB",
        before as f64 / MB,
        peak as f64 / MB
    );
    assert!(
        after < before + 25_000_000,
        "RSS stayed at {:.1} MB after the flood",
        after as f64 / MB
    );
}
