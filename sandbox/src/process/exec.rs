//! The agent's start: its program found as its user sees it, its arguments and environment,
//! the rlimits it runs under, and the exec.

use std::ffi::{CStr, CString};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use nix::sys::signal::SigSet;
use nix::unistd::Uid;

use crate::LaunchSpec;
use crate::limits::{AgentLimits, Enforcement};
use crate::setup::{Failure, Setup, fail};

/// The program to execute: a path as given (resolved by the harness), or the first match in
/// the agent's `PATH`; either way a file the agent's user may execute in the sandbox.
pub(super) fn find_program(spec: &LaunchSpec) -> Setup<CString> {
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

pub(super) fn c_strings<I, B>(items: I) -> Setup<Vec<CString>>
where
    I: Iterator<Item = B>,
    B: Into<Vec<u8>>,
{
    items
        .map(|b| CString::new(b).map_err(fail("an argument or variable holds a NUL byte")))
        .collect()
}

/// In the child PID 1 forked for the agent: sets the agent's rlimits, enters its working
/// directory, installs its seccomp filter and executes it; never returns (a step that fails is
/// reported on stderr, and the child exits 127).
pub(super) fn run_agent(
    limits: &AgentLimits,
    workdir: &Path,
    program: &CStr,
    argv: &[CString],
    envp: &[CString],
    sigchld: &SigSet,
) -> ! {
    let _ = nix::unistd::setsid();
    let _ = sigchld.thread_unblock();
    let error = match apply_rlimits(limits) {
        Err(Failure(why)) => why,
        Ok(()) => match nix::unistd::chdir(workdir) {
            Err(e) => format!("cannot enter {}: {e}", workdir.display()),
            // Last, with no allocation left to make: the filter refuses memfd_create.
            Ok(()) => match crate::seccomp::install() {
                Err(e) => format!("cannot install the agent's seccomp filter: {e}"),
                Ok(()) => match nix::unistd::execve(program, argv, envp) {
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
