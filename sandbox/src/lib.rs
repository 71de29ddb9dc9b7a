//! The agent sandbox: every agent the harness launches runs in new user, mount, PID, IPC, UTS
//! and (unless `--network host`) network namespaces, as an unprivileged user when the harness
//! is root. Inside, the state dir is an empty unreadable directory, `/proc` shows only the
//! sandbox's own processes, `/tmp` (with `HOME`) is private, the rest of the filesystem is
//! read-only, and the only way out is the evaluator's agent socket, bind-mounted at
//! [`SANDBOX_AGENT_SOCKET`]. When the agent exits, or the harness stops it, everything it
//! started dies with the sandbox's PID namespace.
//!
//! The namespaces are set up by a launcher process: the harness re-executes its own binary
//! (`ale sandbox-exec`, see [`launcher_main`]) because `unshare(CLONE_NEWUSER)` needs a
//! single-threaded caller, which an async harness is not. The launcher's child is PID 1 of the
//! sandbox; it starts the agent, reaps orphans, and exits with the agent's status, at which
//! point the kernel kills whatever is left in the namespace.
//!
//! The harness's side is this file (the launch spec, the options, the record, the agent's
//! environment and user, [`probe`]) and the checks it makes before a launch (`program.rs`,
//! `folders.rs`, `arguments.rs`), with the agent's uid (`uids.rs`) and limits (`limits.rs`,
//! `cgroup.rs`). Both read the mount table through `mounts.rs` and hold host paths pinned to
//! the file that was checked (`pinned.rs`). The launcher's side is `process/` (its processes,
//! from fork to exit), `namespaces.rs` (unshare, the uid and gid maps), `rootfs/` (the agent's
//! filesystem, a short sequence of steps), `seccomp.rs`, and `setup.rs` (how a step of the
//! set-up fails). The binary `ale-sandbox-test` runs the launcher alone,
//! for the tests in `tests/`.

mod arguments;
pub mod cgroup;
mod folders;
pub mod limits;
#[cfg(target_os = "linux")]
mod mounts;
#[cfg(target_os = "linux")]
mod namespaces;
mod pinned;
#[cfg(target_os = "linux")]
mod process;
mod program;
#[cfg(target_os = "linux")]
mod rootfs;
#[cfg(target_os = "linux")]
mod seccomp;
#[cfg(target_os = "linux")]
mod setup;
pub mod uids;

use std::path::{Path, PathBuf};

pub use arguments::{ArgumentProblem, HiddenArgument, check_arguments};
pub use folders::{resolve_exposed, resolve_workdir};
pub use limits::{AgentLimits, Enforcement, LimitHit};
pub use pinned::{FileId, PinnedPath};
pub use program::{
    AgentProgram, HiddenProgram, MissingFolder, ProgramFile, SandboxView, Unseen, program_binding,
    resolve_program,
};

use serde::{Deserialize, Serialize};

/// Where the evaluator's agent socket appears inside the sandbox.
pub const SANDBOX_AGENT_SOCKET: &str = "/run/ale/agent.sock";
/// Where a batch task's submission folder is bind-mounted, writable, inside the sandbox.
pub const SANDBOX_SUBMISSION_DIR: &str = "/run/ale/submission";
/// The agent's `HOME` inside the sandbox: in its private `/tmp`.
pub const SANDBOX_HOME: &str = "/tmp/home";
/// The agent's working directory when none is given: in its private `/tmp`.
pub const SANDBOX_DEFAULT_WORKDIR: &str = "/tmp/work";
/// The exit status of a launcher that could not set the sandbox up (the agent never ran).
pub const SETUP_FAILED: i32 = 125;
/// The exit status of a probe whose sandbox was built but in which the agent program cannot
/// be run (not found, or not executable by the agent's user).
pub(crate) const PROGRAM_NOT_RUNNABLE: i32 = 124;
/// Host top-level folders the sandbox replaces with its own.
pub(crate) const PRIVATE_TOP_LEVEL: &[&str] = &["proc", "dev", "tmp", "run"];
/// The hidden subcommand of `ale` that runs the launcher.
pub const LAUNCHER_SUBCOMMAND: &str = "sandbox-exec";
/// Environment variables an agent inherits from the harness, besides `ALE_ENDPOINT`,
/// `ALE_ENV_HANDLE`, `HOME` (set by the sandbox) and `--env` pairs.
pub(crate) const INHERITED_ENV: &[&str] = &["PATH", "LANG", "TERM"];
/// The descriptor on which the launcher tells the harness which limit stopped the agent (one
/// byte, [`LimitHit::code`]), when the spec says the harness opened it ([`LaunchSpec::report_pipe`]).
pub const LIMIT_REPORT_FD: i32 = 3;
/// The size limit of the sandbox's private `/tmp` (it lives in memory).
pub const DEFAULT_TMP_BYTES: u64 = 1 << 30;

