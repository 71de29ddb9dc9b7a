//! `ale tasks`: the tasks an evaluator hosts.

use std::process::ExitCode;

use ale_proto::TaskSpec;

#[derive(clap::Args, Debug)]
pub struct TasksArgs {
    /// Ask a running evaluator (agent channel URL) instead of listing the built-in tasks.
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
}

pub fn run(args: TasksArgs) -> anyhow::Result<ExitCode> {
    let tasks: Vec<TaskSpec> = match &args.endpoint {
        Some(endpoint) => super::runtime(1)?.block_on(async {
            ale_client::Client::connect(endpoint)
                .await?
                .list_tasks()
                .await
        })?,
        None => ale_server::TaskRegistry::builtin(crate::sim_catalog())?
            .iter()
            .map(|t| t.spec())
            .collect::<Result<_, _>>()?,
    };
    let rows: Vec<[String; 7]> = tasks
        .into_iter()
        .map(|t| {
            let metric = t.metric;
            [
                t.id,
                t.sim,
                t.mode.to_string(),
                format!("{} {}", metric.name, metric.direction.arrow()),
                metric.target.to_string(),
                if t.seed_sets.is_empty() {
                    "-".into()
                } else {
                    t.seed_sets.join(",")
                },
                t.title,
            ]
        })
        .collect();
    let header = [
        "ID",
        "SIM",
        "MODE",
        "METRIC",
        "TARGET",
        "SEED SETS",
        "TITLE",
    ]
    .map(String::from);
    let width = |col: usize| {
        rows.iter()
            .chain([&header])
            .map(|r| r[col].chars().count())
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..7).map(width).collect();
    for row in [&header].into_iter().chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (cell, w))| match i {
                4 => format!("{cell:>w$}"),
                6 => cell.clone(),
                _ => format!("{cell:<w$}"),
            })
            .collect();
        println!("{}", cells.join("  "));
    }
    Ok(ExitCode::SUCCESS)
}
