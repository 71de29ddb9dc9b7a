//! The sandbox's namespaces and its users: which process unshares which namespace, the uid and
//! gid maps of its user namespaces, and the bounds of its IPC namespace.
//!
//! The launcher creates the PID namespace (and, without privilege, a user namespace that grants
//! the right to build the others); the sandbox's PID 1 creates the mount, IPC, UTS and network
//! namespaces, then the agent's user namespace, in which only the agent's user exists.

use nix::sched::{CloneFlags, unshare};
use nix::unistd::{Gid, Pid, Uid};

use crate::limits::AgentLimits;
use crate::setup::{Failure, Setup, fail};
use crate::{Network, UserIds};

/// Uid and gid 0.
const ROOT: UserIds = UserIds { uid: 0, gid: 0 };

/// The launcher's namespaces: the PID namespace its child will be PID 1 of and, when the
/// launcher is not root (`host` is its user), a user namespace of which it is root.
pub(crate) fn enter_launcher_namespaces(as_root: bool, host: UserIds) -> Setup<()> {
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
    if !as_root {
        // Root of this user namespace (the harness's user outside it), so that the sandbox's
        // PID 1 may set the limits of the IPC namespace it makes here (the kernel lets only
        // the owning namespace's uid 0 write them); the agent's own namespace maps the
        // harness's uid again.
        map_ids("/proc/self", ROOT, host, true)?;
    }
    Ok(())
}

/// The namespaces the sandbox's PID 1 creates: mount, IPC, UTS and, unless the agent gets the
/// host's network, network.
pub(crate) fn enter_sandbox_namespaces(network: Network) -> Setup<()> {
    let mut flags = CloneFlags::CLONE_NEWNS | CloneFlags::CLONE_NEWIPC | CloneFlags::CLONE_NEWUTS;
    if network == Network::None {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    unshare(flags).map_err(fail("cannot create the namespaces (unshare)"))
}

/// Without privilege: the agent's user namespace, nested in the launcher's, in which it is the
/// harness's user (`host`) again; no user namespace may be made inside it.
pub(crate) fn enter_nested_user_namespace(host: UserIds) -> Setup<()> {
    // A nested user namespace: the capabilities this process holds over the sandbox's
    // mounts stay behind in the outer one. The agent is the harness's user again.
    unshare(CloneFlags::CLONE_NEWUSER).map_err(fail("cannot create the user namespace"))?;
    map_ids("/proc/self", host, ROOT, true)?;
    forbid_user_namespaces()
}

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
pub(crate) fn serve_id_map_request(
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

/// Drops to the agent's user and enters a user namespace in which only that user exists, so
/// that nothing the agent does can act on the sandbox's mounts.
pub(crate) fn enter_user_namespace_as(
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

/// No user namespace may be created in this one (the agent's): without one, the agent can
/// mount nothing, a tmpfs past its caps included. Needs CAP_SYS_RESOURCE in it, which the
/// process that made it holds until it drops to the agent's user.
fn forbid_user_namespaces() -> Setup<()> {
    std::fs::write("/proc/sys/user/max_user_namespaces", "0\n")
        .map_err(fail("cannot forbid user namespaces inside the sandbox"))
}

/// Bounds the System V IPC of the sandbox's own IPC namespace ([`crate::limits::ipc_limits`]):
/// shared memory that no process maps would otherwise be counted nowhere. Written in the
/// sandbox's `/proc`, by the root of the user namespace that owns the IPC namespace (the
/// launcher's, or the host's when the harness is root).
pub(crate) fn limit_ipc(limits: &AgentLimits) -> Setup<()> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    for (name, value) in crate::limits::ipc_limits(limits.memory_bytes, page) {
        std::fs::write(format!("/proc/sys/{name}"), format!("{value}\n")).map_err(fail(
            format!("cannot limit the sandbox's System V IPC (/proc/sys/{name})"),
        ))?;
    }
    Ok(())
}
