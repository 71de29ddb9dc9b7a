//! The two pivots: into a staging root at the start, which holds the host's root and the new
//! one side by side, and into the new root at the end, which leaves the host's behind.

use std::path::Path;

use nix::mount::MsFlags;

use super::{NEWROOT, OLDROOT, STAGING, Syscalls};
use crate::setup::{Setup, fail};

/// Makes every mount private, then makes a tmpfs the root, with the host's root under
/// [`OLDROOT`] and the agent's future root (another tmpfs) under [`NEWROOT`].
pub(super) fn into_staging_root(sys: &mut impl Syscalls) -> Setup<()> {
    // Nothing we mount from here on propagates back to the host.
    sys.mount(
        None,
        Path::new("/"),
        None,
        MsFlags::MS_REC | MsFlags::MS_PRIVATE,
        None,
    )
    .map_err(fail("cannot make the mounts private"))?;
    let staging = Path::new(STAGING);
    sys.mount_tmpfs(
        staging,
        "mode=0755,size=1m",
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV,
    )?;
    let staged_new = staging.join("newroot");
    let staged_old = staging.join("oldroot");
    sys.mkdir(&staged_new, 0o755)?;
    sys.mkdir(&staged_old, 0o755)?;
    sys.mount_tmpfs(&staged_new, "mode=0755,size=1m", MsFlags::MS_NOSUID)?;
    sys.pivot_root(staging, &staged_old)
        .map_err(fail("pivot_root into the staging root"))?;
    sys.chdir(Path::new("/")).map_err(fail("chdir /"))
}

/// Leaves the host's root behind for good and makes the new root the root, read-only.
pub(super) fn into_new_root(sys: &mut impl Syscalls) -> Setup<()> {
    let oldroot = Path::new(OLDROOT);
    let newroot = Path::new(NEWROOT);
    sys.detach(oldroot)
        .map_err(fail("cannot detach the host's root"))?;
    sys.chdir(newroot).map_err(fail("chdir /newroot"))?;
    sys.pivot_root(Path::new("."), Path::new("."))
        .map_err(fail("pivot_root into the sandbox"))?;
    sys.detach(Path::new("."))
        .map_err(fail("cannot detach the staging root"))?;
    sys.chdir(Path::new("/")).map_err(fail("chdir /"))?;
    sys.mount(
        None,
        Path::new("/"),
        None,
        MsFlags::MS_REMOUNT | MsFlags::MS_BIND | MsFlags::MS_RDONLY | MsFlags::MS_NOSUID,
        None,
    )
    .map_err(fail("cannot make the sandbox's root read-only"))
}
