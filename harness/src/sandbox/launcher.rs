//! The launcher process: builds the namespaces and the sandbox's filesystem, then runs the
//! agent under a PID 1 of its own. Runs single-threaded, in `ale sandbox-exec`.
//!
//! The filesystem is built the way bubblewrap builds one: a tmpfs becomes the root for a
//! moment, with the host's root under `/oldroot` and the agent's future root (another tmpfs)
//! under `/newroot`; the host's top-level folders are bind-mounted read-only into the new root,
//! private mounts are added, the host files the harness checked (working directory, exposed
//! folders, sockets, program) are bound in through descriptors (see `binds`), and finally the
//! new root is pivoted into place and the host's root detached, so no path leads back out.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::mount::{MntFlags, MsFlags, mount, umount2};
use nix::sched::{CloneFlags, unshare};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Gid, Pid, Uid, fork, pivot_root};

use super::binds::{self, Binding, Kind, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use super::limits::{AgentLimits, Enforcement, LimitHit, Watched};
use super::{
    LIMIT_REPORT_FD, LaunchSpec, Network, PRIVATE_TOP_LEVEL, PROGRAM_NOT_RUNNABLE, PinnedPath,
    SANDBOX_AGENT_SOCKET, SANDBOX_DEFAULT_WORKDIR, SANDBOX_HOME, SANDBOX_SUBMISSION_DIR,
    SETUP_FAILED, UserIds, mounts,
};

/// A setup step that failed.
struct Failure(String);

type Setup<T> = Result<T, Failure>;

fn fail<E: std::fmt::Display>(step: impl std::fmt::Display) -> impl FnOnce(E) -> Failure {
    move |e| Failure(format!("{step}: {e}"))
}

/// How the agent ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgentEnd {
    Exited(i32),
    Killed(Signal),
}

impl AgentEnd {
    fn from_wait(status: WaitStatus) -> Option<AgentEnd> {
        match status {
            WaitStatus::Exited(_, code) => Some(AgentEnd::Exited(code)),
            WaitStatus::Signaled(_, signal, _) => Some(AgentEnd::Killed(signal)),
            _ => None,
        }
    }
}

/// Runs `spec` and ends the way the agent ended: with its exit status, or killed by the signal
/// that killed it, so the harness sees the agent's own end; the limit that stopped it, if one
/// did, goes to the harness's report pipe. [`SETUP_FAILED`] if the sandbox could not be built.
pub(super) fn run(spec: &LaunchSpec) -> ! {
    let outcome = launch(spec);
    if let (Ok((_, Some(hit))), true) = (&outcome, spec.report_pipe) {
        // SAFETY: one write of one byte from a live buffer to the harness's pipe.
        unsafe {
            libc::write(LIMIT_REPORT_FD, [hit.code()].as_ptr().cast(), 1);
        }
    }
    match outcome {
        Ok((AgentEnd::Exited(code), _)) => std::process::exit(code),
        Ok((AgentEnd::Killed(signal), _)) => {
            // SAFETY: no core file for the launcher (the agent's crash is not its own), then
            // the default action and the signal raised at ourselves.
            unsafe {
                let no_core = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &no_core);
                libc::signal(signal as i32, libc::SIG_DFL);
                libc::raise(signal as i32);
            }
            // A signal whose default is to be ignored: say it in the status instead.
            std::process::exit(128 + signal as i32)
        }
        Err(Failure(why)) => {
            eprintln!("ale sandbox: {why}");
            std::process::exit(SETUP_FAILED)
        }
    }
}

/// The agent's `oom_score_adj`: the most the kernel allows, so that an out-of-memory kill
/// picks the sandbox before anything of the evaluator's.
const AGENT_OOM_SCORE_ADJ: &str = "1000";

/// The sandbox's PID 1, as seen from the launcher; signalled when the launcher is told to stop.
static INIT_PID: AtomicI32 = AtomicI32::new(0);

extern "C" fn stop_sandbox(_: libc::c_int) {
    let pid = INIT_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill(2) is async-signal-safe. Killing PID 1 of the namespace kills all of it.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
        }
    }
}

