//! A run in one file, to hand to a reviewer or a co-author: its records (`trajectory.jsonl`,
//! `harness.jsonl`, `report.json`) and the public keys that check them, as JSON; optionally
//! encrypted for a recipient's age X25519 public key (`age1…`). Whoever receives a bundle
//! re-derives the score from it (`ale harness verify FILE`) and never holds a hidden seed: the
//! records carry only commitments.
//!
//! ```no_run
//! use ale_harness::bundle::Bundle;
//! use std::path::Path;
//! let bundle = Bundle::of_run(Path::new("/root/.local/state/ale"), Path::new("run-3f2a…"))?;
//! std::fs::write("run.alebundle", bundle.to_bytes())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use ale_records::layout::REPORT_FILE;
use ale_records::private_files::ensure_private_dir;
use ale_records::signing_keys::KeyRole;
use ale_records::trajectory::{HARNESS_LOG_FILE, TRAJECTORY_FILE};
use serde::{Deserialize, Serialize};

/// The format's name and version, the first field of every bundle.
pub const BUNDLE_FORMAT: &str = "ale-run-bundle/1";

/// The largest bundle read (a batch run of 10 000 rollouts has a trajectory of about 12 MB).
pub const MAX_BUNDLE_BYTES: u64 = 256 << 20;

/// The files of a run folder a bundle holds, in this order; the first is required.
pub const BUNDLED_FILES: [&str; 3] = [TRAJECTORY_FILE, HARNESS_LOG_FILE, REPORT_FILE];

/// How an age-encrypted file begins.
const AGE_HEADER: &[u8] = b"age-encryption.org/v1\n";

#[derive(Debug, thiserror::Error)]
pub enum BundleError {
    #[error("cannot read {}: {cause}", .path.display())]
    Read {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("cannot write {}: {cause}", .path.display())]
    Write {
        path: PathBuf,
        cause: std::io::Error,
    },
    #[error("{} is not a run folder: it has no {TRAJECTORY_FILE}", .0.display())]
    NotARun(PathBuf),
    #[error("not a run bundle ({0})")]
    Malformed(String),
    #[error("the bundle is larger than {MAX_BUNDLE_BYTES} bytes")]
    TooLarge,
    #[error(
        "the bundle is encrypted: pass the age identity file that holds its recipient's secret key \
         (--identity FILE)"
    )]
    Encrypted,
    #[error("{0}")]
    Age(String),
}

/// A run's records and public keys.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Bundle {
    pub format: String,
    pub run_id: String,
    /// File name → contents (UTF-8 text: JSON lines and JSON).
    pub files: BTreeMap<String, String>,
    /// `evaluator.pub` and `harness.pub` of the state dir the run was made in (64 hex
    /// characters each), as the bundler had them: a receiver who knows the evaluator's keys
    /// otherwise checks against those instead.
    pub public_keys: BTreeMap<String, String>,
}

impl Bundle {
    /// The bundle of the run folder `run_dir`, with the public keys of `state_dir`. The agent's
    /// log is left out: it is the agent's output, not a record, and may hold what its author
    /// keeps private.
    pub fn of_run(state_dir: &Path, run_dir: &Path) -> Result<Bundle, BundleError> {
        let mut files = BTreeMap::new();
        for name in BUNDLED_FILES {
            let path = run_dir.join(name);
            match read_capped(&path) {
                Ok(bytes) => {
                    let text = String::from_utf8(bytes).map_err(|_| {
                        BundleError::Malformed(format!("{} is not UTF-8", path.display()))
                    })?;
                    files.insert(name.to_string(), text);
                }
                Err(BundleError::Read { cause, .. })
                    if cause.kind() == std::io::ErrorKind::NotFound && name != TRAJECTORY_FILE => {}
                Err(BundleError::Read { cause, .. })
                    if cause.kind() == std::io::ErrorKind::NotFound =>
                {
                    return Err(BundleError::NotARun(run_dir.to_path_buf()));
                }
                Err(e) => return Err(e),
            }
        }
        let mut public_keys = BTreeMap::new();
        for role in [KeyRole::Evaluator, KeyRole::Harness] {
            let file = role.public_key_file();
            if let Ok(key) = ale_records::signing_keys::read_public_key(&state_dir.join(file)) {
                public_keys.insert(
                    file.to_string(),
                    ale_records::signing_keys::encode_public_key(&key),
                );
            }
        }
        let run_id = run_dir
            .file_name()
            .map_or(String::new(), |n| n.to_string_lossy().to_string());
        Ok(Bundle {
            format: BUNDLE_FORMAT.into(),
            run_id,
            files,
            public_keys,
        })
    }