/// Whether agents run sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SandboxMode {
    /// Linux namespaces (the default).
    #[default]
    Namespaces,
    /// No sandbox: the agent runs as the harness's user with its view of the machine. Its run
    /// is marked as one whose record the agent could have tampered with.
    None,
    /// No agent ran: the harness handed a batch task's submitted file to the evaluator, which
    /// played it (`ale harness run --submission`). Nothing untrusted ran beside the records.
    NoAgent,
}

impl SandboxMode {
    pub fn is_sandboxed(self) -> bool {
        self == SandboxMode::Namespaces
    }
}

/// The agent's network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Network {
    /// A network namespace of its own with no interface up: offline.
    #[default]
    None,
    /// The host's network (an explicit opt-out).
    Host,
}

/// A user id and group id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserIds {
    pub uid: u32,
    pub gid: u32,
}

/// Everything the launcher needs, decided by the harness. Serialized as JSON into the
/// launcher's stdin: the contract between the two processes. Every host path the launcher
/// binds is pinned ([`PinnedPath`]): it binds the file the harness checked, or fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchSpec {
    /// The program: a name looked up in the agent's `PATH`, or the absolute path it is started
    /// by ([`ProgramFile::invoked`]: a link in its name is kept).
    #[serde(with = "pinned::spec_path")]
    pub program: PathBuf,
    /// The file (canonical) a program path the sandbox would not show leads to, bound
    /// read-only on its own at [`LaunchSpec::program`].
    pub program_file: Option<PinnedPath>,
    /// `argv`, including `argv[0]`.
    pub args: Vec<String>,
    /// The agent's whole environment.
    pub env: Vec<(String, String)>,
    /// A host directory bind-mounted writable at the same path and used as the working
    /// directory; `None`: a fresh [`SANDBOX_DEFAULT_WORKDIR`].
    pub workdir: Option<PinnedPath>,
    /// Host directories (canonical) bind-mounted read-only, `nosuid`, `nodev` at their own
    /// paths, inside a hidden folder too.
    pub exposed: Vec<PinnedPath>,
    /// The evaluator's agent socket on the host (canonical), bind-mounted at
    /// [`SANDBOX_AGENT_SOCKET`].
    pub agent_socket: PinnedPath,
    /// For a batch task: the evaluator's submission folder on the host (canonical),
    /// bind-mounted writable at [`SANDBOX_SUBMISSION_DIR`]; the only host folder the agent can
    /// write to.
    pub submission_dir: Option<PinnedPath>,
    /// Host folders (canonical) the agent must not see: each shows as an empty read-only
    /// folder, in which only the paths the sandbox binds (working directory, exposed folders,
    /// program) appear.
    #[serde(with = "pinned::spec_path::many")]
    pub hidden: Vec<PathBuf>,
    /// The process that started the launcher (the harness): if it dies, so does the sandbox.
    pub parent_pid: u32,
    /// Set when the harness is root: the user the agent runs as.
    pub agent_user: Option<UserIds>,
    pub network: Network,
    /// The size limit of the private `/tmp`, in bytes.
    pub tmp_bytes: u64,
    /// What the agent may use.
    pub limits: AgentLimits,
    /// Whether [`LIMIT_REPORT_FD`] is the harness's pipe for the limit that stopped the agent.
    #[serde(default)]
    pub report_pipe: bool,
    /// Set everything up, then exit 0 without starting the agent.
    pub probe: bool,
}

/// What a run's records say about its agent's confinement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxRecord {
    pub mode: SandboxMode,
    pub network: Network,
    /// The uid the agent ran as, when the harness (root) dropped it to another user.
    pub agent_uid: Option<u32>,
    /// What the agent could use, and how that was enforced; absent in records of harnesses
    /// that set no limits, and for unsandboxed agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<AgentLimits>,
}

/// How every view of an unsandboxed run marks it.
pub(crate) const UNSANDBOXED_WARNING: &str =
    "unsandboxed: the agent could have tampered with this record";

