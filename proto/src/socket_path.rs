//! Unix socket paths of any length.
//!
//! `sun_path` holds 107 bytes and a NUL, so `bind` and `connect` refuse a longer path with
//! "path must be shorter than SUN_LEN". A state dir deep in a checkout or a CI workspace
//! reaches that length with its per-run sockets (`agents/run-<32 hex>.sock`), though every
//! other file there works. [`SocketPath`] names such a socket through its folder instead:
//! the folder is opened (`O_PATH`) and the socket addressed as `/proc/self/fd/<fd>/<name>`,
//! which the kernel resolves as it would the whole path. A short path is used as it is.

use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

/// The longest path `sun_path` takes, its NUL aside.
pub const MAX_SOCKET_PATH: usize = 107;

/// A socket path that fits `sun_path`; see the [module](self) docs. Keep it alive while
/// binding or connecting through [`SocketPath::as_path`].
#[derive(Debug)]
pub struct SocketPath {
    path: PathBuf,
    /// The socket's folder, held open while [`Self::path`] names it through `/proc`.
    _folder: Option<File>,
}

impl SocketPath {
    /// `path` itself when it fits, else its name under its opened folder.
    ///
    /// Fails when the folder cannot be opened, or when even that form is too long (a file
    /// name over 80 bytes).
    pub fn new(path: &Path) -> std::io::Result<Self> {
        if path.as_os_str().len() <= MAX_SOCKET_PATH {
            return Ok(Self {
                path: path.to_path_buf(),
                _folder: None,
            });
        }
        let (Some(folder), Some(name)) = (path.parent(), path.file_name()) else {
            return Err(too_long(path));
        };
        let folder = if folder.as_os_str().is_empty() {
            Path::new(".")
        } else {
            folder
        };
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
            .open(folder)?;
        let mut short = PathBuf::from(format!("/proc/self/fd/{}", opened.as_raw_fd()));
        short.push(name);
        if short.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(too_long(path));
        }
        Ok(Self {
            path: short,
            _folder: Some(opened),
        })
    }

    /// The path to hand `bind` or `connect`.
    pub fn as_path(&self) -> &Path {
        &self.path
    }
}

fn too_long(path: &Path) -> std::io::Error {
    let name = path.file_name().map_or(0, |n: &OsStr| n.as_bytes().len());
    std::io::Error::new(
        std::io::ErrorKind::InvalidInput,
        format!(
            "the socket path {} is {} bytes, over the {MAX_SOCKET_PATH} a Unix socket takes, \
             and its file name ({name} bytes) is too long to reach through its folder",
            path.display(),
            path.as_os_str().len()
        ),
    )
}

/// Binds a listener at `path`, of any length.
pub fn bind(path: &Path) -> std::io::Result<std::os::unix::net::UnixListener> {
    let address = SocketPath::new(path)?;
    std::os::unix::net::UnixListener::bind(address.as_path())
}

/// Connects to the socket at `path`, of any length.
pub fn connect(path: &Path) -> std::io::Result<std::os::unix::net::UnixStream> {
    let address = SocketPath::new(path)?;
    std::os::unix::net::UnixStream::connect(address.as_path())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder whose sockets' paths are longer than `sun_path`.
    fn deep(root: &Path) -> PathBuf {
        let deep = root.join("d".repeat(60)).join("e".repeat(60));
        std::fs::create_dir_all(&deep).unwrap();
        deep
    }

    #[test]
    fn a_short_path_is_used_as_it_is() {
        let path = Path::new("/run/ale/agent.sock");
        assert_eq!(SocketPath::new(path).unwrap().as_path(), path);
    }

    #[test]
    fn a_socket_past_sun_len_binds_and_answers_at_its_whole_path() {
        use std::io::{Read, Write};
        let tmp = tempfile::tempdir().unwrap();
        let socket = deep(tmp.path()).join("run-7ff10a3530bff0ebcfa4f56421c5f978.sock");
        assert!(socket.as_os_str().len() > MAX_SOCKET_PATH);
        assert!(std::os::unix::net::UnixListener::bind(&socket).is_err());

        let listener = bind(&socket).unwrap();
        // The socket has its real name, where the harness and `ls` find it.
        assert!(std::fs::symlink_metadata(&socket).is_ok());
        let mut client = connect(&socket).unwrap();
        let (mut served, _) = listener.accept().unwrap();
        client.write_all(b"ping").unwrap();
        let mut got = [0; 4];
        served.read_exact(&mut got).unwrap();
        assert_eq!(&got, b"ping");
    }

    #[test]
    fn a_missing_folder_or_an_overlong_name_is_a_clear_error() {
        let tmp = tempfile::tempdir().unwrap();
        let deep = deep(tmp.path());
        let missing = deep.join("gone").join("s.sock");
        assert_eq!(
            SocketPath::new(&missing).unwrap_err().kind(),
            std::io::ErrorKind::NotFound
        );
        let overlong = deep.join("n".repeat(100));
        let e = SocketPath::new(&overlong).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("over the 107"), "{e}");
    }
}