fn launch(spec: &LaunchSpec) -> Setup<(AgentEnd, Option<LimitHit>)> {
    // When the machine runs out of memory, the kernel kills the sandbox first, never the
    // evaluator or a harness (whose runs would all be lost with them). Inherited by every
    // process the sandbox starts; raising one's own score needs no privilege, but is done
    // here, before any change of credentials makes the file another user's.
    std::fs::write("/proc/self/oom_score_adj", AGENT_OOM_SCORE_ADJ)
        .map_err(fail("cannot write /proc/self/oom_score_adj"))?;
    // A harness that dies, even by SIGKILL, takes the sandbox with it.
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(fail("prctl(PDEATHSIG)"))?;
    if nix::unistd::getppid().as_raw() as u32 != spec.parent_pid {
        return Err(Failure(
            "the harness that started the sandbox is gone".into(),
        ));
    }
    let uid = Uid::effective();
    let gid = Gid::effective();
    let as_root = uid.is_root();
    if as_root != spec.agent_user.is_some() {
        return Err(Failure(
            "the launch spec's agent user does not match the launcher's uid".into(),
        ));
    }
    // Only the PID namespace (and, without privilege, the user namespace that grants the
    // right to build the others) is created here; the sandbox's PID 1 creates the rest, so the
    // launcher keeps the host's mounts and /proc.
    let mut flags = CloneFlags::CLONE_NEWPID;
    if !as_root {
        flags |= CloneFlags::CLONE_NEWUSER;
    }
    unshare(flags).map_err(|e| {
        Failure(format!(
            "cannot create the namespaces (unshare): {e}; user namespaces may be disabled here \
             (see `sysctl user.max_user_namespaces` and, on Debian, \
             `kernel.unprivileged_userns_clone`)"
        ))
    })?;
    let host = UserIds {
        uid: uid.as_raw(),
        gid: gid.as_raw(),
    };
    if !as_root {
        // Root of this user namespace (the harness's user outside it), so that the sandbox's
        // PID 1 may set the limits of the IPC namespace it makes here (the kernel lets only
        // the owning namespace's uid 0 write them); the agent's own namespace maps the
        // harness's uid again.
        map_ids("/proc/self", ROOT, host, true)?;
    }
    // Reports from the sandbox's PID 1 to us: it asks us to map its user namespace (as root,
    // only a process outside that namespace may map another user into it).
    let pipe = || nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(fail("pipe"));
    let (to_parent_r, to_parent_w) = pipe()?;
    let (to_child_r, to_child_w) = pipe()?;
    // PID 1 reports here how the agent ended, which its own exit status cannot tell: the
    // signal that killed it (0: none) and the limit that stopped it (0: none).
    let (end_r, end_w) = pipe()?;
    // Held open by the launcher alone: PID 1 sees it hang up if the launcher dies.
    let (life_r, life_w) = pipe()?;
    // SAFETY: this process is single-threaded (the launcher runs before any thread starts).
    match unsafe { fork() }.map_err(fail("fork"))? {
        ForkResult::Child => {
            drop(to_parent_r);
            drop(to_child_w);
            drop(end_r);
            drop(life_w);
            if spec.report_pipe {
                // SAFETY: closing the harness's pipe, which the sandbox must not hold.
                unsafe {
                    libc::close(LIMIT_REPORT_FD);
                }
            }
            let mut hit = None;
            let report = |signal: u8, hit: Option<LimitHit>| {
                use std::io::Write;
                let _ =
                    std::fs::File::from(end_w).write_all(&[signal, hit.map_or(0, LimitHit::code)]);
            };
            let code = match sandbox_init(spec, host, to_parent_w, to_child_r, &life_r, &mut hit) {
                Ok(AgentEnd::Exited(code)) => {
                    report(0, hit);
                    code
                }
                Ok(AgentEnd::Killed(signal)) => {
                    report(signal as u8, hit);
                    128 + signal as i32
                }
                Err(Failure(why)) => {
                    eprintln!("ale sandbox: {why}");
                    SETUP_FAILED
                }
            };
            // SAFETY: ends this process without running the parent's atexit handlers twice.
            unsafe { libc::_exit(code) }
        }
        ForkResult::Parent { child } => {
            drop(to_parent_w);
            drop(to_child_r);
            drop(end_w);
            drop(life_r);
            INIT_PID.store(child.as_raw(), Ordering::SeqCst);
            let handler = SigAction::new(
                SigHandler::Handler(stop_sandbox),
                SaFlags::empty(),
                SigSet::empty(),
            );
            for signal in [Signal::SIGTERM, Signal::SIGINT, Signal::SIGHUP] {
                // SAFETY: the handler only calls kill(2).
                unsafe { sigaction(signal, &handler) }.map_err(fail("sigaction"))?;
            }
            if let Some(agent) = spec.agent_user {
                serve_id_map_request(child, agent, to_parent_r, to_child_w)?;
            } else {
                drop(to_parent_r);
                drop(to_child_w);
            }
            let end = wait_for(child);
            drop(life_w);
            let mut reported = [0u8; 2];
            let read =
                std::io::Read::read_exact(&mut std::fs::File::from(end_r), &mut reported).is_ok();
            let [signal, hit] = reported;
            let hit = read.then(|| LimitHit::from_code(hit)).flatten();
            let end = match end {
                // PID 1 exited on the agent's behalf: the agent was killed by this signal.
                AgentEnd::Exited(_) if read && signal != 0 => {
                    Signal::try_from(i32::from(signal)).map_or(end, AgentEnd::Killed)
                }
                _ => end,
            };
            // A signal the kernel sends at an rlimit names that limit.
            let hit = hit.or(match end {
                AgentEnd::Killed(Signal::SIGXCPU) => Some(LimitHit::CpuTime),
                AgentEnd::Killed(Signal::SIGXFSZ) => Some(LimitHit::FileSize),
                _ => None,
            });
            Ok((end, hit))
        }
    }
}

