//! `ale harness score`: the score breakdown of a trajectory, run, report or EvalResult.

use std::process::ExitCode;

use ale_harness::scoring::Faithfulness;

use super::{ScoreArgs, print_table};

/// The built-in task catalog, whose rules score a bare EvalResult.
fn builtin_tasks() -> anyhow::Result<Vec<ale_proto::TaskSpec>> {
    let registry = ale_server::TaskRegistry::builtin(crate::sim_catalog())?;
    Ok(registry
        .iter()
        .map(|task| task.spec())
        .collect::<Result<_, _>>()?)
}

pub(super) fn score_file(args: ScoreArgs) -> anyhow::Result<ExitCode> {
    let faithfulness = args
        .faithfulness
        .as_deref()
        .map_or(Faithfulness::Missing, Faithfulness::read);
    let breakdown = ale_harness::score_file::score_file(
        &args.file,
        args.task.as_deref(),
        &builtin_tasks()?,
        &faithfulness,
    )?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&breakdown)?);
    } else {
        println!("Score of {}", args.file.display());
        print_table(&breakdown.lines());
    }
    Ok(ExitCode::SUCCESS)
}
