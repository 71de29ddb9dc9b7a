//! `ale serve` as a process under hostile load: floods of uploads that stall, a SIGTERM while a
//! request is stalled, more idle connections than the open-file limit. The figures these tests
//! print are the ones docs/reliability.md quotes:
//!
//! ```sh
//! cargo test -p ale-tui --test resource_bounds -- --nocapture
//! ```

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
use raw_h2::{MAX_BODY, RawConnection, StalledCall};

const ALE: &str = env!("CARGO_BIN_EXE_ale");
const STEP: &str = "/ale.v1.AleEnv/Step";
const MB: f64 = 1e6;

/// A state dir as the evaluator requires one that exists: private.
fn private_tempdir() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .unwrap()
}

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
            .step(&ale_sims::Tensor::scalar_i64(i % 2))
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

/// What the evaluator's memory may reach under a flood, with the default bounds: the pool of
/// request bytes (64 MiB), 64 KiB reserved per connection, and what connections and their
/// streams cost. docs/reliability.md has the measured figures and the worst case.
const RSS_BOUND: u64 = 256_000_000;

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
    assert!(peak < RSS_BOUND, "RSS reached {:.1} MB", peak as f64 / MB);
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
    assert!(peak < RSS_BOUND, "RSS reached {:.1} MB", peak as f64 / MB);
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
        env.step(&ale_sims::Tensor::scalar_i64(1)).await.unwrap();
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
    let key = ale_proto::keys::read_public_key(&served.state.join("evaluator.pub")).unwrap();
    let verified = ale_harness::verify::verify_trajectory_file(&trajectory, &key).unwrap();
    let result = verified
        .trajectory
        .result
        .expect("the session was finished");
    assert_eq!(result.status, ale_proto::records::EvalStatus::EndedEarly);
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
