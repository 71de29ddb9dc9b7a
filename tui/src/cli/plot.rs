//! `ale plot`: a run's per-episode metric, running mean and target, as PNG or SVG.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ale_harness::plot::{PlotData, render};
use ale_harness::report::Report;
use ale_harness::verify::verify_trajectory;
use ale_proto::records::Outcome;
use ale_proto::trajectory::TRAJECTORY_FILE;
use anyhow::Context;

use crate::StateDirArg;

#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  ale plot run-3f2a… -o run.png\n  ale plot ~/.local/state/ale/runs/run-3f2a…/trajectory.jsonl -o run.svg"
)]
pub struct PlotArgs {
    /// A run folder, a run id (looked up in the state dir), or a trajectory.jsonl.
    pub run: PathBuf,
    /// The image to write: .png or .svg.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    #[command(flatten)]
    pub state_dir: StateDirArg,
}

/// The plot of a run folder or trajectory file.
pub fn plot_data(path: &Path) -> anyhow::Result<PlotData> {
    if path.is_dir()
        && let Ok(report) = Report::read(path)
    {
        return Ok(PlotData::from_report(&report));
    }
    let trajectory = if path.is_dir() {
        path.join(TRAJECTORY_FILE)
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&trajectory)
        .with_context(|| format!("cannot read {}", trajectory.display()))?;
    let verified =
        verify_trajectory(&text).map_err(|e| anyhow::anyhow!("{}: {e}", trajectory.display()))?;
    let episodes = verified
        .result
        .as_ref()
        .map(|r| r.episodes.clone())
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e.outcome != Outcome::NotRun || verified.result.is_some())
        .collect();
    Ok(PlotData {
        title: format!("{} · run {}", verified.run.task_id, verified.run.run_id),
        metric_name: verified.run.metric_name.clone(),
        direction: verified.run.direction,
        target: verified.run.target,
        episodes,
    })
}

pub fn run(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let path = if args.run.exists() {
        args.run.clone()
    } else {
        let id = ale_proto::RunId::from_wire(args.run.to_string_lossy());
        let dir = ale_proto::layout::run_dir(&args.state_dir.resolve(), &id);
        anyhow::ensure!(
            dir.is_dir(),
            "{} is neither a file, a folder, nor a run in {}",
            args.run.display(),
            args.state_dir.resolve().display()
        );
        dir
    };
    let data = plot_data(&path)?;
    render(&data, &args.output).map_err(anyhow::Error::msg)?;
    println!("wrote {}", args.output.display());
    Ok(ExitCode::SUCCESS)
}
