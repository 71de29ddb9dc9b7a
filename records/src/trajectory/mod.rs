//! The trajectory: an append-only, hash-chained record of one run, one JSON event per line.
//!
//! Each line is the canonical JSON (see [`canonical_json`]) of an object with the keys
//! `data`, `hash`, `kind`, `level`, `seq`, `time_unix_ms` (and, on the last line of a finished
//! record, `sig`), where
//! `hash = hex(SHA256(prev ‖ canonical JSON of the same object without "hash" and "sig"))` and
//! `prev` is the previous line's hash as 32 raw bytes (32 zero bytes before the first line).
//! `sig` is the writer's Ed25519 signature over `hash` (see [`crate::signature`]).
//! `docs/protocol.md` gives the byte-exact definition.

mod canonical;
mod chain;
mod event;
mod verifier;
mod writer;

pub use canonical::{PreparedData, canonical_json};
pub use chain::{Chain, GENESIS};
pub use event::{Event, EventKind, Level};
pub use verifier::{ChainError, SealedEvent, VerifiedChain, verify};
pub use writer::ChainWriter;

/// The file name of a run's trajectory inside its run folder.
pub const TRAJECTORY_FILE: &str = "trajectory.jsonl";
/// The harness's own chained log inside the run folder.
pub const HARNESS_LOG_FILE: &str = "harness.jsonl";
