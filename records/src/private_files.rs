//! Files and folders that only this process's user may touch: the evaluator's state dir, its
//! run folders and everything in them.
//!
//! The rules, so that a state dir prepared (or tampered with) by another user is refused rather
//! than adopted:
//!
//! - a directory is created 0700; an existing one must be a real directory (not a symbolic
//!   link), owned by the effective uid, with no permission bits for group or other. One that
//!   breaks a rule is refused with the fix in the message, never repaired behind the
//!   operator's back.
//! - a file is created with `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`: it never follows a link and
//!   never reuses a file someone else put there.
//! - a file is read through `O_NOFOLLOW`, and checked on the open descriptor (`fstat`): a
//!   regular file owned by the effective uid; a private one also readable by nobody else.
//!
//! ```
//! use ale_records::private_files::{create_private_file, ensure_private_dir, read_private_file};
//! # let tmp = tempfile::tempdir().unwrap();
//! let dir = tmp.path().join("state");
//! ensure_private_dir(&dir).unwrap();
//! let path = dir.join("secret");
//! std::io::Write::write_all(&mut create_private_file(&path, 0o600).unwrap(), b"s3cr3t").unwrap();
//! assert_eq!(read_private_file(&path).unwrap(), b"s3cr3t");
//! assert!(create_private_file(&path, 0o600).is_err(), "never reused");
//! ```

use std::fs::{DirBuilder, File, Metadata, OpenOptions, Permissions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// A private file or directory that breaks a rule, or could not be created or read.
#[derive(Debug, thiserror::Error)]
pub enum PrivateFileError {
    #[error(
        "{} is a symbolic link; expected a real {expected} that this user owns. Links are never followed here: remove the link (rm {}) or point --state-dir at the real directory",
        .path.display(), .path.display()
    )]
    Symlink {
        path: PathBuf,
        /// "directory" or "file".
        expected: &'static str,
    },
    #[error(
        "{} is {found}; expected a {expected}. Move it out of the way (it was left untouched)",
        .path.display()
    )]
    WrongType {
        path: PathBuf,
        expected: &'static str,
        found: &'static str,
    },
    #[error(
        "{} is owned by uid {owner}, expected uid {expected} (the user this process runs as). Run as uid {owner}, or use a state dir of your own (--state-dir); it was left untouched",
        .path.display()
    )]
    ForeignOwner {
        path: PathBuf,
        owner: u32,
        expected: u32,
    },
    #[error(
        "{} has mode {mode:04o}; expected no access for group or other. Run `chmod {fix:o} {}` if its contents are yours to keep private, otherwise remove it",
        .path.display(), .path.display()
    )]
    OpenToOthers {
        path: PathBuf,
        mode: u32,
        /// The mode that fixes it: 0o700 for a directory, 0o600 for a file.
        fix: u32,
    },
    #[error(
        "{} is writable by group or other (mode {mode:04o}); expected only its owner to write it. Run `chmod go-w {}`",
        .path.display(), .path.display()
    )]
    WritableByOthers { path: PathBuf, mode: u32 },
    #[error(
        "{} already exists; expected to create it fresh. Nothing is written through a name someone else may have prepared: remove it if it is stale",
        .path.display()
    )]
    AlreadyExists { path: PathBuf },
    #[error("cannot {action} {}: {cause}", .path.display())]
    Io {
        path: PathBuf,
        action: &'static str,
        cause: std::io::Error,
    },
}

impl PrivateFileError {
    fn io(path: &Path, action: &'static str) -> impl FnOnce(std::io::Error) -> PrivateFileError {
        let path = path.to_path_buf();
        move |cause| PrivateFileError::Io {
            path,
            action,
            cause,
        }
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            PrivateFileError::Symlink { path, .. }
            | PrivateFileError::WrongType { path, .. }
            | PrivateFileError::ForeignOwner { path, .. }
            | PrivateFileError::OpenToOthers { path, .. }
            | PrivateFileError::WritableByOthers { path, .. }
            | PrivateFileError::AlreadyExists { path }
            | PrivateFileError::Io { path, .. } => path,
        }
    }
}

