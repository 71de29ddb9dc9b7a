//! Why a plot could not be read, drawn or written.

use std::path::PathBuf;

use ale_records::private_files::PrivateFileError;

use crate::verify::VerifyError;

/// Why a plot could not be read, drawn or written.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    #[error("cannot read {}: {cause}", .path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{}: {cause}", .path.display())]
    Unverified { path: PathBuf, cause: VerifyError },
    #[error("{}: the plot file must end in .png or .svg", .path.display())]
    Format { path: PathBuf },
    #[error("{0}")]
    Options(String),
    #[error("cannot draw the plot: {0}")]
    Draw(String),
    #[error("cannot encode the plot as PNG: {0}")]
    EncodePng(#[from] png::EncodingError),
    #[error("cannot create {}: {cause}", .path.display())]
    Create {
        path: PathBuf,
        cause: PrivateFileError,
    },
    #[error("cannot write {}: {cause}", .path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
}

impl PlotError {
    /// Whether the plot could not be written for lack of disk space (or quota).
    pub fn is_out_of_space(&self) -> bool {
        let no_space = |cause: &std::io::Error| {
            matches!(
                cause.kind(),
                std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
            )
        };
        match self {
            PlotError::Create {
                cause: PrivateFileError::Io { cause, .. },
                ..
            }
            | PlotError::Write { cause, .. } => no_space(cause),
            _ => false,
        }
    }
}
