//! Signed chain heads. The hash chain alone shows that a record is whole, not who wrote it:
//! anyone who can write a run folder can re-seal an edited record with the public chain rule.
//! So the last event of a finished record carries an Ed25519 signature over its own hash (the
//! chain's head), made with the writer's private key; `verify` checks it with the public key.
//!
//! The signed message is `"ale.v1 chain head\0" ‖ level ‖ "\0" ‖ head` (head as 32 raw bytes),
//! so a harness signature can never pass for an evaluator's, nor the other way round.

use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};

use crate::trajectory::Level;

/// The key of the signature in a chained line. Like `hash`, it is left out of the hashed body.
pub const SIGNATURE_FIELD: &str = "sig";

const DOMAIN: &[u8] = b"ale.v1 chain head\0";

fn message(level: Level, head: &[u8; 32]) -> Vec<u8> {
    let mut m = Vec::with_capacity(DOMAIN.len() + 24 + 32);
    m.extend_from_slice(DOMAIN);
    m.extend_from_slice(level.as_str().as_bytes());
    m.push(0);
    m.extend_from_slice(head);
    m
}

/// Signs a chain head written at `level`; returns the signature as 128 hex characters.
pub(crate) fn sign_head(key: &SigningKey, level: Level, head: &[u8; 32]) -> String {
    hex::encode(key.sign(&message(level, head)).to_bytes())
}

/// Why a signature does not check out.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the signature is not 128 hex characters")]
    Malformed,
    #[error("the head hash is not 64 hex characters")]
    MalformedHead,
    #[error(
        "the signature does not match public key {key}: the record was edited or re-sealed, or \
         signed by another key"
    )]
    Mismatch { key: String },
}

/// Checks `signature` (hex) over `head` (hex) at `level` with `key`.
pub fn check_head(
    key: &VerifyingKey,
    level: Level,
    head: &str,
    signature: &str,
) -> Result<(), SignatureError> {
    let head: [u8; 32] = hex::decode(head)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(SignatureError::MalformedHead)?;
    let bytes: [u8; 64] = hex::decode(signature)
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or(SignatureError::Malformed)?;
    key.verify(&message(level, &head), &Signature::from_bytes(&bytes))
        .map_err(|_| SignatureError::Mismatch { key: key_hex(key) })
}

/// A public key as 64 lowercase hex characters, as `*.pub` files and reports hold it.
pub(crate) fn key_hex(key: &VerifyingKey) -> String {
    hex::encode(key.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> SigningKey {
        SigningKey::from_bytes(&[byte; 32])
    }

    #[test]
    fn a_signature_checks_only_with_its_key_level_and_head() {
        let head = [7u8; 32];
        let sig = sign_head(&key(1), Level::TrustedEvaluator, &head);
        let head_hex = hex::encode(head);
        let public = key(1).verifying_key();
        check_head(&public, Level::TrustedEvaluator, &head_hex, &sig).unwrap();
        assert!(matches!(
            check_head(
                &key(2).verifying_key(),
                Level::TrustedEvaluator,
                &head_hex,
                &sig
            ),
            Err(SignatureError::Mismatch { .. })
        ));
        assert!(check_head(&public, Level::Harness, &head_hex, &sig).is_err());
        assert!(
            check_head(
                &public,
                Level::TrustedEvaluator,
                &hex::encode([8u8; 32]),
                &sig
            )
            .is_err()
        );
        assert_eq!(
            check_head(&public, Level::TrustedEvaluator, &head_hex, "zz"),
            Err(SignatureError::Malformed)
        );
    }
}
