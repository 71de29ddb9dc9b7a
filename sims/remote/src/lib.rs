//! Sims hosted in processes of their own: any Gymnasium env (through the Python package's
//! `ale_client.sim_host`), or a host written in any language that speaks the sim-host
//! protocol (`proto/proto/ale/simhost/v1/sim_host.proto`, `docs/protocol.md`).
//!
//! The evaluator starts every host and owns it: it reaches the host over pipes it made (no
//! socket an agent could reach), hands it seeds (hidden ones included: a host is part of the
//! evaluator), bounds how many run ([`HostSlots`]), how long each call may take, how much
//! memory a host may use and how long one may idle, and kills it when its env goes or the
//! evaluator dies. A host that fails (crashes, hangs, answers garbage, an observation outside
//! its space or a NaN) fails its env with [`ale_sim::SimError::Fault`], naming the sim, the
//! cause and the tail of the host's stderr; the env's next reset starts a fresh host.
//!
//! [`host`] is the host side in Rust: a few lines serve any [`ale_sim::Sim`] over the
//! protocol (see `src/bin/ale-rust-host.rs`).

pub mod block;
pub mod config;
pub mod entry;
pub mod frame;
pub mod host;
pub mod isolation;
pub mod process;
pub mod sim;

pub use block::{BlockReset, BlockStep, HostBlock, RemoteBlock};
pub use config::HostedSimConfig;
pub use entry::{
    DEFAULT_IDLE_LIMIT, DEFAULT_MAX_HOSTS, DEFAULT_MAX_PRACTICE_HOSTS,
    DEFAULT_MAX_RUN_PRACTICE_HOSTS, HostPolicy, hosted_entry,
};
pub use isolation::{IsolatedLauncher, protect_evaluator};
pub use process::{
    HostCommand, HostError, HostLimits, HostProcess, HostSlots, Launcher, PlainLauncher,
};
pub use sim::{HostSpec, RemoteSim};
