//! `ale plot`: a run's per-rollout metric, running mean with its band, mean with its interval,
//! target and safety counters, as PNG or SVG; or two runs of one task side by side
//! (`--compare`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ale_harness::compare::{Checked, ComparedRun, Comparison};
use ale_harness::plot::{
    BASE_DPI, PlotData, PlotFormat, PlotOptions, render_compare_file, render_file,
};
use ale_harness::verify::{RecordKeys, RunVerdict};

use crate::StateDirArg;

#[derive(clap::Args, Debug)]
#[command(
    override_usage = "ale plot [OPTIONS] RUN [-o FILE]\n       ale plot [OPTIONS] --compare RUN RUN [-o FILE]",
    after_help = "Examples:\n  ale plot run-3f2a…\n  ale plot run-3f2a… --dpi 300 --title \"CartPole, heuristic\" -o fig2.png\n  ale plot ~/.local/state/ale/runs/run-3f2a…/trajectory.jsonl -o run.svg\n  ale plot --compare run-3f2a… run-9c41… -o compare.png"
)]
pub struct PlotArgs {
    /// A run folder, a run id (looked up in the state dir), or a trajectory.jsonl.
    #[arg(required_unless_present = "compare", conflicts_with = "compare")]
    pub run: Option<PathBuf>,
    /// Two runs of one task side by side, each given as RUN is: grouped bars per rollout,
    /// both running means, the target. Their records are verified with the state dir's keys;
    /// a run whose records do not verify is marked NOT VERIFIED in the plot, and the command
    /// exits 1.
    #[arg(long, num_args = 2, value_names = ["RUN", "RUN"])]
    pub compare: Option<Vec<PathBuf>>,
    /// The image to write: .png or .svg [default: NAME.png, NAME the run's name or short id,
    /// or LEFT-vs-RIGHT.png with --compare, in the current directory]
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The image's width in pixels [default: 10 inches at --dpi: 960 at 96 dpi]
    #[arg(long, value_name = "PX")]
    pub width: Option<u32>,
    /// The image's height in pixels [default: 5.625 inches at --dpi: 540 at 96 dpi]
    #[arg(long, value_name = "PX")]
    pub height: Option<u32>,
    /// A PNG's resolution: text and lines are drawn DPI/96 times as large, the default size
    /// stays 10 × 5.625 inches, and the PNG records it; 300 for print. PNG only (an SVG
    /// scales) [default: 96]
    #[arg(long, value_name = "DPI")]
    pub dpi: Option<u32>,
    /// The plot's title [default: the task and the run's name, or its agent; for --compare,
    /// both runs' agents]
    #[arg(long, value_name = "TEXT")]
    pub title: Option<String>,
    #[command(flatten)]
    pub state_dir: StateDirArg,
}

/// The options `args` ask for; `output` is the file they will be written to.
fn options(args: &PlotArgs, output: &Path) -> anyhow::Result<PlotOptions> {
    if args.dpi.is_some() && PlotFormat::of(output)? == PlotFormat::Svg {
        anyhow::bail!("--dpi is for PNG: an SVG scales to any size; drop --dpi, or write a .png");
    }
    let base = PlotOptions::at_dpi(args.dpi.unwrap_or(BASE_DPI));
    let options = PlotOptions {
        width: args.width.unwrap_or(base.width),
        height: args.height.unwrap_or(base.height),
        title: args.title.clone(),
        ..base
    };
    options.check()?;
    Ok(options)
}

/// `-o FILE`, or `<stem>.png` in the current directory.
fn output_path(args: &PlotArgs, stem: impl FnOnce() -> String) -> PathBuf {
    args.output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.png", stem())))
}

pub fn run(args: PlotArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    match (&args.run, args.compare.as_deref()) {
        (_, Some([left, right])) => {
            let (left, right) = (
                super::run_arg::resolve(left, &state_dir)?,
                super::run_arg::resolve(right, &state_dir)?,
            );
            let keys = RecordKeys::from_state_dir(&state_dir);
            let both = Comparison::load(&left, &right, keys.as_ref())?;
            let output = output_path(&args, || both.file_stem());
            render_compare_file(&both, &output, &options(&args, &output)?)?;
            for side in both.sides() {
                println!("{}", side_line(side));
            }
            let d = both.difference();
            println!(
                "difference {:+.4} [{:+.4}, {:+.4}] (95%, {}) · P(first better) {:.2}",
                d.mean_difference,
                d.ci.low,
                d.ci.high,
                if d.paired {
                    "paired by seed"
                } else {
                    "unpaired: the runs drew seeds of their own"
                },
                d.probability_of_improvement
            );
            println!("wrote {}", output.display());
            let broken: Vec<String> = both
                .sides()
                .iter()
                .filter(|s| matches!(s.checked, Checked::Verdict(RunVerdict::Broken(_))))
                .map(|s| s.run_id().to_string())
                .collect();
            if !broken.is_empty() {
                eprintln!(
                    "error: the records of {} do not verify: the plot marks its numbers NOT \
                     VERIFIED; `ale harness verify` says what is wrong",
                    broken.join(" and ")
                );
                return Ok(ExitCode::FAILURE);
            }
            return Ok(ExitCode::SUCCESS);
        }
        (Some(run), None) => {
            let data = PlotData::load(&super::run_arg::resolve(run, &state_dir)?)?;
            let output = output_path(&args, || data.file_stem());
            render_file(&data, &output, &options(&args, &output)?)?;
            println!("wrote {}", output.display());
        }
        // clap requires RUN or two values of --compare.
        _ => anyhow::bail!("give a RUN, or --compare RUN RUN"),
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per run: id, status, score, and what verifying its records concluded.
fn side_line(side: &ComparedRun) -> String {
    let status = side
        .status()
        .map_or("unfinished".to_string(), |s| s.to_string());
    let score = side
        .breakdown()
        .map_or("no score".to_string(), |b| format!("score {:.4}", b.score));
    let verdict = match &side.checked {
        Checked::Verdict(RunVerdict::Verified(_)) => "verified".to_string(),
        Checked::Verdict(RunVerdict::Broken(e)) => format!("BROKEN {e}"),
        Checked::NoKeys(why) => why.clone(),
    };
    format!("{}  {status}  {score}  {verdict}", side.run_id())
}
