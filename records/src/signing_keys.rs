//! The Ed25519 keys of the evaluator and the harness, kept in the state dir.
//!
//! `<role>.key` holds the 32-byte seed of the signing key (0600, read under the rules of
//! [`crate::private_files`]); `<role>.pub` holds the verifying key as 64 lowercase hex
//! characters and a newline (0644), for anyone who checks a signature.
//!
//! ```
//! use ale_records::signing_keys::{KeyRole, encode_public_key, load_or_create_signing_key, read_public_key};
//! # let tmp = tempfile::tempdir().unwrap();
//! let key = load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap();
//! let published = read_public_key(&tmp.path().join(KeyRole::Evaluator.public_key_file())).unwrap();
//! assert_eq!(published, key.verifying_key());
//! assert_eq!(encode_public_key(&published).len(), 64);
//! ```

use std::io::Read;
use std::path::{Path, PathBuf};

pub use ed25519_dalek::{SigningKey, VerifyingKey};

use crate::layout;
use crate::private_files::{
    PrivateFileError, SecretFileError, create_whole_private_file, load_or_create_secret_file,
    read_owned_file,
};

/// Bytes of a signing key's seed, as stored in `<role>.key`.
pub(crate) const SEED_LEN: usize = ed25519_dalek::SECRET_KEY_LENGTH;
/// Hex characters of a public key, as stored in `<role>.pub`.
pub const PUBLIC_KEY_HEX_LEN: usize = 2 * ed25519_dalek::PUBLIC_KEY_LENGTH;

/// Whose key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyRole {
    /// Signs the head of every finished session's trajectory.
    Evaluator,
    /// Signs the harness's own log.
    Harness,
}

impl KeyRole {
    /// The private key's file name in the state dir.
    pub(crate) fn private_key_file(self) -> &'static str {
        match self {
            KeyRole::Evaluator => layout::EVALUATOR_KEY_FILE,
            KeyRole::Harness => layout::HARNESS_KEY_FILE,
        }
    }

    /// The public key's file name in the state dir.
    pub fn public_key_file(self) -> &'static str {
        match self {
            KeyRole::Evaluator => layout::EVALUATOR_PUBLIC_KEY_FILE,
            KeyRole::Harness => layout::HARNESS_PUBLIC_KEY_FILE,
        }
    }

    fn name(self) -> &'static str {
        match self {
            KeyRole::Evaluator => "evaluator",
            KeyRole::Harness => "harness",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KeyError {
    #[error(transparent)]
    Private(#[from] PrivateFileError),
    #[error(transparent)]
    Seed(#[from] SecretFileError),
    #[error(
        "{} holds the public key {found}, but the {role} key {} gives {expected}; delete {} to have it rewritten from the private key, or restore the private key it belongs to",
        .public.display(), .private.display(), .public.display()
    )]
    PublicKeyMismatch {
        role: &'static str,
        public: PathBuf,
        private: PathBuf,
        found: String,
        expected: String,
    },
    #[error(
        "{origin}: expected an Ed25519 public key written as {PUBLIC_KEY_HEX_LEN} hex characters, got {got}; copy it again from the `.pub` file of the key that signed"
    )]
    BadPublicKey { origin: String, got: String },
    #[error("cannot read the public key {}: {cause}", .path.display())]
    ReadPublicKey {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot write the public key {}: {cause}", .path.display())]
    WritePublicKey {
        path: PathBuf,
        cause: std::io::Error,
    },
}

/// The public key as `<role>.pub` stores it: 64 lowercase hex characters.
pub fn encode_public_key(key: &VerifyingKey) -> String {
    hex::encode(key.as_bytes())
}

/// Parses a public key written as 64 hex characters (surrounding whitespace ignored).
///
/// ```
/// use ale_records::signing_keys::parse_public_key;
/// assert!(parse_public_key("not a key").unwrap_err().to_string().contains("64 hex characters"));
/// ```
pub fn parse_public_key(text: &str) -> Result<VerifyingKey, KeyError> {
    parse_public_key_from(text, "the public key text")
}