/// Asks for SIGKILL when the launcher dies, then checks it has not died already (the lifeline
/// pipe, whose other end only the launcher holds, hangs up when it does).
fn die_with_launcher(lifeline: &std::os::fd::OwnedFd) -> Setup<()> {
    use std::os::fd::AsFd;
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(fail("prctl(PDEATHSIG)"))?;
    let mut fds = [nix::poll::PollFd::new(
        lifeline.as_fd(),
        nix::poll::PollFlags::POLLIN,
    )];
    match nix::poll::poll(&mut fds, nix::poll::PollTimeout::ZERO) {
        Ok(0) => Ok(()),
        Ok(_) => Err(Failure("the launcher is gone".into())),
        Err(e) => Err(fail("poll")(e)),
    }
}

/// Waits for `pid` and says how it ended.
fn wait_for(pid: Pid) -> AgentEnd {
    loop {
        match waitpid(pid, None) {
            Ok(status) => match AgentEnd::from_wait(status) {
                Some(end) => return end,
                None => continue,
            },
            Err(Errno::EINTR) => continue,
            Err(_) => return AgentEnd::Exited(SETUP_FAILED),
        }
    }
}

/// Uid and gid 0.
const ROOT: UserIds = UserIds { uid: 0, gid: 0 };

/// Writes a user namespace's maps so that only one user exists in it: `inside` there, which is
/// `outside` in the namespace that made it.
fn map_ids(proc_dir: &str, inside: UserIds, outside: UserIds, deny_setgroups: bool) -> Setup<()> {
    let write = |file: &str, text: String| {
        std::fs::write(format!("{proc_dir}/{file}"), text)
            .map_err(fail(format!("cannot write {proc_dir}/{file}")))
    };
    write("uid_map", format!("{} {} 1\n", inside.uid, outside.uid))?;
    if deny_setgroups {
        write("setgroups", "deny".into())?;
    }
    write("gid_map", format!("{} {} 1\n", inside.gid, outside.gid))
}

/// As root: waits for the sandbox's PID 1 to create its user namespace, maps the agent's user
/// into it, and tells it to go on.
fn serve_id_map_request(
    child: Pid,
    agent: UserIds,
    from_child: std::os::fd::OwnedFd,
    to_child: std::os::fd::OwnedFd,
) -> Setup<()> {
    let mut byte = [0u8; 1];
    let mut from_child = std::fs::File::from(from_child);
    let mut to_child = std::fs::File::from(to_child);
    use std::io::{Read, Write};
    // EOF: the child failed before it asked; its status says why.
    if from_child.read(&mut byte).unwrap_or(0) == 0 {
        return Ok(());
    }
    let proc_dir = format!("/proc/{child}");
    let result = map_ids(&proc_dir, agent, agent, false);
    let answer = if result.is_ok() { b"1" } else { b"0" };
    let _ = to_child.write_all(answer);
    result
}