/// Keeps the message; the kind tells callers that speak `std::io` what went wrong.
impl From<PrivateFileError> for std::io::Error {
    fn from(e: PrivateFileError) -> std::io::Error {
        use std::io::ErrorKind;
        let kind = match &e {
            PrivateFileError::AlreadyExists { .. } => ErrorKind::AlreadyExists,
            PrivateFileError::Io { cause, .. } => cause.kind(),
            PrivateFileError::ForeignOwner { .. }
            | PrivateFileError::OpenToOthers { .. }
            | PrivateFileError::WritableByOthers { .. }
            | PrivateFileError::Symlink { .. } => ErrorKind::PermissionDenied,
            PrivateFileError::WrongType { .. } => ErrorKind::InvalidInput,
        };
        std::io::Error::new(kind, e)
    }
}

/// The effective uid of this process: the owner every private file must have.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

fn describe(metadata: &Metadata) -> &'static str {
    let t = metadata.file_type();
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_file() {
        "a regular file"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_fifo() {
        "a named pipe"
    } else if t.is_block_device() || t.is_char_device() {
        "a device"
    } else {
        "not a regular file"
    }
}

fn check_owner(path: &Path, metadata: &Metadata) -> Result<(), PrivateFileError> {
    let expected = effective_uid();
    if metadata.uid() != expected {
        return Err(PrivateFileError::ForeignOwner {
            path: path.to_path_buf(),
            owner: metadata.uid(),
            expected,
        });
    }
    Ok(())
}

fn check_private_mode(path: &Path, metadata: &Metadata, fix: u32) -> Result<(), PrivateFileError> {
    let mode = metadata.mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(PrivateFileError::OpenToOthers {
            path: path.to_path_buf(),
            mode,
            fix,
        });
    }
    Ok(())
}

/// Checks an existing directory without following a link at `path`: a real directory, owned by
/// the effective uid, with no permissions for group or other. Changes nothing.
pub fn check_private_dir(path: &Path) -> Result<(), PrivateFileError> {
    let metadata =
        std::fs::symlink_metadata(path).map_err(PrivateFileError::io(path, "inspect"))?;
    check_dir_metadata(path, &metadata)
}

fn check_dir_metadata(path: &Path, metadata: &Metadata) -> Result<(), PrivateFileError> {
    if metadata.file_type().is_symlink() {
        return Err(PrivateFileError::Symlink {
            path: path.to_path_buf(),
            expected: "directory",
        });
    }
    if !metadata.is_dir() {
        return Err(PrivateFileError::WrongType {
            path: path.to_path_buf(),
            expected: "directory",
            found: describe(metadata),
        });
    }
    check_owner(path, metadata)?;
    check_private_mode(path, metadata, 0o700)
}

/// Makes sure `path` is a private directory: creates it 0700 when missing (missing parents
/// are created 0700 too), otherwise checks it as [`check_private_dir`] does. An existing
/// directory is never chmodded: one that is open to others is refused with the fix.
pub fn ensure_private_dir(path: &Path) -> Result<(), PrivateFileError> {
    match std::fs::symlink_metadata(path) {
        Ok(metadata) => return check_dir_metadata(path, &metadata),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(PrivateFileError::io(path, "inspect")(e)),
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(PrivateFileError::io(parent, "create"))?;
    }
    match DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        // Someone else made it in between: it gets the same checks as any existing one.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(PrivateFileError::io(path, "create")(e)),
    }
    check_private_dir(path)
}

/// Creates exactly `path` (not its parents) as a new 0700 directory; fails if anything is
/// there already, so a name someone prepared is never adopted.
pub fn create_private_dir(path: &Path) -> Result<(), PrivateFileError> {
    match DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => check_private_dir(path),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            Err(PrivateFileError::AlreadyExists {
                path: path.to_path_buf(),
            })
        }
        Err(e) => Err(PrivateFileError::io(path, "create")(e)),
    }
}