fn parse_public_key_from(text: &str, origin: &str) -> Result<VerifyingKey, KeyError> {
    let text = text.trim();
    let bad = |got: String| KeyError::BadPublicKey {
        origin: origin.to_string(),
        got,
    };
    if text.len() != PUBLIC_KEY_HEX_LEN {
        return Err(bad(format!("{} characters", text.chars().count())));
    }
    let mut bytes = [0u8; ed25519_dalek::PUBLIC_KEY_LENGTH];
    hex::decode_to_slice(text, &mut bytes).map_err(|e| bad(format!("{text:?} ({e})")))?;
    VerifyingKey::from_bytes(&bytes)
        .map_err(|_| bad(format!("{text:?}, which is not a point on the curve")))
}

/// Reads a public key file: 64 hex characters, surrounding whitespace ignored. The file may
/// be anyone's (checking a signature needs no privilege); links are followed.
pub fn read_public_key(path: &Path) -> Result<VerifyingKey, KeyError> {
    // A key is 65 bytes; reading a little more tells a wrong file from a key.
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(1024).read_to_string(&mut text))
        .map_err(|cause| KeyError::ReadPublicKey {
            path: path.to_path_buf(),
            cause,
        })?;
    parse_public_key_from(&text, &path.display().to_string())
}

/// The signing key of `role` in `state_dir`: drawn from the OS CSPRNG and stored as
/// `<role>.key` (0600) on first use, read back after under the private-file rules (a link,
/// a foreign owner, group/other access, a wrong length or an all-zero seed is refused).
/// `<role>.pub` is written (0644) when missing; one that disagrees with the private key is
/// an error. `state_dir` itself must already be private (see
/// [`crate::private_files::ensure_private_dir`]).
pub fn load_or_create_signing_key(state_dir: &Path, role: KeyRole) -> Result<SigningKey, KeyError> {
    let private = state_dir.join(role.private_key_file());
    let seed = load_or_create_secret_file::<SEED_LEN>(&private)?;
    let key = SigningKey::from_bytes(&seed);
    let expected = encode_public_key(&key.verifying_key());
    let public = state_dir.join(role.public_key_file());
    let mismatch = |found: String| KeyError::PublicKeyMismatch {
        role: role.name(),
        public: public.clone(),
        private: private.clone(),
        found,
        expected: expected.clone(),
    };
    // Whole or not at all, so that two processes starting together on a fresh state dir both
    // find the one public key (the other's, if it was first).
    let missing = matches!(
        std::fs::symlink_metadata(&public),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound
    );
    let created = if missing {
        create_whole_private_file(&public, format!("{expected}\n").as_bytes(), 0o644)
    } else {
        Err(PrivateFileError::AlreadyExists {
            path: public.clone(),
        })
    };
    match created {
        Ok(()) => return Ok(key),
        Err(PrivateFileError::AlreadyExists { .. }) => {}
        Err(PrivateFileError::Io { cause, .. }) => {
            return Err(KeyError::WritePublicKey {
                path: public.clone(),
                cause,
            });
        }
        Err(e) => return Err(e.into()),
    }
    let text = String::from_utf8_lossy(&read_owned_file(&public)?).to_string();
    if text.trim() != expected {
        return Err(mismatch(text.trim().chars().take(80).collect()));
    }
    Ok(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt, lchown, symlink};

    fn mode_of(path: &Path) -> u32 {
        std::fs::symlink_metadata(path).unwrap().mode() & 0o7777
    }

    #[test]
    fn processes_starting_together_on_a_fresh_state_dir_agree_on_one_key() {
        for _ in 0..20 {
            let tmp = tempfile::tempdir().unwrap();
            let keys: Vec<_> = std::thread::scope(|scope| {
                let handles: Vec<_> = (0..8)
                    .map(|_| {
                        scope.spawn(|| load_or_create_signing_key(tmp.path(), KeyRole::Harness))
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let first = keys[0].as_ref().unwrap().to_bytes();
            for key in &keys {
                assert_eq!(key.as_ref().unwrap().to_bytes(), first);
            }
        }
    }

    #[test]
    fn a_key_is_created_once_with_its_public_half_beside_it() {
        let tmp = tempfile::tempdir().unwrap();
        let a = load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap();
        let b = load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap();
        assert_eq!(a.to_bytes(), b.to_bytes());
        let key_file = tmp.path().join("evaluator.key");
        let pub_file = tmp.path().join("evaluator.pub");
        assert_eq!(mode_of(&key_file), 0o600);
        assert_eq!(mode_of(&pub_file), 0o644);
        assert_eq!(std::fs::read(&key_file).unwrap(), a.to_bytes());
        let text = std::fs::read_to_string(&pub_file).unwrap();
        assert_eq!(
            text,
            format!("{}\n", hex::encode(a.verifying_key().as_bytes()))
        );
        assert_eq!(read_public_key(&pub_file).unwrap(), a.verifying_key());

        // The harness's key is another key in other files.
        let h = load_or_create_signing_key(tmp.path(), KeyRole::Harness).unwrap();
        assert_ne!(h.to_bytes(), a.to_bytes());
        assert!(tmp.path().join("harness.key").exists());
        assert!(tmp.path().join("harness.pub").exists());
    }

    #[test]
    fn a_missing_public_key_is_rewritten_and_a_wrong_one_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let key = load_or_create_signing_key(tmp.path(), KeyRole::Harness).unwrap();
        let pub_file = tmp.path().join("harness.pub");
        std::fs::remove_file(&pub_file).unwrap();
        load_or_create_signing_key(tmp.path(), KeyRole::Harness).unwrap();
        assert_eq!(read_public_key(&pub_file).unwrap(), key.verifying_key());

        let other = SigningKey::from_bytes(&[7; 32]);
        std::fs::write(&pub_file, encode_public_key(&other.verifying_key())).unwrap();
        let e = load_or_create_signing_key(tmp.path(), KeyRole::Harness).unwrap_err();
        assert!(matches!(e, KeyError::PublicKeyMismatch { .. }), "{e}");
        assert!(e.to_string().contains("delete"), "{e}");
    }

    #[test]
    fn a_readable_short_zero_or_foreign_key_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap();
        let key_file = tmp.path().join("evaluator.key");

        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("chmod 600 {}", key_file.display())),
            "{e}"
        );
        std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();

        let good = std::fs::read(&key_file).unwrap();
        std::fs::write(&key_file, &good[..31]).unwrap();
        let e = load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap_err();
        assert!(e.to_string().contains("holds 31 bytes, expected 32"), "{e}");
        std::fs::write(&key_file, [0u8; 32]).unwrap();
        let e = load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap_err();
        assert!(e.to_string().contains("only zero bytes"), "{e}");
        std::fs::write(&key_file, &good).unwrap();
        load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap();

        // A link to a key is not a key file.
        std::fs::rename(&key_file, tmp.path().join("elsewhere")).unwrap();
        symlink(tmp.path().join("elsewhere"), &key_file).unwrap();
        let e = load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        std::fs::remove_file(&key_file).unwrap();
        std::fs::rename(tmp.path().join("elsewhere"), &key_file).unwrap();

        if crate::private_files::effective_uid() == 0 {
            lchown(&key_file, Some(65534), Some(65534)).unwrap();
            let e = load_or_create_signing_key(tmp.path(), KeyRole::Evaluator).unwrap_err();
            assert!(
                e.to_string().contains("owned by uid 65534, expected uid 0"),
                "{e}"
            );
            assert_eq!(std::fs::metadata(&key_file).unwrap().uid(), 65534);
        }
    }

    #[test]
    fn public_keys_parse_from_hex_only() {
        let key = SigningKey::from_bytes(&[3; 32]).verifying_key();
        let hex = encode_public_key(&key);
        assert_eq!(parse_public_key(&format!("  {hex}\n")).unwrap(), key);
        assert_eq!(parse_public_key(&hex.to_uppercase()).unwrap(), key);
        let e = parse_public_key(&hex[..63]).unwrap_err();
        assert!(e.to_string().contains("got 63 characters"), "{e}");
        let e = parse_public_key(&format!("{}zz", &hex[..62])).unwrap_err();
        assert!(matches!(e, KeyError::BadPublicKey { .. }), "{e}");
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("k.pub");
        std::fs::write(&path, "hello\n").unwrap();
        let e = read_public_key(&path).unwrap_err();
        assert!(
            e.to_string().starts_with(&path.display().to_string()),
            "{e}"
        );
        assert!(read_public_key(&tmp.path().join("missing.pub")).is_err());
    }
}
