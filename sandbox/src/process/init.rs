//! The sandbox's PID 1: builds the sandbox in the namespaces it makes, drops to the agent's
//! user, starts the agent and reaps until the agent ends.

use nix::sys::signal::{SigSet, Signal};
use nix::unistd::{ForkResult, fork};

use super::{AgentEnd, die_with_launcher, exec, reap};
use crate::limits::{LimitHit, Watched};
use crate::namespaces;
use crate::rootfs::{self, Kernel};
use crate::setup::{Failure, Setup, fail};
use crate::{LaunchSpec, PROGRAM_NOT_RUNNABLE, UserIds};

/// PID 1 of the sandbox: builds it, starts the agent, reaps, and returns the agent's status.
pub(super) fn sandbox_init(
    spec: &LaunchSpec,
    host: UserIds,
    to_parent: std::os::fd::OwnedFd,
    from_parent: std::os::fd::OwnedFd,
    lifeline: &std::os::fd::OwnedFd,
    hit: &mut Option<LimitHit>,
) -> Setup<AgentEnd> {
    // If the launcher dies, so does the sandbox: PID 1 exiting kills the namespace.
    die_with_launcher(lifeline)?;
    namespaces::enter_sandbox_namespaces(spec.network)?;
    let workdir = rootfs::build(&mut Kernel, spec)?;
    nix::unistd::sethostname("ale-sandbox").map_err(fail("sethostname"))?;
    // While this process is still root of the namespace that owns the IPC namespace.
    namespaces::limit_ipc(&spec.limits)?;
    match spec.agent_user {
        Some(agent) => {
            namespaces::enter_user_namespace_as(agent, to_parent, from_parent)?;
            // Changing credentials cleared the parent-death signal.
            die_with_launcher(lifeline)?;
        }
        None => {
            drop(to_parent);
            drop(from_parent);
            namespaces::enter_nested_user_namespace(host)?;
        }
    }
    nix::sys::prctl::set_no_new_privs().map_err(fail("prctl(NO_NEW_PRIVS)"))?;
    // Found and checked as the agent's user, so that a probe says whether the agent can start.
    let program = match exec::find_program(spec) {
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
    let argv = exec::c_strings(spec.args.iter().map(|a| a.as_bytes()))?;
    let envp = exec::c_strings(
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
            exec::run_agent(&spec.limits, &workdir, &program, &argv, &envp, &sigchld)
        }
        ForkResult::Parent { child } => Ok(reap::reap_until(child, &watched, &sigchld, hit)),
    }
}
