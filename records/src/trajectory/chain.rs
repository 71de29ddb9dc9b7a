//! The chain rule: how events are sealed into hash-linked lines ([`Chain`]).

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::canonical::{PreparedData, write_scalar};
use super::event::{EventKind, Level};
use crate::signature::SIGNATURE_FIELD;

/// `prev` of the first event.
pub const GENESIS: [u8; 32] = [0; 32];

pub(super) fn chain_hash(prev: &[u8; 32], body: &[u8]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(prev);
    h.update(body);
    h.finalize().into()
}

/// The writing end of a chain: seals events into lines, in order.
#[derive(Debug, Clone)]
pub struct Chain {
    prev: [u8; 32],
    next_seq: u64,
}

impl Default for Chain {
    fn default() -> Self {
        Self::new()
    }
}

impl Chain {
    pub fn new() -> Self {
        Chain {
            prev: GENESIS,
            next_seq: 0,
        }
    }

    /// Seals the next event and returns its line (without the newline) and its hash.
    pub fn seal(
        &mut self,
        level: Level,
        kind: EventKind,
        time_unix_ms: u64,
        data: Value,
    ) -> (String, String) {
        self.seal_with(
            level,
            kind,
            time_unix_ms,
            &PreparedData::of_value(&data),
            None,
        )
    }

    /// Seals the next event and signs its hash, the new head, with `key` (see
    /// [`crate::signature`]): the last event of a finished record.
    pub fn seal_signed(
        &mut self,
        level: Level,
        kind: EventKind,
        time_unix_ms: u64,
        data: Value,
        key: &ed25519_dalek::SigningKey,
    ) -> (String, String) {
        self.seal_with(
            level,
            kind,
            time_unix_ms,
            &PreparedData::of_value(&data),
            Some(key),
        )
    }

    pub(super) fn seal_with(
        &mut self,
        level: Level,
        kind: EventKind,
        time_unix_ms: u64,
        data: &PreparedData,
        key: Option<&ed25519_dalek::SigningKey>,
    ) -> (String, String) {
        use std::io::Write;
        // The canonical object an `Event` serializes to, written key by key in sorted order:
        // data < (hash) < kind < level < seq < (sig) < time_unix_ms.
        let mut body = Vec::with_capacity(data.0.len() + 128);
        body.extend_from_slice(b"{\"data\":");
        body.extend_from_slice(&data.0);
        let after_data = body.len();
        body.extend_from_slice(b",\"kind\":");
        write_scalar(&kind, &mut body);
        body.extend_from_slice(b",\"level\":");
        write_scalar(&level, &mut body);
        // Writing into a Vec cannot fail.
        let _ = write!(body, ",\"seq\":{}", self.next_seq);
        let before_time = body.len();
        let _ = write!(body, ",\"time_unix_ms\":{time_unix_ms}}}");
        let hash = chain_hash(&self.prev, &body);
        let hash_hex = crate::lower_hex(&hash);
        // The line is the body with `hash` (and `sig`) at their sorted places.
        let mut line = Vec::with_capacity(body.len() + 224);
        line.extend_from_slice(&body[..after_data]);
        let _ = write!(line, ",\"hash\":\"{hash_hex}\"");
        line.extend_from_slice(&body[after_data..before_time]);
        if let Some(signing_key) = key {
            let signature = crate::signature::sign_head(signing_key, level, &hash);
            let _ = write!(line, ",\"{SIGNATURE_FIELD}\":\"{signature}\"");
        }
        line.extend_from_slice(&body[before_time..]);
        self.prev = hash;
        self.next_seq += 1;
        // Only valid UTF-8 went in: serde_json's output, ASCII and hex.
        (String::from_utf8(line).unwrap_or_default(), hash_hex)
    }

    /// Hex hash of the last sealed event (of the genesis, before any).
    pub fn head(&self) -> String {
        hex::encode(self.prev)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sealed_lines_are_canonical_even_when_the_data_names_top_level_keys() {
        use ed25519_dalek::SigningKey;
        let data = serde_json::json!({
            "kind": "x,\"kind\":",
            "time_unix_ms": 1,
            "z": {"kind": 2, "time_unix_ms": [",\"time_unix_ms\":"]},
        });
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut chain = crate::trajectory::Chain::new();
        let (first, _) = chain.seal(
            crate::trajectory::Level::TrustedEvaluator,
            crate::trajectory::EventKind::RunStarted,
            5,
            data.clone(),
        );
        let (last, head) = chain.seal_signed(
            crate::trajectory::Level::TrustedEvaluator,
            crate::trajectory::EventKind::SessionFinished,
            6,
            data,
            &key,
        );
        for line in [&first, &last] {
            let object: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(&crate::trajectory::canonical_json(&object), line);
        }
        let verified = crate::trajectory::verify(&format!("{first}\n{last}\n")).unwrap();
        assert_eq!(verified.head, head);
        assert!(verified.events[1].signature.is_some());
        assert!(verified.events[0].signature.is_none());
    }
}
