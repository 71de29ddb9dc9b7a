//! The trajectory: an append-only, hash-chained record of one run, one JSON event per line.
//!
//! Each line is the canonical JSON (see [`canonical_json`]) of an object with the keys
//! `data`, `hash`, `kind`, `level`, `seq`, `time_unix_ms` (and, on the last line of a finished
//! record, `sig`), where
//! `hash = hex(SHA256(prev ‖ canonical JSON of the same object without "hash" and "sig"))` and
//! `prev` is the previous line's hash as 32 raw bytes (32 zero bytes before the first line).
//! `sig` is the writer's Ed25519 signature over `hash` (see [`crate::signature`]).
//! `docs/protocol.md` gives the byte-exact definition.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::signature::SIGNATURE_FIELD;

/// `prev` of the first event.
pub const GENESIS: [u8; 32] = [0; 32];

/// The file name of a run's trajectory inside its run folder.
pub const TRAJECTORY_FILE: &str = "trajectory.jsonl";
/// The harness's own chained log inside the run folder.
pub const HARNESS_LOG_FILE: &str = "harness.jsonl";

/// Who wrote an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// The evaluator itself; the agent cannot influence these beyond its actions.
    TrustedEvaluator,
    /// The harness process.
    Harness,
}

impl Level {
    /// The name as the `level` field holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::TrustedEvaluator => "trusted_evaluator",
            Level::Harness => "harness",
        }
    }
}

/// What happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    /// An official env was created; data: [`crate::records::RunStarted`].
    RunStarted,
    /// A batch run snapshotted its submission; data: [`crate::records::SubmissionReceived`].
    /// Once, before `session_started`, in a batch run only.
    SubmissionReceived,
    /// The agent started the eval session (a batch run: the evaluator did, on submission);
    /// data: [`crate::records::SessionStarted`].
    SessionStarted,
    /// A planned rollout began on its hidden seed; data: [`crate::records::RolloutStarted`].
    RolloutStarted,
    /// A rollout ended (completed, aborted or over budget); data: [`crate::records::RolloutFinished`].
    RolloutFinished,
    /// The session ended; data: the final [`crate::records::EvalResultRecord`] without its
    /// `trajectory_head` (which is this event's own hash).
    SessionFinished,
    /// In the harness's log: the harness began an official run.
    HarnessStarted,
    /// In the harness's log: the harness read the authoritative result; names the evaluator
    /// trajectory's head hash at that moment.
    ResultRead,
    /// In the harness's log: the harness scored the run.
    RunScored,
}

impl EventKind {
    /// The name as the `kind` field holds it.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::RunStarted => "run_started",
            EventKind::SubmissionReceived => "submission_received",
            EventKind::SessionStarted => "session_started",
            EventKind::RolloutStarted => "rollout_started",
            EventKind::RolloutFinished => "rollout_finished",
            EventKind::SessionFinished => "session_finished",
            EventKind::HarnessStarted => "harness_started",
            EventKind::ResultRead => "result_read",
            EventKind::RunScored => "run_scored",
        }
    }

    /// Whether only the evaluator writes this kind (into `trajectory.jsonl`).
    pub fn is_evaluator_event(self) -> bool {
        !matches!(
            self,
            EventKind::HarnessStarted | EventKind::ResultRead | EventKind::RunScored
        )
    }
}

/// One event, before it is sealed into the chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub seq: u64,
    pub level: Level,
    pub kind: EventKind,
    pub time_unix_ms: u64,
    pub data: Value,
}

/// An event's data serialised canonically, ready to be sealed: the costly part of an append,
/// which a writer of many events (a batch run's rollouts) does before it takes any lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedData(Vec<u8>);

impl PreparedData {
    pub fn new(data: &impl Serialize) -> Result<PreparedData, serde_json::Error> {
        Ok(PreparedData::of_value(&serde_json::to_value(data)?))
    }

    /// [`PreparedData::new`] for a record that serde_json writes canonically as it is: no
    /// `serde_json::Value` is built.
    pub fn of_sorted(
        data: &impl crate::records::SortedFields,
    ) -> Result<PreparedData, serde_json::Error> {
        serde_json::to_vec(data).map(PreparedData)
    }

    fn of_value(value: &Value) -> PreparedData {
        let mut bytes = Vec::with_capacity(192);
        write_canonical(value, &mut bytes);
        PreparedData(bytes)
    }
}

