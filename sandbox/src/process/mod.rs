//! The launcher's processes, from start to end: the launcher (`ale sandbox-exec`) forks the
//! sandbox's PID 1 into the PID namespace it made, serves its requests, stops it when told to,
//! and ends the way the agent ended; PID 1 ([`init`]) builds the sandbox and starts the agent
//! ([`exec`]), then reaps every process until the agent ends, with the watchdog between reaps
//! ([`reap`]). Runs single-threaded.

mod exec;
mod init;
mod reap;

use std::sync::atomic::{AtomicI32, Ordering};

use nix::errno::Errno;
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::{ForkResult, Gid, Pid, Uid, fork};

use crate::limits::LimitHit;
use crate::namespaces;
use crate::setup::{Failure, Setup, fail};
use crate::{LIMIT_REPORT_FD, LaunchSpec, SETUP_FAILED, UserIds};

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
pub(crate) fn run(spec: &LaunchSpec) -> ! {
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
    let host = UserIds {
        uid: uid.as_raw(),
        gid: gid.as_raw(),
    };
    namespaces::enter_launcher_namespaces(as_root, host)?;
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
            let code =
                match init::sandbox_init(spec, host, to_parent_w, to_child_r, &life_r, &mut hit) {
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
                namespaces::serve_id_map_request(child, agent, to_parent_r, to_child_w)?;
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
