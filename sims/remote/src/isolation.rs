//! [`IsolatedLauncher`]: hosts with no network, no sight of the evaluator's state dir or of any
//! process but their own, and nothing of the machine's they could change.
//!
//! A host is part of the evaluator (it is handed hidden seeds), but the code it runs is a task
//! author's, and must neither read the evaluator's keys, reach out, nor leave anything behind.
//! Before the host program starts, its process (the *keeper*) enters new mount, network, PID
//! and IPC namespaces (and, when the evaluator is not root, a user namespace that maps only
//! the evaluator's own uid, so that the program holds no capability and the mounts below are
//! locked), then:
//!
//! - as root, covers users' homes (`/root`, `/home`) with an empty read-only tmpfs in which only
//!   the program's own installation (a venv and the Python it was made from) and the task's
//!   `expose` folders appear, read-only: `nobody` could not reach them otherwise;
//!
//! - makes every mount read-only (recursively), so nothing on the machine can be written;
//! - gives it a private `/tmp` (with `HOME` in it) and a `/dev` of its own with only `null`,
//!   `zero`, `full`, `random` and `urandom`;
//! - covers each hidden folder (the state dir) with an empty, read-only tmpfs;
//! - forks PID 1 of the new PID namespace, an init that mounts a `/proc` showing only that
//!   namespace, read-only, so no other process's
//!   files (`/proc/<pid>/root`) can be reached and no other process signalled; as root it
//!   then becomes `nobody` (uid 65534), which owns nothing of the machine's and holds no
//!   capability;
//! - and the init forks the host program (PID 2), then reaps until it ends.
//!
//! Everything the host starts dies with it (the init's end ends the namespace), and it dies
//! with the evaluator (`PR_SET_PDEATHSIG` on the keeper, the init and the program). The keeper
//! waits for the init and ends as the program ended. The host has `no_new_privs` and a bounded address space. The
//! evaluator makes itself non-dumpable ([`protect_evaluator`]).

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::process::{HostCommand, Launcher};

/// The size of a host's private `/tmp`.
pub const TMP_BYTES: u64 = 256 << 20;

/// Device nodes a host gets, bound from the machine's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom"];

#[derive(Debug, Clone)]
pub struct IsolatedLauncher {
    /// Folders the host must not see (the state dir). Each must exist.
    pub hidden: Vec<PathBuf>,
}

impl IsolatedLauncher {
    pub fn hiding(hidden: Vec<PathBuf>) -> IsolatedLauncher {
        IsolatedLauncher { hidden }
    }
}

/// Makes this process (the evaluator) non-dumpable: processes of its uid without
/// `CAP_SYS_PTRACE` can then neither trace it nor open its `/proc/<pid>/root`, `cwd` or `fd`.
pub fn protect_evaluator() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) })
}

/// Everything the keeper needs, made before `fork`: between `fork` and `exec` nothing may
/// allocate.
struct Plan {
    as_root: bool,
    /// As root: users' homes, covered by an empty read-only tmpfs (mode 0755) in which only
    /// the exposed folders below them appear.
    homes: Vec<CString>,
    /// As root: folders under a home the host needs (its program's installation), bound back
    /// read-only: the source, the fd it is held by meanwhile (`/proc/self/fd/N`), and the
    /// folders to make in the cover on the way to it.
    exposed: Vec<Exposed>,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    hidden: Vec<CString>,
    tmp_options: CString,
    /// `/tmp/.ale-dev`, where `/dev` is built before it is moved into place.
    staging: CString,
    /// (`/dev/null`, `/tmp/.ale-dev/null`), …
    devices: Vec<(CString, CString)>,
    memory: u64,
}

struct Exposed {
    source: CString,
    fd: libc::c_int,
    fd_path: CString,
    steps: Vec<CString>,
}

/// The descriptor number an exposed folder is held by between its opening and its binding.
const EXPOSED_FD_BASE: libc::c_int = 900;
/// The most folders one host may have exposed.
pub const MAX_EXPOSED: usize = 16;

/// The user a root evaluator's hosts run as (`nobody`).
pub const HOST_UID_AS_ROOT: u32 = 65534;

