//! Disk space reserved for a run's records before it begins, so that another run filling the
//! disk cannot cut them short. Used for the harness's log and report (`run.rs`) and the agent's
//! log (`agent.rs`).

use std::path::Path;

use crate::error::HarnessError;

/// Reserves `len` bytes past the end of `file` (at `path`) without changing its size
/// ([`ale_records::disk_space::reserve_space`]), so that another run filling the disk cannot
/// make the rest of this run's records unwritable. A filesystem that cannot reserve space at
/// all is let through with a warning; one without the space refuses the run.
pub(crate) fn reserve_space(
    file: &std::fs::File,
    path: &Path,
    len: u64,
) -> Result<(), HarnessError> {
    let offset = file
        .metadata()
        .map_err(|cause| HarnessError::Records {
            path: path.to_path_buf(),
            cause,
        })?
        .len();
    match ale_records::disk_space::reserve_space(file, offset, len) {
        Ok(()) => Ok(()),
        Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
            tracing::warn!(file = %path.display(), "this filesystem cannot reserve space: a full disk may cut the run's records short");
            Ok(())
        }
        Err(cause) => Err(HarnessError::NoRoom {
            path: path.to_path_buf(),
            bytes: len,
            cause,
        }),
    }
}