/// Creates a new file at `path`, open for writing, with exactly `mode` (the umask does not
/// apply): `O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC`, so it fails if anything — a file, a link,
/// even a dangling one — is at `path`.
pub fn create_private_file(path: &Path, mode: u32) -> Result<File, PrivateFileError> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => PrivateFileError::AlreadyExists {
                path: path.to_path_buf(),
            },
            _ => PrivateFileError::io(path, "create")(e),
        })?;
    // The file is ours (O_EXCL): setting its mode on the descriptor touches nothing else.
    file.set_permissions(Permissions::from_mode(mode))
        .map_err(PrivateFileError::io(path, "set the mode of"))?;
    Ok(file)
}

/// Opens `path` for reading without following a link, and checks the open file: a regular
/// file owned by the effective uid. A link at `path` is refused, as is anything else.
fn open_owned_file(path: &Path) -> Result<(File, Metadata), PrivateFileError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                PrivateFileError::Symlink {
                    path: path.to_path_buf(),
                    expected: "file",
                }
            } else {
                PrivateFileError::io(path, "open")(e)
            }
        })?;
    let metadata = file
        .metadata()
        .map_err(PrivateFileError::io(path, "inspect"))?;
    if !metadata.is_file() {
        return Err(PrivateFileError::WrongType {
            path: path.to_path_buf(),
            expected: "regular file",
            found: describe(&metadata),
        });
    }
    check_owner(path, &metadata)?;
    Ok((file, metadata))
}

fn read_all(path: &Path, mut file: File) -> Result<Vec<u8>, PrivateFileError> {
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .map_err(PrivateFileError::io(path, "read"))?;
    Ok(bytes)
}

/// Opens a private file for reading: a regular file (a link is not followed), owned by the
/// effective uid, no access for group or other (`mode & 0o077 == 0`), checked on the open
/// descriptor so the file checked is the file read.
pub fn open_private_file(path: &Path) -> Result<File, PrivateFileError> {
    let (file, metadata) = open_owned_file(path)?;
    check_private_mode(path, &metadata, 0o600)?;
    Ok(file)
}

/// Reads a whole private file, with the checks of [`open_private_file`].
pub fn read_private_file(path: &Path) -> Result<Vec<u8>, PrivateFileError> {
    read_all(path, open_private_file(path)?)
}

/// Reads a whole file that others may read but only its owner may write (a public key):
/// a regular file (a link is not followed), owned by the effective uid, not writable by group
/// or other.
pub(crate) fn read_owned_file(path: &Path) -> Result<Vec<u8>, PrivateFileError> {
    let (file, metadata) = open_owned_file(path)?;
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(PrivateFileError::WritableByOthers {
            path: path.to_path_buf(),
            mode,
        });
    }
    read_all(path, file)
}

/// Creates `path` with exactly `contents`, as [`create_private_file`] would, but whole or not
/// at all: the bytes are written to a temporary file that is then hard-linked to `path`, so a
/// process reading `path` meanwhile never sees it empty or half-written. Answers
/// [`PrivateFileError::AlreadyExists`] when `path` exists (another process may just have made
/// it), leaving it untouched.
pub(crate) fn create_whole_private_file(
    path: &Path,
    contents: &[u8],
    mode: u32,
) -> Result<(), PrivateFileError> {
    let Some(name) = path.file_name() else {
        return Err(PrivateFileError::WrongType {
            path: path.to_path_buf(),
            expected: "regular file",
            found: "a path with no file name",
        });
    };
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| {
        PrivateFileError::io(path, "draw a temporary name for")(std::io::Error::other(
            e.to_string(),
        ))
    })?;
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".new-{}", hex::encode(nonce)));
    let temp = path.with_file_name(temp_name);
    let written = create_private_file(&temp, mode).and_then(|mut file| {
        file.write_all(contents)
            .and_then(|()| file.sync_all())
            .map_err(PrivateFileError::io(&temp, "write"))
    });
    // link(2) never replaces what is there and never follows a link at `path`.
    let linked = written.and_then(|()| {
        std::fs::hard_link(&temp, path).map_err(|e| match e.kind() {
            std::io::ErrorKind::AlreadyExists => PrivateFileError::AlreadyExists {
                path: path.to_path_buf(),
            },
            _ => PrivateFileError::io(path, "create")(e),
        })
    });
    let _ = std::fs::remove_file(&temp);
    linked
}

