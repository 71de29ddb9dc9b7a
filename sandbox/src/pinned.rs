//! Host files pinned by identity. The harness checks a folder by its canonical path, and a
//! folder's parent may be writable by someone else (a concurrent agent whose working directory
//! it is): between the check and the launcher's bind, the path could be swapped for a link, or
//! for another folder. So the harness records the device and inode the path led to, reached
//! without following any link, and the launcher binds only that same file, reached the same
//! way (see the launcher's `binds`); a swap makes the launch fail, never shows another folder.

use std::ffi::OsString;
use std::fmt;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which file a path led to: its device and inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileId {
    pub device: u64,
    pub inode: u64,
}

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            device: meta.dev(),
            inode: meta.ino(),
        }
    }
}

impl FileId {
    /// From a `stat(2)` answer.
    // dev_t and ino_t differ in width and sign between platforms.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of_stat(stat: &libc::stat) -> FileId {
        FileId {
            device: stat.st_dev as u64,
            inode: stat.st_ino as u64,
        }
    }
}

impl fmt::Display for FileId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "device {}, inode {}", self.device, self.inode)
    }
}

/// A host path (canonical) and the file it led to, without a link on the way, when the harness
/// checked it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedPath {
    #[serde(with = "spec_path")]
    pub path: PathBuf,
    pub id: FileId,
}

impl PinnedPath {
    /// Pins the canonical `path`: refuses it if a link lies on the way (it changed since it
    /// was resolved).
    pub fn of(path: &Path) -> std::io::Result<PinnedPath> {
        #[cfg(target_os = "linux")]
        let meta = std::fs::File::from(open_without_links(path, Opening::Any)?).metadata()?;
        // No sandbox here (nothing is bound): only the file's identity, for the record.
        #[cfg(not(target_os = "linux"))]
        let meta = std::fs::symlink_metadata(path)?;
        Ok(PinnedPath {
            path: path.to_path_buf(),
            id: FileId::of(&meta),
        })
    }
}

/// What [`open_without_links`] opens a path for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opening {
    /// Only to tell which file it is (a socket, a program): `O_PATH`.
    #[cfg(target_os = "linux")]
    Any,
    /// A folder, to read its entries.
    Folder,
}

/// Opens the absolute `path` following no link on the way, the last component included:
/// `openat2(RESOLVE_NO_SYMLINKS)` on Linux (without `O_NOFOLLOW`, with which `O_PATH` would
/// open a link itself). A link fails with an error that says so.
pub(crate) fn open_without_links(path: &Path, opening: Opening) -> std::io::Result<OwnedFd> {
    use nix::fcntl::OFlag;
    let flags = match opening {
        #[cfg(target_os = "linux")]
        Opening::Any => OFlag::O_PATH,
        Opening::Folder => OFlag::O_RDONLY | OFlag::O_DIRECTORY,
    } | OFlag::O_CLOEXEC;
    #[cfg(target_os = "linux")]
    let opened = {
        use nix::fcntl::{OpenHow, ResolveFlag, openat2};
        let how = OpenHow::new()
            .flags(flags)
            .resolve(ResolveFlag::RESOLVE_NO_SYMLINKS | ResolveFlag::RESOLVE_NO_MAGICLINKS);
        openat2(nix::fcntl::AT_FDCWD, path, how)
    };
    #[cfg(not(target_os = "linux"))]
    let opened = nix::fcntl::open(
        path,
        flags | OFlag::O_NOFOLLOW,
        nix::sys::stat::Mode::empty(),
    );
    opened.map_err(|errno| link_error(path, errno))
}

/// `errno` from opening `path` without following links, as an error that names a link as one.
pub(crate) fn link_error(path: &Path, errno: nix::errno::Errno) -> std::io::Error {
    if errno == nix::errno::Errno::ELOOP {
        return std::io::Error::other(format!(
            "{} is a link, or leads through one, now: it changed after its path was resolved \
             (something else can write a folder on the way); give a path no one else can change",
            path.display()
        ));
    }
    std::io::Error::from(errno)
}

/// Paths in the launch spec: text when they are UTF-8, their bytes otherwise (a folder's name
/// need not be UTF-8).
pub(crate) mod spec_path {
    use super::*;

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Encoded {
        Text(String),
        Bytes(Vec<u8>),
    }

    impl From<Encoded> for PathBuf {
        fn from(encoded: Encoded) -> PathBuf {
            match encoded {
                Encoded::Text(text) => PathBuf::from(text),
                Encoded::Bytes(bytes) => PathBuf::from(OsString::from_vec(bytes)),
            }
        }
    }

    pub fn serialize<S: Serializer>(path: &Path, serializer: S) -> Result<S::Ok, S::Error> {
        match path.to_str() {
            Some(text) => serializer.serialize_str(text),
            None => serializer.serialize_bytes(path.as_os_str().as_bytes()),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<PathBuf, D::Error> {
        Encoded::deserialize(deserializer).map(PathBuf::from)
    }

    /// The same for a list of paths.
    pub mod many {
        use super::*;

        struct One<'a>(&'a Path);

        impl Serialize for One<'_> {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                super::serialize(self.0, serializer)
            }
        }

        pub fn serialize<S: Serializer>(
            paths: &[PathBuf],
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            serializer.collect_seq(paths.iter().map(|p| One(p)))
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(
            deserializer: D,
        ) -> Result<Vec<PathBuf>, D::Error> {
            Vec::<Encoded>::deserialize(deserializer)
                .map(|paths| paths.into_iter().map(PathBuf::from).collect())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_pinned_only_without_a_link_on_the_way() {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        let folder = root.join("folder");
        std::fs::create_dir(&folder).unwrap();
        let pinned = PinnedPath::of(&folder).unwrap();
        assert_eq!(pinned.id, FileId::of(&std::fs::metadata(&folder).unwrap()));
        std::os::unix::fs::symlink(&folder, root.join("link")).unwrap();
        let text = PinnedPath::of(&root.join("link")).unwrap_err().to_string();
        assert!(text.contains("is a link"), "{text}");
        // A link anywhere on the way, not only the last component.
        std::fs::create_dir(folder.join("inner")).unwrap();
        let text = PinnedPath::of(&root.join("link/inner"))
            .unwrap_err()
            .to_string();
        assert!(text.contains("is a link"), "{text}");
    }

    #[test]
    fn spec_paths_need_not_be_utf8() {
        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Paths {
            #[serde(with = "spec_path")]
            one: PathBuf,
            #[serde(with = "spec_path::many")]
            many: Vec<PathBuf>,
        }
        let odd = PathBuf::from(OsString::from_vec(b"/opt/py\xff".to_vec()));
        let paths = Paths {
            one: odd.clone(),
            many: vec![PathBuf::from("/srv/state"), odd],
        };
        let json = serde_json::to_string(&paths).unwrap();
        assert!(json.contains("\"/srv/state\""), "{json}");
        assert_eq!(serde_json::from_str::<Paths>(&json).unwrap(), paths);
    }
}
