//! The ALE wire contract: what crosses the wire between agents, the evaluator and the harness.
//!
//! - [`pb`]: the generated `ale.v1` messages, `AleEnv` and `Catalog` clients and servers;
//!   [`sim_host_pb`]: the sim-host protocol's messages.
//! - [`convert`]: wire messages to and from the `ale-sim` domain types; [`task_spec`]: a
//!   task as every process past the wire sees it; [`eval`]: the `EvalResult` in domain form.
//! - [`ids`]: the identifiers the wire carries; [`socket_path`]: Unix sockets at any depth.
//!
//! The records the trusted side keeps on disk (the trajectory chain, signatures, seed
//! commitments, signing keys and the state dir's files) are `ale-records`, which builds on
//! this crate.

pub mod convert;
pub mod eval;
pub mod ids;
pub mod socket_path;
pub mod task_spec;

pub use ids::{BatchId, EnvHandle, RunId, SessionId};
pub use task_spec::TaskSpec;

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
