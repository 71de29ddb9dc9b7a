//! `ale serve`: run an evaluator until Ctrl-C or SIGTERM.

use std::io::Write;
use std::net::SocketAddr;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use ale_harness::evaluator_process::ready;
use ale_server::serve::ServeOptions;
use ale_server::{BatchOptions, Evaluator, Limits, TaskRegistry};
use anyhow::Context;

use crate::StateDirArg;

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// Address of the agent channel (TCP). Port 0 picks a free port.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:50051")]
    pub listen: SocketAddr,
    #[command(flatten)]
    pub state_dir: StateDirArg,
    /// The agent channel's Unix socket, which sandboxed agents reach [default: STATE_DIR/agent.sock]
    #[arg(long, value_name = "PATH")]
    pub agent_socket: Option<PathBuf>,
    /// Extra task configs (*.toml); a file there replaces a built-in task with the same id.
    #[arg(long, value_name = "DIR")]
    pub tasks_dir: Option<PathBuf>,
    #[command(flatten)]
    pub sim_hosts: crate::SimHostArgs,
    /// Runtime worker threads; 1 serves everything from one thread (lowest latency).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
    /// Practice envs held at once, over all connections (a vector env counts its sub-envs).
    #[arg(long, value_name = "N", default_value_t = default_cap(Limits::default().max_practice_envs))]
    pub max_practice_envs: NonZeroUsize,
    /// Practice envs one connection may hold at once (sub-envs counted).
    #[arg(long, value_name = "N", default_value_t = default_cap(Limits::default().max_practice_envs_per_connection))]
    pub max_practice_envs_per_connection: NonZeroUsize,
    /// Official envs held at once (harness channel); practice envs never count against it.
    #[arg(long, value_name = "N", default_value_t = default_cap(Limits::default().max_official_envs))]
    pub max_official_envs: NonZeroUsize,
    /// Practice envs one run's agent may hold at once over its own socket, apart from the above (sub-envs counted).
    #[arg(long, value_name = "N", default_value_t = default_cap(Limits::default().max_run_practice_envs))]
    pub max_run_practice_envs: NonZeroUsize,
    /// Microseconds of work under which a vector env's next call runs on the serving thread; a slower one runs off it, its blocks in parallel on threads of their own (0: always off it).
    #[arg(long, value_name = "MICROS", default_value_t = Limits::default().vector_inline_work.as_micros() as u64)]
    pub vector_inline_us: u64,
    /// The largest batch submission file read, in bytes; as root, each batch run's own tmpfs holds this plus 1 MiB.
    #[arg(long, value_name = "BYTES", default_value_t = BatchOptions::default().max_submission_bytes)]
    pub max_submission_bytes: u64,
    /// Batch runs playing at once; a run submitted beyond it waits in line, its time budget starting when it plays.
    #[arg(long, value_name = "N", default_value_t = default_cap(BatchOptions::default().max_runs))]
    pub max_batch_runs: NonZeroUsize,
    /// Agent connections open at once (TCP and agent socket); more are closed as soon as accepted.
    #[arg(long, value_name = "N", default_value_t = default_cap(ServeOptions::default().max_agent_connections))]
    pub max_agent_connections: NonZeroUsize,
    /// Harness connections open at once; never counted against the agent cap.
    #[arg(long, value_name = "N", default_value_t = default_cap(ServeOptions::default().max_harness_connections))]
    pub max_harness_connections: NonZeroUsize,
    /// Requests (HTTP/2 streams) one connection may have open at once.
    #[arg(
        long,
        value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..),
        default_value_t = ServeOptions::default().max_concurrent_streams
    )]
    pub max_concurrent_streams: u32,
    /// Bytes of requests not yet answered that one connection may hold.
    #[arg(long, value_name = "BYTES", default_value_t = default_cap(ServeOptions::default().max_connection_request_bytes))]
    pub max_connection_request_bytes: NonZeroUsize,
    /// Bytes of requests not yet answered that all connections may hold, beyond each one's 64 KiB.
    #[arg(long, value_name = "BYTES", default_value_t = default_cap(ServeOptions::default().max_request_bytes))]
    pub max_request_bytes: NonZeroUsize,
    /// Seconds one request may take, from its headers (once all have arrived) to its answer.
    #[arg(long, value_name = "SECS", default_value_t = Seconds(ServeOptions::default().request_timeout))]
    pub request_timeout: Seconds,
    /// Seconds after which an agent connection with no traffic is closed.
    #[arg(long, value_name = "SECS", default_value_t = Seconds(ServeOptions::default().idle_timeout))]
    pub idle_timeout: Seconds,
    /// Seconds a shutdown waits for requests in flight before dropping their connections.
    #[arg(long, value_name = "SECS", default_value_t = Seconds(ServeOptions::default().shutdown_deadline))]
    pub shutdown_deadline: Seconds,
    /// Connections open at once on one run's own agent socket; apart from the shared agent channel.
    #[arg(long, value_name = "N", default_value_t = default_cap(ServeOptions::default().max_run_connections))]
    pub max_run_connections: NonZeroUsize,
    /// Bytes of requests not yet answered that one run's agent socket may hold, beyond each connection's 64 KiB.
    #[arg(long, value_name = "BYTES", default_value_t = default_cap(ServeOptions::default().max_run_request_bytes))]
    pub max_run_request_bytes: NonZeroUsize,
    /// Seconds a run's agent socket keeps its connections after the run ends, for the last answers.
    #[arg(long, value_name = "SECS", default_value_t = Seconds(ServeOptions::default().run_linger))]
    pub run_linger: Seconds,
}

