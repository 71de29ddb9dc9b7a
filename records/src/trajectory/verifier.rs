//! The verifier: reads a chained file back and checks every line against the chain rule.

use serde_json::Value;

use super::canonical::canonical_json;
use super::chain::{GENESIS, chain_hash};
use super::event::Event;
use crate::signature::SIGNATURE_FIELD;

/// An event read back from a verified chain.
#[derive(Debug, Clone, PartialEq)]
pub struct SealedEvent {
    pub event: Event,
    pub hash: String,
    /// The writer's signature over `hash` (hex), on the last event of a finished record. The
    /// chain check does not check it: that needs the writer's public key.
    pub signature: Option<String>,
}

/// A chain that verified: its events in order and the hash of the last.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedChain {
    pub events: Vec<SealedEvent>,
    pub head: String,
}

/// The first line (1-based) at which a chain breaks, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("trajectory line {line}: {reason}")]
pub struct ChainError {
    pub line: usize,
    pub reason: String,
}

/// Checks every line of a trajectory: canonical form, sequence number, and hash link.
///
/// ```
/// use ale_records::trajectory::{verify, Chain, EventKind, Level};
/// let mut chain = Chain::new();
/// let (line, _) = chain.seal(Level::Harness, EventKind::RunStarted, 0, serde_json::json!({}));
/// let text = format!("{line}\n");
/// assert_eq!(verify(&text).unwrap().head, chain.head());
/// assert!(verify(&text.replace("harness", "hbrness")).is_err());
/// assert!(verify(&text.replace('\n', "\r\n")).is_err());
/// ```
pub fn verify(text: &str) -> Result<VerifiedChain, ChainError> {
    let mut prev = GENESIS;
    let mut events = Vec::new();
    if !text.is_empty() && !text.ends_with('\n') {
        // The whole lines before a torn one are checked first: a break among them is the first.
        let whole = text.rfind('\n').map_or(0, |newline| newline + 1);
        let before = verify(&text[..whole])?;
        let line = before.events.len() + 1;
        return Err(ChainError {
            line,
            reason: format!(
                "the last line is incomplete (no newline, {} bytes): the file was cut short; \
                 the {} lines before it chain correctly",
                text.len() - whole,
                line - 1
            ),
        });
    }
    // Lines end at '\n' alone: `str::lines` would also take a "\r\n" ending, and so pass a
    // file with a '\r' added to every line as the one that was sealed.
    for (i, line) in text.split_terminator('\n').enumerate() {
        let fail = |reason: String| ChainError {
            line: i + 1,
            reason,
        };
        let mut object: Value =
            serde_json::from_str(line).map_err(|e| fail(format!("not JSON: {e}")))?;
        if canonical_json(&object) != line {
            return Err(fail("not in canonical form (edited by hand?)".into()));
        }
        if events
            .last()
            .is_some_and(|e: &SealedEvent| e.signature.is_some())
        {
            return Err(fail(
                "an event after the signed head: the record was extended after it was sealed"
                    .into(),
            ));
        }
        let claimed = match object.as_object_mut().and_then(|m| m.remove("hash")) {
            Some(Value::String(h)) => h,
            _ => return Err(fail("no \"hash\" string".into())),
        };
        let signature = match object
            .as_object_mut()
            .and_then(|m| m.remove(SIGNATURE_FIELD))
        {
            None => None,
            Some(Value::String(s)) => Some(s),
            Some(_) => return Err(fail("a \"sig\" that is not a string".into())),
        };
        let expected = chain_hash(&prev, canonical_json(&object).as_bytes());
        if claimed != hex::encode(expected) {
            return Err(fail(format!(
                "hash mismatch: the line says {claimed}, its content and the previous line give {}",
                hex::encode(expected)
            )));
        }
        let event: Event =
            serde_json::from_value(object).map_err(|e| fail(format!("malformed event: {e}")))?;
        if event.seq != i as u64 {
            return Err(fail(format!(
                "sequence number {} where {i} was expected",
                event.seq
            )));
        }
        prev = expected;
        events.push(SealedEvent {
            event,
            hash: claimed,
            signature,
        });
    }
    Ok(VerifiedChain {
        events,
        head: hex::encode(prev),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trajectory::{Chain, EventKind, Level};
    use serde_json::json;

    fn sample_chain() -> String {
        let mut chain = Chain::new();
        let mut text = String::new();
        for (i, kind) in [
            EventKind::RunStarted,
            EventKind::RolloutStarted,
            EventKind::RolloutFinished,
        ]
        .into_iter()
        .enumerate()
        {
            let (line, _) = chain.seal(
                Level::TrustedEvaluator,
                kind,
                1000 + i as u64,
                json!({"i": i, "x": 0.5}),
            );
            text.push_str(&line);
            text.push('\n');
        }
        text
    }

    #[test]
    fn a_sealed_chain_verifies() {
        let text = sample_chain();
        let verified = verify(&text).unwrap();
        assert_eq!(verified.events.len(), 3);
        assert_eq!(verified.head, verified.events[2].hash);
    }

    #[test]
    fn every_single_byte_flip_is_detected() {
        let text = sample_chain();
        let bytes = text.as_bytes();
        for i in 0..bytes.len() {
            let mut flipped = bytes.to_vec();
            flipped[i] ^= 0x01;
            let Ok(s) = String::from_utf8(flipped) else {
                continue;
            };
            assert!(verify(&s).is_err(), "flip at byte {i} went unnoticed");
        }
    }

    /// Regression: without serde_json's exact float parsing, some floats did not survive the
    /// parse-and-print the verifier does, and honest trajectories failed as non-canonical.
    #[test]
    fn floats_of_every_magnitude_round_trip_through_verification() {
        let mut rng_state = 0x9E37_79B9_7F4A_7C15u64;
        let mut chain = Chain::new();
        let mut text = String::new();
        for _ in 0..2000 {
            rng_state = rng_state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = f64::from_bits(rng_state >> 2); // arbitrary finite doubles
            let x = if x.is_finite() { x } else { 1.0 };
            let y = (rng_state as f64 / u64::MAX as f64) * -3254.7;
            let (line, _) = chain.seal(
                Level::TrustedEvaluator,
                EventKind::RolloutFinished,
                0,
                json!({"x": x, "y": y}),
            );
            text.push_str(&line);
            text.push('\n');
        }
        verify(&text).unwrap();
    }

    #[test]
    fn a_signed_head_is_kept_out_of_the_hash_and_closes_the_chain() {
        let key = ed25519_dalek::SigningKey::from_bytes(&[3; 32]);
        let mut chain = Chain::new();
        let (first, _) = chain.seal(Level::Harness, EventKind::RunStarted, 1, json!({}));
        let (last, head) = chain.seal_signed(
            Level::Harness,
            EventKind::RunScored,
            2,
            json!({"x": 1}),
            &key,
        );
        let text = format!("{first}\n{last}\n");
        let verified = verify(&text).unwrap();
        assert_eq!(verified.head, head);
        let signature = verified.events[1].signature.clone().unwrap();
        crate::signature::check_head(&key.verifying_key(), Level::Harness, &head, &signature)
            .unwrap();
        assert_eq!(verified.events[0].signature, None);
        // Extending a signed record is detected, even with a correctly chained line.
        let (extra, _) = chain.seal(Level::Harness, EventKind::ResultRead, 3, json!({}));
        let err = verify(&format!("{text}{extra}\n")).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(
            err.reason.contains("after the signed head"),
            "{}",
            err.reason
        );
    }

    #[test]
    fn deleted_and_reordered_lines_are_detected() {
        let text = sample_chain();
        let lines: Vec<&str> = text.lines().collect();
        let deleted = format!("{}\n{}\n", lines[0], lines[2]);
        assert_eq!(verify(&deleted).unwrap_err().line, 2);
        let swapped = format!("{}\n{}\n{}\n", lines[0], lines[2], lines[1]);
        assert_eq!(verify(&swapped).unwrap_err().line, 2);
        let truncated = &text[..text.len() - 1];
        assert!(verify(truncated).is_err());
    }

    /// Found by an attacker helper: a '\r' before every newline still verified.
    #[test]
    fn carriage_returns_are_not_the_sealed_lines() {
        let text = sample_chain();
        let err = verify(&text.replace('\n', "\r\n")).unwrap_err();
        assert_eq!(err.line, 1);
        assert!(err.reason.contains("canonical form"), "{}", err.reason);
        // One on the last line alone is found there.
        let mut one = text.clone();
        one.insert(text.len() - 1, '\r');
        assert_eq!(verify(&one).unwrap_err().line, text.lines().count());
    }

    #[test]
    fn a_torn_last_line_is_named_after_the_whole_lines_are_checked() {
        let text = sample_chain();
        let torn = &text[..text.len() - 40];
        let err = verify(torn).unwrap_err();
        assert_eq!(err.line, 3);
        assert!(
            err.reason.contains("incomplete") && err.reason.contains("the 2 lines before it"),
            "{}",
            err.reason
        );
        // A break before the torn line is reported first.
        let edited = torn.replacen("\"i\":1", "\"i\":7", 1);
        assert_eq!(verify(&edited).unwrap_err().line, 2);
    }
}
