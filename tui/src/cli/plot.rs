//! `ale plot`: a run's per-episode metric, running mean and target, as PNG or SVG.

use std::path::PathBuf;
use std::process::ExitCode;

use ale_harness::plot::{PlotData, render_file};

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
    let data = PlotData::load(&path)?;
    render_file(&data, &args.output)?;
    println!("wrote {}", args.output.display());
    Ok(ExitCode::SUCCESS)
}