/// How every view describes a run where no agent ran.
pub(crate) const NO_AGENT: &str = "no agent: the evaluator played the submitted file";

impl SandboxRecord {
    /// The warning an unsandboxed run carries.
    pub fn warning(&self) -> Option<&'static str> {
        (self.mode == SandboxMode::None).then_some(UNSANDBOXED_WARNING)
    }

    /// One line for listings: "sandboxed (offline, uid 65534)", or the warning.
    pub fn describe(&self) -> String {
        if let Some(warning) = self.warning() {
            return warning.to_string();
        }
        if self.mode == SandboxMode::NoAgent {
            return NO_AGENT.to_string();
        }
        let network = match self.network {
            Network::None => "offline",
            Network::Host => "host network",
        };
        let uid = self
            .agent_uid
            .map_or(String::new(), |uid| format!(", uid {uid}"));
        format!("sandboxed ({network}{uid})")
    }

    /// What the agent was given, and how the machine enforced it: "memory 8 GiB, 512 tasks,
    /// CPU 600 s, by rlimits"; `None` for a record of before limits, or an unsandboxed run.
    pub fn describe_limits(&self) -> Option<String> {
        let l = self.limits.filter(|_| self.mode.is_sandboxed())?;
        let cpu = l
            .cpu_seconds
            .map_or("no CPU time limit".into(), |s| format!("CPU {s} s"));
        let by = match l.enforcement {
            Enforcement::CgroupV2 => "cgroup v2",
            Enforcement::Rlimits => "rlimits",
        };
        Some(format!(
            "memory {}, {} tasks, {cpu}, by {by}",
            limits::format_bytes(l.memory_bytes),
            l.tasks
        ))
    }
}

/// What the harness was asked for, before it is turned into a [`LaunchSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxOptions {
    pub mode: SandboxMode,
    pub network: Network,
    pub workdir: Option<PathBuf>,
    /// Host folders shown to the agent read-only at their own paths (`--expose`), such as the
    /// Python installation a venv was made from.
    pub expose: Vec<PathBuf>,
    /// The user every agent runs as when the harness is root (a name or a numeric uid), in
    /// place of a uid of its own from [`SandboxOptions::agent_uids`].
    pub agent_user: Option<String>,
    /// The uids the agents of a root harness get, one per run.
    pub agent_uids: uids::UidRange,
    /// `KEY=VALUE` pairs added to the agent's environment.
    pub extra_env: Vec<(String, String)>,
    /// The sandbox's memory, in bytes.
    pub memory_bytes: u64,
    /// The sandbox's tasks (processes and threads).
    pub tasks: u64,
    pub cpu: CpuLimit,
    /// The cgroup v2 folder runs' cgroups are made in (`--cgroup-parent`), in place of one
    /// found delegated to the harness.
    pub cgroup_parent: Option<PathBuf>,
}

/// The CPU time an agent gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CpuLimit {
    /// Its task's time budget in CPU seconds ([`limits::default_cpu_seconds`]).
    #[default]
    TaskBudget,
    Seconds(u64),
    /// None: only the session's time budget ends it.
    Unbounded,
}

impl CpuLimit {
    /// The CPU seconds of an agent whose task has a time budget of `time_budget_seconds`
    /// (`None`: no budget).
    pub fn seconds(self, time_budget_seconds: Option<u64>) -> Option<u64> {
        match self {
            CpuLimit::TaskBudget => Some(limits::default_cpu_seconds(time_budget_seconds)),
            CpuLimit::Seconds(s) => Some(s),
            CpuLimit::Unbounded => None,
        }
    }
}

impl Default for SandboxOptions {
    fn default() -> Self {
        SandboxOptions {
            mode: SandboxMode::Namespaces,
            network: Network::None,
            workdir: None,
            expose: Vec::new(),
            agent_user: None,
            agent_uids: uids::DEFAULT_AGENT_UID_RANGE,
            extra_env: Vec::new(),
            memory_bytes: limits::DEFAULT_MEMORY_BYTES,
            tasks: limits::DEFAULT_TASKS,
            cpu: CpuLimit::TaskBudget,
            cgroup_parent: None,
        }
    }
}

