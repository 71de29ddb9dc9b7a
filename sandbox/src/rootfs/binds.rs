//! Binds of host files into the sandbox's new root, made through descriptors. A host path
//! someone else may write (an exposed folder's parent, writable by a concurrent agent whose
//! working directory it is) can change between the harness's check and the bind. So each
//! source is opened beneath the host's root without following any link and must be the file
//! the harness pinned; each mount point is opened beneath the new root the same way and must
//! be that same file (a host folder seen at its own path) or one just created in a tmpfs of
//! the sandbox's own; and the mount goes from the one descriptor onto the other (`open_tree`,
//! `mount_setattr`, `move_mount`), so no path is looked up twice. Anything else fails the
//! launch.

use std::ffi::{CStr, OsStr};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, OpenHow, ResolveFlag, openat2};
use nix::sys::stat::Mode;

use crate::pinned::{FileId, PinnedPath};

pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x1;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x2;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x4;
const AT_RECURSIVE: libc::c_uint = 0x8000;
const OPEN_TREE_CLONE: libc::c_uint = 0x1;
const MOVE_MOUNT_F_EMPTY_PATH: libc::c_uint = 0x4;
const MOVE_MOUNT_T_EMPTY_PATH: libc::c_uint = 0x40;

/// What a bind mounts: a folder, or a single file (a socket, a program).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Folder,
    File,
}

/// A root folder (the host's, the sandbox's new one), opened once: paths are looked up
/// beneath it.
pub(super) struct Root(OwnedFd);

impl Root {
    pub(super) fn open(at: &Path) -> Result<Root, String> {
        nix::fcntl::open(
            at,
            OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC,
            Mode::empty(),
        )
        .map(Root)
        .map_err(|e| format!("cannot open {}: {e}", at.display()))
    }
}

/// How every path is opened: no link followed, the last component's included (a link there
/// fails with `ELOOP`; `O_NOFOLLOW` would open the link itself), and nothing outside the root
/// the lookup starts from.
fn without_links(flags: OFlag) -> OpenHow {
    OpenHow::new().flags(flags | OFlag::O_CLOEXEC).resolve(
        ResolveFlag::RESOLVE_NO_SYMLINKS
            | ResolveFlag::RESOLVE_NO_MAGICLINKS
            | ResolveFlag::RESOLVE_BENEATH,
    )
}

/// The flags that open a `kind` only to name it.
fn naming(kind: Kind) -> OFlag {
    match kind {
        Kind::Folder => OFlag::O_PATH | OFlag::O_DIRECTORY,
        Kind::File => OFlag::O_PATH,
    }
}

/// `path` (absolute, without `..`) as a path relative to the root.
fn beneath(path: &Path) -> Result<PathBuf, String> {
    if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
        return Err(format!(
            "{} is not an absolute path without `..`",
            path.display()
        ));
    }
    Ok(path
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .collect())
}

fn id_of(fd: &OwnedFd) -> Result<FileId, Errno> {
    nix::sys::stat::fstat(fd).map(|stat| FileId::of_stat(&stat))
}

/// What went wrong looking `path` up without following links.
fn lookup_error(what: &str, path: &Path, errno: Errno) -> String {
    if errno == Errno::ELOOP {
        format!(
            "{what} {} is a link, or leads through one, now: it changed after the harness \
             checked it (something else can write a folder on the way); the agent is not started",
            path.display()
        )
    } else {
        format!("cannot open {what} {}: {errno}", path.display())
    }
}

/// Opens the host file `pinned` beneath the host's root `host`, following no link, and checks
/// it is the file the harness pinned.
pub(super) fn open_source(
    host: &Root,
    pinned: &PinnedPath,
    kind: Kind,
    what: &str,
) -> Result<OwnedFd, String> {
    let relative = beneath(&pinned.path)?;
    let relative = if relative.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        relative
    };
    let fd = openat2(host.0.as_fd(), &relative, without_links(naming(kind)))
        .map_err(|e| lookup_error(what, &pinned.path, e))?;
    let found = id_of(&fd).map_err(|e| format!("stat {}: {e}", pinned.path.display()))?;
    if found != pinned.id {
        return Err(format!(
            "{what} {} is not the one the harness checked ({}) but another ({found}): it was \
             replaced after the check (something else can write a folder on the way); the \
             agent is not started",
            pinned.path.display(),
            pinned.id
        ));
    }
    Ok(fd)
}

