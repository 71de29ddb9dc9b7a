//! Host folders handed to a sandboxed agent at their own paths: its working directory
//! (writable) and the `--expose` folders (read-only). Each is checked on its canonical path
//! before anything is launched: none may lay bare a folder the agent must not see. Each is
//! pinned (see [`PinnedPath`]) when it is checked, and its contents are read through that
//! pin: the launcher binds the folder that was checked, or none.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use super::pinned::{FileId, Opening, PinnedPath, open_without_links};
use super::{PRIVATE_TOP_LEVEL, SandboxError, default_hidden_folders};

/// Host folders that hold the kernel's and running programs' state (processes, devices,
/// sockets): never exposed, nor anything holding them.
const RUNTIME_FOLDERS: &[&str] = &["/proc", "/sys", "/dev", "/run"];

/// Checks a `--workdir` and returns its canonical path. It may not overlap a `secret` folder
/// (the state dir) at all, by any of its paths, and may not be one of the folders the sandbox
/// masks (the homes) nor hold one: only a folder strictly inside a home is bound back in.
pub fn resolve_workdir(dir: &Path, secret: &[PathBuf]) -> Result<PinnedPath, SandboxError> {
    let problem = |problem: String| SandboxError::Workdir {
        path: dir.to_path_buf(),
        problem,
    };
    let (pinned, _) = open_folder(dir).map_err(problem)?;
    refuse_secret_and_masked(&pinned.path, secret, &default_hidden_folders()).map_err(problem)?;
    Ok(pinned)
}

/// The canonical path of the folder `dir`, pinned, and the folder opened: every later look at
/// its contents goes through that descriptor, whatever its path leads to by then.
fn open_folder(dir: &Path) -> Result<(PinnedPath, OwnedFd), String> {
    let path = std::fs::canonicalize(dir).map_err(|e| e.to_string())?;
    let folder = open_without_links(&path, Opening::Folder).map_err(|e| {
        if e.raw_os_error() == Some(libc::ENOTDIR) {
            "not a directory".to_string()
        } else {
            e.to_string()
        }
    })?;
    let meta = std::fs::File::from(folder.try_clone().map_err(|e| e.to_string())?)
        .metadata()
        .map_err(|e| e.to_string())?;
    let id = FileId::of(&meta);
    Ok((PinnedPath { path, id }, folder))
}

/// Checks an `--expose` folder and returns its canonical path. Besides what a working
/// directory may not be (see [`resolve_workdir`]), it may not be in the working directory nor
/// be given through a link there; may not be or hold `/tmp`, be in or hold a folder of the
/// kernel's and running programs' state (`/proc`, `/sys`, `/dev`, `/run`), nor hold a mount of
/// such state; and may hold no Unix socket, no named pipe and no evaluator's secret or private
/// key, by name or as a hard link to a `secret` folder's: a read-only mount stops writes, not
/// connections.
pub fn resolve_exposed(
    dir: &Path,
    secret: &[PathBuf],
    workdir: Option<&Path>,
) -> Result<PinnedPath, SandboxError> {
    let problem = |problem: String| SandboxError::Expose {
        path: dir.to_path_buf(),
        problem,
    };
    let (pinned, folder) = open_folder(dir).map_err(problem)?;
    let path = pinned.path.as_path();
    if let Some(workdir) = workdir {
        // Shown (writable) already.
        if path.starts_with(workdir) {
            return Err(problem(format!(
                "is in the working directory {}, which the agent sees (writable) already",
                workdir.display()
            )));
        }
        // An agent that had this working directory before could have placed the link, and so
        // chosen what is exposed.
        if let Some(link) = links_on_the_way(dir).find(|link| link.starts_with(workdir)) {
            return Err(problem(format!(
                "leads to {} through the link {}, in the working directory, where an agent \
                 could have placed it; give the folder's own path if it is the one you mean",
                path.display(),
                link.display()
            )));
        }
    }
    for runtime in RUNTIME_FOLDERS.iter().map(Path::new) {
        if path.starts_with(runtime) || runtime.starts_with(path) {
            return Err(problem(format!(
                "is in or holds {}, the host's running state (processes, devices, sockets), \
                 which the agent must not see; expose the installation the agent needs",
                runtime.display()
            )));
        }
    }
    for private in PRIVATE_TOP_LEVEL.iter().map(|p| Path::new("/").join(p)) {
        if private.starts_with(path) {
            return Err(problem(format!(
                "is or holds {}, which the sandbox replaces with the agent's own; expose a \
                 folder inside it",
                private.display()
            )));
        }
    }
    refuse_secret_and_masked(path, secret, &default_hidden_folders()).map_err(problem)?;
    refuse_runtime_mounts(path).map_err(problem)?;
    refuse_sockets_and_keys(folder, path, &key_files(secret)).map_err(problem)?;
    Ok(pinned)
}

