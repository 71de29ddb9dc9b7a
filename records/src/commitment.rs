//! Seed commitments: how a hidden seed is recorded without being revealed.

use sha2::{Digest, Sha256};

use ale_proto::RunId;

/// Length of the evaluator secret mixed into every commitment.
pub const SECRET_LEN: usize = 32;

/// `hex(SHA256(seed as 8 big-endian bytes ‖ run_id as UTF-8 ‖ evaluator_secret))`.
///
/// Anyone holding the secret and a claimed seed can check it against the record; without the
/// secret, the commitment says nothing about the seed.
///
/// ```
/// use ale_proto::RunId;
/// use ale_records::seed_commitment;
/// let run = RunId::from_wire("run-1");
/// let c = seed_commitment(42, &run, &[0u8; 32]);
/// assert_eq!(c.len(), 64);
/// assert_ne!(c, seed_commitment(43, &run, &[0u8; 32]));
/// ```
pub fn seed_commitment(seed: u64, run_id: &RunId, secret: &[u8; SECRET_LEN]) -> String {
    let mut h = Sha256::new();
    h.update(seed.to_be_bytes());
    h.update(run_id.as_str().as_bytes());
    h.update(secret);
    crate::lower_hex(&h.finalize())
}

/// The commitment of a named evaluation seed set of a task:
/// `hex(SHA256("ale-seed-set/v1" ‖ 0 ‖ task_id ‖ 0 ‖ name ‖ 0 ‖ evaluator_secret))`.
///
/// Every run on the set carries it (its `run_started` event), so two runs' records show that
/// they played the same seeds without showing a seed: the seeds themselves are derived from the
/// same secret, task and name (by the evaluator, which alone holds the secret).
///
/// ```
/// use ale_records::commitment::seed_set_commitment;
/// let a = seed_set_commitment("cartpole-balance", "paper", &[0u8; 32]);
/// assert_eq!(a, seed_set_commitment("cartpole-balance", "paper", &[0u8; 32]));
/// assert_ne!(a, seed_set_commitment("cartpole-balance", "dev", &[0u8; 32]));
/// assert_ne!(a, seed_set_commitment("acrobot-swingup", "paper", &[0u8; 32]));
/// assert_ne!(a, seed_set_commitment("cartpole-balance", "paper", &[1u8; 32]));
/// ```
pub fn seed_set_commitment(task_id: &str, name: &str, secret: &[u8; SECRET_LEN]) -> String {
    let mut h = Sha256::new();
    h.update(b"ale-seed-set/v1\0");
    h.update(task_id.as_bytes());
    h.update(b"\0");
    h.update(name.as_bytes());
    h.update(b"\0");
    h.update(secret);
    crate::lower_hex(&h.finalize())
}

/// Whether `name` can name a seed set: 1 to 64 of `a-z 0-9 . _ -`, starting with a letter or
/// digit.
pub fn is_seed_set_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-'))
}
