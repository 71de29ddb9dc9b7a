//! `ale load`: many clients stepping practice envs at once; the step rate, Step latency and
//! errors.

use std::process::ExitCode;
use std::time::Duration;

use ale_reliability::load::{self, LoadOptions};

#[derive(clap::Args, Debug)]
pub struct LoadArgs {
    /// The evaluator's agent channel: http://HOST:PORT or unix:///PATH.
    #[arg(long, value_name = "URL")]
    pub endpoint: String,
    /// Clients, each on a connection of its own.
    #[arg(long, value_name = "N")]
    pub clients: usize,
    /// Practice envs each client creates and steps at once (the evaluator's default cap is 64
    /// per connection, 1024 in all).
    #[arg(long, value_name = "M")]
    pub envs_per_client: usize,
    /// Steps per env.
    #[arg(long, value_name = "S")]
    pub steps: u64,
    /// Stop stepping after this many seconds even if steps remain.
    #[arg(long, value_name = "SECONDS")]
    pub duration: Option<f64>,
    /// The task of every env.
    #[arg(long, value_name = "ID", default_value = "cartpole-balance")]
    pub task: String,
    /// After stepping, keep every env and connection alive this many seconds (e.g. to look at
    /// a server holding 1,000 live envs) before reporting.
    #[arg(long, value_name = "SECONDS")]
    pub hold: Option<f64>,
    /// The server's process id, if it runs on this machine: its resident memory with every env
    /// live is reported (from /proc/PID/status).
    #[arg(long, value_name = "PID")]
    pub server_pid: Option<u32>,
    /// Runtime threads of this load generator.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub threads: usize,
}

fn seconds(value: Option<f64>, flag: &str) -> anyhow::Result<Option<Duration>> {
    value
        .map(|s| {
            Duration::try_from_secs_f64(s)
                .map_err(|e| anyhow::anyhow!("{flag} {s}: expected a number of seconds ≥ 0 ({e})"))
        })
        .transpose()
}

pub fn run(args: LoadArgs) -> anyhow::Result<ExitCode> {
    if args.clients == 0 || args.envs_per_client == 0 {
        anyhow::bail!("--clients and --envs-per-client must be at least 1");
    }
    let options = LoadOptions {
        endpoint: args.endpoint,
        task: args.task,
        clients: args.clients,
        envs_per_client: args.envs_per_client,
        steps: args.steps,
        duration: seconds(args.duration, "--duration")?,
        hold: seconds(args.hold, "--hold")?,
        server_pid: args.server_pid,
    };
    let report = super::runtime(args.threads)?.block_on(load::run(&options));
    println!("{report}");
    Ok(if report.errors == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
