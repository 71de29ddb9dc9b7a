//! The host files the harness pinned, bound into the new root through descriptors (see
//! `binds`): the agent socket (the way out), a batch task's submission folder, the working
//! directory and the exposed folders, and a program the sandbox would not show otherwise.

use std::path::{Path, PathBuf};

use super::binds::{Binding, Kind, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use super::{Syscalls, is_in_own_tmpfs};
use crate::setup::{Failure, Setup};
use crate::{
    LaunchSpec, PinnedPath, SANDBOX_AGENT_SOCKET, SANDBOX_DEFAULT_WORKDIR, SANDBOX_SUBMISSION_DIR,
};

/// The way out: the evaluator's agent socket.
pub(super) fn bind_agent_socket<S: Syscalls>(
    sys: &mut S,
    roots: &S::Roots,
    spec: &LaunchSpec,
    masks: &[PathBuf],
) -> Setup<()> {
    let socket = Path::new(SANDBOX_AGENT_SOCKET);
    sys.bind_pinned(
        roots,
        &Binding {
            what: "the agent socket",
            pinned: &spec.agent_socket,
            at: socket,
            kind: Kind::File,
            attributes: 0,
            may_create: is_in_own_tmpfs(socket, masks),
        },
    )
    .map_err(Failure)
}

/// A batch task's submission folder: the one host folder the agent may write to.
pub(super) fn bind_submission_folder<S: Syscalls>(
    sys: &mut S,
    roots: &S::Roots,
    spec: &LaunchSpec,
    masks: &[PathBuf],
) -> Setup<()> {
    let Some(dir) = &spec.submission_dir else {
        return Ok(());
    };
    let at = Path::new(SANDBOX_SUBMISSION_DIR);
    sys.bind_pinned(
        roots,
        &Binding {
            what: "the submission folder",
            pinned: dir,
            at,
            kind: Kind::Folder,
            attributes: MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
            may_create: is_in_own_tmpfs(at, masks),
        },
    )
    .map_err(Failure)
}

/// The working directory (writable) and the exposed folders (read-only), at their own
/// paths, outer ones first, so that one inside another keeps its own access. Returns the
/// working directory the agent starts in.
pub(super) fn bind_folders<S: Syscalls>(
    sys: &mut S,
    roots: &S::Roots,
    spec: &LaunchSpec,
    masks: &[PathBuf],
) -> Setup<PathBuf> {
    let read_only = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
    let mut folders: Vec<(&PinnedPath, u64, &str)> = spec
        .exposed
        .iter()
        .map(|dir| (dir, read_only, "the exposed folder"))
        .chain(spec.workdir.iter().map(|dir| {
            (
                dir,
                MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                "the working directory",
            )
        }))
        .collect();
    folders.sort_by_key(|(dir, _, _)| dir.path.components().count());
    for (dir, attributes, what) in folders {
        sys.bind_pinned(
            roots,
            &Binding {
                what,
                pinned: dir,
                at: &dir.path,
                kind: Kind::Folder,
                attributes,
                may_create: is_in_own_tmpfs(&dir.path, masks),
            },
        )
        .map_err(Failure)?;
    }
    Ok(spec.workdir.as_ref().map_or_else(
        || PathBuf::from(SANDBOX_DEFAULT_WORKDIR),
        |dir| dir.path.clone(),
    ))
}

/// A program started by a path where the sandbox has folders of its own (or hidden ones)
/// is bound there read-only, on its own. One inside a bound folder is there already;
/// nothing may be created in a host folder.
pub(super) fn bind_program<S: Syscalls>(
    sys: &mut S,
    roots: &S::Roots,
    spec: &LaunchSpec,
    masks: &[PathBuf],
) -> Setup<()> {
    let Some(file) = &spec.program_file else {
        return Ok(());
    };
    let at = &spec.program;
    if at.is_absolute()
        && is_in_own_tmpfs(at, masks)
        && !sys
            .exists_in_new_root(roots, at, "the agent program")
            .map_err(Failure)?
    {
        sys.bind_pinned(
            roots,
            &Binding {
                what: "the agent program",
                pinned: file,
                at,
                kind: Kind::File,
                attributes: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                may_create: true,
            },
        )
        .map_err(Failure)?;
    }
    Ok(())
}
