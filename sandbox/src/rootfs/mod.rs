//! The agent's filesystem, built by the sandbox's PID 1 in its mount namespace the way
//! bubblewrap builds one: a tmpfs becomes the root for a moment, with the host's root under
//! `/oldroot` and the agent's future root (another tmpfs) under `/newroot`; the host's
//! top-level folders are bind-mounted read-only into the new root, private mounts are added,
//! the host files the harness checked (working directory, exposed folders, sockets, program)
//! are bound in through descriptors (see `binds`), and finally the new root is pivoted into
//! place and the host's root detached, so no path leads back out.
//!
//! [`build`] is that sequence, one step a line; each step is in the module of its kind. Every
//! call on the machine goes through [`Syscalls`], so the tests run the sequence against a
//! recording double.

mod binds;
mod host_binds;
mod masks;
mod pivot;
mod private;
mod syscalls;
#[cfg(test)]
mod tests;
mod top_level;

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

pub(crate) use syscalls::{Kernel, Syscalls};

use crate::setup::{Failure, Setup};
use crate::{LaunchSpec, PRIVATE_TOP_LEVEL};

/// The staging root, a tmpfs mounted on the host's `/tmp`.
const STAGING: &str = "/tmp";
/// The agent's future root, while the staging root is the root.
const NEWROOT: &str = "/newroot";
/// The host's root, while the staging root is the root.
const OLDROOT: &str = "/oldroot";

/// Builds the agent's root and pivots into it. Returns the working directory to start in.
pub(crate) fn build<S: Syscalls>(sys: &mut S, spec: &LaunchSpec) -> Setup<PathBuf> {
    pivot::into_staging_root(sys)?;
    // Host files are bound from beneath the host's root, onto mount points beneath the new
    // one, never by a path that could lead elsewhere (see `binds`). Both close before the
    // host's root is detached.
    let roots = sys
        .open_roots(Path::new(OLDROOT), Path::new(NEWROOT))
        .map_err(Failure)?;
    top_level::bind_host_top_level(sys)?;
    private::mount_proc(sys)?;
    private::mount_dev(sys)?;
    private::mount_tmp_and_run(sys, spec)?;
    // What the agent must not see, before anything is bound beneath.
    masks::refuse_folders_holding_hidden(sys, spec)?;
    let masks = masks::mask_hidden_folders(sys, &spec.hidden)?;
    host_binds::bind_agent_socket(sys, &roots, spec, &masks)?;
    host_binds::bind_submission_folder(sys, &roots, spec, &masks)?;
    let workdir = host_binds::bind_folders(sys, &roots, spec, &masks)?;
    host_binds::bind_program(sys, &roots, spec, &masks)?;
    sys.close_roots(roots);
    masks::make_masks_read_only(sys, &masks)?;
    pivot::into_new_root(sys)?;
    Ok(workdir)
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
