//! The records the trusted side (the evaluator and the harness) keeps on disk, and the rules it
//! keeps them under. Agents never link this crate: the wire contract is `ale-proto`.
//!
//! - [`trajectory`]: the hash-chained trajectory format: its events, the chain rule, the
//!   verifier and the writer ([`trajectory::ChainWriter`]).
//! - [`event_data`]: the data of each trajectory event.
//! - [`signature`]: the Ed25519 signatures that close a finished record.
//! - [`commitment`]: how a hidden seed ([`seed_commitment`]) and a seed set are recorded.
//! - [`layout`]: the names in an evaluator's state dir; [`private_files`]: the rules every
//!   file and folder there is created and read under; [`signing_keys`]: the Ed25519 keys kept
//!   there; [`disk_space`]: space set aside so a record can be finished on a full disk.

pub mod commitment;
pub mod disk_space;
pub mod event_data;
pub mod layout;
pub mod private_files;
pub mod signature;
pub mod signing_keys;
pub mod trajectory;

pub use commitment::{SECRET_LEN, seed_commitment};

/// Milliseconds since the Unix epoch, now: the timestamps of trajectory events and reports.
/// A clock before 1970 reads 0; one beyond `u64` milliseconds reads `u64::MAX`.
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Lowercase hex of `bytes`, as `hex::encode` writes it, without its per-character iterator:
/// every chained event and seed commitment is one.
pub(crate) fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)]);
        out.push(DIGITS[usize::from(b & 0xf)]);
    }
    // Only ASCII digits went in.
    String::from_utf8(out).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn lower_hex_is_hex_encode() {
        let bytes: Vec<u8> = (0..=255u8).chain([0, 15, 16, 255]).collect();
        assert_eq!(super::lower_hex(&bytes), hex::encode(&bytes));
        assert_eq!(super::lower_hex(&[]), "");
    }
}
