//! Seed commitments: how a hidden seed is recorded without being revealed.

use sha2::{Digest, Sha256};

use crate::ids::RunId;

/// Length of the evaluator secret mixed into every commitment.
pub const SECRET_LEN: usize = 32;

/// `hex(SHA256(seed as 8 big-endian bytes ‖ run_id as UTF-8 ‖ evaluator_secret))`.
///
/// Anyone holding the secret and a claimed seed can check it against the record; without the
/// secret, the commitment says nothing about the seed.
///
/// ```
/// use ale_proto::{RunId, seed_commitment};
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