/// PID 1 of the sandbox: builds it, starts the agent, reaps, and returns the agent's status.
fn sandbox_init(
    spec: &LaunchSpec,
    host: UserIds,
    to_parent: std::os::fd::OwnedFd,
    from_parent: std::os::fd::OwnedFd,
    lifeline: &std::os::fd::OwnedFd,
    hit: &mut Option<LimitHit>,
) -> Setup<AgentEnd> {
    // If the launcher dies, so does the sandbox: PID 1 exiting kills the namespace.
    die_with_launcher(lifeline)?;
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS;
    if spec.network == Network::None {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(fail("cannot create the namespaces (unshare)"))?;
    let workdir = build_filesystem(spec)?;
    nix::unistd::sethostname("ale-sandbox").map_err(fail("sethostname"))?;
    // While this process is still root of the namespace that owns the IPC namespace.
    limit_ipc(&spec.limits)?;
    match spec.agent_user {
        Some(agent) => {
            enter_user_namespace_as(agent, to_parent, from_parent)?;
            // Changing credentials cleared the parent-death signal.
            die_with_launcher(lifeline)?;
        }
        None => {
            drop(to_parent);
            drop(from_parent);
            // A nested user namespace: the capabilities this process holds over the sandbox's
            // mounts stay behind in the outer one. The agent is the harness's user again.
            unshare(CloneFlags::CLONE_NEWUSER).map_err(fail("cannot create the user namespace"))?;
            map_ids("/proc/self", host, ROOT, true)?;
            forbid_user_namespaces()?;
        }
    }
    nix::sys::prctl::set_no_new_privs().map_err(fail("prctl(NO_NEW_PRIVS)"))?;
    // Found and checked as the agent's user, so that a probe says whether the agent can start.
    let program = match find_program(spec) {
        Ok(program) => program,
        Err(Failure(why)) if spec.probe => {
            eprintln!("ale sandbox: {why}");
            return Ok(AgentEnd::Exited(PROGRAM_NOT_RUNNABLE));
        }
        Err(failure) => return Err(failure),
    };
    if spec.probe {
        return Ok(AgentEnd::Exited(0));
    }
    let argv = c_strings(spec.args.iter().map(|a| a.as_bytes()))?;
    let envp = c_strings(
        spec.env
            .iter()
            .map(|(k, v)| format!("{k}={v}").into_bytes()),
    )?;
    let watched = Watched::of(&spec.limits);
    // SIGCHLD is waited for, with a timeout, between the watchdog's rounds.
    let mut sigchld = SigSet::empty();
    sigchld.add(Signal::SIGCHLD);
    sigchld.thread_block().map_err(fail("sigprocmask"))?;
    // SAFETY: single-threaded.
    match unsafe { fork() }.map_err(fail("fork"))? {
        ForkResult::Child => {
            let _ = nix::unistd::setsid();
            let _ = sigchld.thread_unblock();
            let error = match apply_rlimits(&spec.limits) {
                Err(Failure(why)) => why,
                Ok(()) => match nix::unistd::chdir(&workdir) {
                    Err(e) => format!("cannot enter {}: {e}", workdir.display()),
                    // Last, with no allocation left to make: the filter refuses memfd_create.
                    Ok(()) => match super::seccomp::install() {
                        Err(e) => format!("cannot install the agent's seccomp filter: {e}"),
                        Ok(()) => match nix::unistd::execve(&program, &argv, &envp) {
                            Err(e) => format!("cannot run {}: {e}", program.to_string_lossy()),
                            Ok(never) => match never {},
                        },
                    },
                },
            };
            eprintln!("ale sandbox: {error}");
            // SAFETY: ends the forked child.
            unsafe { libc::_exit(127) }
        }
        ForkResult::Parent { child } => Ok(reap_until(child, &watched, &sigchld, hit)),
    }
}

/// No user namespace may be created in this one (the agent's): without one, the agent can
/// mount nothing, a tmpfs past its caps included. Needs CAP_SYS_RESOURCE in it, which the
/// process that made it holds until it drops to the agent's user.
fn forbid_user_namespaces() -> Setup<()> {
    std::fs::write("/proc/sys/user/max_user_namespaces", "0\n")
        .map_err(fail("cannot forbid user namespaces inside the sandbox"))
}

/// Bounds the System V IPC of the sandbox's own IPC namespace ([`super::limits::ipc_limits`]): shared
/// memory that no process maps would otherwise be counted nowhere. Written in the sandbox's
/// `/proc`, by the root of the user namespace that owns the IPC namespace (the launcher's, or
/// the host's when the harness is root).
fn limit_ipc(limits: &AgentLimits) -> Setup<()> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    for (name, value) in super::limits::ipc_limits(limits.memory_bytes, page) {
        std::fs::write(format!("/proc/sys/{name}"), format!("{value}\n")).map_err(fail(
            format!("cannot limit the sandbox's System V IPC (/proc/sys/{name})"),
        ))?;
    }
    Ok(())
}

/// The agent's own rlimits, set just before it is executed (PID 1, the watchdog, keeps its
/// own). Per process: open files, file size, no core files, CPU time (a backstop to the
/// watchdog's sum); without a cgroup also the address space and the tasks of its uid, which in
/// its user namespace are the sandbox's alone.
fn apply_rlimits(limits: &AgentLimits) -> Setup<()> {
    use nix::sys::resource::{Resource, setrlimit};
    let set = |resource: Resource, what: &str, soft: u64, hard: u64| {
        setrlimit(resource, soft, hard).map_err(fail(format!("cannot limit the agent's {what}")))
    };
    set(Resource::RLIMIT_CORE, "core files", 0, 0)?;
    set(
        Resource::RLIMIT_NOFILE,
        "open files",
        limits.open_files,
        limits.open_files,
    )?;
    set(
        Resource::RLIMIT_FSIZE,
        "file size",
        limits.file_bytes,
        limits.file_bytes,
    )?;
    if let Some(seconds) = limits.cpu_seconds {
        // SIGXCPU at the soft limit, SIGKILL two seconds later.
        set(Resource::RLIMIT_CPU, "CPU time", seconds, seconds + 2)?;
    }
    if limits.enforcement == Enforcement::Rlimits {
        set(
            Resource::RLIMIT_AS,
            "address space",
            limits.memory_bytes,
            limits.memory_bytes,
        )?;
        set(Resource::RLIMIT_NPROC, "tasks", limits.tasks, limits.tasks)?;
    }
    Ok(())
}

