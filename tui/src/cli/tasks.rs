//! `ale tasks`: the tasks an evaluator hosts.

use std::process::ExitCode;

use ale_proto::pb;

#[derive(clap::Args, Debug)]
pub struct TasksArgs {
    /// Ask a running evaluator (agent channel URL) instead of listing the built-in tasks.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
}

pub fn run(args: TasksArgs) -> anyhow::Result<ExitCode> {
    let tasks: Vec<pb::TaskMetadata> = match &args.endpoint {
        Some(endpoint) => super::runtime(1)?.block_on(async {
            ale_client::Client::connect(endpoint)
                .await?
                .list_tasks()
                .await
        })?,
        None => ale_server::TaskRegistry::builtin()?
            .iter()
            .map(|t| t.metadata())
            .collect(),
    };
    println!(
        "{:<24} {:<14} {:<12} {:<22} {:>8}  TITLE",
        "ID", "SIM", "MODE", "METRIC", "TARGET"
    );
    for t in tasks {
        let metric = t.metric.unwrap_or_default();
        let mode = pb::TaskMode::try_from(t.mode)
            .map(|m| m.as_str_name())
            .unwrap_or("?");
        let arrow = match pb::Direction::try_from(metric.direction) {
            Ok(pb::Direction::LowerIsBetter) => "↓",
            _ => "↑",
        };
        println!(
            "{:<24} {:<14} {:<12} {:<22} {:>8}  {}",
            t.id,
            t.sim,
            mode.trim_start_matches("TASK_MODE_").to_lowercase(),
            format!("{} {arrow}", metric.name),
            metric.target,
            t.title
        );
    }
    Ok(ExitCode::SUCCESS)
}