/// Serializes a JSON value canonically: object keys sorted by their UTF-8 bytes, no
/// whitespace, strings escaped as serde_json escapes them, numbers as serde_json prints them.
///
/// ```
/// let v = serde_json::json!({"b": 1, "a": [true, null, 2.5]});
/// assert_eq!(ale_proto::trajectory::canonical_json(&v), r#"{"a":[true,null,2.5],"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only valid UTF-8 is ever written: serde_json's own output and ASCII punctuation.
    String::from_utf8(out).unwrap_or_default()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

/// A string or scalar exactly as serde_json prints it, straight into `out`.
fn write_scalar(value: &(impl Serialize + ?Sized), out: &mut Vec<u8>) {
    // Writing a string, number, bool or null into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

fn chain_hash(prev: &[u8; 32], body: &[u8]) -> [u8; 32] {
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

    fn seal_with(
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
/// use ale_proto::trajectory::{verify, Chain, EventKind, Level};
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

/// Sets aside `len` bytes of disk for `file` from `offset` on without changing its size
/// (`fallocate(FALLOC_FL_KEEP_SIZE)`): later writes there land in blocks already allocated,
/// so they succeed on a disk that others have filled meanwhile. Fails with the OS's error
/// (`ENOSPC` when the disk cannot hold it; `EOPNOTSUPP` where the filesystem cannot
/// reserve).
pub fn reserve_space(file: &std::fs::File, offset: u64, len: u64) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let offset = libc::off_t::try_from(offset).map_err(std::io::Error::other)?;
    let len = libc::off_t::try_from(len).map_err(std::io::Error::other)?;
    if len == 0 {
        return Ok(());
    }
    // SAFETY: fallocate reads only its integer arguments; the descriptor is the file's.
    let rc = unsafe { libc::fallocate(file.as_raw_fd(), libc::FALLOC_FL_KEEP_SIZE, offset, len) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Gives back what [`reserve_space`] set aside past the end of `file` and was not used: the
/// blocks past its end are freed (by a truncate to its own length); its bytes and size do not
/// change.
/// For a file that is written whole.
pub fn release_unused_space(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let metadata = file.metadata()?;
    if metadata.blocks().saturating_mul(512) <= metadata.len() {
        return Ok(());
    }
    // Truncating to its own length frees what lies past the end (ext4, XFS and tmpfs alike);
    // punching a hole there is a no-op on ext4, which keeps such blocks until a truncate.
    file.set_len(metadata.len())
}

#[cfg(test)]
mod tests {
    #[test]
    fn unused_reserved_space_goes_back_on_the_disk_the_tests_run_on() {
        use std::io::Write;
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let mut file = std::fs::File::create(dir.path().join("record")).unwrap();
        file.write_all(&[b'x'; 100]).unwrap();
        super::reserve_space(&file, 0, 1 << 20).unwrap();
        let allocated = |file: &std::fs::File| file.metadata().unwrap().blocks() * 512;
        if allocated(&file) < 1 << 20 {
            eprintln!("skipped: this filesystem reserved no space");
            return;
        }
        super::release_unused_space(&file).unwrap();
        assert!(allocated(&file) <= 4096, "{} bytes kept", allocated(&file));
        assert_eq!(file.metadata().unwrap().len(), 100);
    }

    #[test]
    fn sorted_records_serialise_exactly_as_the_canonical_writer_does() {
        use super::PreparedData;
        use crate::records::*;
        use crate::{RunId, SessionId};
        let episode = |index: u32, metric: f64| EpisodeRecord {
            index,
            outcome: Outcome::Aborted,
            metric,
            steps: 17,
            episode_return: -0.125,
            seed_commitment: "ab\u{e9}\"\\".into(),
            safety: [
                ("zeta".to_string(), 1.5),
                ("alpha".to_string(), f64::NAN),
                ("é".into(), 0.0),
            ]
            .into_iter()
            .collect(),
        };
        let result = EvalResultRecord {
            session_id: SessionId::from_wire("sess-1"),
            run_id: RunId::from_wire("run-1"),
            task_id: "t".into(),
            metric_name: "mean_return".into(),
            value: 1e300,
            direction: Direction::LowerIsBetter,
            status: EvalStatus::BudgetExceeded,
            status_message: "line\nbreak".into(),
            episodes: vec![episode(0, 1.0), episode(1, f64::INFINITY)],
            seed_commitments: vec!["c0".into(), "c1".into()],
            trajectory_head: "00".into(),
            total_steps: u64::MAX,
            safety: [("b".to_string(), 2.0), ("a".to_string(), 3.0)]
                .into_iter()
                .collect(),
        };
        let started = SessionStarted {
            session_id: SessionId::from_wire("sess-1"),
            seed_commitments: vec!["x".into(); 3],
        };
        let rollout = RolloutStarted {
            index: 4,
            seed_commitment: "y".into(),
        };
        fn same(data: &impl SortedFields) {
            let direct = PreparedData::of_sorted(data).unwrap();
            let canonical = PreparedData::new(data).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&direct.0),
                String::from_utf8_lossy(&canonical.0)
            );
        }
        same(&episode(3, 2.5));
        same(&result);
        same(&started);
        same(&rollout);
    }

    #[test]
    fn sealed_lines_are_canonical_even_when_the_data_names_top_level_keys() {
        use ed25519_dalek::SigningKey;
        let data = serde_json::json!({
            "kind": "x,\"kind\":",
            "time_unix_ms": 1,
            "z": {"kind": 2, "time_unix_ms": [",\"time_unix_ms\":"]},
        });
        let key = SigningKey::from_bytes(&[7; 32]);
        let mut chain = super::Chain::new();
        let (first, _) = chain.seal(
            super::Level::TrustedEvaluator,
            super::EventKind::RunStarted,
            5,
            data.clone(),
        );
        let (last, head) = chain.seal_signed(
            super::Level::TrustedEvaluator,
            super::EventKind::SessionFinished,
            6,
            data,
            &key,
        );
        for line in [&first, &last] {
            let object: serde_json::Value = serde_json::from_str(line).unwrap();
            assert_eq!(&super::canonical_json(&object), line);
        }
        let verified = super::verify(&format!("{first}\n{last}\n")).unwrap();
        assert_eq!(verified.head, head);
        assert!(verified.events[1].signature.is_some());
        assert!(verified.events[0].signature.is_none());
    }

    use super::*;
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
    fn event_kind_names_are_the_serialised_ones() {
        for kind in [
            EventKind::RunStarted,
            EventKind::SubmissionReceived,
            EventKind::SessionStarted,
            EventKind::RolloutStarted,
            EventKind::RolloutFinished,
            EventKind::SessionFinished,
            EventKind::HarnessStarted,
            EventKind::ResultRead,
            EventKind::RunScored,
        ] {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
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

/// Appends sealed events of one level to a chained file, each reaching the OS before `append`
/// returns.
///
/// The file only ever ends on a whole line: a write the disk refuses part-way (full, over a
/// size limit) is cut back to the last line that was written whole, so what stays on disk is a
/// valid prefix of the chain, never a torn line.
#[derive(Debug)]
pub struct ChainWriter {
    file: std::fs::File,
    /// Sealed lines not yet handed to the OS (only while buffered).
    pending: Vec<u8>,
    /// How many bytes of the file are whole lines handed to the OS.
    written: u64,
    /// Whether lines may wait in memory (see [`ChainWriter::set_buffered`]).
    buffered: bool,
    /// A write or flush failed: what reached the file is a valid prefix of the chain, and
    /// nothing more is written (a retry could put a line twice).
    failed: bool,
    chain: Chain,
    level: Level,
    /// A signed event was written: the record is closed.
    signed: bool,
}

/// How many sealed bytes a buffered writer keeps in memory before it hands them to the OS.
const BUFFER_BYTES: usize = 64 << 10;

impl ChainWriter {
    /// Starts a new chained file at `path` (0600); fails if anything, even a link, is there
    /// (see [`crate::private_files::create_private_file`]).
    pub fn create(path: &std::path::Path, level: Level) -> std::io::Result<ChainWriter> {
        let file = crate::private_files::create_private_file(path, 0o600)?;
        Ok(ChainWriter {
            file,
            pending: Vec::with_capacity(BUFFER_BYTES),
            written: 0,
            buffered: false,
            failed: false,
            chain: Chain::new(),
            level,
            signed: false,
        })
    }

    /// Seals and writes one event; returns its hash. A failed write or flush ends the record:
    /// the chain does not advance, and every later append or flush fails, so no line can be
    /// written twice.
    pub fn append(&mut self, kind: EventKind, data: &impl Serialize) -> std::io::Result<String> {
        self.append_with(kind, data, None)
    }

    /// Seals, signs and writes the record's last event; returns its hash. Nothing can be
    /// appended after it.
    pub fn append_signed(
        &mut self,
        kind: EventKind,
        data: &impl Serialize,
        key: &ed25519_dalek::SigningKey,
    ) -> std::io::Result<String> {
        self.append_with(kind, data, Some(key))
    }

    /// Seals and writes one event whose data was serialised beforehand; returns its hash.
    pub fn append_prepared(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
    ) -> std::io::Result<String> {
        self.append_data(kind, data, None)
    }

    /// [`ChainWriter::append_signed`] of data serialised beforehand.
    pub fn append_signed_prepared(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
        key: &ed25519_dalek::SigningKey,
    ) -> std::io::Result<String> {
        self.append_data(kind, data, Some(key))
    }

    fn append_with(
        &mut self,
        kind: EventKind,
        data: &impl Serialize,
        key: Option<&ed25519_dalek::SigningKey>,
    ) -> std::io::Result<String> {
        let data = PreparedData::new(data).map_err(std::io::Error::other)?;
        self.append_data(kind, &data, key)
    }

    fn append_data(
        &mut self,
        kind: EventKind,
        data: &PreparedData,
        key: Option<&ed25519_dalek::SigningKey>,
    ) -> std::io::Result<String> {
        if self.signed {
            return Err(std::io::Error::other(
                "the record is signed and closed; nothing can be appended to it",
            ));
        }
        self.check_not_failed()?;
        let mut chain = self.chain.clone();
        let (line, hash) = chain.seal_with(self.level, kind, crate::now_unix_ms(), data, key);
        self.pending.extend_from_slice(line.as_bytes());
        self.pending.push(b'\n');
        if !self.buffered || key.is_some() || self.pending.len() >= BUFFER_BYTES {
            self.flush()?;
        }
        self.chain = chain;
        self.signed = key.is_some();
        Ok(hash)
    }

    /// Whether appended lines may wait in memory until [`ChainWriter::flush`], a full buffer
    /// or the signed last event: for a writer that appends thousands of events a second that
    /// no RPC waits for (a batch run's rollouts). Unbuffered, the default, every line reaches
    /// the OS before `append` returns.
    pub fn set_buffered(&mut self, buffered: bool) -> std::io::Result<()> {
        self.buffered = buffered;
        self.flush()
    }

    /// Hands every line written so far to the OS. If the OS takes only part of them, the file
    /// is cut back to the lines it held before, and the record is closed.
    pub fn flush(&mut self) -> std::io::Result<()> {
        use std::io::Write;
        self.check_not_failed()?;
        if self.pending.is_empty() {
            return Ok(());
        }
        match (&self.file).write_all(&self.pending) {
            Ok(()) => {
                self.written += self.pending.len() as u64;
                self.pending.clear();
                Ok(())
            }
            Err(e) => {
                self.failed = true;
                self.pending.clear();
                // Shrinking needs no space, so it works on a full disk too. Should it fail
                // anyway, the torn line stays and verification reports it.
                let _ = self.file.set_len(self.written);
                Err(e)
            }
        }
    }

    fn check_not_failed(&self) -> std::io::Result<()> {
        if self.failed {
            return Err(std::io::Error::other(
                "an earlier write of this record failed; nothing more is written to it",
            ));
        }
        Ok(())
    }

    /// Sets aside `bytes` of disk past what the file holds now, without changing its size
    /// (`fallocate(FALLOC_FL_KEEP_SIZE)`): later appends land in blocks already allocated, so
    /// they succeed on a disk that others have filled meanwhile. Fails with the OS's error
    /// (`ENOSPC` when the disk cannot hold it; `EOPNOTSUPP` where the filesystem cannot
    /// reserve).
    pub fn reserve(&self, bytes: u64) -> std::io::Result<()> {
        reserve_space(&self.file, self.written, bytes)
    }

    /// Gives back the disk [`ChainWriter::reserve`] set aside and the record did not use: for
    /// a file whose last event is written (see [`release_unused_space`]).
    pub fn release_reserve(&mut self) -> std::io::Result<()> {
        self.flush()?;
        release_unused_space(&self.file)
    }

    /// Forces everything written so far to stable storage.
    pub fn sync(&mut self) -> std::io::Result<()> {
        self.flush()?;
        self.file.sync_data()
    }

    pub fn head(&self) -> String {
        self.chain.head()
    }
}