/// Replaces the small file at `path` with `contents` (mode `mode`) in one step: the new
/// content goes to a fresh temporary name beside it (created as [`create_private_file`]
/// does), reaches the disk, and is renamed over `path`. `rename` replaces a link at `path`
/// rather than following it, so whatever a link there pointed to stays untouched. A directory
/// at `path` is refused.
pub fn replace_private_file(
    path: &Path,
    contents: &[u8],
    mode: u32,
) -> Result<(), PrivateFileError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(PrivateFileError::WrongType {
                path: path.to_path_buf(),
                expected: "regular file",
                found: "a directory",
            });
        }
        _ => {}
    }
    let Some(name) = path.file_name() else {
        return Err(PrivateFileError::WrongType {
            path: path.to_path_buf(),
            expected: "regular file",
            found: "a path with no file name",
        });
    };
    let mut temp_name = std::ffi::OsString::from(".");
    temp_name.push(name);
    temp_name.push(format!(".tmp-{}", std::process::id()));
    let temp = path.with_file_name(temp_name);
    // A temporary file of an earlier process with this pid is garbage; unlink never follows.
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(PrivateFileError::io(&temp, "remove the stale")(e)),
    }
    let written = create_private_file(&temp, mode).and_then(|mut file| {
        file.write_all(contents)
            .and_then(|()| file.sync_all())
            .map_err(PrivateFileError::io(&temp, "write"))
    });
    let renamed = written
        .and_then(|()| std::fs::rename(&temp, path).map_err(PrivateFileError::io(path, "replace")));
    if renamed.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    renamed
}

/// A file of secret random bytes could not be created, or is not one the owner created.
#[derive(Debug, thiserror::Error)]
pub enum SecretFileError {
    #[error(transparent)]
    Private(#[from] PrivateFileError),
    #[error(
        "{} holds {len} bytes, expected {expected}; restore it from a backup, or delete it to have a new one drawn (anything made with the old one can then no longer be checked against it)",
        .path.display()
    )]
    WrongLength {
        path: PathBuf,
        len: usize,
        expected: usize,
    },
    #[error(
        "{} holds only zero bytes, which a draw from the OS random source never gives: it was planted or damaged. Delete it to have a new one drawn",
        .path.display()
    )]
    AllZero { path: PathBuf },
    #[error("cannot draw {} from the OS random source: {cause}", .path.display())]
    Random {
        path: PathBuf,
        cause: getrandom::Error,
    },
}

