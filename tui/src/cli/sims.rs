//! `ale sims`: the bundled simulators, and parity checks against Gymnasium fixtures.

use std::path::PathBuf;
use std::process::ExitCode;

use ale_sim::parity::Fixture;

#[derive(clap::Subcommand, Debug)]
pub enum SimsCommand {
    /// List the simulators of this binary.
    List,
    /// Replay Gymnasium parity fixtures (docs/sims.md) and report each; exits non-zero on any failure.
    ///
    /// Example: ale sims replay sims/tests/fixtures/*/*.json
    Replay {
        /// Fixture files (JSON, one episode each).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

pub fn run(command: SimsCommand) -> anyhow::Result<ExitCode> {
    match command {
        SimsCommand::List => {
            println!("{:<26} {:>10}  GYMNASIUM PARITY", "SIM", "MAX STEPS");
            for sim in crate::sim_catalog().iter() {
                let parity = if sim.has_gymnasium_parity() {
                    "yes"
                } else {
                    "-"
                };
                println!("{:<26} {:>10}  {parity}", sim.id(), sim.default_max_steps());
            }
            Ok(ExitCode::SUCCESS)
        }
        SimsCommand::Replay { files } => Ok(replay(&files)),
    }
}

fn replay(files: &[PathBuf]) -> ExitCode {
    let (mut passed, mut failed) = (0, 0);
    for file in files {
        let outcome = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read: {e}"))
            .and_then(|text| Fixture::parse(&text).map_err(|e| e.to_string()))
            .and_then(|f| {
                f.replay(crate::sim_catalog())
                    .map(|replayed| (f.env, replayed))
                    .map_err(|e| e.to_string())
            });
        match outcome {
            Ok((env, replayed)) => {
                passed += 1;
                let start = match replayed.initial_observation_exact {
                    Some(true) => ", reset observation bit for bit",
                    Some(false) => ", reset observation within tolerance, not bit for bit",
                    None => "",
                };
                println!(
                    "ok    {} ({env}, {} steps{start})",
                    file.display(),
                    replayed.steps
                );
            }
            Err(e) => {
                failed += 1;
                println!("FAIL  {}: {e}", file.display());
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