/// As PID 1: reaps every process that ends until `agent` does; says how it ended. Between
/// reaps the watchdog sums what the sandbox's processes use (its `/proc` shows only them) and,
/// when a sum reaches its limit, kills every one of them and records the limit in `hit`.
fn reap_until(
    agent: Pid,
    watched: &Watched,
    sigchld: &SigSet,
    hit: &mut Option<LimitHit>,
) -> AgentEnd {
    use nix::sys::wait::WaitPidFlag;
    let watching =
        watched.memory_bytes.is_some() || watched.tasks.is_some() || watched.cpu_seconds.is_some();
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    let mut ledger = super::limits::CpuLedger::default();
    let interval = std::time::Duration::from_millis(super::limits::WATCH_INTERVAL_MS);
    let mut next_round = std::time::Instant::now();
    loop {
        // Everything that has ended so far.
        loop {
            match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(status) if status.pid() == Some(agent) => {
                    if let Some(end) = AgentEnd::from_wait(status) {
                        return end;
                    }
                }
                Ok(_) | Err(Errno::EINTR) => continue,
                Err(_) => return AgentEnd::Exited(SETUP_FAILED),
            }
        }
        let now = std::time::Instant::now();
        if watching && hit.is_none() && now >= next_round {
            let usage = super::limits::sandbox_usage(Path::new("/proc"), &mut ledger);
            if let Some(limit) = watched.exceeded(&usage, ticks) {
                *hit = Some(limit);
                // SAFETY: kill(-1) from PID 1 signals every other process of its namespace.
                unsafe {
                    libc::kill(-1, libc::SIGKILL);
                }
            }
            next_round = now + interval;
        }
        let wait = if watching && hit.is_none() {
            next_round.saturating_duration_since(std::time::Instant::now())
        } else {
            std::time::Duration::from_secs(3600)
        };
        let timeout = libc::timespec {
            tv_sec: wait.as_secs() as libc::time_t,
            tv_nsec: wait.subsec_nanos() as libc::c_long,
        };
        // SAFETY: waits for a blocked signal; the set and the timeout outlive the call.
        unsafe {
            libc::sigtimedwait(sigchld.as_ref(), std::ptr::null_mut(), &timeout);
        }
    }
}

fn c_strings<I, B>(items: I) -> Setup<Vec<CString>>
where
    I: Iterator<Item = B>,
    B: Into<Vec<u8>>,
{
    items
        .map(|b| CString::new(b).map_err(fail("an argument or variable holds a NUL byte")))
        .collect()
}

/// Drops to the agent's user and enters a user namespace in which only that user exists, so
/// that nothing the agent does can act on the sandbox's mounts.
fn enter_user_namespace_as(
    agent: UserIds,
    to_parent: std::os::fd::OwnedFd,
    from_parent: std::os::fd::OwnedFd,
) -> Setup<()> {
    use std::io::{Read, Write};
    unshare(CloneFlags::CLONE_NEWUSER).map_err(fail("cannot create the user namespace"))?;
    let mut to_parent = std::fs::File::from(to_parent);
    let mut from_parent = std::fs::File::from(from_parent);
    to_parent
        .write_all(b"m")
        .map_err(fail("cannot ask the launcher to map the agent's user"))?;
    let mut answer = [0u8; 1];
    if from_parent.read(&mut answer).unwrap_or(0) != 1 || answer[0] != b'1' {
        return Err(Failure(
            "the launcher could not map the agent's user into the sandbox".into(),
        ));
    }
    // While this process still holds its capabilities in the new namespace.
    forbid_user_namespaces()?;
    let gid = Gid::from_raw(agent.gid);
    let uid = Uid::from_raw(agent.uid);
    nix::unistd::setgroups(&[gid]).map_err(fail("setgroups"))?;
    nix::unistd::setresgid(gid, gid, gid).map_err(fail("setresgid"))?;
    nix::unistd::setresuid(uid, uid, uid).map_err(fail("setresuid"))?;
    Ok(())
}

/// The program to execute: a path as given (resolved by the harness), or the first match in
/// the agent's `PATH`; either way a file the agent's user may execute in the sandbox.
fn find_program(spec: &LaunchSpec) -> Setup<CString> {
    let program = &spec.program;
    let runnable = |path: &Path| {
        nix::unistd::access(path, nix::unistd::AccessFlags::X_OK).is_ok() && path.is_file()
    };
    let path = if program.components().count() > 1 || program.is_absolute() {
        if !runnable(program) {
            let why = match std::fs::metadata(program) {
                Err(e) => e.to_string(),
                Ok(m) if !m.is_file() => "not a file".to_string(),
                Ok(_) => format!(
                    "not executable by the agent's user (uid {})",
                    Uid::effective()
                ),
            };
            return Err(Failure(format!(
                "the agent program {} cannot be run inside the sandbox: {why}",
                program.display()
            )));
        }
        program.clone()
    } else {
        let search = spec
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map_or("/usr/local/bin:/usr/bin:/bin", |(_, v)| v.as_str());
        search
            .split(':')
            .filter(|dir| !dir.is_empty())
            .map(|dir| Path::new(dir).join(program))
            .find(|candidate| runnable(candidate))
            .ok_or_else(|| {
                Failure(format!(
                    "{}: not found in the agent's PATH ({search}) inside the sandbox",
                    program.display()
                ))
            })?
    };
    CString::new(path.as_os_str().as_bytes()).map_err(fail("the program path holds a NUL byte"))
}

// ---- the filesystem ----