/// Opens the mount point `at` (a sandbox path) beneath the new root `new`, following no link.
/// It must be the file `source` itself (a host folder seen at its own path) or, where
/// `may_create` (the sandbox's own tmpfs), it is created, with the folders leading to it, when
/// missing.
pub(super) fn open_target(
    new: &Root,
    at: &Path,
    kind: Kind,
    source: FileId,
    may_create: bool,
    what: &str,
) -> Result<OwnedFd, String> {
    let relative = beneath(at)?;
    let names: Vec<&OsStr> = relative.iter().collect();
    let Some((last, folders)) = names.split_last() else {
        return Err(format!("{what}: the sandbox's root is no mount point"));
    };
    let lookup = |e| lookup_error(&format!("the mount point of {what}"), at, e);
    let mut folder =
        openat2(new.0.as_fd(), ".", without_links(naming(Kind::Folder))).map_err(lookup)?;
    for name in folders {
        folder = open_or_create(&folder, name, Kind::Folder, may_create)
            .map_err(lookup)?
            .0;
    }
    let (target, created) = open_or_create(&folder, last, kind, may_create).map_err(lookup)?;
    if !created {
        let found = id_of(&target).map_err(lookup)?;
        if found != source {
            return Err(format!(
                "the mount point of {what} {} in the sandbox is not the file the harness checked \
                 ({source}) but another ({found}): it was replaced after the check; the agent \
                 is not started",
                at.display()
            ));
        }
    }
    Ok(target)
}

/// Opens `name` in `folder` to name it; where `may_create`, creates it first if it is missing
/// (a folder 0755, a file 0644). Says whether it was created.
fn open_or_create(
    folder: &OwnedFd,
    name: &OsStr,
    kind: Kind,
    may_create: bool,
) -> Result<(OwnedFd, bool), Errno> {
    match openat2(folder.as_fd(), name, without_links(naming(kind))) {
        Err(Errno::ENOENT) if may_create => {}
        opened => return opened.map(|fd| (fd, false)),
    }
    let created = match kind {
        Kind::Folder => {
            let mode = Mode::from_bits_truncate(0o755);
            nix::sys::stat::mkdirat(folder.as_fd(), name, mode)?;
            let fd = openat2(
                folder.as_fd(),
                name,
                without_links(OFlag::O_RDONLY | OFlag::O_DIRECTORY),
            )?;
            // Whatever the umask: the agent's user must get through.
            nix::sys::stat::fchmod(&fd, mode)?;
            fd
        }
        Kind::File => openat2(
            folder.as_fd(),
            name,
            without_links(OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL)
                .mode(Mode::from_bits_truncate(0o644)),
        )?,
    };
    Ok((created, true))
}

/// Whether anything is at `at` (a sandbox path, `what`) beneath the new root, a link
/// included; an error if a link lies on the way there.
pub(super) fn exists(new: &Root, at: &Path, what: &str) -> Result<bool, String> {
    let relative = beneath(at)?;
    let Some(name) = relative.file_name() else {
        return Ok(true);
    };
    let parent = relative.parent().filter(|p| !p.as_os_str().is_empty());
    let folder = openat2(
        new.0.as_fd(),
        parent.unwrap_or(Path::new(".")),
        without_links(naming(Kind::Folder)),
    );
    let folder = match folder {
        Ok(folder) => folder,
        Err(Errno::ENOENT) => return Ok(false),
        Err(e) => return Err(lookup_error(what, at, e)),
    };
    match nix::sys::stat::fstatat(&folder, name, nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
        Ok(_) => Ok(true),
        Err(Errno::ENOENT) => Ok(false),
        Err(e) => Err(format!("stat {}: {e}", at.display())),
    }
}