/// Why an agent cannot be sandboxed, or its sandbox could not be described.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error(
        "agents can only be sandboxed on Linux; pass --sandbox none to run this agent unsandboxed \
         (its record is then marked as one the agent could have tampered with)"
    )]
    Unsupported,
    #[error(
        "cannot sandbox the agent: {0}\nPass --sandbox none to run the agent unsandboxed; its \
         record is then marked as one the agent could have tampered with."
    )]
    Unavailable(String),
    #[error(
        "unknown --agent-user {0:?}: no such user in /etc/passwd; give a user name or a numeric uid"
    )]
    UnknownUser(String),
    #[error("--workdir {path}: {problem}")]
    Workdir { path: PathBuf, problem: String },
    #[error("--expose {path}: {problem}")]
    Expose { path: PathBuf, problem: String },
    #[error("the agent program {path}: {problem}")]
    Program { path: PathBuf, problem: String },
    #[error("{0}")]
    ProgramHidden(HiddenProgram),
    #[error("cannot start the agent: {0}")]
    ProgramNotRunnable(String),
    #[error("--cgroup-parent {path}: {problem}")]
    CgroupParent { path: PathBuf, problem: String },
    #[error("cannot give the agent a uid of its own: {0}")]
    AgentUid(#[from] uids::UidError),
    #[error("--env {0:?}: expected KEY=VALUE with KEY made of letters, digits and '_'")]
    BadEnv(String),
    #[error("--env {0}: this variable is set by the harness and cannot be overridden")]
    ReservedEnv(String),
}

/// Host folders a sandboxed agent never sees, besides the state dir: users' homes (other
/// evaluators' state dirs, keys and sockets live there).
pub fn default_hidden_folders() -> Vec<PathBuf> {
    let mut folders = vec![PathBuf::from("/home"), PathBuf::from("/root")];
    if let Some(home) = std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        folders.push(PathBuf::from(home));
    }
    // The folders themselves, links resolved (`/home -> var/home`); `/` (a home under
    // systemd's DynamicUser) is never hidden, or nothing would be left.
    let mut folders: Vec<PathBuf> = folders
        .into_iter()
        .filter_map(|f| std::fs::canonicalize(f).ok())
        .filter(|f| f.parent().is_some())
        .collect();
    folders.sort();
    folders.dedup();
    folders
}

/// Parses one `--env KEY=VALUE` argument.
pub fn parse_env_pair(pair: &str) -> Result<(String, String), SandboxError> {
    let (key, value) = pair
        .split_once('=')
        .ok_or_else(|| SandboxError::BadEnv(pair.to_string()))?;
    let valid = !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !valid {
        return Err(SandboxError::BadEnv(pair.to_string()));
    }
    if key == ale_proto::agent_env::ENDPOINT
        || key == ale_proto::agent_env::ENV_HANDLE
        || key == "HOME"
    {
        return Err(SandboxError::ReservedEnv(key.to_string()));
    }
    Ok((key.to_string(), value.to_string()))
}

/// The agent's environment: the allow-list, in a fixed order. `home` is the sandbox's, or the
/// harness's own for an unsandboxed agent.
pub fn agent_environment(
    endpoint: &str,
    handle: &str,
    submission_dir: Option<&str>,
    home: Option<&str>,
    extra: &[(String, String)],
) -> Vec<(String, String)> {
    let mut env = vec![
        (
            ale_proto::agent_env::ENDPOINT.to_string(),
            endpoint.to_string(),
        ),
        (
            ale_proto::agent_env::ENV_HANDLE.to_string(),
            handle.to_string(),
        ),
    ];
    if let Some(dir) = submission_dir {
        env.push((
            ale_proto::agent_env::SUBMISSION_DIR.to_string(),
            dir.to_string(),
        ));
    }
    if let Some(home) = home {
        env.push(("HOME".into(), home.into()));
    }
    for key in INHERITED_ENV {
        if let Some(value) = std::env::var_os(key).and_then(|v| v.into_string().ok()) {
            env.push((key.to_string(), value));
        }
    }
    for (key, value) in extra {
        env.retain(|(k, _)| k != key);
        env.push((key.clone(), value.clone()));
    }
    env
}

