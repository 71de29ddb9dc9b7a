//! A host process: started through a [`Launcher`], spoken to over its stdin and stdout, its
//! stderr's tail kept to say why it failed, killed when dropped or reaped when idle.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use ale_proto::sim_host_pb as hp;
use ale_sim::Holder;
use prost::Message;

use crate::frame::{self, FrameError};

/// The most characters of a host's `Failure` message kept.
pub const MAX_FAILURE_CHARS: usize = 2000;

/// The most bytes of a host's stderr kept for error messages.
pub const STDERR_TAIL_BYTES: usize = 4096;

/// What a host process runs: a program and its arguments, and what it may use.
#[derive(Debug, Clone, PartialEq)]
pub struct HostCommand {
    /// A program name looked up in `PATH`, or a path.
    pub program: String,
    pub args: Vec<String>,
    /// Variables added to the host's otherwise minimal environment.
    pub env: Vec<(String, String)>,
    /// The host's memory, in bytes.
    pub memory_bytes: u64,
    /// Folders the host must see that lie in users' homes (which an isolated host of a root
    /// evaluator does not see): besides its program's installation, found by itself.
    pub expose: Vec<PathBuf>,
}

/// How a host process is started, decided by the binary: a plain child process of the
/// evaluator ([`PlainLauncher`]), or one in the agent sandbox's namespaces (the `ale` binary's
/// launcher), where it has no network and no sight of the state dir.
pub trait Launcher: Send + Sync + std::fmt::Debug {
    /// The command that starts `host` (its stdio is set by the caller).
    fn prepare(&self, host: &HostCommand) -> Result<Command, String>;

    /// How the host is confined, for logs and docs: "sandboxed (offline, no state dir)".
    fn describe(&self) -> String;
}

/// Starts the host as a plain child of the evaluator, as the evaluator's user: its memory
/// bounded (`RLIMIT_AS`), killed with the evaluator (`PR_SET_PDEATHSIG`), in a session of its
/// own. No namespaces: it sees what the evaluator sees. For tests and for machines where the
/// sandbox cannot be built; the `ale` binary uses its sandbox.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlainLauncher;

impl Launcher for PlainLauncher {
    fn prepare(&self, host: &HostCommand) -> Result<Command, String> {
        use std::os::unix::process::CommandExt;
        let mut command = Command::new(&host.program);
        command.args(&host.args).env_clear();
        for key in ["PATH", "LANG", "HOME"] {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        command.envs(host.env.iter().map(|(k, v)| (k, v)));
        let memory = host.memory_bytes;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                libc::setsid();
                let limit = libc::rlimit {
                    rlim_cur: memory,
                    rlim_max: memory,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                crate::isolation::close_inherited_at_exec()
            });
        }
        Ok(command)
    }

    fn describe(&self) -> String {
        "a plain child process (not sandboxed)".into()
    }
}

/// How many hosts may run at once: for official rollouts (interactive and batch), and for
/// practice envs, in total and per run. Official hosts have a pool of their own, so no
/// practice can starve an official rollout, and one run's practice takes at most its share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimits {
    pub official: usize,
    pub practice: usize,
    pub practice_per_run: usize,
}

impl HostLimits {
    /// The same limit everywhere (for tests).
    pub fn all(n: usize) -> HostLimits {
        HostLimits {
            official: n,
            practice: n,
            practice_per_run: n,
        }
    }
}

#[derive(Debug, Default)]
struct Counts {
    official: usize,
    practice: usize,
    per_scope: HashMap<Option<u64>, usize>,
}

/// The hosts that run, counted against [`HostLimits`].
#[derive(Debug)]
pub struct HostSlots {
    limits: HostLimits,
    counts: Mutex<Counts>,
}

impl HostSlots {
    pub fn new(limits: HostLimits) -> Arc<HostSlots> {
        Arc::new(HostSlots {
            limits,
            counts: Mutex::new(Counts::default()),
        })
    }

    pub fn limits(&self) -> HostLimits {
        self.limits
    }

