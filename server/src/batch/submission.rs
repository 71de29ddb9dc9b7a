//! Snapshotting a submission: the one file a batch run evaluates, read once, at submit, into
//! memory. Whatever happens to the submission dir afterwards, the run plays these bytes, and
//! its trajectory records their SHA-256.
//!
//! The file is reached only as `<submission dir>/<entrypoint>`, through no link: the dir is
//! opened `O_DIRECTORY|O_NOFOLLOW`, the entrypoint (a plain file name, checked at task load)
//! with `openat(…, O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC)`, so neither a link nor a FIFO can redirect
//! or stall the read; `fstat` on the open file must say a regular file no larger than the cap,
//! and the read stops one byte past the cap whatever the file does meanwhile.

use std::io::Read;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{OFlag, open, openat};
use nix::sys::stat::Mode;
use sha2::{Digest, Sha256};

/// A submission as the evaluator read it.
#[derive(Clone)]
pub struct Snapshot {
    pub bytes: Vec<u8>,
    /// Lowercase hex SHA-256 of `bytes`.
    pub sha256: String,
}

impl std::fmt::Debug for Snapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Snapshot")
            .field("bytes", &self.bytes.len())
            .field("sha256", &self.sha256)
            .finish()
    }
}

/// Why a submission could not be snapshotted. Each message names the file and the problem,
/// and says what to do; a batch run that meets one ends FAILED with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubmissionError {
    #[error(
        "the run's submission folder {} cannot be opened as a directory ({cause}); it is made \
         with the run's official env and removed when the run ends: create a new official env",
        .dir.display()
    )]
    Dir { dir: PathBuf, cause: Errno },
    #[error(
        "the submission has no {entrypoint}: write the policy file into this run's submission \
         folder (ALE_SUBMISSION_DIR) under exactly that name, then call SubmitBatchEval"
    )]
    Missing { entrypoint: String },
    #[error(
        "the submission's {entrypoint} is a symbolic link; the evaluator reads only a regular \
         file in the submission dir, never through a link: copy the file itself there"
    )]
    Symlink { entrypoint: String },
    #[error("the submission's {entrypoint} is {found}, not a regular file")]
    NotAFile {
        entrypoint: String,
        found: &'static str,
    },
    #[error(
        "the submission's {entrypoint} is {size} bytes, over the cap of {cap} bytes \
         (ale serve --max-submission-bytes)"
    )]
    TooLarge {
        entrypoint: String,
        size: u64,
        cap: u64,
    },
    #[error("cannot read the submission's {entrypoint}: {cause}")]
    Read { entrypoint: String, cause: String },
}

/// Reads `<dir>/<entrypoint>` into memory; see the module's rules. `entrypoint` must be a
/// plain file name ([`crate::task::check_entrypoint`]).
pub fn snapshot(dir: &Path, entrypoint: &str, cap: u64) -> Result<Snapshot, SubmissionError> {
    let dir_fd = open(
        dir,
        OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_RDONLY | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|cause| SubmissionError::Dir {
        dir: dir.to_path_buf(),
        cause,
    })?;
    let name = || entrypoint.to_string();
    let fd = openat(
        &dir_fd,
        entrypoint,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| match e {
        Errno::ENOENT => SubmissionError::Missing { entrypoint: name() },
        Errno::ELOOP => SubmissionError::Symlink { entrypoint: name() },
        cause => SubmissionError::Read {
            entrypoint: name(),
            cause: cause.desc().to_string(),
        },
    })?;
    let file = std::fs::File::from(fd);
    let read_err = |cause: std::io::Error| SubmissionError::Read {
        entrypoint: name(),
        cause: cause.to_string(),
    };
    let metadata = file.metadata().map_err(read_err)?;
    let file_type = metadata.file_type();
    if !file_type.is_file() {
        use std::os::unix::fs::FileTypeExt;
        let found = if file_type.is_dir() {
            "a directory"
        } else if file_type.is_fifo() {
            "a FIFO"
        } else if file_type.is_socket() {
            "a socket"
        } else if file_type.is_char_device() || file_type.is_block_device() {
            "a device"
        } else {
            "not a regular file"
        };
        return Err(SubmissionError::NotAFile {
            entrypoint: name(),
            found,
        });
    }
    // A second name for the file could be a hard link to something the agent may not read
    // but the evaluator may; what the agent wrote itself has one name.
    {
        use std::os::unix::fs::MetadataExt;
        if metadata.nlink() != 1 {
            return Err(SubmissionError::NotAFile {
                entrypoint: name(),
                found: "a hard link to another file (it has more than one name)",
            });
        }
    }
    let too_large = |size| SubmissionError::TooLarge {
        entrypoint: name(),
        size,
        cap,
    };
    if metadata.len() > cap {
        return Err(too_large(metadata.len()));
    }
    // The file may grow between fstat and read: never take more than one byte past the cap.
    let mut bytes = Vec::with_capacity(metadata.len() as usize);
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > cap {
        return Err(too_large(bytes.len() as u64));
    }
    let sha256 = hex::encode(Sha256::digest(&bytes));
    Ok(Snapshot { bytes, sha256 })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    const NAME: &str = "policy.safetensors";

    #[test]
    fn a_regular_file_is_read_whole_with_its_digest() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(NAME), b"abc").unwrap();
        let s = snapshot(dir.path(), NAME, 3).unwrap();
        assert_eq!(s.bytes, b"abc");
        assert_eq!(
            s.sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn each_bad_submission_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let err = snapshot(d, NAME, 10).unwrap_err();
        assert!(matches!(err, SubmissionError::Missing { .. }), "{err}");

        std::fs::write(d.join("big"), vec![0u8; 11]).unwrap();
        let err = snapshot(d, "big", 10).unwrap_err();
        assert!(
            err.to_string().contains("11 bytes, over the cap of 10"),
            "{err}"
        );

        std::fs::write(d.join("outside"), b"x").unwrap();
        symlink(d.join("outside"), d.join(NAME)).unwrap();
        let err = snapshot(d, NAME, 10).unwrap_err();
        assert!(matches!(err, SubmissionError::Symlink { .. }), "{err}");

        std::fs::create_dir(d.join("adir")).unwrap();
        let err = snapshot(d, "adir", 10).unwrap_err();
        assert!(err.to_string().contains("is a directory"), "{err}");

        nix::unistd::mkfifo(&d.join("fifo"), Mode::from_bits_truncate(0o600)).unwrap();
        let err = snapshot(d, "fifo", 10).unwrap_err();
        assert!(err.to_string().contains("is a FIFO"), "{err}");

        std::fs::write(d.join("secret"), b"not the agent's").unwrap();
        std::fs::hard_link(d.join("secret"), d.join("linked")).unwrap();
        let err = snapshot(d, "linked", 100).unwrap_err();
        assert!(err.to_string().contains("hard link"), "{err}");

        let link_dir = tempfile::tempdir().unwrap();
        let linked = link_dir.path().join("sub");
        symlink(d, &linked).unwrap();
        let err = snapshot(&linked, "outside", 10).unwrap_err();
        assert!(matches!(err, SubmissionError::Dir { .. }), "{err}");
    }
}
