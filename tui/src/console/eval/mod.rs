//! The eval view: choose an agent for the selected task, start an official run (a separate
//! `ale harness run` process), follow its progress, read its report.

mod draw;

pub use draw::draw;

use std::path::PathBuf;
use std::time::Instant;

use ale_client::TaskMode;
use ale_client::policy::PolicyKind;
use ale_harness::progress::RunProgress;
use ale_harness::report::Report;
use ale_proto::RunId;
use crossterm::event::{KeyCode, KeyEvent};

use super::bindings::Command;
use super::message::{Effect, HarnessEvent, HarnessExit};
use super::outcome::Outcome;
use super::tasks::Tasks;
use super::view::InputMode;

/// How many of the harness's other output lines are kept.
const OUTPUT_LINES: usize = 50;

/// The agents the eval view offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentChoice {
    Policy(PolicyKind),
    /// The command line typed in the view.
    Command,
    /// For a batch task: the policy file in the folder typed in the view, submitted by the
    /// harness itself.
    Submission,
}

impl AgentChoice {
    /// The choices for an interactive task, in the order the view lists them.
    pub const INTERACTIVE: [AgentChoice; 3] = [
        AgentChoice::Policy(PolicyKind::Heuristic),
        AgentChoice::Policy(PolicyKind::Random),
        AgentChoice::Command,
    ];
    /// The choices for a batch task: a policy file already written, or an agent that writes
    /// and submits one.
    pub const BATCH: [AgentChoice; 2] = [AgentChoice::Submission, AgentChoice::Command];

    /// What the view offers for a task of `mode`.
    pub fn offered(mode: TaskMode) -> &'static [AgentChoice] {
        match mode {
            TaskMode::Interactive => &AgentChoice::INTERACTIVE,
            TaskMode::Batch => &AgentChoice::BATCH,
        }
    }
}

impl Default for AgentChoice {
    fn default() -> AgentChoice {
        AgentChoice::INTERACTIVE[0]
    }
}

/// How many of `agent.log`'s last lines a failed run shows.
pub const AGENT_LOG_TAIL: usize = 12;

/// A command line and the sandbox folders it is given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentCommand {
    /// Run with `sh -c`.
    pub line: String,
    /// `--workdir`; none: the folder the console was started in, if the agent may have it.
    pub workdir: Option<PathBuf>,
    /// `--expose`, each folder shown read-only.
    pub expose: Vec<PathBuf>,
}

/// The agent an official run uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Agent {
    Policy(PolicyKind),
    Command(AgentCommand),
    /// A batch task's submission folder (`ale harness run --submission`).
    Submission(PathBuf),
}

#[derive(Debug, Default)]
pub struct Eval {
    pub choice: AgentChoice,
    /// The command line for [`AgentChoice::Command`], kept while another agent is chosen.
    pub command: String,
    /// The folder for [`AgentChoice::Submission`], kept likewise.
    pub submission: String,
    /// The command's `--workdir`, as typed (empty: the default).
    pub workdir: String,
    /// The command's `--expose` folders, as typed, separated by spaces.
    pub expose: String,
    pub run: Option<EvalRun>,
}

#[derive(Debug, Clone)]
pub struct EvalRun {
    pub task_id: String,
    pub agent: Agent,
    pub started: Instant,
    pub progress: Option<Box<RunProgress>>,
    pub report: Option<Box<Report>>,
    pub run_dir: Option<PathBuf>,
    /// The harness's latest lines that are not progress events.
    pub output: Vec<String>,
    pub finished: Option<HarnessExit>,
    pub cancelled: bool,
    /// The last lines of the agent's `agent.log`, read when the agent failed (or why they
    /// could not be read).
    pub agent_log: Option<Result<Vec<String>, String>>,
}

impl EvalRun {
    pub fn is_running(&self) -> bool {
        self.finished.is_none()
    }

    /// The run's id, once the harness has reported it.
    pub fn run_id(&self) -> Option<&RunId> {
        match (&self.report, &self.progress) {
            (Some(report), _) => Some(&report.run_id),
            (None, Some(progress)) => Some(&progress.run_id),
            (None, None) => None,
        }
    }

    /// An agent of this run ran and failed: its report says so, or the harness failed (not
    /// cancelled) after the run began. A submission has no agent.
    pub fn agent_failed(&self) -> bool {
        if matches!(self.agent, Agent::Submission(_)) || self.cancelled {
            return false;
        }
        match (&self.report, &self.finished) {
            (Some(report), _) => report.agent.failed(),
            (None, Some(exit)) => !exit.success,
            (None, None) => false,
        }
    }
}

impl Eval {
    pub fn agent(&self) -> Agent {
        match self.choice {
            AgentChoice::Policy(kind) => Agent::Policy(kind),
            AgentChoice::Command => Agent::Command(AgentCommand {
                line: self.command.clone(),
                workdir: Some(self.workdir.trim())
                    .filter(|w| !w.is_empty())
                    .map(PathBuf::from),
                expose: self.expose.split_whitespace().map(PathBuf::from).collect(),
            }),
            AgentChoice::Submission => Agent::Submission(PathBuf::from(self.submission.trim())),
        }
    }

    /// The choice for a task of `mode`: the one made, if that task offers it, else its first.
    pub fn choice_for(&self, mode: TaskMode) -> AgentChoice {
        let offered = AgentChoice::offered(mode);
        if offered.contains(&self.choice) {
            self.choice
        } else {
            offered[0]
        }
    }

    fn is_running(&self) -> bool {
        self.run.as_ref().is_some_and(EvalRun::is_running)
    }