/// Mounts a copy of the tree at `source` (its submounts included) on `target`, with
/// `attributes` (`MOUNT_ATTR_*`) set on all of it before it is attached.
pub(super) fn bind(source: &OwnedFd, target: &OwnedFd, attributes: u64) -> Result<(), Errno> {
    // SAFETY: an open descriptor and an empty C string; the kernel returns a new descriptor.
    let tree = unsafe {
        libc::syscall(
            libc::SYS_open_tree,
            source.as_raw_fd(),
            c"".as_ptr(),
            OPEN_TREE_CLONE
                | libc::O_CLOEXEC as libc::c_uint
                | AT_RECURSIVE
                | libc::AT_EMPTY_PATH as libc::c_uint,
        )
    };
    let tree = Errno::result(tree)?;
    // SAFETY: open_tree returned a descriptor nobody else owns.
    let tree = unsafe { OwnedFd::from_raw_fd(tree as i32) };
    if attributes != 0 {
        set_attributes(
            tree.as_fd(),
            c"",
            AT_RECURSIVE | libc::AT_EMPTY_PATH as libc::c_uint,
            attributes,
        )?;
    }
    // SAFETY: two open descriptors and empty C strings.
    let moved = unsafe {
        libc::syscall(
            libc::SYS_move_mount,
            tree.as_raw_fd(),
            c"".as_ptr(),
            target.as_raw_fd(),
            c"".as_ptr(),
            MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH,
        )
    };
    Errno::result(moved).map(drop)
}

#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Sets mount attributes (`MOUNT_ATTR_*`) with mount_setattr(2), Linux ≥ 5.12, on the mount
/// at `path` in `folder` (`flags`: `AT_RECURSIVE` for every mount below it too; a recursive
/// bind made read-only this way leaves no writable submount behind).
pub(super) fn set_attributes(
    folder: BorrowedFd<'_>,
    path: &CStr,
    flags: libc::c_uint,
    attr_set: u64,
) -> Result<(), Errno> {
    let attr = MountAttr {
        attr_set,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    // SAFETY: a valid C string and a properly sized, initialised mount_attr.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            folder.as_raw_fd(),
            path.as_ptr(),
            flags,
            &attr as *const MountAttr,
            std::mem::size_of::<MountAttr>(),
        )
    };
    Errno::result(rc).map(drop)
}

/// One host file or folder to bind into the sandbox.
pub(crate) struct Binding<'a> {
    /// What it is, for messages ("the exposed folder").
    pub what: &'a str,
    /// The host file, as the harness checked it.
    pub pinned: &'a PinnedPath,
    /// Where the sandbox shows it.
    pub at: &'a Path,
    pub kind: Kind,
    /// `MOUNT_ATTR_*` set on the whole bound tree.
    pub attributes: u64,
    /// Whether the mount point, and the folders leading to it, may be created: only in a
    /// tmpfs of the sandbox's own.
    pub may_create: bool,
}

