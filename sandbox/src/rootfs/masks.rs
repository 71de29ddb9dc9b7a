//! The folders the agent must not see (the state dir, homes): a folder to be bound in through
//! which one is reachable is refused, and each is covered, wherever it is visible in the new
//! root, by an empty tmpfs, made read-only once everything is bound beneath.

use std::path::{Path, PathBuf};

use nix::mount::MsFlags;

use super::{NEWROOT, OLDROOT, Syscalls, in_newroot, is_in_private_tmpfs};
use crate::LaunchSpec;
use crate::mounts;
use crate::setup::{Failure, Setup, fail};

/// Refuses a working directory or exposed folder through which a hidden folder is reachable.
pub(super) fn refuse_folders_holding_hidden(
    sys: &mut impl Syscalls,
    spec: &LaunchSpec,
) -> Setup<()> {
    if let Some(dir) = &spec.workdir {
        sys.refuse_hidden_inside(&spec.hidden, &dir.path, "the working directory")?;
    }
    for dir in &spec.exposed {
        sys.refuse_hidden_inside(&spec.hidden, &dir.path, "the exposed folder")?;
    }
    Ok(())
}

/// Puts an empty tmpfs over each hidden host folder wherever it is visible in the new root:
/// at its own path, and at every other path the same folder (or a part of it) is reachable by
/// (its filesystem mounted a second time). Returns the masks. Fails closed: a hidden folder that
/// exists but cannot be masked is an error.
pub(super) fn mask_hidden_folders(
    sys: &mut impl Syscalls,
    hidden: &[PathBuf],
) -> Setup<Vec<PathBuf>> {
    let mut targets = sys.hidden_folder_paths(hidden)?;
    // Parents first: a folder inside one already masked is hidden with it.
    targets.sort();
    targets.dedup();
    let mut masks: Vec<PathBuf> = Vec::new();
    for folder in &targets {
        if is_in_private_tmpfs(folder) || masks.iter().any(|m| folder.starts_with(m)) {
            continue; // not visible in the first place
        }
        let target = in_newroot(folder);
        if !sys.is_folder(&target) {
            return Err(Failure(format!(
                "cannot hide {}: it is not a folder inside the sandbox's view",
                folder.display()
            )));
        }
        sys.mount_tmpfs(
            &target,
            "mode=0755,size=1m",
            MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        )?;
        masks.push(folder.clone());
    }
    Ok(masks)
}

/// Makes each mask read-only, once the binds beneath them are made.
pub(super) fn make_masks_read_only(sys: &mut impl Syscalls, masks: &[PathBuf]) -> Setup<()> {
    for mask in masks {
        sys.mount(
            None,
            &in_newroot(mask),
            None,
            MsFlags::MS_REMOUNT
                | MsFlags::MS_BIND
                | MsFlags::MS_RDONLY
                | MsFlags::MS_NOSUID
                | MsFlags::MS_NODEV,
            None,
        )
        .map_err(fail(format!(
            "cannot make the mask over {} read-only",
            mask.display()
        )))?;
    }
    Ok(())
}

// ---- on the host: where hidden folders are visible ----

/// Where a host path is while the host's root sits under `/oldroot`. Only absolute paths
/// without `..` are taken: the harness hands over canonical paths.
fn host_path(path: &Path) -> Setup<PathBuf> {
    mounts::seen_under(Path::new(OLDROOT), path).map_err(Failure)
}

/// The sandbox paths at which each hidden folder that exists on the host is visible in the new
/// root, read from the host's mount table ([`Syscalls::hidden_folder_paths`]). A hidden path
/// that is not a folder is an error.
pub(super) fn visible_paths(hidden: &[PathBuf]) -> Setup<Vec<PathBuf>> {
    let mounts = mounts::read_mounts(Path::new(OLDROOT)).map_err(Failure)?;
    let mut targets: Vec<PathBuf> = Vec::new();
    for folder in hidden {
        let host = host_path(folder)?;
        let meta = match std::fs::symlink_metadata(&host) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(fail(format!("cannot hide {}", folder.display()))(e)),
            Ok(m) if !m.is_dir() => {
                return Err(Failure(format!(
                    "cannot hide {}: not a folder",
                    folder.display()
                )));
            }
            Ok(m) => m,
        };
        if !is_in_private_tmpfs(folder) {
            targets.push(folder.clone());
        }
        targets.extend(aliases_in_newroot(folder, &host, &meta, &mounts)?);
    }
    Ok(targets)
}

/// The sandbox paths at which the hidden `folder` is visible in the new root.
fn aliases_in_newroot(
    folder: &Path,
    host: &Path,
    meta: &std::fs::Metadata,
    mounts: &[mounts::MountEntry],
) -> Setup<Vec<PathBuf>> {
    Ok(
        mounts::reachable_paths(folder, host, meta, mounts, Path::new(NEWROOT))
            .map_err(Failure)?
            .iter()
            .filter_map(|p| Some(Path::new("/").join(p.strip_prefix(NEWROOT).ok()?)))
            .collect(),
    )
}

/// Refuses a folder to be bound in (the working directory, an exposed folder) through which a
/// hidden folder is reachable (the folder itself, or the same folder mounted a second time
/// inside it): binding it would undo the masks. The harness refuses such folders before it
/// starts the launcher; this is the launcher's own check, on the mount table it masks from.
pub(super) fn refuse_hidden_inside(hidden: &[PathBuf], dir: &Path, what: &str) -> Setup<()> {
    let mounts = mounts::read_mounts(Path::new(OLDROOT)).map_err(Failure)?;
    let host_dir = host_path(dir)?;
    for folder in hidden {
        let host = host_path(folder)?;
        let Ok(meta) = std::fs::symlink_metadata(&host) else {
            continue;
        };
        let reachable =
            mounts::reachable_paths(folder, &host, &meta, &mounts, &host_dir).map_err(Failure)?;
        if let Some(path) = reachable.first() {
            let inside = Path::new("/").join(path.strip_prefix(OLDROOT).unwrap_or(path));
            return Err(Failure(format!(
                "{what} {} holds {} (which is {}), which the agent must not see",
                dir.display(),
                inside.display(),
                folder.display()
            )));
        }
    }
    Ok(())
}