    /// A command in the eval view; the task is the one selected in `tasks`, and can be changed
    /// from here while no run is going.
    pub fn on_command(&mut self, command: Command, tasks: &mut Tasks) -> Vec<Outcome> {
        let running = self.is_running();
        let mode = tasks.selected().map_or(TaskMode::Interactive, |t| t.mode);
        let offered = AgentChoice::offered(mode);
        let choice = self.choice_for(mode);
        let position = offered.iter().position(|c| *c == choice).unwrap_or(0);
        match command {
            Command::Left if !running => tasks.select_previous(),
            Command::Right if !running => tasks.select_next(),
            Command::Up => self.choice = offered[position.saturating_sub(1)],
            Command::Down => self.choice = offered[(position + 1).min(offered.len() - 1)],
            Command::TypeAgent => {
                self.choice = AgentChoice::Command;
                return vec![Outcome::Input(InputMode::AgentCommand)];
            }
            Command::TypeWorkdir | Command::TypeExpose if mode == TaskMode::Batch => {
                return vec![Outcome::say(
                    "a batch task's policy file runs in the evaluator: no folders to give it",
                )];
            }
            Command::TypeWorkdir => {
                self.choice = AgentChoice::Command;
                return vec![Outcome::Input(InputMode::Workdir)];
            }
            Command::TypeExpose => {
                self.choice = AgentChoice::Command;
                return vec![Outcome::Input(InputMode::Expose)];
            }
            Command::TypeSubmission if mode == TaskMode::Batch => {
                self.choice = AgentChoice::Submission;
                return vec![Outcome::Input(InputMode::SubmissionDir)];
            }
            Command::TypeSubmission => {
                return vec![Outcome::say(
                    "only a batch task takes a submission folder; pick one with ← →",
                )];
            }
            Command::Start if running => {
                return vec![Outcome::say("a run is in progress: x cancels it")];
            }
            Command::Start => {
                let Some(task) = tasks.selected() else {
                    return vec![Outcome::say("pick a task in the tasks view first")];
                };
                self.choice = self.choice_for(task.mode);
                let agent = self.agent();
                match &agent {
                    Agent::Command(c) if c.line.trim().is_empty() => {
                        return vec![Outcome::warn("type the agent's command first (c)")];
                    }
                    Agent::Submission(dir) if dir.as_os_str().is_empty() => {
                        return vec![Outcome::warn(
                            "type the folder holding the policy file first (s)",
                        )];
                    }
                    _ => {}
                }
                self.run = Some(EvalRun {
                    task_id: task.id.clone(),
                    agent: agent.clone(),
                    started: Instant::now(),
                    progress: None,
                    report: None,
                    run_dir: None,
                    output: Vec::new(),
                    finished: None,
                    cancelled: false,
                    agent_log: None,
                });
                return vec![
                    Effect::StartHarness {
                        task_id: task.id.clone(),
                        agent,
                    }
                    .into(),
                ];
            }
            Command::Cancel if running => {
                if let Some(run) = &mut self.run {
                    run.cancelled = true;
                }
                return vec![Effect::CancelHarness.into()];
            }
            _ => {}
        }
        Vec::new()
    }

    /// A key while the agent's command line is typed.
    pub fn on_command_line_key(&mut self, key: KeyEvent) -> Vec<Outcome> {
        type_into(&mut self.command, key)
    }

    /// A key while the submission folder is typed.
    pub fn on_submission_key(&mut self, key: KeyEvent) -> Vec<Outcome> {
        type_into(&mut self.submission, key)
    }

    /// A key while the command's working directory is typed.
    pub fn on_workdir_key(&mut self, key: KeyEvent) -> Vec<Outcome> {
        type_into(&mut self.workdir, key)
    }

    /// A key while the command's exposed folders are typed.
    pub fn on_expose_key(&mut self, key: KeyEvent) -> Vec<Outcome> {
        type_into(&mut self.expose, key)
    }

    /// The tail of a failed run's `agent.log`, read.
    pub fn on_agent_log(&mut self, run_id: &RunId, tail: Result<Vec<String>, String>) {
        if let Some(run) = &mut self.run
            && run.run_id().is_some_and(|id| id == run_id)
        {
            run.agent_log = Some(tail);
        }
    }

    /// What the harness child reported about the current run.
    pub fn on_harness(&mut self, event: HarnessEvent) -> Vec<Outcome> {
        let Some(run) = &mut self.run else {
            return Vec::new();
        };
        match event {
            HarnessEvent::Progress(p) => run.progress = Some(p),
            HarnessEvent::Report { report, run_dir } => {
                run.report = Some(report);
                run.run_dir = Some(run_dir);
            }
            HarnessEvent::Output(line) => {
                run.output.push(line);
                let excess = run.output.len().saturating_sub(OUTPUT_LINES);
                run.output.drain(..excess);
            }
            HarnessEvent::Exited(exit) => {
                run.finished = Some(exit);
                // The run is in the state dir now.
                let mut outcomes = vec![Effect::LoadRuns.into()];
                // Why an agent failed is in its own words.
                if run.agent_failed()
                    && let Some(run_id) = run.run_id()
                {
                    outcomes.push(
                        Effect::ReadAgentLog {
                            run_id: run_id.clone(),
                            lines: AGENT_LOG_TAIL,
                        }
                        .into(),
                    );
                }
                return outcomes;
            }
        }
        Vec::new()
    }
}

/// One key of text typed into `text`; Enter or Esc ends the typing.
fn type_into(text: &mut String, key: KeyEvent) -> Vec<Outcome> {
    match key.code {
        KeyCode::Esc | KeyCode::Enter => return vec![Outcome::Input(InputMode::Commands)],
        KeyCode::Backspace => {
            text.pop();
        }
        KeyCode::Char(c) => text.push(c),
        _ => {}
    }
    Vec::new()
}