/// Looks a user up by name or numeric uid in `/etc/passwd`.
pub fn resolve_user(user: &str) -> Result<UserIds, SandboxError> {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let numeric = user.parse::<u32>().ok();
    for line in passwd.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        let [name, _, uid, gid, ..] = fields[..] else {
            continue;
        };
        let (Ok(uid), Ok(gid)) = (uid.parse::<u32>(), gid.parse::<u32>()) else {
            continue;
        };
        if name == user || numeric == Some(uid) {
            return Ok(UserIds { uid, gid });
        }
    }
    // A numeric uid with no passwd entry runs with the same number as its group.
    numeric
        .filter(|&uid| uid != 0)
        .map(|uid| UserIds { uid, gid: uid })
        .ok_or_else(|| SandboxError::UnknownUser(user.to_string()))
}

/// The user a run's agent runs as when the harness is root, and the hold on it.
#[derive(Debug)]
pub struct AgentUser {
    pub ids: UserIds,
    /// The lock on a uid taken from the range; `None` for an `--agent-user`.
    _held: Option<uids::HeldUid>,
}

/// The agent's user for one run: none when the harness is not root (the agent keeps the
/// harness's uid, in a user namespace of its own); the `--agent-user` when one is given (every
/// run then shares it); else a uid of the run's own from the range, held until the returned
/// value is dropped.
pub fn agent_user_for_run(options: &SandboxOptions) -> Result<Option<AgentUser>, SandboxError> {
    if !running_as_root() || !options.mode.is_sandboxed() {
        return Ok(None);
    }
    if let Some(name) = &options.agent_user {
        let ids = resolve_user(name)?;
        if ids.uid == 0 {
            return Err(SandboxError::UnknownUser(format!(
                "{name} (uid 0: an agent may not run as root)"
            )));
        }
        return Ok(Some(AgentUser { ids, _held: None }));
    }
    let held = uids::take_uid(
        options.agent_uids,
        Path::new(uids::DEFAULT_LOCK_DIR),
        &uids::TakenIds::of_this_machine(),
    )?;
    Ok(Some(AgentUser {
        ids: UserIds {
            uid: held.uid,
            gid: held.uid,
        },
        _held: Some(held),
    }))
}

/// How this machine bounds a sandbox's totals: a cgroup v2 under the returned parent (the
/// operator's `--cgroup-parent`, or one delegated to the harness), else rlimits and the
/// watchdog. Only an explicit parent that cannot be used is an error.
pub fn choose_enforcement(
    options: &SandboxOptions,
) -> Result<(Enforcement, Option<PathBuf>), SandboxError> {
    if let Some(dir) = &options.cgroup_parent {
        let parent = cgroup::explicit_parent(&cgroup::HostCgroupFs, dir).map_err(|problem| {
            SandboxError::CgroupParent {
                path: dir.clone(),
                problem,
            }
        })?;
        return Ok((Enforcement::CgroupV2, Some(parent)));
    }
    Ok(match cgroup::detect() {
        Ok(parent) => (Enforcement::CgroupV2, Some(parent)),
        Err(why) => {
            tracing::debug!(%why, "no cgroup v2 of the sandbox's own: rlimits bound the agent");
            (Enforcement::Rlimits, None)
        }
    })
}

/// The limits of an agent whose task has a time budget of `time_budget_seconds` (`None`: no
/// budget) and whose run's submission folder, if it has one, is `submission_dir`.
pub fn agent_limits(
    options: &SandboxOptions,
    enforcement: Enforcement,
    time_budget_seconds: Option<u64>,
    submission_dir: Option<&Path>,
) -> AgentLimits {
    AgentLimits {
        memory_bytes: options.memory_bytes,
        tasks: options.tasks,
        cpu_seconds: options.cpu.seconds(time_budget_seconds),
        file_bytes: file_size_limit(running_as_root(), submission_dir),
        open_files: limits::OPEN_FILES,
        enforcement,
    }
}

/// The largest file an agent may write (`RLIMIT_FSIZE`). As root every writable place it has
/// is a sized tmpfs (or the operator's `--workdir`), its submission folder included when the
/// evaluator (root too) mounted one there: then [`limits::FILE_BYTES_AS_ROOT`]. Otherwise the
/// submission folder is a plain folder on the state dir's disk, and no file in it may outgrow
/// a submission.
pub(crate) fn file_size_limit(as_root: bool, submission_dir: Option<&Path>) -> u64 {
    if as_root && submission_dir.is_none_or(is_mount_point) {
        limits::FILE_BYTES_AS_ROOT
    } else {
        limits::MAX_SUBMISSION_BYTES + limits::FILE_BYTES_SLACK
    }
}