const STAGING: &str = "/tmp";
const NEWROOT: &str = "/newroot";
const OLDROOT: &str = "/oldroot";
/// Device nodes the agent gets, bound from the host's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// Sets mount attributes on `path` and every mount below it: a recursive bind mount made
/// read-only this way leaves no writable submount behind.
fn set_attributes_recursively(path: &Path, attr_set: u64) -> Setup<()> {
    let c_path = CString::new(path.as_os_str().as_bytes()).map_err(fail("path"))?;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    binds::set_attributes(nix::fcntl::AT_FDCWD, &c_path, AT_RECURSIVE, attr_set)
        .map_err(fail(format!("cannot make {} read-only", path.display())))
}

fn mount_tmpfs(target: &Path, options: &str, flags: MsFlags) -> Setup<()> {
    mount(Some("tmpfs"), target, Some("tmpfs"), flags, Some(options)).map_err(fail(format!(
        "cannot mount a tmpfs on {}",
        target.display()
    )))
}

fn bind(source: &Path, target: &Path) -> Setup<()> {
    mount(
        Some(source),
        target,
        None::<&str>,
        MsFlags::MS_BIND | MsFlags::MS_REC,
        None::<&str>,
    )
    .map_err(fail(format!(
        "cannot bind {} on {}",
        source.display(),
        target.display()
    )))
}