/// `program` as the host will run it: a path, or the first match in `PATH`.
fn locate(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return Some(PathBuf::from(program));
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
}

/// The installation a program belongs to: the folder above its `bin` (a venv, a Python).
fn installation(program: &Path) -> Option<PathBuf> {
    let bin = program.parent()?;
    (bin.file_name()? == "bin").then(|| bin.parent().map(Path::to_path_buf))?
}

fn c(text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|e| e.to_string())
}

/// As root, the homes to cover and what to show in them: the program's installation and the
/// folders the task exposes, where they lie in a home.
fn exposure(host: &HostCommand) -> Result<(Vec<CString>, Vec<Exposed>), String> {
    let homes: Vec<PathBuf> = ["/root", "/home"]
        .iter()
        .filter_map(|h| std::fs::canonicalize(h).ok())
        .filter(|h| h.is_dir() && h.parent().is_some())
        .collect();
    let mut wanted: Vec<PathBuf> = host.expose.clone();
    if let Some(program) = locate(&host.program) {
        let absolute = std::path::absolute(&program).unwrap_or(program);
        wanted.extend(installation(&absolute));
        if let Ok(real) = std::fs::canonicalize(&absolute) {
            wanted.extend(installation(&real));
        }
    }
    let mut shown: Vec<(PathBuf, PathBuf)> = Vec::new();
    for folder in wanted {
        let folder = std::fs::canonicalize(&folder)
            .map_err(|e| format!("cannot expose {} to the host: {e}", folder.display()))?;
        let Some(home) = homes
            .iter()
            .find(|h| folder.starts_with(h) && folder != **h)
        else {
            continue;
        };
        if !shown.iter().any(|(f, _)| folder.starts_with(f)) {
            shown.retain(|(f, _)| !f.starts_with(&folder));
            shown.push((folder, home.clone()));
        }
    }
    if shown.len() > MAX_EXPOSED {
        return Err(format!(
            "more than {MAX_EXPOSED} folders to expose to the host"
        ));
    }
    let text = |p: &Path| {
        p.to_str()
            .ok_or_else(|| format!("{} is not UTF-8", p.display()))
            .and_then(c)
    };
    let mut exposed = Vec::new();
    for (k, (folder, home)) in shown.iter().enumerate() {
        let fd = EXPOSED_FD_BASE + k as libc::c_int;
        let mut steps = Vec::new();
        let mut at = home.clone();
        for part in folder
            .strip_prefix(home)
            .map_err(|e| e.to_string())?
            .components()
        {
            at.push(part);
            steps.push(text(&at)?);
        }
        exposed.push(Exposed {
            source: text(folder)?,
            fd,
            fd_path: c(&format!("/proc/self/fd/{fd}"))?,
            steps,
        });
    }
    let homes = homes.iter().map(|h| text(h)).collect::<Result<_, _>>()?;
    Ok((homes, exposed))
}