    /// The bundle as the bytes of its file: pretty JSON.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec_pretty(self).unwrap_or_default()
    }

    /// Whether `bytes` look like a bundle (encrypted, or naming the format near their start)
    /// rather than a trajectory.
    pub fn looks_like(bytes: &[u8]) -> bool {
        is_encrypted(bytes)
            || bytes[..bytes.len().min(256)]
                .windows(BUNDLE_FORMAT.len())
                .any(|w| w == BUNDLE_FORMAT.as_bytes())
    }

    /// Reads a bundle's bytes; an encrypted one needs `identity` (an age identity file's
    /// text).
    pub fn from_bytes(bytes: &[u8], identity: Option<&str>) -> Result<Bundle, BundleError> {
        let plain;
        let bytes = if is_encrypted(bytes) {
            plain = decrypt(bytes, identity.ok_or(BundleError::Encrypted)?)?;
            &plain[..]
        } else {
            bytes
        };
        let bundle: Bundle =
            serde_json::from_slice(bytes).map_err(|e| BundleError::Malformed(e.to_string()))?;
        if bundle.format != BUNDLE_FORMAT {
            return Err(BundleError::Malformed(format!(
                "format {:?}, this build reads {BUNDLE_FORMAT:?}",
                bundle.format
            )));
        }
        if !bundle.files.contains_key(TRAJECTORY_FILE) {
            return Err(BundleError::Malformed(format!("no {TRAJECTORY_FILE}")));
        }
        if let Some(name) = bundle
            .files
            .keys()
            .find(|n| !BUNDLED_FILES.contains(&n.as_str()))
        {
            return Err(BundleError::Malformed(format!(
                "an unexpected file {name:?}"
            )));
        }
        Ok(bundle)
    }

    /// Writes the bundle out as a state dir `dir` (made private) holding the one run: its files
    /// in `dir/runs/<run id>/`, the public keys in `dir`. Answers the run's folder.
    pub fn unpack(&self, dir: &Path) -> Result<PathBuf, BundleError> {
        let write_err = |path: &Path| {
            let path = path.to_path_buf();
            move |cause| BundleError::Write { path, cause }
        };
        let runs = ale_records::layout::runs_dir(dir);
        let run_dir = runs.join(safe_name(&self.run_id));
        for folder in [dir.to_path_buf(), runs, run_dir.clone()] {
            ensure_private_dir(&folder)
                .map_err(|e| std::io::Error::other(e.to_string()))
                .map_err(write_err(&folder))?;
        }
        for (name, text) in &self.files {
            // Only the names BUNDLED_FILES allows reach here (from_bytes checks).
            let path = run_dir.join(name);
            std::fs::write(&path, text).map_err(write_err(&path))?;
        }
        for (name, key) in &self.public_keys {
            if [KeyRole::Evaluator, KeyRole::Harness]
                .iter()
                .any(|r| r.public_key_file() == *name)
            {
                let path = dir.join(name);
                std::fs::write(&path, format!("{key}\n")).map_err(write_err(&path))?;
            }
        }
        Ok(run_dir)
    }
}

/// A run id as a folder name: its letters, digits and `-`, or `run` if none.
fn safe_name(run_id: &str) -> String {
    let name: String = run_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(64)
        .collect();
    if name.is_empty() { "run".into() } else { name }
}

/// Whether `bytes` are an age-encrypted file.
pub fn is_encrypted(bytes: &[u8]) -> bool {
    bytes.starts_with(AGE_HEADER)
}

/// Reads `path`, at most [`MAX_BUNDLE_BYTES`].
pub fn read_capped(path: &Path) -> Result<Vec<u8>, BundleError> {
    let read_err = |cause| BundleError::Read {
        path: path.to_path_buf(),
        cause,
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_BUNDLE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    if bytes.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(BundleError::TooLarge);
    }
    Ok(bytes)
}

/// `plain` encrypted for the age X25519 recipients `recipients` (`age1…`).
pub fn encrypt(plain: &[u8], recipients: &[String]) -> Result<Vec<u8>, BundleError> {
    let parsed: Vec<age::x25519::Recipient> = recipients
        .iter()
        .map(|r| {
            r.trim().parse::<age::x25519::Recipient>().map_err(|e| {
                BundleError::Age(format!("{r:?} is not an age X25519 recipient (age1…): {e}"))
            })
        })
        .collect::<Result<_, _>>()?;
    let encryptor =
        age::Encryptor::with_recipients(parsed.iter().map(|r| r as &dyn age::Recipient))
            .map_err(|e| BundleError::Age(e.to_string()))?;
    let mut out = Vec::with_capacity(plain.len() + 512);
    let mut writer = encryptor
        .wrap_output(&mut out)
        .map_err(|e| BundleError::Age(e.to_string()))?;
    writer
        .write_all(plain)
        .and_then(|()| writer.finish().map(drop))
        .map_err(|e| BundleError::Age(e.to_string()))?;
    Ok(out)
}