fn mkdir(path: &Path, mode: u32) -> Setup<()> {
    match std::fs::create_dir(path) {
        Ok(()) => std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .map_err(fail(format!("chmod {}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(fail(format!("mkdir {}", path.display()))(e)),
    }
}

fn touch(path: &Path) -> Setup<()> {
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map(drop)
        .map_err(fail(format!("cannot create {}", path.display())))
}

/// `path` inside the new root.
fn in_newroot(path: &Path) -> PathBuf {
    let relative: PathBuf = path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect();
    Path::new(NEWROOT).join(relative)
}

/// The first component of an absolute path.
fn top_level(path: &Path) -> Option<&OsStr> {
    path.components().find_map(|c| match c {
        Component::Normal(name) => Some(name),
        _ => None,
    })
}

/// Whether `path` lies in one of the sandbox's own tmpfs folders, where mount points may be
/// created.
fn is_in_private_tmpfs(path: &Path) -> bool {
    top_level(path).is_some_and(|top| PRIVATE_TOP_LEVEL.iter().any(|p| top == OsStr::new(p)))
}

/// Whether `path` lies where the sandbox has a tmpfs of its own: its private folders, or a
/// mask over a hidden folder. Only there may mount points be created.
fn is_in_own_tmpfs(path: &Path, masks: &[PathBuf]) -> bool {
    is_in_private_tmpfs(path) || masks.iter().any(|m| path.starts_with(m))
}

/// Builds the agent's root and pivots into it. Returns the working directory to start in.
fn build_filesystem(spec: &LaunchSpec) -> Setup<PathBuf> {
    // Nothing we mount from here on propagates back to the host.
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None::<&str>,
    )
    .map_err(fail("cannot make the mounts private"))?;
    let staging = Path::new(STAGING);
    mount_tmpfs(
        staging,
        "mode=0755,size=1m",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
    )?;
    let staged_new = staging.join("newroot");
    let staged_old = staging.join("oldroot");
    mkdir(&staged_new, 0o755)?;
    mkdir(&staged_old, 0o755)?;
    mount_tmpfs(&staged_new, "mode=0755,size=1m", MsFlags::MS_NOSUID)?;
    pivot_root(staging, &staged_old).map_err(fail("pivot_root into the staging root"))?;
    nix::unistd::chdir("/").map_err(fail("chdir /"))?;
    let oldroot = Path::new(OLDROOT);
    let newroot = Path::new(NEWROOT);
    // Host files are bound from beneath this descriptor, onto mount points beneath the other,
    // never by a path that could lead elsewhere (see `binds`). Both close before the host's
    // root is detached.
    let host_root = binds::Root::open(oldroot).map_err(Failure)?;
    let new_root = binds::Root::open(newroot).map_err(Failure)?;

    // The host's top-level entries, read-only; the private ones are replaced below.
    let entries = std::fs::read_dir(oldroot).map_err(fail("cannot list the host's /"))?;
    for entry in entries {
        let entry = entry.map_err(fail("cannot list the host's /"))?;
        let name = entry.file_name();
        if PRIVATE_TOP_LEVEL.iter().any(|p| name == OsStr::new(p)) {
            continue;
        }
        let source = entry.path();
        let target = newroot.join(&name);
        let kind = entry
            .file_type()
            .map_err(fail(format!("stat {}", source.display())))?;
        if kind.is_symlink() {
            let link = std::fs::read_link(&source)
                .map_err(fail(format!("readlink {}", source.display())))?;
            std::os::unix::fs::symlink(&link, &target)
                .map_err(fail(format!("symlink {}", target.display())))?;
            continue;
        }
        if kind.is_dir() {
            mkdir(&target, 0o755)?;
        } else {
            touch(&target)?;
        }
        bind(&source, &target)?;
        set_attributes_recursively(
            &target,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        )?;
    }

    // A /proc of the sandbox's own PID namespace.
    let proc_dir = newroot.join("proc");
    mkdir(&proc_dir, 0o555)?;
    mount(
        Some("proc"),
        &proc_dir,
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(fail("cannot mount /proc"))?;

    // A minimal /dev.
    let dev = newroot.join("dev");
    mkdir(&dev, 0o755)?;
    mount_tmpfs(
        &dev,
        "mode=0755,size=64k",
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
    )?;
    for device in DEVICES {
        let source = oldroot.join("dev").join(device);
        if source.exists() {
            let target = dev.join(device);
            touch(&target)?;
            bind(&source, &target)?;
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        std::os::unix::fs::symlink(target, dev.join(name))
            .map_err(fail(format!("symlink /dev/{name}")))?;
    }
    let shm = dev.join("shm");
    mkdir(&shm, 0o1777)?;
    mount_tmpfs(
        &shm,
        "mode=1777,size=64m",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
    )?;

    // A private /tmp (with HOME and the default working directory) and /run.
    let tmp = newroot.join("tmp");
    mkdir(&tmp, 0o1777)?;
    mount_tmpfs(
        &tmp,
        &format!("mode=1777,size={}", spec.tmp_bytes.max(1 << 20)),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
    )?;
    let run = newroot.join("run");
    mkdir(&run, 0o755)?;
    mount_tmpfs(
        &run,
        "mode=0755,size=1m",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
    )?;
    for private in [SANDBOX_HOME, SANDBOX_DEFAULT_WORKDIR] {
        let dir = in_newroot(Path::new(private));
        mkdir(&dir, 0o700)?;
        if let Some(agent) = spec.agent_user {
            std::os::unix::fs::chown(&dir, Some(agent.uid), Some(agent.gid))
                .map_err(fail(format!("chown {private}")))?;
        }
    }

    // What the agent must not see, before anything is bound beneath.
    if let Some(dir) = &spec.workdir {
        refuse_hidden_inside(&spec.hidden, &dir.path, "the working directory")?;
    }
    for dir in &spec.exposed {
        refuse_hidden_inside(&spec.hidden, &dir.path, "the exposed folder")?;
    }
    let masks = mask_hidden_folders(&spec.hidden)?;
    let bind_host =
        |binding: Binding<'_>| binds::bind_pinned(&host_root, &new_root, &binding).map_err(Failure);

    // The way out: the evaluator's agent socket.
    let socket = Path::new(SANDBOX_AGENT_SOCKET);
    bind_host(Binding {
        what: "the agent socket",
        pinned: &spec.agent_socket,
        at: socket,
        kind: Kind::File,
        attributes: 0,
        may_create: is_in_own_tmpfs(socket, &masks),
    })?;

    // A batch task's submission folder: the one host folder the agent may write to.
    if let Some(dir) = &spec.submission_dir {
        let at = Path::new(SANDBOX_SUBMISSION_DIR);
        bind_host(Binding {
            what: "the submission folder",
            pinned: dir,
            at,
            kind: Kind::Folder,
            attributes: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            may_create: is_in_own_tmpfs(at, &masks),
        })?;
    }

    // The working directory (writable) and the exposed folders (read-only), at their own
    // paths, outer ones first, so that one inside another keeps its own access.
    let read_only = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    let mut folders: Vec<(&PinnedPath, u64, &str)> = spec
        .exposed
        .iter()
        .map(|dir| (dir, read_only, "the exposed folder"))
        .chain(spec.workdir.iter().map(|dir| {
            (
                dir,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                "the working directory",
            )
        }))
        .collect();
    folders.sort_by_key(|(dir, _, _)| dir.path.components().count());
    for (dir, attributes, what) in folders {
        bind_host(Binding {
            what,
            pinned: dir,
            at: &dir.path,
            kind: Kind::Folder,
            attributes,
            may_create: is_in_own_tmpfs(&dir.path, &masks),
        })?;
    }
    let workdir = spec.workdir.as_ref().map_or_else(
        || PathBuf::from(SANDBOX_DEFAULT_WORKDIR),
        |dir| dir.path.clone(),
    );

    // A program started by a path where the sandbox has folders of its own (or hidden ones)
    // is bound there read-only, on its own. One inside a bound folder is there already;
    // nothing may be created in a host folder.
    if let Some(file) = &spec.program_file {
        let at = &spec.program;
        if at.is_absolute()
            && is_in_own_tmpfs(at, &masks)
            && !binds::exists(&new_root, at, "the agent program").map_err(Failure)?
        {
            bind_host(Binding {
                what: "the agent program",
                pinned: file,
                at,
                kind: Kind::File,
                attributes: read_only,
                may_create: true,
            })?;
        }
    }
    drop(host_root);
    drop(new_root);

    for mask in &masks {
        mount(
            None::<&str>,
            &in_newroot(mask),
            None::<&str>,
            MsFlags::MS_REMOUNT
                | MsFlags::MS_BIND
                | MsFlags::MS_RDONLY
                | MsFlags::MS_NOSUID
                | MsFlags::MS_NODEV,
            None::<&str>,
        )
        .map_err(fail(format!(
            "cannot make the mask over {} read-only",
            mask.display()
        )))?;
    }

    // Leave the host's root behind for good and make the new root the root.
    umount2(oldroot, MntFlags::MNT_DETACH).map_err(fail("cannot detach the host's root"))?;
    nix::unistd::chdir(newroot).map_err(fail("chdir /newroot"))?;
    pivot_root(".", ".").map_err(fail("pivot_root into the sandbox"))?;
    umount2(".", MntFlags::MNT_DETACH).map_err(fail("cannot detach the staging root"))?;
    nix::unistd::chdir("/").map_err(fail("chdir /"))?;
    mount(
        None::<&str>,
        "/",
        None::<&str>,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID,
        None::<&str>,
    )
    .map_err(fail("cannot make the sandbox's root read-only"))?;
    Ok(workdir)
}

/// Where a host path is while the host's root sits under `/oldroot`. Only absolute paths
/// without `..` are taken: the harness hands over canonical paths.
fn host_path(path: &Path) -> Setup<PathBuf> {
    mounts::seen_under(Path::new(OLDROOT), path).map_err(Failure)
}

/// Puts an empty tmpfs over each hidden host folder wherever it is visible in the new root:
/// at its own path, and at every other path the same folder (or a part of it) is reachable by
/// (its filesystem mounted a second time). Returns the masks. Fails closed: a hidden folder that
/// exists but cannot be masked is an error.
fn mask_hidden_folders(hidden: &[PathBuf]) -> Setup<Vec<PathBuf>> {
    let mounts = mounts::read_mounts(Path::new(OLDROOT)).map_err(Failure)?;
    let mut targets: Vec<PathBuf> = Vec::new();
    for folder in hidden {
        let host = host_path(folder)?;
        let meta = match std::fs::symlink_metadata(&host) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(fail(format!("cannot hide {}", folder.display()))(e)),
            Ok(m) if !m.is_dir() => {
                return Err(Failure(format!(
                    "cannot hide {}: not a folder",
                    folder.display()
                )));
            }
            Ok(m) => m,
        };
        if !is_in_private_tmpfs(folder) {
            targets.push(folder.clone());
        }
        targets.extend(aliases_in_newroot(folder, &host, &meta, &mounts)?);
    }
    // Parents first: a folder inside one already masked is hidden with it.
    targets.sort();
    targets.dedup();
    let mut masks: Vec<PathBuf> = Vec::new();
    for folder in &targets {
        if is_in_private_tmpfs(folder) || masks.iter().any(|m| folder.starts_with(m)) {
            continue; // not visible in the first place
        }
        let target = in_newroot(folder);
        if !std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_dir()) {
            return Err(Failure(format!(
                "cannot hide {}: it is not a folder inside the sandbox's view",
                folder.display()
            )));
        }
        mount_tmpfs(
            &target,
            "mode=0755,size=1m",
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        )?;
        masks.push(folder.clone());
    }
    Ok(masks)
}

/// The sandbox paths at which the hidden `folder` is visible in the new root.
fn aliases_in_newroot(
    folder: &Path,
    host: &Path,
    meta: &std::fs::Metadata,
    mounts: &[mounts::MountEntry],
) -> Setup<Vec<PathBuf>> {
    Ok(
        mounts::reachable_paths(folder, host, meta, mounts, Path::new(NEWROOT))
            .map_err(Failure)?
            .iter()
            .filter_map(|p| Some(Path::new("/").join(p.strip_prefix(NEWROOT).ok()?)))
            .collect(),
    )
}

/// Refuses a folder to be bound in (the working directory, an exposed folder) through which a
/// hidden folder is reachable (the folder itself, or the same folder mounted a second time
/// inside it): binding it would undo the masks. The harness refuses such folders before it
/// starts the launcher; this is the launcher's own check, on the mount table it masks from.
fn refuse_hidden_inside(hidden: &[PathBuf], dir: &Path, what: &str) -> Setup<()> {
    let mounts = mounts::read_mounts(Path::new(OLDROOT)).map_err(Failure)?;
    let host_dir = host_path(dir)?;
    for folder in hidden {
        let host = host_path(folder)?;
        let Ok(meta) = std::fs::symlink_metadata(&host) else {
            continue;
        };
        let reachable =
            mounts::reachable_paths(folder, &host, &meta, &mounts, &host_dir).map_err(Failure)?;
        if let Some(path) = reachable.first() {
            let inside = Path::new("/").join(path.strip_prefix(OLDROOT).unwrap_or(path));
            return Err(Failure(format!(
                "{what} {} holds {} (which is {}), which the agent must not see",
                dir.display(),
                inside.display(),
                folder.display()
            )));
        }
    }
    Ok(())
}
