//! The checks an official run makes of its agent before anything is recorded, on their own:
//! `ale harness run --dry-run`. No evaluator is started or asked, no run folder is made; what
//! is checked is what the run would refuse (a working directory, an exposed folder or a
//! program the sandbox cannot show) and what it would warn of (path arguments the agent will
//! not find).

use std::fmt;
use std::path::{Path, PathBuf};

use ale_records::layout;

use crate::agent::check_command;
use crate::evaluator_process::socket_is_live;
use crate::run::RunOptions;

/// How one check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Ok,
    /// The run would go on, but likely not as meant.
    Warning,
    /// The run would be refused.
    Failed,
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Verdict::Ok => "ok",
            Verdict::Warning => "warning",
            Verdict::Failed => "FAILED",
        })
    }
}

/// One thing checked, and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What was checked ("program", "--workdir").
    pub what: String,
    pub verdict: Verdict,
    pub detail: String,
}

/// Every check of a run's set-up.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Preflight {
    pub checks: Vec<Check>,
}

impl Preflight {
    pub fn push(&mut self, what: impl Into<String>, verdict: Verdict, detail: impl Into<String>) {
        self.checks.push(Check {
            what: what.into(),
            verdict,
            detail: detail.into(),
        });
    }

    /// No check failed or warned.
    pub fn is_fine(&self) -> bool {
        self.checks.iter().all(|c| c.verdict == Verdict::Ok)
    }

    /// The checks that warned.
    pub fn warnings(&self) -> impl Iterator<Item = &Check> {
        self.checks.iter().filter(|c| c.verdict == Verdict::Warning)
    }
}

/// The state dir as the agent must not see it: canonical if it exists yet.
fn secret_folder(state_dir: &Path) -> PathBuf {
    std::fs::canonicalize(state_dir).unwrap_or_else(|_| {
        std::path::absolute(state_dir).unwrap_or_else(|_| state_dir.to_path_buf())
    })
}

/// Checks `options` as [`crate::run_interactive`] and [`crate::run_batch`] would before their
/// run begins, without an evaluator.
pub fn check(options: &RunOptions) -> Preflight {
    let mut out = Preflight::default();
    let state_dir = &options.state_dir;
    let served = socket_is_live(&layout::harness_socket(state_dir));
    match (&options.tasks_dir, served) {
        (Some(dir), true) => out.push(
            "--tasks-dir",
            Verdict::Failed,
            crate::evaluator_process::EvaluatorError::TasksDirWhileServed {
                tasks_dir: dir.clone(),
                state_dir: state_dir.clone(),
            }
            .to_string(),
        ),
        (_, true) => out.push(
            "evaluator",
            Verdict::Ok,
            format!("one serves {}: the run attaches to it", state_dir.display()),
        ),
        (_, false) => out.push(
            "evaluator",
            Verdict::Ok,
            format!(
                "none serves {}: the run starts one and stops it after",
                state_dir.display()
            ),
        ),
    }
    if let Some(folder) = &options.submission {
        if folder.is_dir() {
            out.push("--submission", Verdict::Ok, folder.display().to_string());
        } else {
            out.push(
                "--submission",
                Verdict::Failed,
                format!("{} is not a folder", folder.display()),
            );
        }
        return out;
    }
    if options.agent_command.is_empty() {
        out.push(
            "agent",
            Verdict::Failed,
            crate::HarnessError::NoAgent.to_string(),
        );
        return out;
    }
    out.push("agent", Verdict::Ok, options.agent_command.join(" "));
    if !options.sandbox.mode.is_sandboxed() {
        let program = &options.agent_command[0];
        match ale_sandbox::resolve_program(program) {
            Ok(_) => out.push(
                "sandbox",
                Verdict::Ok,
                "none: the agent runs as you, unconfined, and its run is marked so",
            ),
            Err(e) => out.push("program", Verdict::Failed, e.to_string()),
        }
        return out;
    }
    let secret = [secret_folder(state_dir)];
    match check_command(&options.agent_command, &options.sandbox, &secret) {
        Err(e) => out.push("sandbox", Verdict::Failed, e.to_string()),
        Ok(checked) => {
            out.push(
                "--workdir",
                Verdict::Ok,
                match &checked.workdir {
                    Some(dir) => format!("{} (writable)", dir.path.display()),
                    None => "none: the agent starts in an empty folder of its own".into(),
                },
            );
            for dir in &checked.exposed {
                out.push(
                    "--expose",
                    Verdict::Ok,
                    format!("{} (read-only)", dir.path.display()),
                );
            }
            out.push(
                "program",
                Verdict::Ok,
                match &checked.program_file {
                    _ if checked.program.is_relative() => format!(
                        "{}, looked up on the agent's PATH in the sandbox",
                        checked.program.display()
                    ),
                    Some(file) => format!(
                        "{}, bound into the sandbox on its own (from {})",
                        checked.program.display(),
                        file.path.display()
                    ),
                    None => format!("{}, visible in the sandbox", checked.program.display()),
                },
            );
            if checked.hidden_arguments.is_empty() {
                out.push(
                    "arguments",
                    Verdict::Ok,
                    "every path argument is visible in the sandbox",
                );
            }
            for hidden in &checked.hidden_arguments {
                out.push("argument", Verdict::Warning, hidden.to_string());
            }
        }
    }
    out
}
