//! The headless subcommands of `ale`.

pub mod agent;
pub mod bench;
pub mod conformance;
pub mod demo;
pub mod harness;
pub mod load;
pub mod plot;
pub mod run_arg;
pub mod serve;
pub mod sims;
pub mod tasks;

/// Logs go to stderr, filtered by `RUST_LOG` (default: `default`, e.g. "info"); coloured only
/// on a terminal, so a log file or a journal gets plain text.
pub fn init_logging(default: &str) {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr)
        .try_init();
}

/// A tokio runtime for a subcommand.
pub fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    if threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()
    }
}
