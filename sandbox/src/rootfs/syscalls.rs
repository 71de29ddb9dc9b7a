//! Every call the sequence in [`super::build`] makes on the machine, behind one trait: the
//! calls that change the mounts, the root and the files of the new root, and the few that
//! read the host. [`Kernel`] makes them; the tests' recording double writes them down, so that
//! the sequence can be checked step by step without privileges.

use std::ffi::{CString, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use nix::mount::{MntFlags, MsFlags};

use super::binds::{self, Binding, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};
use super::{OLDROOT, masks};
use crate::UserIds;
use crate::setup::{Setup, fail};

/// What an entry of a host folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryKind {
    Folder,
    /// A symbolic link.
    Link,
    /// Anything else: a file, a device, a socket.
    File,
}

/// One entry of a host folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostEntry {
    pub name: OsString,
    pub kind: EntryKind,
}

/// The calls that build the agent's filesystem.
pub(crate) trait Syscalls {
    /// The host's root and the new root, opened once: [`Syscalls::bind_pinned`] looks paths
    /// up beneath them.
    type Roots;

    // ---- mounts and the root ----

    /// mount(2).
    fn mount(
        &mut self,
        source: Option<&Path>,
        target: &Path,
        fstype: Option<&str>,
        flags: MsFlags,
        data: Option<&str>,
    ) -> nix::Result<()>;
    /// Sets mount attributes (`MOUNT_ATTR_*`) on the mount at `path` and every mount below it.
    fn set_attributes_recursively(&mut self, path: &Path, attributes: u64) -> nix::Result<()>;
    /// pivot_root(2).
    fn pivot_root(&mut self, new_root: &Path, put_old: &Path) -> nix::Result<()>;
    /// umount2(2) with `MNT_DETACH`.
    fn detach(&mut self, target: &Path) -> nix::Result<()>;
    fn chdir(&mut self, path: &Path) -> nix::Result<()>;

    // ---- host files the harness pinned, bound through descriptors (see `binds`) ----

    fn open_roots(&mut self, host: &Path, new: &Path) -> Result<Self::Roots, String>;
    fn bind_pinned(&mut self, roots: &Self::Roots, binding: &Binding<'_>) -> Result<(), String>;
    /// Whether anything is at the sandbox path `at` beneath the new root, a link included.
    fn exists_in_new_root(
        &mut self,
        roots: &Self::Roots,
        at: &Path,
        what: &str,
    ) -> Result<bool, String>;
    /// Closes the roots' descriptors: none may outlive the host's root in the new root.
    fn close_roots(&mut self, roots: Self::Roots);

    // ---- files of the new root ----

    fn create_dir(&mut self, path: &Path) -> io::Result<()>;
    fn set_mode(&mut self, path: &Path, mode: u32) -> io::Result<()>;
    /// Creates an empty file, or leaves the one there.
    fn create_file(&mut self, path: &Path) -> io::Result<()>;
    fn symlink(&mut self, target: &Path, link: &Path) -> io::Result<()>;
    fn chown(&mut self, path: &Path, owner: UserIds) -> io::Result<()>;

    // ---- what the host holds ----

    /// The entries of the host's root (at [`OLDROOT`]).
    fn read_host_root(&mut self) -> Setup<Vec<HostEntry>>;
    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf>;
    fn exists(&mut self, path: &Path) -> bool;
    /// Whether `path` is a folder (not a link to one).
    fn is_folder(&mut self, path: &Path) -> bool;
    /// The sandbox paths at which each hidden folder that exists on the host is visible in the
    /// new root: its own (unless the sandbox replaces the folder it is in), and every other
    /// path its filesystem shows it (or a part of it) at (see [`masks::visible_paths`]).
    fn hidden_folder_paths(&mut self, hidden: &[PathBuf]) -> Setup<Vec<PathBuf>>;
    /// Refuses `dir` (`what`: "the working directory") if a hidden folder is reachable through
    /// it (see [`masks::refuse_hidden_inside`]).
    fn refuse_hidden_inside(&mut self, hidden: &[PathBuf], dir: &Path, what: &str) -> Setup<()>;

    // ---- the calls as the steps make them, with what failed ----

    fn mount_tmpfs(&mut self, target: &Path, options: &str, flags: MsFlags) -> Setup<()> {
        self.mount(
            Some(Path::new("tmpfs")),
            target,
            Some("tmpfs"),
            flags,
            Some(options),
        )
        .map_err(fail(format!(
            "cannot mount a tmpfs on {}",
            target.display()
        )))
    }

    fn bind(&mut self, source: &Path, target: &Path) -> Setup<()> {
        self.mount(
            Some(source),
            target,
            None,
            MsFlags::MS_BIND | MsFlags::MS_REC,
            None,
        )
        .map_err(fail(format!(
            "cannot bind {} on {}",
            source.display(),
            target.display()
        )))
    }

    /// Makes the mount at `path` and every mount below it read-only, `nosuid` and `nodev`: a
    /// recursive bind mount made read-only this way leaves no writable submount behind.
    fn make_read_only_recursively(&mut self, path: &Path) -> Setup<()> {
        self.set_attributes_recursively(
            path,
            MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
        )
        .map_err(fail(format!("cannot make {} read-only", path.display())))
    }

    fn mkdir(&mut self, path: &Path, mode: u32) -> Setup<()> {
        match self.create_dir(path) {
            Ok(()) => self
                .set_mode(path, mode)
                .map_err(fail(format!("chmod {}", path.display()))),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
            Err(e) => Err(fail(format!("mkdir {}", path.display()))(e)),
        }
    }

    fn touch(&mut self, path: &Path) -> Setup<()> {
        self.create_file(path)
            .map_err(fail(format!("cannot create {}", path.display())))
    }
}

/// The machine's own calls.
pub(crate) struct Kernel;

/// The roots [`Kernel`] opens.
pub(crate) struct OpenRoots {
    host: binds::Root,
    new: binds::Root,
}

impl Syscalls for Kernel {
    type Roots = OpenRoots;