    /// Hosts running now, of every holder.
    pub fn live(&self) -> usize {
        let counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        counts.official + counts.practice
    }

    fn take(self: &Arc<Self>, holder: Holder) -> Result<Slot, HostError> {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let l = self.limits;
        match holder {
            Holder::Official if counts.official >= l.official => Err(HostError::NoSlot(format!(
                "the evaluator already runs {} sim hosts for official rollouts, its limit \
                 (`ale serve --max-sim-hosts`)",
                l.official
            ))),
            Holder::Official => {
                counts.official += 1;
                Ok(Slot(self.clone(), holder))
            }
            Holder::Practice { .. } if counts.practice >= l.practice => {
                Err(HostError::NoSlot(format!(
                    "the evaluator already runs {} sim hosts for practice envs, its limit \
                     (`ale serve --max-practice-sim-hosts`); close an env and try again",
                    l.practice
                )))
            }
            Holder::Practice { scope } => {
                let held = counts.per_scope.entry(scope).or_default();
                if *held >= l.practice_per_run {
                    return Err(HostError::NoSlot(format!(
                        "{} practice envs of {} already hold a sim host, the limit for one run \
                         (`ale serve --max-run-practice-sim-hosts`); close one and try again",
                        l.practice_per_run,
                        if scope.is_some() {
                            "this run"
                        } else {
                            "the shared agent channel"
                        }
                    )));
                }
                *held += 1;
                counts.practice += 1;
                Ok(Slot(self.clone(), holder))
            }
        }
    }

    fn give_back(&self, holder: Holder) {
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        match holder {
            Holder::Official => counts.official -= 1,
            Holder::Practice { scope } => {
                counts.practice -= 1;
                if let Some(held) = counts.per_scope.get_mut(&scope) {
                    *held -= 1;
                    if *held == 0 {
                        counts.per_scope.remove(&scope);
                    }
                }
            }
        }
    }
}

/// One host's place in [`HostSlots`], given back when the host is gone.
#[derive(Debug)]
struct Slot(Arc<HostSlots>, Holder);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.give_back(self.1);
    }
}

/// Why a host cannot serve.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HostError {
    /// Every host slot this env could take is taken: which limit, and what to do.
    #[error("{0}")]
    NoSlot(String),
    #[error("cannot start its host: {0}")]
    Spawn(String),
    /// The host failed: the cause, and its stderr's tail.
    #[error("{cause}{}", tail_note(.stderr_tail))]
    Failed { cause: String, stderr_tail: String },
}

fn tail_note(tail: &str) -> String {
    if tail.trim().is_empty() {
        " (its stderr was empty)".into()
    } else {
        format!("; the tail of its stderr:\n{}", tail.trim_end())
    }
}

/// The timeouts of one host.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timeouts {
    /// From start to the answer to `Hello` (imports, model loading).
    pub start: Duration,
    /// Every later request.
    pub call: Duration,
}

/// A running host process.
pub struct HostProcess {
    child: Child,
    stdin: ChildStdin,
    stdout: ChildStdout,
    stderr: Arc<Mutex<VecDeque<u8>>>,
    watch: Arc<Watched>,
    timeouts: Timeouts,
    max_frame: u64,
    write_buf: Vec<u8>,
    read_buf: Vec<u8>,
}

impl std::fmt::Debug for HostProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostProcess")
            .field("pid", &self.child.id())
            .finish_non_exhaustive()
    }
}

/// What the idle reaper knows of a host.
#[derive(Debug)]
struct Watched {
    pid: u32,
    /// Milliseconds since [`epoch`] of the last request's start or end.
    last_used: AtomicU64,
    idle_limit: Duration,
    /// A call is in flight: the host is working, not idle.
    busy: AtomicBool,
    /// An episode is in play on it; an official one's host is never reaped then (the
    /// session's time budget bounds it), a practice one's is.
    in_episode: AtomicBool,
    practice: bool,
    life: Mutex<Life>,
}

