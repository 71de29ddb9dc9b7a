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
//! - makes every mount read-only (recursively), so nothing on the machine can be written;
//! - gives it a private `/tmp` (with `HOME` in it) and a `/dev` of its own with only `null`,
//!   `zero`, `full`, `random` and `urandom`;
//! - covers each hidden folder (the state dir) with an empty, read-only tmpfs;
//! - forks PID 1 of the new PID namespace, an init that mounts a `/proc` showing only that
//!   namespace, read-only, so no other process's
//!   files (`/proc/<pid>/root`) can be reached and no other process signalled; as root it
//!   gives up every capability for good (keeping uid 0, so a Python installed under `/root`
//!   still runs, but can neither lift a cover nor write past the read-only mounts);
//! - and the init forks the host program (PID 2), then reaps until it ends.
//!
//! Everything the host starts dies with it (the init's end ends the namespace), and it dies
//! with the evaluator (`PR_SET_PDEATHSIG` on the keeper, the init and the program). The keeper
//! waits for the init and ends as the program ended. The host has `no_new_privs` and a bounded address space. The
//! evaluator makes itself non-dumpable ([`protect_evaluator`]).

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
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

fn c(text: &str) -> Result<CString, String> {
    CString::new(text).map_err(|e| e.to_string())
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
        let plan = Plan {
            as_root: euid == 0,
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
        drop_capabilities()?;
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

/// Gives up every capability for good: uid 0 gains none back at `exec` (`SECBIT_NOROOT`,
/// locked), none can be raised again, and the bounding set is empty.
fn drop_capabilities() -> std::io::Result<()> {
    const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
    const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
    const SECBIT_NO_SETUID_FIXUP: libc::c_ulong = 1 << 2;
    const SECBIT_NO_SETUID_FIXUP_LOCKED: libc::c_ulong = 1 << 3;
    const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
    const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
    const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    // SAFETY: prctl and capset with values and structs that live across the calls.
    unsafe {
        check(libc::prctl(
            libc::PR_SET_SECUREBITS,
            SECBIT_NOROOT
                | SECBIT_NOROOT_LOCKED
                | SECBIT_NO_SETUID_FIXUP
                | SECBIT_NO_SETUID_FIXUP_LOCKED
                | SECBIT_KEEP_CAPS_LOCKED
                | SECBIT_NO_CAP_AMBIENT_RAISE
                | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
            0,
            0,
            0,
        ))?;
        for cap in 0..64 {
            // Past the kernel's last capability: EINVAL, and nothing left to drop.
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 {
                break;
            }
        }
        let header = Header {
            version: LINUX_CAPABILITY_VERSION_3,
            pid: 0,
        };
        let data = [Data {
            effective: 0,
            permitted: 0,
            inheritable: 0,
        }; 2];
        if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
