//! The ALE evaluator: hosts simulators behind the `AleEnv` gRPC service.
//!
//! [`Evaluator`] holds the domain (tasks, envs, eval sessions, hidden seeds, trajectories);
//! [`service`] is the thin gRPC layer over it; [`serve::start`] runs both listeners.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use std::sync::Arc;
//! use ale_server::{Evaluator, TaskRegistry, serve};
//! let evaluator = Evaluator::new(TaskRegistry::builtin(&ale_sims::catalog())?, std::path::Path::new("/tmp/ale-state"))?;
//! let server = serve::start(Arc::new(evaluator), "127.0.0.1:0".parse()?).await?;
//! println!("agents: {}  harness: {}", server.agent_endpoint(), server.harness_socket().display());
//! server.shutdown().await;
//! # Ok(()) }
//! ```

mod action;
pub mod batch;
mod channel;
mod env;
mod env_table;
mod error;
mod evaluator;
pub mod interrupted;
mod run_resources;
pub mod seeds;
pub mod serve;
pub mod service;
mod session;
pub mod state_dir;
mod sync;
pub mod task;
mod trajectory;
pub mod vector;

pub use batch::{BatchOptions, BatchState, BatchStatus};
pub use channel::{Channel, RunScope};
pub use env_table::{ConnectionId, EnvCounts, Limits};
pub use error::{EnvCap, Error};
pub use evaluator::{CreatedEnv, EnvShape, Evaluator, ResetAnswer, Spec, StepAnswer, Swept};
pub use serve::{RunningServer, ServeError};
pub use state_dir::StateDirError;
pub use task::{Task, TaskError, TaskRegistry};