/// A positive duration given in seconds, whole or decimal (`5`, `0.5`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seconds(pub Duration);

impl std::str::FromStr for Seconds {
    type Err = String;

    fn from_str(text: &str) -> Result<Seconds, String> {
        let expected =
            || format!("expected a positive number of seconds, like 5 or 0.5, got {text:?}");
        let secs: f64 = text.parse().map_err(|_| expected())?;
        if secs.is_nan() || secs <= 0.0 {
            return Err(expected());
        }
        Duration::try_from_secs_f64(secs)
            .map(Seconds)
            .map_err(|_| expected())
    }
}

impl std::fmt::Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0.as_secs_f64())
    }
}

/// The library's default caps are all at least 1.
fn default_cap(n: usize) -> NonZeroUsize {
    NonZeroUsize::new(n).unwrap_or(NonZeroUsize::MIN)
}

impl ServeArgs {
    /// The evaluator's caps: the flags, and the library's defaults for the rest.
    pub fn limits(&self) -> Limits {
        Limits {
            max_practice_envs: self.max_practice_envs.get(),
            max_practice_envs_per_connection: self.max_practice_envs_per_connection.get(),
            max_official_envs: self.max_official_envs.get(),
            max_run_practice_envs: self.max_run_practice_envs.get(),
            vector_inline_work: Duration::from_micros(self.vector_inline_us),
            ..Limits::default()
        }
    }

    /// The listeners' bounds and shutdown deadline.
    pub fn serve_options(&self) -> ServeOptions {
        ServeOptions {
            max_agent_connections: self.max_agent_connections.get(),
            max_harness_connections: self.max_harness_connections.get(),
            max_concurrent_streams: self.max_concurrent_streams,
            max_connection_request_bytes: self.max_connection_request_bytes.get(),
            max_request_bytes: self.max_request_bytes.get(),
            request_timeout: self.request_timeout.0,
            idle_timeout: self.idle_timeout.0,
            shutdown_deadline: self.shutdown_deadline.0,
            max_run_connections: self.max_run_connections.get(),
            max_run_request_bytes: self.max_run_request_bytes.get(),
            run_linger: self.run_linger.0,
        }
    }

    /// The batch pipeline's options: the flags, and the library's defaults for the rest.
    pub fn batch_options(&self) -> BatchOptions {
        BatchOptions {
            max_submission_bytes: self.max_submission_bytes,
            max_runs: self.max_batch_runs.get(),
            ..BatchOptions::default()
        }
    }
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    // This process is the evaluator: a flood of large requests must not stay resident.
    ale_server::serve::memory::return_large_buffers();
    let state_dir = args.state_dir.resolve();
    // Before any sim host starts: an isolated host is started with the state dir covered.
    ale_server::state_dir::prepare(&state_dir)
        .with_context(|| format!("cannot prepare the state dir {}", state_dir.display()))?;
    let catalog = crate::hosting_catalog(&state_dir, &args.sim_hosts);
    let tasks = match &args.tasks_dir {
        Some(dir) => TaskRegistry::with_dir(dir, &catalog)?,
        None => TaskRegistry::builtin(&catalog)?,
    };
    let evaluator = Evaluator::with_options(
        tasks,
        &state_dir,
        Box::new(ale_server::seeds::OsSeeds),
        args.limits(),
        &args.batch_options(),
    )
    .with_context(|| format!("cannot prepare the state dir {}", state_dir.display()))?;
    let rt = super::runtime(args.threads)?;
    rt.block_on(async move {
        let options = args.serve_options();
        let agent_socket = args
            .agent_socket
            .unwrap_or_else(|| ale_records::layout::agent_socket(&state_dir));
        let server =
            ale_server::serve::start_with(Arc::new(evaluator), args.listen, agent_socket, options)
                .await?;
        // Bound, so no other evaluator serves this state dir: what is unfinished is interrupted.
        server.evaluator().mark_interrupted_runs();
        // Whoever reads the announcement may signal at once: the handlers are in place first.
        let stop = stop_signal()?;
        announce(&server);
        stop.await;
        tracing::info!("stop signal received; shutting down");
        server.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// Prints the endpoints and the evaluator's public key once listening. Best-effort: a closed
/// stdout must not stop a server.
fn announce(server: &ale_server::RunningServer) {
    let key = server.evaluator().public_key_hex();
    tracing::info!(evaluator_key = %key, "evaluator public key");
    let text = format!(
        "{}\n  {}{}\n  {}{}\n  {}{}\n  {}{key}\n",
        ready::HEADER,
        ready::AGENT,
        server.agent_endpoint(),
        ready::AGENT_SOCKET,
        server.agent_socket().display(),
        ready::HARNESS,
        server.harness_socket().display(),
        ready::EVALUATOR_KEY,
    );
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        tracing::warn!(error = %e, "could not print the endpoints to stdout");
    }
}

/// Installs the SIGTERM and SIGINT (Ctrl-C) handlers now; the future ends at the first signal.
fn stop_signal() -> std::io::Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = interrupt.recv() => {}
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_positive_whole_or_decimal_numbers() {
        assert_eq!("5".parse(), Ok(Seconds(Duration::from_secs(5))));
        assert_eq!("0.25".parse(), Ok(Seconds(Duration::from_millis(250))));
        for bad in ["0", "-1", "NaN", "inf", "5s", ""] {
            let e = bad.parse::<Seconds>().unwrap_err();
            assert!(e.contains("positive number of seconds"), "{bad}: {e}");
        }
        assert_eq!(Seconds(Duration::from_millis(500)).to_string(), "0.5");
    }
}