/// Whether the host's pid still names it, and its slot: changed only under the lock, so the
/// reaper never signals a pid that was reaped (and perhaps reused) meanwhile.
#[derive(Debug)]
struct Life {
    alive: bool,
    reaped: bool,
    /// Given back when the host is reaped or gone.
    slot: Option<Slot>,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

fn now_ms() -> u64 {
    epoch().elapsed().as_millis() as u64
}

/// Hosts the reaper watches.
fn watched() -> &'static Mutex<Vec<Weak<Watched>>> {
    static WATCHED: OnceLock<Mutex<Vec<Weak<Watched>>>> = OnceLock::new();
    WATCHED.get_or_init(|| {
        std::thread::Builder::new()
            .name("ale-sim-host-reaper".into())
            .spawn(reap_idle_hosts)
            .expect("a thread can be started at the first host");
        Mutex::new(Vec::new())
    })
}

/// Kills hosts left unused longer than their idle limit; their env starts a fresh host when
/// it is next reset.
fn reap_idle_hosts() {
    loop {
        std::thread::sleep(Duration::from_secs(1));
        let mut hosts = watched().lock().unwrap_or_else(|p| p.into_inner());
        hosts.retain(|w| w.strong_count() > 0);
        let now = now_ms();
        for host in hosts.iter().filter_map(Weak::upgrade) {
            let idle = now.saturating_sub(host.last_used.load(Ordering::SeqCst));
            let limit = u64::try_from(host.idle_limit.as_millis()).unwrap_or(u64::MAX);
            let reapable = !host.busy.load(Ordering::SeqCst)
                && (host.practice || !host.in_episode.load(Ordering::SeqCst));
            if idle < limit || !reapable {
                continue;
            }
            let mut life = host.life.lock().unwrap_or_else(|p| p.into_inner());
            if !life.alive || life.reaped {
                continue;
            }
            tracing::info!(
                pid = host.pid,
                idle_s = idle / 1000,
                "reaping an idle sim host"
            );
            // SAFETY: kill(2) on the host's pid, which names it while `alive` (its owner
            // clears that, under this lock, before reaping the child).
            unsafe {
                libc::kill(host.pid as i32, libc::SIGKILL);
            }
            life.reaped = true;
            life.slot = None;
        }
    }
}

/// Hosts are started from one long-lived thread: `PR_SET_PDEATHSIG` fires when the thread
/// that forked the child ends, and the evaluator's blocking threads come and go.
fn spawn(mut command: Command) -> std::io::Result<Child> {
    type Job = (Command, mpsc::Sender<std::io::Result<Child>>);
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let sender = SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("ale-sim-host-spawner".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })
            .expect("a thread can be started at the first host");
        Mutex::new(tx)
    });
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let (tx, rx) = mpsc::channel();
    sender
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .send((command, tx))
        .map_err(|_| std::io::Error::other("the sim-host spawner thread is gone"))?;
    rx.recv()
        .map_err(|_| std::io::Error::other("the sim-host spawner thread is gone"))?
}

