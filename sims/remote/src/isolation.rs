//! [`IsolatedLauncher`]: hosts with no network and no sight of the evaluator's state dir.
//!
//! A host is part of the evaluator (it is handed hidden seeds), but the code it runs is a task
//! author's, and must not read the evaluator's keys or reach out. Before the host program
//! starts, its process gets mount and network namespaces of its own (and, when the evaluator
//! is not root, a user namespace that maps only the evaluator's own uid, so that the mounts
//! below are locked and the program holds no capability); each hidden folder is covered by an
//! empty read-only tmpfs; as root it then gives up every capability for good (it keeps uid 0,
//! so a Python installed under `/root` still runs, but can neither lift the cover nor read
//! past file modes). It dies with the evaluator, has `no_new_privs`, and its address space is
//! bounded. The evaluator makes itself non-dumpable ([`protect_evaluator`]), so that no host
//! reaches its files through `/proc/<pid>/root`.

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use crate::process::{HostCommand, Launcher};

#[derive(Debug, Clone)]
pub struct IsolatedLauncher {
    /// Folders the host must not see (the state dir).
    pub hidden: Vec<PathBuf>,
}

impl IsolatedLauncher {
    pub fn hiding(hidden: Vec<PathBuf>) -> IsolatedLauncher {
        IsolatedLauncher { hidden }
    }
}

/// Makes this process (the evaluator) non-dumpable: processes of its uid without
/// `CAP_SYS_PTRACE`, its hosts among them, can then neither trace it nor open its
/// `/proc/<pid>/root`, `cwd` or `fd`, which would lead around a host's mount namespace.
pub fn protect_evaluator() -> std::io::Result<()> {
    // SAFETY: prctl with integer arguments.
    check(unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) })
}

/// Everything the child needs, made before `fork`: between `fork` and `exec` nothing may
/// allocate.
struct Plan {
    as_root: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
    hidden: Vec<CString>,
    memory: u64,
}

impl Launcher for IsolatedLauncher {
    fn prepare(&self, host: &HostCommand) -> Result<(Command, Vec<u8>), String> {
        // SAFETY: getters that never fail.
        let (euid, egid) = unsafe { (libc::geteuid(), libc::getegid()) };
        let mut hidden = Vec::new();
        for dir in &self.hidden {
            // Only a folder that exists can be covered; the rest cannot be seen anyway.
            let Ok(dir) = std::fs::canonicalize(dir) else {
                continue;
            };
            let text = dir
                .to_str()
                .ok_or_else(|| format!("{} is not UTF-8", dir.display()))?;
            hidden.push(CString::new(text).map_err(|e| e.to_string())?);
        }
        let plan = Plan {
            as_root: euid == 0,
            uid_map: format!("{euid} {euid} 1\n").into_bytes(),
            gid_map: format!("{egid} {egid} 1\n").into_bytes(),
            hidden,
            memory: host.memory_bytes,
        };
        let mut command = Command::new(&host.program);
        command.args(&host.args).env_clear();
        for key in ["PATH", "LANG"] {
            if let Some(value) = std::env::var_os(key) {
                command.env(key, value);
            }
        }
        command.env("HOME", "/tmp");
        command.envs(host.env.iter().map(|(k, v)| (k, v)));
        command.current_dir("/");
        // SAFETY: the closure makes only system calls on buffers made before the fork.
        unsafe {
            command.pre_exec(move || isolate(&plan));
        }
        Ok((command, Vec::new()))
    }

    fn describe(&self) -> String {
        "isolated (no network, the state dir hidden, no capabilities)".into()
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

fn isolate(plan: &Plan) -> std::io::Result<()> {
    // SAFETY: system calls on values and buffers that live across them.
    unsafe {
        check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL))?;
        libc::setsid();
        let mut flags = libc::CLONE_NEWNS | libc::CLONE_NEWNET;
        if !plan.as_root {
            flags |= libc::CLONE_NEWUSER;
        }
        check(libc::unshare(flags))?;
        if !plan.as_root {
            write_file(b"/proc/self/setgroups\0", b"deny")?;
            write_file(b"/proc/self/uid_map\0", &plan.uid_map)?;
            write_file(b"/proc/self/gid_map\0", &plan.gid_map)?;
        }
        let none = std::ptr::null::<libc::c_char>();
        check(libc::mount(
            none,
            c"/".as_ptr(),
            none,
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ))?;
        for dir in &plan.hidden {
            check(libc::mount(
                c"tmpfs".as_ptr(),
                dir.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                c"size=4k,mode=000".as_ptr().cast(),
            ))?;
        }
        if plan.as_root {
            drop_capabilities()?;
        }
        check(libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))?;
        let limit = libc::rlimit {
            rlim_cur: plan.memory,
            rlim_max: plan.memory,
        };
        check(libc::setrlimit(libc::RLIMIT_AS, &limit))?;
    }
    Ok(())
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