/// Whether `dir` is the root of a filesystem of its own (its device differs from its
/// parent's), as the evaluator's per-run tmpfs is. A folder that cannot be examined is not.
pub fn is_mount_point(dir: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let parent = dir.join("..");
    match (std::fs::symlink_metadata(dir), std::fs::metadata(parent)) {
        (Ok(dir), Ok(parent)) => dir.is_dir() && dir.dev() != parent.dev(),
        _ => false,
    }
}

/// Whether the harness runs as root (and so must drop the agent to another user).
pub fn running_as_root() -> bool {
    // SAFETY: geteuid never fails and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// The entry point of `ale sandbox-exec`: reads the [`LaunchSpec`] from stdin, sets the
/// sandbox up and runs the agent in it; never returns. Must be called before the process
/// starts any thread.
///
/// The spec travels on stdin rather than on the command line, which every process in the
/// sandbox could read from `/proc/1/cmdline`.
pub fn launcher_main() -> ! {
    // Nothing the harness's own parent left open may reach the agent: a descriptor of a host
    // folder would lead out of the sandbox's filesystem. The report pipe is kept only if the
    // spec says the harness opened it, and never passes into the sandbox (close-on-exec, and
    // closed in its PID 1).
    close_inherited_descriptors(LIMIT_REPORT_FD + 1);
    let spec = read_spec_from_stdin();
    let spec = match spec {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("ale sandbox: unreadable launch spec on stdin: {e}");
            std::process::exit(SETUP_FAILED);
        }
    };
    // SAFETY: fcntl/close on a descriptor number; no memory is touched.
    unsafe {
        if spec.report_pipe {
            libc::fcntl(LIMIT_REPORT_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        } else {
            libc::close(LIMIT_REPORT_FD);
        }
    }
    #[cfg(target_os = "linux")]
    {
        process::run(&spec)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = spec;
        eprintln!("ale sandbox: {}", SandboxError::Unsupported);
        std::process::exit(SETUP_FAILED)
    }
}

/// Closes every descriptor from `first` up.
fn close_inherited_descriptors(first: i32) {
    // SAFETY: close_range(2) with no flags only closes descriptors; none above 2 is in use yet.
    let closed = unsafe { libc::syscall(libc::SYS_close_range, first as u32, u32::MAX, 0u32) };
    if closed == 0 {
        return;
    }
    // Kernels before 5.9, or a filter that refuses the call: one by one, up to the limit.
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct it is given.
    let max = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        limit.rlim_cur.min(1 << 20) as i32
    } else {
        1 << 16
    };
    for fd in first..max {
        // SAFETY: closing a descriptor this process does not use; EBADF is harmless.
        unsafe {
            libc::close(fd);
        }
    }
}

/// The largest launch spec the launcher reads.
const MAX_SPEC_BYTES: u64 = 1 << 20;

fn read_spec_from_stdin() -> Result<LaunchSpec, String> {
    use std::io::Read;
    let mut text = String::new();
    std::io::stdin()
        .lock()
        .take(MAX_SPEC_BYTES)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    // The agent gets an empty stdin, not the harness's pipe.
    let null = std::fs::File::open("/dev/null").map_err(|e| e.to_string())?;
    // SAFETY: dup2 onto fd 0; both descriptors are valid.
    if unsafe { libc::dup2(std::os::fd::AsRawFd::as_raw_fd(&null), 0) } < 0 {
        return Err(std::io::Error::last_os_error().to_string());
    }
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The launcher's command (`ale_exe sandbox-exec`, with an empty environment); the caller
/// pipes [`spec_bytes`] into its stdin.
pub fn launcher_command(ale_exe: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(ale_exe);
    command
        .arg(LAUNCHER_SUBCOMMAND)
        .env_clear()
        .stdin(std::process::Stdio::piped());
    command
}

/// What the launcher reads on stdin.
pub fn spec_bytes(spec: &LaunchSpec) -> std::io::Result<Vec<u8>> {
    serde_json::to_vec(spec)
        .map_err(|e| std::io::Error::other(format!("cannot write the launch spec: {e}")))
}

/// Hands `spec` to a launcher started with [`launcher_command`].
pub async fn send_spec(
    child: &mut tokio::process::Child,
    spec: &LaunchSpec,
) -> std::io::Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut stdin = child
        .stdin
        .take()
        .ok_or_else(|| std::io::Error::other("the launcher's stdin is not piped"))?;
    stdin.write_all(&spec_bytes(spec)?).await?;
    stdin.shutdown().await
}