/// Where each link is that the path `given` (relative to the working directory, or absolute)
/// goes through, itself included: the link's folder, resolved, and its name.
fn links_on_the_way(given: &Path) -> impl Iterator<Item = PathBuf> + '_ {
    given.ancestors().filter_map(|step| {
        let name = step.file_name()?;
        if !std::fs::symlink_metadata(step).is_ok_and(|m| m.file_type().is_symlink()) {
            return None;
        }
        let folder = match step.parent() {
            Some(folder) if !folder.as_os_str().is_empty() => folder,
            _ => Path::new("."),
        };
        Some(std::fs::canonicalize(folder).ok()?.join(name))
    })
}

/// Refuses a folder holding a mount of the kernel's or running programs' state (a `proc` in a
/// chroot, say): the agent would see the host's processes or devices through it.
#[cfg(target_os = "linux")]
fn refuse_runtime_mounts(path: &Path) -> Result<(), String> {
    use super::mounts;
    let table = mounts::read_mounts(Path::new("/"))?;
    match mounts::runtime_mount_within(&table, path) {
        Some((point, fstype)) => Err(format!(
            "holds {} (a {fstype} mount: the host's running state), which the agent must not see",
            point.display()
        )),
        None => Ok(()),
    }
}

#[cfg(not(target_os = "linux"))]
fn refuse_runtime_mounts(_: &Path) -> Result<(), String> {
    Ok(())
}

/// Refuses a folder `path` (canonical) that overlaps a `secret` folder, or is or holds a
/// `masked` one, at any of the paths the mount table shows them at.
fn refuse_secret_and_masked(
    path: &Path,
    secret: &[PathBuf],
    masked: &[PathBuf],
) -> Result<(), String> {
    for s in secret {
        if path.starts_with(s) || s.starts_with(path) {
            return Err(format!(
                "overlaps {}, which the agent must not see; choose a folder outside it",
                s.display()
            ));
        }
    }
    for m in masked {
        if m.starts_with(path) {
            return Err(format!(
                "is or holds {}, which the sandbox hides; choose a folder inside it, or elsewhere",
                m.display()
            ));
        }
    }
    refuse_other_paths(path, secret, masked)
}