/// Reads the `N` secret random bytes at `path`, creating them (0600, from the OS CSPRNG) when
/// the file does not exist. An existing file must pass [`read_private_file`]'s checks, hold
/// exactly `N` bytes and not be all zeros.
pub fn load_or_create_secret_file<const N: usize>(path: &Path) -> Result<[u8; N], SecretFileError> {
    let missing = matches!(
        std::fs::symlink_metadata(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound
    );
    let created = if missing {
        let mut secret = [0u8; N];
        getrandom::fill(&mut secret).map_err(|cause| SecretFileError::Random {
            path: path.to_path_buf(),
            cause,
        })?;
        // Whole or not at all: a second process starting on the same state dir reads either
        // nothing or the whole secret, never a partial one.
        create_whole_private_file(path, &secret, 0o600).map(|()| secret)
    } else {
        Err(PrivateFileError::AlreadyExists {
            path: path.to_path_buf(),
        })
    };
    match created {
        Ok(secret) => Ok(secret),
        Err(PrivateFileError::AlreadyExists { .. }) => {
            let bytes = read_private_file(path)?;
            let secret: [u8; N] =
                bytes
                    .try_into()
                    .map_err(|b: Vec<u8>| SecretFileError::WrongLength {
                        path: path.to_path_buf(),
                        len: b.len(),
                        expected: N,
                    })?;
            if secret.iter().all(|&b| b == 0) {
                return Err(SecretFileError::AllZero {
                    path: path.to_path_buf(),
                });
            }
            Ok(secret)
        }
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{chown, lchown, symlink};

    /// Who "another user" is in these tests.
    const OTHER_UID: u32 = 65534;

    fn mode_of(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    fn is_root() -> bool {
        effective_uid() == 0
    }

    /// Makes `path` owned by another user: with chown as root; otherwise the test cannot set
    /// that up and says so by returning false.
    fn give_away(path: &Path) -> bool {
        if !is_root() {
            eprintln!("not root: cannot chown {} to test it", path.display());
            return false;
        }
        lchown(path, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        true
    }

    #[test]
    fn a_missing_dir_is_created_0700_with_its_parents() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b/state");
        ensure_private_dir(&dir).unwrap();
        assert_eq!(mode_of(&dir), 0o700);
        assert_eq!(mode_of(&tmp.path().join("a")), 0o700);
        assert_eq!(mode_of(&tmp.path().join("a/b")), 0o700);
        // Existing and right: accepted as is.
        ensure_private_dir(&dir).unwrap();
    }

    #[test]
    fn a_dir_open_to_others_is_refused_and_left_as_it_was() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        let e = ensure_private_dir(&dir).unwrap_err();
        assert!(matches!(
            e,
            PrivateFileError::OpenToOthers { mode: 0o755, .. }
        ));
        let message = e.to_string();
        assert!(
            message.contains(&format!("chmod 700 {}", dir.display())),
            "{message}"
        );
        assert_eq!(mode_of(&dir), 0o755, "never chmodded");
    }

    #[test]
    fn a_foreign_dir_is_refused_and_its_mode_left_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::fs::set_permissions(&dir, Permissions::from_mode(0o700)).unwrap();
        if !give_away(&dir) {
            return;
        }
        let e = ensure_private_dir(&dir).unwrap_err();
        let message = e.to_string();
        assert!(
            matches!(
                e,
                PrivateFileError::ForeignOwner {
                    owner: OTHER_UID,
                    ..
                }
            ),
            "{message}"
        );
        assert!(
            message.contains(&format!("owned by uid {OTHER_UID}, expected uid 0")),
            "{message}"
        );
        assert_eq!(mode_of(&dir), 0o700);
        assert_eq!(std::fs::metadata(&dir).unwrap().uid(), OTHER_UID);
    }

    #[test]
    fn a_symlinked_dir_is_refused_even_if_its_target_is_fine() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        ensure_private_dir(&real).unwrap();
        let link = tmp.path().join("state");
        symlink(&real, &link).unwrap();
        let e = ensure_private_dir(&link).unwrap_err();
        assert!(matches!(e, PrivateFileError::Symlink { .. }), "{e}");
        assert!(e.to_string().contains("remove the link"), "{e}");
        // A dangling link is refused too, and not replaced by a directory.
        let dangling = tmp.path().join("dangling");
        symlink(tmp.path().join("nowhere"), &dangling).unwrap();
        assert!(matches!(
            ensure_private_dir(&dangling).unwrap_err(),
            PrivateFileError::Symlink { .. }
        ));
        assert!(!tmp.path().join("nowhere").exists());
    }

    #[test]
    fn a_file_where_a_dir_belongs_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("state");
        std::fs::write(&path, "x").unwrap();
        let e = ensure_private_dir(&path).unwrap_err();
        assert!(
            e.to_string()
                .contains("is a regular file; expected a directory"),
            "{e}"
        );
    }

    #[test]
    fn create_private_dir_creates_exactly_one_new_dir() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("run");
        create_private_dir(&dir).unwrap();
        assert_eq!(mode_of(&dir), 0o700);
        assert!(matches!(
            create_private_dir(&dir).unwrap_err(),
            PrivateFileError::AlreadyExists { .. }
        ));
        // Not recursive: a missing parent is an error, not created.
        let deep = tmp.path().join("missing/run");
        assert!(create_private_dir(&deep).is_err());
        assert!(!tmp.path().join("missing").exists());
    }

    #[test]
    fn a_created_file_has_exactly_its_mode_and_is_never_reused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("pub");
        create_private_file(&path, 0o644).unwrap();
        assert_eq!(mode_of(&path), 0o644);
        assert!(matches!(
            create_private_file(&path, 0o600).unwrap_err(),
            PrivateFileError::AlreadyExists { .. }
        ));
    }

    #[test]
    fn creating_through_a_link_fails_and_leaves_the_target_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("target");
        std::fs::write(&target, "precious").unwrap();
        let link = tmp.path().join("link");
        symlink(&target, &link).unwrap();
        assert!(create_private_file(&link, 0o600).is_err());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        let dangling = tmp.path().join("dangling");
        let nowhere = tmp.path().join("nowhere");
        symlink(&nowhere, &dangling).unwrap();
        assert!(create_private_file(&dangling, 0o600).is_err());
        assert!(!nowhere.exists(), "a dangling link's target is not created");
    }

    #[test]
    fn reading_refuses_links_open_files_foreign_files_and_non_files() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("secret");
        create_private_file(&path, 0o600)
            .unwrap()
            .write_all(b"abc")
            .unwrap();
        assert_eq!(read_private_file(&path).unwrap(), b"abc");

        let link = tmp.path().join("link");
        symlink(&path, &link).unwrap();
        let e = read_private_file(&link).unwrap_err();
        assert!(matches!(e, PrivateFileError::Symlink { .. }), "{e}");

        std::fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
        let e = read_private_file(&path).unwrap_err();
        assert!(
            e.to_string().contains(&format!(
                "mode 0644; expected no access for group or other. Run `chmod 600 {}`",
                path.display()
            )),
            "{e}"
        );
        // A public file may be read by others, not written.
        assert_eq!(read_owned_file(&path).unwrap(), b"abc");
        std::fs::set_permissions(&path, Permissions::from_mode(0o666)).unwrap();
        assert!(matches!(
            read_owned_file(&path).unwrap_err(),
            PrivateFileError::WritableByOthers { .. }
        ));
        std::fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();

        let e = read_private_file(tmp.path()).unwrap_err();
        assert!(matches!(e, PrivateFileError::WrongType { .. }), "{e}");

        if give_away(&path) {
            let e = read_private_file(&path).unwrap_err();
            assert!(
                e.to_string()
                    .contains(&format!("owned by uid {OTHER_UID}, expected uid 0")),
                "{e}"
            );
            assert!(read_owned_file(&path).is_err());
            chown(&path, Some(0), Some(0)).unwrap();
        }
    }

    #[test]
    fn replacing_a_file_swaps_a_link_for_a_file_without_following_it() {
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("root-owned");
        std::fs::write(&target, "precious").unwrap();
        let path = tmp.path().join("agent.endpoint");
        symlink(&target, &path).unwrap();
        replace_private_file(&path, b"http://127.0.0.1:1\n", 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "precious");
        assert!(std::fs::symlink_metadata(&path).unwrap().is_file());
        assert_eq!(mode_of(&path), 0o600);
        assert_eq!(read_private_file(&path).unwrap(), b"http://127.0.0.1:1\n");
        // A stale file of our own is replaced too.
        replace_private_file(&path, b"second", 0o600).unwrap();
        assert_eq!(read_private_file(&path).unwrap(), b"second");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // A directory there is not replaced.
        let dir = tmp.path().join("dir");
        std::fs::create_dir(&dir).unwrap();
        assert!(replace_private_file(&dir, b"x", 0o600).is_err());
        assert!(dir.is_dir());
    }

    #[test]
    fn a_secret_file_is_drawn_once_and_planted_ones_are_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("secret");
        let a: [u8; 32] = load_or_create_secret_file(&path).unwrap();
        let b: [u8; 32] = load_or_create_secret_file(&path).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, [0; 32]);
        assert_eq!(mode_of(&path), 0o600);

        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, [0u8; 32]).unwrap();
        std::fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();
        let e = load_or_create_secret_file::<32>(&path).unwrap_err();
        assert!(matches!(e, SecretFileError::AllZero { .. }), "{e}");
        assert!(e.to_string().contains("Delete it"), "{e}");

        std::fs::write(&path, b"short").unwrap();
        let e = load_or_create_secret_file::<32>(&path).unwrap_err();
        assert!(e.to_string().contains("holds 5 bytes, expected 32"), "{e}");
        assert_eq!(std::fs::read(&path).unwrap(), b"short", "left as it was");
    }
}