/// Sets a sandbox for `spec` up and tears it down again without running anything: tells
/// whether agents can be sandboxed here, and why not.
pub async fn probe(ale_exe: &Path, spec: &LaunchSpec) -> Result<(), SandboxError> {
    if !cfg!(target_os = "linux") {
        return Err(SandboxError::Unsupported);
    }
    let mut spec = spec.clone();
    spec.probe = true;
    spec.parent_pid = std::process::id();
    let cannot_run = |e: std::io::Error| {
        SandboxError::Unavailable(format!("cannot run {}: {e}", ale_exe.display()))
    };
    let mut child = launcher_command(ale_exe)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(cannot_run)?;
    send_spec(&mut child, &spec).await.map_err(cannot_run)?;
    let output = child.wait_with_output().await.map_err(cannot_run)?;
    if output.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let reason = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("the launcher failed without saying why")
        .trim_start_matches("ale sandbox: ")
        .to_string();
    if output.status.code() == Some(PROGRAM_NOT_RUNNABLE) {
        return Err(SandboxError::ProgramNotRunnable(reason));
    }
    Err(SandboxError::Unavailable(reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_pairs_are_checked() {
        assert_eq!(
            parse_env_pair("SEED=3").unwrap(),
            ("SEED".to_string(), "3".to_string())
        );
        assert_eq!(parse_env_pair("A_B=x=y").unwrap().1, "x=y");
        assert!(matches!(
            parse_env_pair("NOVALUE"),
            Err(SandboxError::BadEnv(_))
        ));
        assert!(matches!(
            parse_env_pair("1X=2"),
            Err(SandboxError::BadEnv(_))
        ));
        assert!(matches!(
            parse_env_pair("ALE_ENV_HANDLE=forged"),
            Err(SandboxError::ReservedEnv(_))
        ));
    }

    #[test]
    fn the_environment_is_an_allow_list() {
        let env = agent_environment(
            "unix:///run/ale/agent.sock",
            "h",
            Some(SANDBOX_SUBMISSION_DIR),
            Some(SANDBOX_HOME),
            &[("LANG".into(), "C".into()), ("X".into(), "1".into())],
        );
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        for key in &keys {
            assert!(
                [
                    "ALE_ENDPOINT",
                    "ALE_ENV_HANDLE",
                    "ALE_SUBMISSION_DIR",
                    "HOME",
                    "PATH",
                    "LANG",
                    "TERM",
                    "X"
                ]
                .contains(key),
                "{key} leaked into the agent's environment"
            );
        }
        assert_eq!(keys.iter().filter(|k| **k == "LANG").count(), 1);
        assert!(env.contains(&("LANG".into(), "C".into())));
        assert!(env.contains(&("HOME".into(), SANDBOX_HOME.into())));
    }

    /// As root, the large file limit needs the submission folder to be a filesystem of its
    /// own (the evaluator's sized tmpfs); a plain folder on the state dir's disk gets the bound
    /// of a submission.
    #[test]
    fn the_file_size_limit_follows_the_submission_folder_s_filesystem() {
        let small = limits::MAX_SUBMISSION_BYTES + limits::FILE_BYTES_SLACK;
        let plain = tempfile::tempdir().unwrap();
        assert!(!is_mount_point(plain.path()));
        assert_eq!(file_size_limit(true, Some(plain.path())), small);
        // /proc is a mount point on every Linux machine.
        assert!(is_mount_point(Path::new("/proc")));
        assert_eq!(
            file_size_limit(true, Some(Path::new("/proc"))),
            limits::FILE_BYTES_AS_ROOT
        );
        assert_eq!(file_size_limit(true, None), limits::FILE_BYTES_AS_ROOT);
        assert_eq!(file_size_limit(false, Some(Path::new("/proc"))), small);
        assert_eq!(file_size_limit(false, None), small);
        assert!(!is_mount_point(&plain.path().join("missing")));
    }

    #[test]
    fn users_resolve_by_name_and_number() {
        let nobody = resolve_user("nobody").unwrap();
        assert_ne!(nobody.uid, 0);
        assert_eq!(resolve_user(&nobody.uid.to_string()).unwrap(), nobody);
        assert!(resolve_user("no-such-user-here").is_err());
        assert!(resolve_user("0").is_ok_and(|u| u.uid == 0));
    }
}
