//! The evaluator's state directory: private (0700, owned by the evaluator's uid, never a
//! link), holding the harness socket, the evaluator secret and keys, and the runs. Everything
//! in it is created and read under the rules of [`ale_records::private_files`]. The names of
//! what is in it are [`ale_records::layout`]'s, shared with the harness.

use std::path::{Path, PathBuf};

use ale_records::SECRET_LEN;
use ale_records::layout::{SECRET_FILE, runs_dir};
use ale_records::private_files::{
    PrivateFileError, SecretFileError, ensure_private_dir, load_or_create_secret_file,
};
use ale_records::signing_keys::{KeyError, KeyRole, SigningKey, load_or_create_signing_key};

/// The state dir, or something in it, cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum StateDirError {
    #[error(transparent)]
    Private(#[from] PrivateFileError),
    #[error(transparent)]
    Secret(#[from] SecretFileError),
    #[error(transparent)]
    Key(#[from] KeyError),
    #[error("cannot start the batch pipeline's threads: {0}")]
    Pipeline(std::io::Error),
}

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

/// Creates the state dir and its runs folder (0700) or checks the existing ones: each must be
/// a real directory owned by this uid with no access for group or other. Nothing existing is
/// chmodded; a dir that breaks a rule is refused with the fix.
pub fn prepare(state_dir: &Path) -> Result<(), StateDirError> {
    ensure_private_dir(state_dir)?;
    ensure_private_dir(&runs_dir(state_dir))?;
    Ok(())
}

/// Reads the evaluator secret, creating it (0600, from the OS CSPRNG) on first start. A
/// secret that is a link, foreign-owned, readable by group or other, of the wrong length or
/// all zeros is refused.
pub fn load_or_create_secret(state_dir: &Path) -> Result<[u8; SECRET_LEN], StateDirError> {
    Ok(load_or_create_secret_file(&state_dir.join(SECRET_FILE))?)
}

/// The evaluator's Ed25519 signing key (`evaluator.key`, 0600), created on first start with
/// its public half `evaluator.pub` (0644).
pub fn load_or_create_evaluator_key(state_dir: &Path) -> Result<SigningKey, StateDirError> {
    Ok(load_or_create_signing_key(state_dir, KeyRole::Evaluator)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ale_records::layout::RUNS_DIR;
    use std::fs::{self, Permissions};
    use std::os::unix::fs::{MetadataExt, PermissionsExt, lchown, symlink};

    const OTHER_UID: u32 = 65534;

    fn mode_of(path: &Path) -> u32 {
        fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    fn is_root() -> bool {
        ale_records::private_files::effective_uid() == 0
    }

    #[test]
    fn state_dir_is_private_and_secret_is_stable() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        prepare(&dir).unwrap();
        assert_eq!(mode_of(&dir), 0o700);
        assert_eq!(mode_of(&dir.join(RUNS_DIR)), 0o700);
        let a = load_or_create_secret(&dir).unwrap();
        let b = load_or_create_secret(&dir).unwrap();
        assert_eq!(a, b);
        assert_eq!(mode_of(&dir.join(SECRET_FILE)), 0o600);
        fs::write(dir.join(SECRET_FILE), b"short").unwrap();
        assert!(load_or_create_secret(&dir).is_err());
    }

    #[test]
    fn a_state_dir_open_to_others_is_refused_not_chmodded() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        let e = prepare(&dir).unwrap_err().to_string();
        assert!(e.contains(&format!("chmod 700 {}", dir.display())), "{e}");
        assert_eq!(mode_of(&dir), 0o755);
        assert!(!dir.join(RUNS_DIR).exists(), "nothing created inside");
    }

    #[test]
    fn a_state_dir_of_another_user_is_refused_and_left_as_it_was() {
        if !is_root() {
            eprintln!("not root: cannot make a directory of another user");
            return;
        }
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        fs::create_dir(&dir).unwrap();
        fs::set_permissions(&dir, Permissions::from_mode(0o755)).unwrap();
        lchown(&dir, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
        let e = prepare(&dir).unwrap_err().to_string();
        assert!(
            e.contains(&format!("owned by uid {OTHER_UID}, expected uid 0")),
            "{e}"
        );
        assert_eq!(mode_of(&dir), 0o755, "its mode is left untouched");
        assert_eq!(fs::metadata(&dir).unwrap().uid(), OTHER_UID);
        assert!(!dir.join(RUNS_DIR).exists());
    }

    #[test]
    fn a_symlinked_state_dir_or_runs_dir_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        prepare(&real).unwrap();
        let link = tmp.path().join("state");
        symlink(&real, &link).unwrap();
        let e = prepare(&link).unwrap_err().to_string();
        assert!(e.contains("is a symbolic link"), "{e}");

        // runs/ pointing into someone else's directory.
        let dir = tmp.path().join("state2");
        prepare(&dir).unwrap();
        let elsewhere = tmp.path().join("attacker");
        fs::create_dir(&elsewhere).unwrap();
        fs::set_permissions(&elsewhere, Permissions::from_mode(0o700)).unwrap();
        fs::remove_dir(dir.join(RUNS_DIR)).unwrap();
        symlink(&elsewhere, dir.join(RUNS_DIR)).unwrap();
        let e = prepare(&dir).unwrap_err().to_string();
        assert!(
            e.contains(&format!("{}/runs is a symbolic link", dir.display())),
            "{e}"
        );
    }

    #[test]
    fn a_planted_world_readable_secret_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("state");
        prepare(&dir).unwrap();
        let path = dir.join(SECRET_FILE);
        fs::write(&path, [0u8; SECRET_LEN]).unwrap();
        fs::set_permissions(&path, Permissions::from_mode(0o644)).unwrap();
        let e = load_or_create_secret(&dir).unwrap_err().to_string();
        assert!(e.contains(&format!("chmod 600 {}", path.display())), "{e}");
        // Made private, it is still planted: all zeros.
        fs::set_permissions(&path, Permissions::from_mode(0o600)).unwrap();
        let e = load_or_create_secret(&dir).unwrap_err().to_string();
        assert!(e.contains("only zero bytes"), "{e}");
        if is_root() {
            fs::write(&path, [7u8; SECRET_LEN]).unwrap();
            lchown(&path, Some(OTHER_UID), Some(OTHER_UID)).unwrap();
            let e = load_or_create_secret(&dir).unwrap_err().to_string();
            assert!(e.contains("owned by uid 65534"), "{e}");
        }
    }
}
