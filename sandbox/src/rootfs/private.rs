//! The sandbox's own folders, in place of the host's (`PRIVATE_TOP_LEVEL`): a `/proc` of its
//! PID namespace, a minimal `/dev`, and a private `/tmp` (with `HOME` and the default working
//! directory) and `/run`, each a fresh filesystem.

use std::path::Path;

use nix::mount::MsFlags;

use super::{NEWROOT, OLDROOT, Syscalls, in_newroot};
use crate::setup::{Setup, fail};
use crate::{LaunchSpec, SANDBOX_DEFAULT_WORKDIR, SANDBOX_HOME};

/// Device nodes the agent gets, bound from the host's `/dev`.
const DEVICES: &[&str] = &["null", "zero", "full", "random", "urandom", "tty"];

/// A /proc of the sandbox's own PID namespace.
pub(super) fn mount_proc(sys: &mut impl Syscalls) -> Setup<()> {
    let proc_dir = Path::new(NEWROOT).join("proc");
    sys.mkdir(&proc_dir, 0o555)?;
    sys.mount(
        Some(Path::new("proc")),
        &proc_dir,
        Some("proc"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None,
    )
    .map_err(fail("cannot mount /proc"))
}

/// A minimal /dev: a few devices bound from the host's, the links to the process's own
/// descriptors, and a `/dev/shm` of its own.
pub(super) fn mount_dev(sys: &mut impl Syscalls) -> Setup<()> {
    let dev = Path::new(NEWROOT).join("dev");
    sys.mkdir(&dev, 0o755)?;
    sys.mount_tmpfs(
        &dev,
        "mode=0755,size=64k",
        MsFlags::MS_NOSUID | MsFlags::MS_NOEXEC,
    )?;
    for device in DEVICES {
        let source = Path::new(OLDROOT).join("dev").join(device);
        if sys.exists(&source) {
            let target = dev.join(device);
            sys.touch(&target)?;
            sys.bind(&source, &target)?;
        }
    }
    for (name, target) in [
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        sys.symlink(Path::new(target), &dev.join(name))
            .map_err(fail(format!("symlink /dev/{name}")))?;
    }
    let shm = dev.join("shm");
    sys.mkdir(&shm, 0o1777)?;
    sys.mount_tmpfs(
        &shm,
        "mode=1777,size=64m",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
    )
}

/// A private /tmp (with HOME and the default working directory, the agent's own) and /run.
pub(super) fn mount_tmp_and_run(sys: &mut impl Syscalls, spec: &LaunchSpec) -> Setup<()> {
    let tmp = Path::new(NEWROOT).join("tmp");
    sys.mkdir(&tmp, 0o1777)?;
    sys.mount_tmpfs(
        &tmp,
        &format!("mode=1777,size={}", spec.tmp_bytes.max(1 << 20)),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
    )?;
    let run = Path::new(NEWROOT).join("run");
    sys.mkdir(&run, 0o755)?;
    sys.mount_tmpfs(
        &run,
        "mode=0755,size=1m",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
    )?;
    for private in [SANDBOX_HOME, SANDBOX_DEFAULT_WORKDIR] {
        let dir = in_newroot(Path::new(private));
        sys.mkdir(&dir, 0o700)?;
        if let Some(agent) = spec.agent_user {
            sys.chown(&dir, agent)
                .map_err(fail(format!("chown {private}")))?;
        }
    }
    Ok(())
}
