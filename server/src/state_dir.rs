//! The evaluator's state directory: private (0700), holding the harness socket, the evaluator
//! secret and the runs.

use std::fs::{self, DirBuilder, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use ale_proto::SECRET_LEN;

pub use ale_proto::layout::{
    AGENT_ENDPOINT_FILE, AGENT_SOCKET, HARNESS_SOCKET, RUNS_DIR, SECRET_FILE, agent_endpoint_file,
    agent_socket, harness_socket, run_dir,
};

/// `$XDG_STATE_HOME/ale`, or `~/.local/state/ale`, or `./.ale-state` when neither is known.
pub fn default_state_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("XDG_STATE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("ale");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home).join(".local/state/ale");
    }
    PathBuf::from(".ale-state")
}

/// Creates the state dir (0700) and its runs folder; an existing dir is tightened to 0700.
pub fn prepare(state_dir: &Path) -> std::io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir)?;
    fs::set_permissions(state_dir, fs::Permissions::from_mode(0o700))?;
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(state_dir.join(RUNS_DIR))?;
    Ok(())
}

/// Reads the evaluator secret, creating it (0600, from the OS CSPRNG) on first start.
pub fn load_or_create_secret(state_dir: &Path) -> std::io::Result<[u8; SECRET_LEN]> {
    let path = state_dir.join(SECRET_FILE);
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
    {
        Ok(mut file) => {
            let mut secret = [0u8; SECRET_LEN];
            getrandom::fill(&mut secret).map_err(|e| std::io::Error::other(e.to_string()))?;
            file.write_all(&secret)?;
            file.sync_all()?;
            Ok(secret)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let mut bytes = Vec::new();
            fs::File::open(&path)?.read_to_end(&mut bytes)?;
            bytes.try_into().map_err(|b: Vec<u8>| {
                std::io::Error::other(format!(
                    "{} holds {} bytes, expected {SECRET_LEN}; restore it or delete it to start a new evaluator identity",
                    path.display(),
                    b.len()
                ))
            })
        }
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_dir_is_private_and_secret_is_stable() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        prepare(&dir).unwrap();
        let mode = fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        let a = load_or_create_secret(&dir).unwrap();
        let b = load_or_create_secret(&dir).unwrap();
        assert_eq!(a, b);
        let mode = fs::metadata(dir.join(SECRET_FILE))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(mode, 0o600);
        fs::write(dir.join(SECRET_FILE), b"short").unwrap();
        assert!(load_or_create_secret(&dir).is_err());
    }
}