/// Binds `binding` from beneath the host's root `host` into the new root `new`:
/// [`open_source`], [`open_target`], [`bind`].
pub(super) fn bind_pinned(host: &Root, new: &Root, binding: &Binding<'_>) -> Result<(), String> {
    let Binding {
        what,
        pinned,
        at,
        kind,
        attributes,
        may_create,
    } = *binding;
    let source = open_source(host, pinned, kind, what)?;
    let target = open_target(new, at, kind, pinned.id, may_create, what)?;
    bind(&source, &target, attributes).map_err(|e| {
        format!(
            "cannot bind {what} {} on {}: {e}",
            pinned.path.display(),
            at.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder standing for a root, with `a/py` in it (the folder the harness checked) and
    /// `a/decoy` (one the agent must not see).
    struct Tree {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        checked: PinnedPath,
    }

    fn tree() -> Tree {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        std::fs::create_dir_all(root.join("a/py")).unwrap();
        std::fs::create_dir_all(root.join("a/decoy")).unwrap();
        std::fs::write(root.join("a/decoy/secret"), "s").unwrap();
        let checked = PinnedPath {
            path: PathBuf::from("/a/py"),
            id: FileId::of(&std::fs::metadata(root.join("a/py")).unwrap()),
        };
        Tree {
            _tmp: tmp,
            root,
            checked,
        }
    }

    fn exchange(a: &Path, b: &Path) {
        nix::fcntl::renameat2(
            nix::fcntl::AT_FDCWD,
            a,
            nix::fcntl::AT_FDCWD,
            b,
            nix::fcntl::RenameFlags::RENAME_EXCHANGE,
        )
        .unwrap();
    }

    #[test]
    fn the_checked_folder_is_opened() {
        let t = tree();
        let host = Root::open(&t.root).unwrap();
        let fd = open_source(&host, &t.checked, Kind::Folder, "the exposed folder").unwrap();
        assert_eq!(id_of(&fd).unwrap(), t.checked.id);
    }

    #[test]
    fn a_folder_swapped_for_another_after_the_check_is_refused() {
        let t = tree();
        exchange(&t.root.join("a/py"), &t.root.join("a/decoy"));
        let host = Root::open(&t.root).unwrap();
        let text = open_source(&host, &t.checked, Kind::Folder, "the exposed folder").unwrap_err();
        assert!(text.contains("replaced after the check"), "{text}");
        // Nor is the swapped folder a mount point for the checked one.
        let text = open_target(
            &host,
            Path::new("/a/py"),
            Kind::Folder,
            t.checked.id,
            false,
            "the exposed folder",
        )
        .unwrap_err();
        assert!(text.contains("replaced after the check"), "{text}");
    }

    #[test]
    fn a_folder_swapped_for_a_link_after_the_check_is_refused() {
        let t = tree();
        // The racer's move: the checked folder out of the way, a relative link in its place.
        std::os::unix::fs::symlink("decoy", t.root.join("a/link")).unwrap();
        exchange(&t.root.join("a/py"), &t.root.join("a/link"));
        let host = Root::open(&t.root).unwrap();
        let text = open_source(&host, &t.checked, Kind::Folder, "the exposed folder").unwrap_err();
        assert!(text.contains("is a link"), "{text}");
        let text = open_target(
            &host,
            Path::new("/a/py"),
            Kind::Folder,
            t.checked.id,
            false,
            "the exposed folder",
        )
        .unwrap_err();
        assert!(text.contains("is a link"), "{text}");
        // A link further up the way is refused as well.
        exchange(&t.root.join("a/py"), &t.root.join("a/link"));
        std::fs::rename(t.root.join("a"), t.root.join("b")).unwrap();
        std::os::unix::fs::symlink("b", t.root.join("a")).unwrap();
        let text = open_source(&host, &t.checked, Kind::Folder, "the exposed folder").unwrap_err();
        assert!(text.contains("is a link"), "{text}");
    }

    #[test]
    fn mount_points_are_created_only_where_allowed_and_never_through_a_link() {
        let t = tree();
        let new = Root::open(&t.root).unwrap();
        let id = t.checked.id;
        // Missing, where the sandbox may not create: refused.
        assert!(open_target(&new, Path::new("/run/x"), Kind::Folder, id, false, "w").is_err());
        // Where it may: created, with its folders, 0755 whatever the umask.
        let fd = open_target(&new, Path::new("/run/ale/x"), Kind::Folder, id, true, "w").unwrap();
        drop(fd);
        let meta = std::fs::metadata(t.root.join("run/ale/x")).unwrap();
        assert!(meta.is_dir());
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o777,
            0o755
        );
        open_target(&new, Path::new("/run/ale/s"), Kind::File, id, true, "s").unwrap();
        assert!(t.root.join("run/ale/s").is_file());
        // Present already and not the source: refused, even where the sandbox may create.
        let text =
            open_target(&new, Path::new("/a/decoy"), Kind::Folder, id, true, "w").unwrap_err();
        assert!(text.contains("replaced"), "{text}");
        // A link on the way is never followed to create anything.
        std::os::unix::fs::symlink("a/decoy", t.root.join("hop")).unwrap();
        let text =
            open_target(&new, Path::new("/hop/made"), Kind::Folder, id, true, "w").unwrap_err();
        assert!(text.contains("is a link"), "{text}");
        assert!(!t.root.join("a/decoy/made").exists());
        assert!(exists(&new, Path::new("/hop"), "p").unwrap());
        assert!(!exists(&new, Path::new("/nothing/here"), "p").unwrap());
        assert!(exists(&new, Path::new("/hop/secret"), "p").is_err());
    }
}
