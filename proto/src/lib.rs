//! The ALE wire contract and the record formats every process shares.
//!
//! - [`pb`]: the generated `ale.v1` messages, `AleEnv` and `Catalog` clients and servers.
//! - [`convert`]: wire messages to and from the `ale-sims` domain types; [`task_spec`]: a
//!   task as every process past the wire sees it.
//! - [`trajectory`]: the hash-chained trajectory format, writer side and verifier.
//! - [`records`]: the `EvalResult` record and trajectory event data.
//! - [`signature`]: the Ed25519 signatures that close a finished record.
//! - [`seed_commitment`]: how a hidden seed is recorded.
//! - [`layout`]: the names in an evaluator's state dir; [`socket_path`]: its sockets at any
//!   depth; [`private_files`]: the rules every
//!   file and folder there is created and read under; [`keys`]: the Ed25519 keys kept there.

pub mod commitment;
pub mod convert;
pub mod ids;
pub mod keys;
pub mod layout;
pub mod private_files;
pub mod records;
pub mod signature;
pub mod socket_path;
pub mod task_spec;
pub mod trajectory;

pub use commitment::{SECRET_LEN, seed_commitment};
pub use ids::{BatchId, EnvHandle, RunId, SessionId};
pub use task_spec::TaskSpec;

/// Milliseconds since the Unix epoch, now: the timestamps of trajectory events and reports.
/// A clock before 1970 reads 0; one beyond `u64` milliseconds reads `u64::MAX`.
pub fn now_unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Generated from `proto/ale/v1/*.proto`.
#[allow(clippy::all)]
pub mod pb {
    tonic::include_proto!("ale.v1");
}

/// Generated from `proto/ale/simhost/v1/sim_host.proto`: the messages between the evaluator
/// and a process-hosted sim (see `ale-sims-remote`).
#[allow(clippy::all)]
pub mod sim_host_pb {
    include!(concat!(env!("OUT_DIR"), "/sim_host/ale.simhost.v1.rs"));
}

/// The encoded `FileDescriptorSet` of the `ale.v1` protos, for the reflection service.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/ale_descriptor.bin"));

/// Keys of the info maps Reset and Step return.
pub mod info_keys {
    /// Steps taken in the current episode.
    pub const EPISODE_STEPS: &str = "episode_steps";
    /// Sum of rewards in the current episode.
    pub const EPISODE_RETURN: &str = "episode_return";
    /// In an eval session: the 0-based index of the rollout being played.
    pub const ROLLOUT_INDEX: &str = "rollout_index";
    /// In an eval session: how many rollouts the session plans.
    pub const ROLLOUTS_PLANNED: &str = "rollouts_planned";
    // Besides these, each of the sim's episode counters appears under its own name.
}

/// Environment variables the harness sets for the agent it launches.
pub mod agent_env {
    /// The agent channel URL, e.g. `http://127.0.0.1:50051`.
    pub const ENDPOINT: &str = "ALE_ENDPOINT";
    /// The handle of the official env the agent is to play.
    pub const ENV_HANDLE: &str = "ALE_ENV_HANDLE";
    /// For a batch task: the folder the agent writes its submission into (the contract's
    /// entrypoint is a file name inside it; a sandboxed agent sees it at the contract's
    /// `submission_path`).
    pub const SUBMISSION_DIR: &str = "ALE_SUBMISSION_DIR";
}

/// An error and its chain of causes, joined by ": ". For errors such as tonic's transport
/// error whose own message ("transport error") says nothing without its causes.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(e) = cause {
        let part = e.to_string();
        // Some errors repeat their cause in their own message.
        if !text.ends_with(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cause = e.source();
    }
    text
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
