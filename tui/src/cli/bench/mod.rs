//! `ale bench`: measurements recorded in docs/performance.md, one module per bench.

mod batch;
mod console;
mod hosted;
mod sandbox;
mod step;
mod vector;

use std::net::SocketAddr;
use std::process::ExitCode;

pub use batch::BatchArgs;
pub use hosted::HostedArgs;
pub use step::{Placement, StepArgs};
pub use vector::VectorArgs;

#[derive(clap::Subcommand, Debug)]
pub enum BenchCommand {
    /// Sequential Step round trips on CartPole over loopback, next to the raw TCP floor.
    Step(StepArgs),
    /// Console auto-play: steps per second through the real gRPC client while the event loop
    /// redraws the practice view.
    Console {
        /// How long to play.
        #[arg(long, default_value_t = 5.0)]
        seconds: f64,
    },
    /// Agent start-up with and without the sandbox: from spawning a trivial agent (`true`) to
    /// its exit, and the harness's pre-run sandbox probe.
    Sandbox {
        /// Measured starts of each kind.
        #[arg(long, default_value_t = 50)]
        runs: usize,
    },
    /// Env-steps per second of the batch pipeline on all cores (CartPole with a random and an
    /// MLP policy, nav2d and swarm-goals with MLPs), beside interactive Step round trips.
    Batch(BatchArgs),
    /// What a sim hosted in a process of its own costs: Gymnasium's CartPole in its own Python,
    /// through the sim-host protocol, through `ale serve`, and in blocks on 1, 2 and 4 hosts.
    Hosted(HostedArgs),
    /// Env-steps per second of a practice vector env (one Step for N sub-envs) through the
    /// Rust client, for each N, over TCP and the agent socket, stepped inline or on the
    /// evaluator's vector threads.
    Vector(VectorArgs),
    /// A 1-byte TCP echo server (the floor's far end); prints its port, serves one client.
    #[command(hide = true)]
    Pong {
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
    },
}

pub fn run(command: BenchCommand) -> anyhow::Result<ExitCode> {
    match command {
        BenchCommand::Step(args) => step::bench_step(args),
        BenchCommand::Pong { listen } => step::pong(listen),
        BenchCommand::Console { seconds } => console::bench_console(seconds),
        BenchCommand::Sandbox { runs } => sandbox::bench_sandbox(runs),
        BenchCommand::Batch(args) => batch::bench_batch(args),
        BenchCommand::Hosted(args) => hosted::bench_hosted(args),
        BenchCommand::Vector(args) => vector::bench_vector(args),
    }
}