impl HostProcess {
    /// Starts `host` through `launcher` in a slot of `slots`. It is killed if unused for
    /// `idle_limit`.
    pub fn start(
        launcher: &dyn Launcher,
        host: &HostCommand,
        slots: &Arc<HostSlots>,
        holder: Holder,
        timeouts: Timeouts,
        idle_limit: Duration,
        max_frame: u64,
    ) -> Result<HostProcess, HostError> {
        let slot = slots.take(holder)?;
        let command = launcher.prepare(host).map_err(HostError::Spawn)?;
        let mut child =
            spawn(command).map_err(|e| HostError::Spawn(format!("{}: {e}", host.program)))?;
        let (Some(stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(HostError::Spawn("its pipes were not made".into()));
        };
        let tail = Arc::new(Mutex::new(VecDeque::with_capacity(STDERR_TAIL_BYTES)));
        if let Err(e) = keep_tail(stderr, tail.clone()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(HostError::Spawn(format!("cannot read its stderr: {e}")));
        }
        let watch = Arc::new(Watched {
            pid: child.id(),
            last_used: AtomicU64::new(now_ms()),
            idle_limit,
            busy: AtomicBool::new(false),
            in_episode: AtomicBool::new(false),
            practice: matches!(holder, Holder::Practice { .. }),
            life: Mutex::new(Life {
                alive: true,
                reaped: false,
                slot: Some(slot),
            }),
        });
        watched()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(Arc::downgrade(&watch));
        let mut process = HostProcess {
            child,
            stdin,
            stdout,
            stderr: tail,
            watch,
            timeouts,
            max_frame,
            write_buf: Vec::new(),
            read_buf: Vec::new(),
        };
        let fds = [process.stdin.as_raw_fd(), process.stdout.as_raw_fd()];
        for fd in fds {
            if let Err(e) = frame::set_nonblocking(&AsRaw(fd)) {
                return Err(process.failed(format!("cannot set up its pipes: {e}")));
            }
        }
        Ok(process)
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the idle reaper killed this host.
    pub fn was_reaped(&self) -> bool {
        self.watch
            .life
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .reaped
    }

    /// Says whether an episode is in play on this host (see the reaper).
    pub fn set_in_episode(&self, in_episode: bool) {
        self.watch.in_episode.store(in_episode, Ordering::SeqCst);
    }

    /// The largest reply read from now on: what the host's spec allows, so that a host
    /// cannot make the evaluator hold (and decode) more than its answers need.
    pub fn limit_replies(&mut self, max_frame: u64) {
        self.max_frame = max_frame.min(self.max_frame);
    }

    /// From here on the reaper leaves the host alone (its pid may be reaped, then reused),
    /// and its slot is given back.
    fn stop_watching(&self) {
        let mut life = self.watch.life.lock().unwrap_or_else(|p| p.into_inner());
        life.alive = false;
        life.slot = None;
    }

    /// Ends the host: its pid stops naming it for the reaper, its slot is given back, and it
    /// is killed and reaped. Returns how it had ended by itself, if it had.
    fn end(&mut self) -> Option<std::process::ExitStatus> {
        self.stop_watching();
        let ended = self.child.try_wait().ok().flatten();
        let _ = self.child.kill();
        let _ = self.child.wait();
        ended
    }

    /// Sends `request` and waits for its reply, within the start timeout for the first
    /// request and the call timeout after. A host that fails (times out, closes its pipe,
    /// sends a frame that does not decode, or answers `Failure`) is killed.
    pub fn call(
        &mut self,
        request: hp::request::Kind,
        first: bool,
    ) -> Result<hp::reply::Kind, HostError> {
        self.watch.last_used.store(now_ms(), Ordering::SeqCst);
        self.watch.busy.store(true, Ordering::SeqCst);
        let reply = self.exchange(request, first);
        self.watch.busy.store(false, Ordering::SeqCst);
        self.watch.last_used.store(now_ms(), Ordering::SeqCst);
        // A large reply's buffer is not kept between calls.
        if self.read_buf.capacity() > 1 << 20 {
            self.read_buf = Vec::new();
        }
        reply
    }

    fn exchange(
        &mut self,
        request: hp::request::Kind,
        first: bool,
    ) -> Result<hp::reply::Kind, HostError> {
        let timeout = if first {
            self.timeouts.start
        } else {
            self.timeouts.call
        };
        let secs = timeout.as_secs_f64();
        let deadline = Instant::now() + timeout;
        let request = hp::Request {
            kind: Some(request),
        };
        if let Err(e) = frame::write_frame(
            &mut self.stdin,
            &request,
            &mut self.write_buf,
            deadline,
            secs,
        ) {
            let cause = self.cause(e, first);
            return Err(self.failed(cause));
        }
        let reply = match frame::read_frame(
            &mut self.stdout,
            &mut self.read_buf,
            self.max_frame,
            deadline,
            secs,
        ) {
            Ok(bytes) => hp::Reply::decode(bytes),
            Err(e) => {
                let cause = self.cause(e, first);
                return Err(self.failed(cause));
            }
        };
        match reply {
            Ok(hp::Reply {
                kind: Some(hp::reply::Kind::Failure(f)),
            }) => {
                let message: String = f.message.chars().take(MAX_FAILURE_CHARS).collect();
                Err(self.failed(format!("it failed: {message}")))
            }
            Ok(hp::Reply { kind: Some(kind) }) => Ok(kind),
            Ok(hp::Reply { kind: None }) => Err(self.failed("it sent an empty reply".into())),
            Err(e) => Err(self.failed(format!("it sent a frame that is not a Reply ({e})"))),
        }
    }

    /// The words for a frame error, with how the host ended if it did.
    fn cause(&mut self, e: FrameError, first: bool) -> String {
        if self.was_reaped() {
            return "it was stopped after being left idle".into();
        }
        match e {
            FrameError::Closed => {
                // A closed pipe is a host that exited or was killed; say how.
                self.stop_watching();
                let status = wait_briefly(&mut self.child);
                match status {
                    Some(status) => format!("it exited ({})", describe_status(status)),
                    None => "it closed its pipe".into(),
                }
            }
            FrameError::Timeout(s) => {
                let key = if first {
                    "start_timeout_seconds"
                } else {
                    "timeout_seconds"
                };
                format!("it did not answer within {s:.1} s (the task's {key})")
            }
            other => format!("{other}"),
        }
    }

    /// Kills the host and says why, with its stderr's tail.
    pub fn failed(&mut self, cause: String) -> HostError {
        // A host that ended by itself says how; one still running is killed now.
        let ended = match self.end() {
            Some(status) if !cause.starts_with("it exited") => {
                format!("{cause}; it exited ({})", describe_status(status))
            }
            _ => cause,
        };
        // What it wrote before ending may still be in the pipe: give the reader a moment.
        std::thread::sleep(Duration::from_millis(20));
        HostError::Failed {
            cause: ended,
            stderr_tail: self.stderr_tail(),
        }
    }

    /// The last bytes the host wrote to stderr.
    pub fn stderr_tail(&self) -> String {
        let tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let (a, b) = tail.as_slices();
        String::from_utf8_lossy(&[a, b].concat()).into_owned()
    }
}

impl Drop for HostProcess {
    fn drop(&mut self) {
        self.end();
    }
}

struct AsRaw(i32);

impl std::os::fd::AsRawFd for AsRaw {
    fn as_raw_fd(&self) -> i32 {
        self.0
    }
}

/// Waits up to 200 ms for a host whose pipe closed to exit.
fn wait_briefly(child: &mut Child) -> Option<std::process::ExitStatus> {
    let until = Instant::now() + Duration::from_millis(200);
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// "status 3", "killed by signal 11 (SIGSEGV)".
pub fn describe_status(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    if let Some(code) = status.code() {
        return format!("status {code}");
    }
    match status.signal() {
        Some(signal) => {
            let name = match signal {
                libc::SIGKILL => " (SIGKILL: out of memory, or killed)",
                libc::SIGSEGV => " (SIGSEGV)",
                libc::SIGABRT => " (SIGABRT)",
                libc::SIGBUS => " (SIGBUS)",
                _ => "",
            };
            format!("killed by signal {signal}{name}")
        }
        None => "ended".into(),
    }
}

/// Keeps the last [`STDERR_TAIL_BYTES`] of `stderr` in `tail`, on a thread of its own that
/// ends with the pipe.
fn keep_tail(
    mut stderr: std::process::ChildStderr,
    tail: Arc<Mutex<VecDeque<u8>>>,
) -> std::io::Result<()> {
    std::thread::Builder::new()
        .name("ale-sim-host-stderr".into())
        .spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                match stderr.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => {
                        let mut tail = tail.lock().unwrap_or_else(|p| p.into_inner());
                        tail.extend(&buf[..n]);
                        let excess = tail.len().saturating_sub(STDERR_TAIL_BYTES);
                        tail.drain(..excess);
                    }
                }
            }
        })
        .map(drop)
}