    fn mount(
        &mut self,
        source: Option<&Path>,
        target: &Path,
        fstype: Option<&str>,
        flags: MsFlags,
        data: Option<&str>,
    ) -> nix::Result<()> {
        nix::mount::mount(source, target, fstype, flags, data)
    }

    fn set_attributes_recursively(&mut self, path: &Path, attributes: u64) -> nix::Result<()> {
        let c_path =
            CString::new(path.as_os_str().as_bytes()).map_err(|_| nix::errno::Errno::EINVAL)?;
        const AT_RECURSIVE: libc::c_uint = 0x8000;
        binds::set_attributes(nix::fcntl::AT_FDCWD, &c_path, AT_RECURSIVE, attributes)
    }

    fn pivot_root(&mut self, new_root: &Path, put_old: &Path) -> nix::Result<()> {
        nix::unistd::pivot_root(new_root, put_old)
    }

    fn detach(&mut self, target: &Path) -> nix::Result<()> {
        nix::mount::umount2(target, MntFlags::MNT_DETACH)
    }

    fn chdir(&mut self, path: &Path) -> nix::Result<()> {
        nix::unistd::chdir(path)
    }

    fn open_roots(&mut self, host: &Path, new: &Path) -> Result<OpenRoots, String> {
        Ok(OpenRoots {
            host: binds::Root::open(host)?,
            new: binds::Root::open(new)?,
        })
    }

    fn bind_pinned(&mut self, roots: &OpenRoots, binding: &Binding<'_>) -> Result<(), String> {
        binds::bind_pinned(&roots.host, &roots.new, binding)
    }

    fn exists_in_new_root(
        &mut self,
        roots: &OpenRoots,
        at: &Path,
        what: &str,
    ) -> Result<bool, String> {
        binds::exists(&roots.new, at, what)
    }

    fn close_roots(&mut self, roots: OpenRoots) {
        drop(roots);
    }

    fn create_dir(&mut self, path: &Path) -> io::Result<()> {
        std::fs::create_dir(path)
    }

    fn set_mode(&mut self, path: &Path, mode: u32) -> io::Result<()> {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
    }

    fn create_file(&mut self, path: &Path) -> io::Result<()> {
        std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map(drop)
    }

    fn symlink(&mut self, target: &Path, link: &Path) -> io::Result<()> {
        std::os::unix::fs::symlink(target, link)
    }

    fn chown(&mut self, path: &Path, owner: UserIds) -> io::Result<()> {
        std::os::unix::fs::chown(path, Some(owner.uid), Some(owner.gid))
    }

    fn read_host_root(&mut self) -> Setup<Vec<HostEntry>> {
        let mut entries = Vec::new();
        let listed = std::fs::read_dir(OLDROOT).map_err(fail("cannot list the host's /"))?;
        for entry in listed {
            let entry = entry.map_err(fail("cannot list the host's /"))?;
            let kind = entry
                .file_type()
                .map_err(fail(format!("stat {}", entry.path().display())))?;
            let kind = if kind.is_symlink() {
                EntryKind::Link
            } else if kind.is_dir() {
                EntryKind::Folder
            } else {
                EntryKind::File
            };
            entries.push(HostEntry {
                name: entry.file_name(),
                kind,
            });
        }
        Ok(entries)
    }

    fn read_link(&mut self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }

    fn exists(&mut self, path: &Path) -> bool {
        path.exists()
    }

    fn is_folder(&mut self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
    }

    fn hidden_folder_paths(&mut self, hidden: &[PathBuf]) -> Setup<Vec<PathBuf>> {
        masks::visible_paths(hidden)
    }

    fn refuse_hidden_inside(&mut self, hidden: &[PathBuf], dir: &Path, what: &str) -> Setup<()> {
        masks::refuse_hidden_inside(hidden, dir, what)
    }
}