/// Decrypts an age file with the identities in `identity_file` (the text of an age identity
/// file: `AGE-SECRET-KEY-1…` lines, `#` comments).
pub fn decrypt(encrypted: &[u8], identity_file: &str) -> Result<Vec<u8>, BundleError> {
    let identities: Vec<age::x25519::Identity> = identity_file
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            l.parse::<age::x25519::Identity>()
                .map_err(|e| BundleError::Age(format!("not an age X25519 identity: {e}")))
        })
        .collect::<Result<_, _>>()?;
    if identities.is_empty() {
        return Err(BundleError::Age(
            "the identity file holds no identity".into(),
        ));
    }
    let decryptor = age::Decryptor::new(encrypted).map_err(|e| BundleError::Age(e.to_string()))?;
    let mut reader = decryptor
        .decrypt(identities.iter().map(|i| i as &dyn age::Identity))
        .map_err(|e| BundleError::Age(format!("cannot decrypt the bundle: {e}")))?;
    let mut plain = Vec::new();
    (&mut reader)
        .take(MAX_BUNDLE_BYTES + 1)
        .read_to_end(&mut plain)
        .map_err(|e| BundleError::Age(format!("cannot decrypt the bundle: {e}")))?;
    if plain.len() as u64 > MAX_BUNDLE_BYTES {
        return Err(BundleError::TooLarge);
    }
    Ok(plain)
}

/// A new age X25519 identity: (the identity file's text, its recipient `age1…`).
pub fn new_identity() -> (String, String) {
    use age::secrecy::ExposeSecret;
    let identity = age::x25519::Identity::generate();
    let recipient = identity.to_public().to_string();
    let text = format!(
        "# an age identity made by `ale harness keygen`\n# public key: {recipient}\n{}\n",
        identity.to_string().expose_secret()
    );
    (text, recipient)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Bundle {
        Bundle {
            format: BUNDLE_FORMAT.into(),
            run_id: "run-abc".into(),
            files: BTreeMap::from([(TRAJECTORY_FILE.to_string(), "{}\n".to_string())]),
            public_keys: BTreeMap::new(),
        }
    }

    #[test]
    fn a_bundle_reads_back_plain_and_encrypted_and_only_with_its_identity() {
        let bundle = sample();
        let bytes = bundle.to_bytes();
        assert_eq!(Bundle::from_bytes(&bytes, None).unwrap(), bundle);
        let (identity, recipient) = new_identity();
        let sealed = encrypt(&bytes, &[recipient]).unwrap();
        assert!(is_encrypted(&sealed));
        assert!(!sealed.windows(7).any(|w| w == b"run-abc"));
        assert!(matches!(
            Bundle::from_bytes(&sealed, None),
            Err(BundleError::Encrypted)
        ));
        assert_eq!(
            Bundle::from_bytes(&sealed, Some(&identity)).unwrap(),
            bundle
        );
        let (other, _) = new_identity();
        let e = Bundle::from_bytes(&sealed, Some(&other)).unwrap_err();
        assert!(e.to_string().contains("cannot decrypt"), "{e}");
        let e = encrypt(&bytes, &["ssh-ed25519 AAAA".into()]).unwrap_err();
        assert!(e.to_string().contains("not an age X25519 recipient"), "{e}");
    }

    #[test]
    fn a_bundle_cannot_name_files_of_its_own() {
        let mut bundle = sample();
        bundle.files.insert("../../etc/evil".into(), "x".into());
        let e = Bundle::from_bytes(&bundle.to_bytes(), None).unwrap_err();
        assert!(e.to_string().contains("unexpected file"), "{e}");
        let mut bundle = sample();
        bundle.files.clear();
        assert!(Bundle::from_bytes(&bundle.to_bytes(), None).is_err());
        // The run id becomes a folder name with nothing but letters, digits and '-'.
        let mut bundle = sample();
        bundle.run_id = "../../x".into();
        let tmp = tempfile::tempdir().unwrap();
        let dir = bundle.unpack(&tmp.path().join("out")).unwrap();
        assert_eq!(dir, tmp.path().join("out/runs/x"));
        assert!(dir.join(TRAJECTORY_FILE).is_file());
    }

    #[test]
    fn the_agent_log_is_never_bundled() {
        assert!(!BUNDLED_FILES.contains(&ale_records::layout::AGENT_LOG_FILE));
    }
}
