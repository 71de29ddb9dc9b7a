//! `ale conformance`: the protocol suite against an evaluator; a line per case, the counts last.

use std::path::PathBuf;
use std::process::ExitCode;

use ale_reliability::conformance::{self, Options};

#[derive(clap::Args, Debug)]
pub struct ConformanceArgs {
    /// The evaluator's agent channel: http://HOST:PORT or unix:///PATH.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// Its harness channel's socket; without it, the cases that need it (official envs, eval
    /// sessions, batch runs, records) are skipped.
    #[arg(long, value_name = "PATH")]
    pub harness_socket: Option<PathBuf>,
}

pub fn run(args: ConformanceArgs) -> anyhow::Result<ExitCode> {
    let options = Options {
        endpoint: args.endpoint,
        harness_socket: args.harness_socket,
    };
    let summary =
        super::runtime(1)?.block_on(conformance::run(&options, |case| println!("{case}")))?;
    println!("{summary}");
    Ok(if summary.is_success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