impl Launcher for IsolatedLauncher {
    fn prepare(&self, host: &HostCommand) -> Result<Command, String> {
        // SAFETY: getters that never fail.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let mut hidden = Vec::new();
        for dir in &self.hidden {
            let dir = std::fs::canonicalize(dir)
                .map_err(|e| format!("cannot hide {} from the host: {e}", dir.display()))?;
            let text = dir
                .to_str()
                .ok_or_else(|| format!("{} is not UTF-8", dir.display()))?;
            hidden.push(c(text)?);
        }
        let staging = "/tmp/.ale-dev";
        let as_root = euid == 0;
        let (homes, exposed) = if as_root {
            exposure(host)?
        } else {
            (Vec::new(), Vec::new())
        };
        let plan = Plan {
            as_root,
            homes,
            exposed,
            uid_map: format!("{euid} {euid} 1\n").into_bytes(),
            gid_map: format!("{egid} {egid} 1\n").into_bytes(),
            hidden,
            tmp_options: c(&format!("size={TMP_BYTES},mode=1777"))?,
            staging: c(staging)?,
            devices: DEVICES
                .iter()
                .map(|d| Ok((c(&format!("/dev/{d}"))?, c(&format!("{staging}/{d}"))?)))
                .collect::<Result<_, String>>()?,
            memory: host.memory_bytes,
        };
        let mut command = Command::new(&host.program);
        command.args(&host.args).env_clear();
        for key in ["PATH", "LANG"] {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        command
            .env("HOME", "/tmp")
            .env("TMPDIR", "/tmp")
            .env("PYTHONNOUSERSITE", "1")
            .env("PYTHONDONTWRITEBYTECODE", "1");
        command.envs(host.env.iter().map(|(k, v)| (k, v)));
        command.current_dir("/");
        // SAFETY: the closure makes only system calls on buffers made before the fork.
        unsafe {
            command.pre_exec(move || isolate(&plan));
        }
        Ok(command)
    }

    fn describe(&self) -> String {
        "isolated (own namespaces, no network, read-only, the state dir hidden)".into()
    }
}

fn check(ret: libc::c_int) -> std::io::Result<()> {
    if ret < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Writes `bytes` to the file at `path` (a NUL-terminated literal).
fn write_file(path: &[u8], bytes: &[u8]) -> std::io::Result<()> {
    // SAFETY: `path` is NUL-terminated; the buffer outlives the calls.
    unsafe {
        let fd = libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC);
        check(fd)?;
        let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
        libc::close(fd);
        if n != bytes.len() as isize {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// `mount(2)` with C strings (`None`: NULL).
fn mount(
    source: Option<&std::ffi::CStr>,
    target: &std::ffi::CStr,
    fstype: Option<&std::ffi::CStr>,
    flags: libc::c_ulong,
    data: Option<&std::ffi::CStr>,
) -> std::io::Result<()> {
    let ptr = |s: Option<&std::ffi::CStr>| s.map_or(std::ptr::null(), |s| s.as_ptr());
    // SAFETY: NUL-terminated strings (or NULL) that live across the call.
    check(unsafe {
        libc::mount(
            ptr(source),
            target.as_ptr(),
            ptr(fstype),
            flags,
            ptr(data).cast(),
        )
    })
}

/// Makes the mount at `path` and every mount below it read-only (mount_setattr(2)).
fn read_only_recursively(path: &std::ffi::CStr) -> std::io::Result<()> {
    #[repr(C)]
    struct MountAttr {
        attr_set: u64,
        attr_clr: u64,
        propagation: u64,
        userns_fd: u64,
    }
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const MOUNT_ATTR_NOSUID: u64 = 0x2;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a valid C string and a properly sized, initialised mount_attr.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            libc::AT_FDCWD,
            path.as_ptr(),
            AT_RECURSIVE,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Runs in the host's process between `fork` and `exec`: sets the namespaces up, then forks
/// the program's process (which returns, to `exec` it) and waits for it (never returning).
fn isolate(plan: &Plan) -> std::io::Result<()> {
    // SAFETY: system calls on values and buffers that live across them.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
        check(libc::setsid())?;
        let mut flags =
            libc::CLONE_NEWNS | libc::CLONE_NEWNET | libc::CLONE_NEWPID | libc::CLONE_NEWIPC;
        if !plan.as_root {
            flags |= libc::CLONE_NEWUSER;
        }
        check(libc::unshare(flags))?;
        if !plan.as_root {
            write_file(b"/proc/self/setgroups\0", b"deny")?;
            write_file(b"/proc/self/uid_map\0", &plan.uid_map)?;
            write_file(b"/proc/self/gid_map\0", &plan.gid_map)?;
        }
    }
    mount(None, c"/", None, libc::MS_REC | libc::MS_PRIVATE, None)?;
    // The exposed folders, held before anything covers them.
    for folder in &plan.exposed {
        // SAFETY: open and dup3 on a NUL-terminated path and plain values.
        unsafe {
            let fd = libc::open(
                folder.source.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            check(fd)?;
            check(libc::dup3(fd, folder.fd, libc::O_CLOEXEC))?;
            libc::close(fd);
        }
    }
    read_only_recursively(c"/")?;
    // The covers first: a hidden folder under /tmp then also lies under the fresh /tmp.
    for dir in &plan.hidden {
        mount(
            Some(c"tmpfs"),
            dir,
            Some(c"tmpfs"),
            libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
            Some(c"size=4k,mode=000"),
        )?;
    }
    // As root: users' homes covered, but for what the host needs of them.
    for home in &plan.homes {
        mount(
            Some(c"tmpfs"),
            home,
            Some(c"tmpfs"),
            libc::MS_NOSUID | libc::MS_NODEV,
            Some(c"size=64k,mode=755"),
        )?;
    }
    for folder in &plan.exposed {
        for step in &folder.steps {
            // SAFETY: mkdir on a NUL-terminated path.
            if unsafe { libc::mkdir(step.as_ptr(), 0o755) } < 0
                && std::io::Error::last_os_error().raw_os_error() != Some(libc::EEXIST)
            {
                return Err(std::io::Error::last_os_error());
            }
        }
        let at = folder.steps.last().unwrap_or(&folder.source);
        mount(
            Some(&folder.fd_path),
            at,
            None,
            libc::MS_BIND | libc::MS_REC,
            None,
        )?;
        // SAFETY: closing the descriptor opened above.
        unsafe {
            libc::close(folder.fd);
        }
    }
    for home in &plan.homes {
        mount(
            None,
            home,
            None,
            libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV,
            None,
        )?;
    }
    let nosuid = libc::MS_NOSUID | libc::MS_NODEV;
    mount(
        Some(c"tmpfs"),
        c"/tmp",
        Some(c"tmpfs"),
        nosuid,
        Some(&plan.tmp_options),
    )?;
    // A /dev of its own: built in /tmp, then moved over the machine's.
    // SAFETY: mkdir/open/close on NUL-terminated paths.
    unsafe {
        check(libc::mkdir(plan.staging.as_ptr(), 0o755))?;
    }
    mount(
        Some(c"tmpfs"),
        &plan.staging,
        Some(c"tmpfs"),
        libc::MS_NOSUID | libc::MS_NOEXEC,
        Some(c"size=64k,mode=755"),
    )?;
    for (device, at) in &plan.devices {
        // SAFETY: open/close on a NUL-terminated path.
        unsafe {
            let fd = libc::open(
                at.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC,
                0o666,
            );
            check(fd)?;
            libc::close(fd);
        }
        mount(Some(device), at, None, libc::MS_BIND, None)?;
        // Writable (the bind took the read-only flag the whole machine now has).
        mount(
            None,
            at,
            None,
            libc::MS_BIND | libc::MS_REMOUNT | libc::MS_NOSUID | libc::MS_NOEXEC,
            None,
        )?;
    }
    mount(Some(&plan.staging), c"/dev", None, libc::MS_MOVE, None)?;
    // The keeper's report channel from the namespace's init: how the program ended.
    let mut report = [0; 2];
    // SAFETY: pipe2 into a two-element array.
    check(unsafe { libc::pipe2(report.as_mut_ptr(), libc::O_CLOEXEC) })?;
    let [report_r, report_w] = report;
    // SAFETY: fork in a single-threaded process (std's child between fork and exec).
    let init = unsafe { libc::fork() };
    if init < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if init > 0 {
        keep(init, report_r);
    }
    // PID 1 of the new namespace: the init that mounts its /proc and reaps.
    // SAFETY: system calls with plain values.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
        libc::close(report_r);
    }
    // Read-only: nothing of the machine's (sysctls, IRQ affinities, PCI) can be set from it.
    mount(
        Some(c"proc"),
        c"/proc",
        Some(c"proc"),
        libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
        None,
    )?;
    if plan.as_root {
        // An unprivileged user from here on: it owns nothing of the machine's.
        // SAFETY: setgroups/setresgid/setresuid with plain values.
        unsafe {
            check(libc::setgroups(0, std::ptr::null()))?;
            check(libc::setresgid(
                HOST_UID_AS_ROOT,
                HOST_UID_AS_ROOT,
                HOST_UID_AS_ROOT,
            ))?;
            check(libc::setresuid(
                HOST_UID_AS_ROOT,
                HOST_UID_AS_ROOT,
                HOST_UID_AS_ROOT,
            ))?;
        }
        // Changing to a uid other than 0 has cleared every capability; `no_new_privs` (below)
        // keeps exec from granting any. It also cleared the parent-death signal: set again.
        // SAFETY: prctl with plain values.
        unsafe {
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
        }
    }
    // SAFETY: prctl and setrlimit with values that live across the calls.
    unsafe {
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        let limit = libc::rlimit {
            rlim_cur: plan.memory,
            rlim_max: plan.memory,
        };
        check(libc::setrlimit(libc::RLIMIT_AS, &limit))?;
    }
    // SAFETY: fork in a single-threaded process.
    let program = unsafe { libc::fork() };
    if program < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if program > 0 {
        reap(program, report_w);
    }
    // PID 2: the host program, which `exec` replaces now. Not PID 1, so signals it sends
    // itself (abort, a Python `os.kill(os.getpid(), …)`) act as anywhere else.
    // SAFETY: close, close_range and prctl with plain values.
    unsafe {
        libc::close(report_w);
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
    }
    close_inherited_at_exec()?;
    Ok(())
}

/// Marks every descriptor above stdio close-on-exec: whatever the evaluator inherited from
/// its own parent (a descriptor of a folder would lead around the covers) stays behind.
pub(crate) fn close_inherited_at_exec() -> std::io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: close_range with plain values.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, CLOSE_RANGE_CLOEXEC) };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Closes every descriptor but `keep`.
fn close_all_but(keep: libc::c_int) {
    // SAFETY: close_range with plain values; closing descriptors this process does not use.
    unsafe {
        if keep > 0 {
            libc::syscall(libc::SYS_close_range, 0u32, (keep - 1) as u32, 0u32);
        }
        libc::syscall(libc::SYS_close_range, (keep + 1) as u32, u32::MAX, 0u32);
    }
}

/// The namespace's init: reaps every process in it until the program ends, tells the keeper
/// how (a byte: 0 exited, 1 killed; then the status or signal), and exits, which ends the
/// namespace and whatever the program left running. Never returns.
fn reap(program: libc::pid_t, report: libc::c_int) -> ! {
    close_all_but(report);
    // SAFETY: waitpid, write and _exit with plain values and a live buffer.
    unsafe {
        let mut status = 0;
        loop {
            let pid = libc::waitpid(-1, &mut status, 0);
            if pid == program {
                break;
            }
            if pid < 0 && *libc::__errno_location() != libc::EINTR {
                libc::_exit(125);
            }
        }
        let message: [u8; 2] = if libc::WIFSIGNALED(status) {
            [1, libc::WTERMSIG(status) as u8]
        } else {
            [0, libc::WEXITSTATUS(status) as u8]
        };
        libc::write(report, message.as_ptr().cast(), 2);
        libc::_exit(0)
    }
}

/// The keeper: holds nothing of the host's but the init's report (so the evaluator's spawn
/// sees the program's `exec` and not this process), waits for the init, and ends as the
/// program ended: with its status, or killed by its signal. Never returns.
fn keep(init: libc::pid_t, report: libc::c_int) -> ! {
    close_all_but(report);
    // SAFETY: waitpid, read, signal, kill and _exit with plain values and live buffers.
    unsafe {
        let mut status = 0;
        while libc::waitpid(init, &mut status, 0) < 0 {
            if *libc::__errno_location() != libc::EINTR {
                libc::_exit(125);
            }
        }
        let mut message = [0u8; 2];
        let (signal, code) = if libc::read(report, message.as_mut_ptr().cast(), 2) == 2 {
            match message {
                [1, signal] => (libc::c_int::from(signal), 0),
                [_, code] => (0, libc::c_int::from(code)),
            }
        } else if libc::WIFSIGNALED(status) {
            (libc::WTERMSIG(status), 0)
        } else {
            (0, 125)
        };
        if signal > 0 {
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &no_core);
            libc::signal(signal, libc::SIG_DFL);
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
        libc::_exit(code)
    }
}