/// The same as [`refuse_secret_and_masked`] for the other paths a secret or masked folder is
/// reachable by: its filesystem mounted a second time (a bind mount), found in the mount table.
#[cfg(target_os = "linux")]
fn refuse_other_paths(path: &Path, secret: &[PathBuf], masked: &[PathBuf]) -> Result<(), String> {
    use super::mounts;
    let table = mounts::read_mounts(Path::new("/"))?;
    for s in secret {
        for alias in mounts::aliases(s, &table)? {
            if path.starts_with(&alias) || alias.starts_with(path) {
                return Err(format!(
                    "overlaps {}, where {} is mounted a second time, which the agent must not \
                     see; choose a folder outside it",
                    alias.display(),
                    s.display()
                ));
            }
        }
    }
    for m in masked {
        if let Some(alias) = mounts::aliases(m, &table)?
            .into_iter()
            .find(|alias| alias.starts_with(path))
        {
            return Err(format!(
                "holds {}, where {} is mounted a second time, which the agent must not see",
                alias.display(),
                m.display()
            ));
        }
    }
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn refuse_other_paths(_: &Path, _: &[PathBuf], _: &[PathBuf]) -> Result<(), String> {
    Ok(())
}

/// The names an evaluator's secret and private keys have in its state dir.
const KEY_FILES: [&str; 3] = [
    ale_records::layout::SECRET_FILE,
    ale_records::layout::EVALUATOR_KEY_FILE,
    ale_records::layout::HARNESS_KEY_FILE,
];

/// Which files the secret and private keys in the `secret` folders (the state dir) are: a hard
/// link to one, by any name, is the key itself.
fn key_files(secret: &[PathBuf]) -> Vec<FileId> {
    secret
        .iter()
        .flat_map(|folder| KEY_FILES.iter().map(move |name| folder.join(name)))
        .filter_map(|key| std::fs::symlink_metadata(key).ok())
        .filter(|meta| meta.is_file())
        .map(|meta| FileId::of(&meta))
        .collect()
}

/// A folder [`refuse_sockets_and_keys`] has still to read: its name in its parent (open).
struct Pending {
    parent: Rc<OwnedFd>,
    name: CString,
    path: PathBuf,
}

/// Refuses a folder holding a Unix socket or a named pipe (another evaluator's socket, a
/// program's of the operator's own), or an evaluator's secret or private key: a file by such a
/// name, or a hard link to one of `keys` by any name. Hard links in general are allowed: uv
/// and conda install packages as hard links into their caches. Links are not followed: inside
/// the sandbox a link leads wherever its target is there, which the masks cover. The tree is
/// read from the descriptor `folder` down, each folder opened in its parent without following
/// a link, so it is the tree the launcher binds. A folder the harness can enter but not list
/// is refused: one may enter but not list (mode 0311, say) still lets the agent open what is in
/// it by name, and nothing in it could be checked. A folder the harness may not even enter, and
/// an entry removed while the tree is read, are passed over.
fn refuse_sockets_and_keys(folder: OwnedFd, path: &Path, keys: &[FileId]) -> Result<(), String> {
    use nix::fcntl::OFlag;
    let mut pending = Vec::new();
    check_entries(folder, path, keys, &mut pending)?;
    while let Some(Pending { parent, name, path }) = pending.pop() {
        let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
        let folder = match nix::fcntl::openat(
            parent.as_fd(),
            name.as_c_str(),
            flags,
            nix::sys::stat::Mode::empty(),
        ) {
            Ok(folder) => folder,
            Err(nix::errno::Errno::ENOENT) => continue,
            // One the harness's user may not even enter, the agent (of that user, or `nobody`
            // when the harness is root and so reads everything) may not either.
            Err(nix::errno::Errno::EACCES) if !enterable(&parent, &name) => continue,
            Err(e) => return Err(unreadable(&path, e)),
        };
        check_entries(folder, &path, keys, &mut pending)?;
    }
    Ok(())
}

/// Whether the harness's user may pass through the folder `name` in `parent`.
fn enterable(parent: &OwnedFd, name: &CString) -> bool {
    nix::unistd::faccessat(
        parent.as_fd(),
        name.as_c_str(),
        nix::unistd::AccessFlags::X_OK,
        nix::fcntl::AtFlags::empty(),
    )
    .is_ok()
}

/// The refusal of a folder in an exposed tree the harness cannot list.
fn unreadable(path: &Path, e: nix::errno::Errno) -> String {
    format!(
        "holds {}, which the harness cannot list ({e}), so it cannot check what is in it; what \
         the agent can open there by name would be exposed too: let the harness's user read the \
         whole tree, or expose a folder without it",
        path.display()
    )
}

/// Checks the entries of one folder of [`refuse_sockets_and_keys`]; queues its subfolders.
fn check_entries(
    folder: OwnedFd,
    path: &Path,
    keys: &[FileId],
    pending: &mut Vec<Pending>,
) -> Result<(), String> {
    use nix::sys::stat::SFlag;
    let shared = Rc::new(folder.try_clone().map_err(|e| {
        unreadable(
            path,
            nix::errno::Errno::from_raw(e.raw_os_error().unwrap_or(0)),
        )
    })?);
    let mut dir = nix::dir::Dir::from_fd(folder).map_err(|e| unreadable(path, e))?;
    let names = dir
        .iter()
        .map(|entry| entry.map(|e| e.file_name().to_owned()))
        .collect::<Result<Vec<CString>, _>>()
        .map_err(|e| unreadable(path, e))?;
    drop(dir);
    for name in names {
        if name.as_bytes() == b"." || name.as_bytes() == b".." {
            continue;
        }
        let entry_path = path.join(OsStr::from_bytes(name.as_bytes()));
        let stat = match nix::sys::stat::fstatat(
            shared.as_fd(),
            name.as_c_str(),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        ) {
            Ok(stat) => stat,
            Err(nix::errno::Errno::ENOENT) => continue,
            Err(e) => return Err(unreadable(&entry_path, e)),
        };
        let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        if kind == SFlag::S_IFDIR {
            pending.push(Pending {
                parent: Rc::clone(&shared),
                name,
                path: entry_path,
            });
        } else if kind == SFlag::S_IFSOCK || kind == SFlag::S_IFIFO {
            return Err(format!(
                "holds the {} {}, through which the agent could talk to a program outside \
                 (a read-only mount does not stop that); expose a folder without one",
                if kind == SFlag::S_IFSOCK {
                    "Unix socket"
                } else {
                    "named pipe"
                },
                entry_path.display()
            ));
        } else if KEY_FILES.iter().any(|k| k.as_bytes() == name.as_bytes()) {
            return Err(format!(
                "holds {}, an evaluator's secret or private key, which the agent must not see",
                entry_path.display()
            ));
        } else if kind == SFlag::S_IFREG && keys.contains(&FileId::of_stat(&stat)) {
            return Err(format!(
                "holds {}, a hard link to an evaluator's secret or private key in the state \
                 dir, which the agent must not see; remove the link",
                entry_path.display()
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workdir_may_not_overlap_a_hidden_path() {
        let tmp = tempfile::tempdir().unwrap();
        let state = tmp.path().join("state");
        std::fs::create_dir(&state).unwrap();
        let state = std::fs::canonicalize(&state).unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        assert!(resolve_workdir(&state, std::slice::from_ref(&state)).is_err());
        assert!(resolve_workdir(&root, std::slice::from_ref(&state)).is_err());
        // A home, or a folder holding homes, would lift the mask.
        assert!(resolve_workdir(Path::new("/"), &[]).is_err());
        if Path::new("/root").is_dir() {
            assert!(resolve_workdir(Path::new("/root"), &[]).is_err());
        }
        let work = root.join("work");
        std::fs::create_dir(&work).unwrap();
        let pinned = resolve_workdir(&work, &[state]).unwrap();
        assert_eq!(pinned.path, work);
        assert_eq!(
            pinned.id,
            FileId::of(&std::fs::metadata(&work).unwrap()),
            "the working directory is pinned to the folder that was checked"
        );
    }

    fn refusal(dir: &Path, secret: &[PathBuf], workdir: Option<&Path>) -> String {
        match resolve_exposed(dir, secret, workdir) {
            Err(e) => e.to_string(),
            Ok(pinned) => panic!("--expose {} was accepted", pinned.path.display()),
        }
    }

    #[test]
    fn an_exposed_folder_may_lay_bare_no_secret_no_home_and_no_socket() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let state = root.join("state");
        std::fs::create_dir(&state).unwrap();
        let secret = [state.clone()];
        let text = refusal(&state, &secret, None);
        assert!(
            text.contains("--expose") && text.contains("overlaps"),
            "{text}"
        );
        assert!(refusal(&root, &secret, None).contains("overlaps"));
        assert!(refusal(&state.join("."), &secret, None).contains("overlaps"));
        // A link to the state dir is the state dir.
        let link = root.join("link");
        std::os::unix::fs::symlink(&state, &link).unwrap();
        assert!(refusal(&link, &secret, None).contains("overlaps"));
        // Homes, the host's running state, the sandbox's own /tmp.
        if Path::new("/root").is_dir() {
            assert!(refusal(Path::new("/root"), &[], None).contains("hides"));
        }
        assert!(refusal(Path::new("/"), &[], None).contains("holds"));
        assert!(refusal(Path::new("/proc/self"), &[], None).contains("/proc"));
        assert!(refusal(Path::new("/tmp"), &[], None).contains("replaces"));
        // A socket, or an evaluator's key, anywhere inside.
        let sockets = root.join("sockets/deep");
        std::fs::create_dir_all(&sockets).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(sockets.join("s")).unwrap();
        assert!(refusal(&root.join("sockets"), &[], None).contains("socket"));
        let keys = root.join("keys");
        std::fs::create_dir(&keys).unwrap();
        std::fs::write(keys.join(ale_records::layout::EVALUATOR_KEY_FILE), "k").unwrap();
        assert!(refusal(&keys, &[], None).contains("private key"));
        // A named pipe.
        let pipes = root.join("pipes");
        std::fs::create_dir(&pipes).unwrap();
        let fifo =
            std::ffi::CString::new(pipes.join("p").into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(refusal(&pipes, &[], None).contains("named pipe"));
        // The working directory, and what is in it, are shown already.
        let work = root.join("work");
        std::fs::create_dir_all(work.join("venv")).unwrap();
        assert!(refusal(&work, &secret, Some(&work)).contains("working directory"));
        assert!(refusal(&work.join("venv"), &secret, Some(&work)).contains("working directory"));
        // A link an earlier agent left in the working directory does not choose what is
        // exposed.
        let elsewhere = root.join("elsewhere/lib");
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::os::unix::fs::symlink(root.join("elsewhere"), work.join("planted")).unwrap();
        let text = refusal(&work.join("planted/lib"), &secret, Some(&work));
        assert!(
            text.contains("through the link") && text.contains("planted"),
            "{text}"
        );
        assert_eq!(
            resolve_exposed(&elsewhere, &secret, Some(&work))
                .unwrap()
                .path,
            elsewhere
        );

        let python = root.join("python");
        std::fs::create_dir(&python).unwrap();
        std::os::unix::fs::symlink(&state, python.join("state-link")).unwrap();
        assert_eq!(
            resolve_exposed(&python, &secret, Some(&work)).unwrap().path,
            python
        );
    }

    #[test]
    fn a_hard_link_to_a_key_is_the_key_by_any_name() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let state = root.join("state");
        std::fs::create_dir(&state).unwrap();
        let key = state.join(ale_records::layout::EVALUATOR_KEY_FILE);
        std::fs::write(&key, "seed").unwrap();
        let python = root.join("python/lib");
        std::fs::create_dir_all(&python).unwrap();
        std::fs::hard_link(&key, python.join("libfoo.so")).unwrap();
        let secret = [state];
        let text = refusal(&root.join("python"), &secret, None);
        assert!(
            text.contains("hard link") && text.contains("libfoo.so"),
            "{text}"
        );
        // Other hard links (uv and conda install packages so) are fine.
        std::fs::remove_file(python.join("libfoo.so")).unwrap();
        std::fs::write(root.join("cache"), "package").unwrap();
        std::fs::hard_link(root.join("cache"), python.join("module.py")).unwrap();
        assert_eq!(
            resolve_exposed(&root.join("python"), &secret, None)
                .unwrap()
                .path,
            root.join("python")
        );
    }
}
