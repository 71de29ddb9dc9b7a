//! What flows between the app and the event loop: messages in ([`Msg`]), effects out
//! ([`Effect`]), and the client worker's requests and replies.

use std::path::PathBuf;
use std::time::Instant;

use ale_client::policy::PolicyKind;
use ale_client::{EnvSpec, Info};
use ale_harness::compare::Comparison;
use ale_harness::leaderboard::Leaderboard;
use ale_harness::plot::PlotFormat;
use ale_harness::progress::{ProgressEvent, RunProgress};
use ale_harness::report::Report;
use ale_harness::runs::RunEntry;
use ale_harness::verify::RunVerification;
use ale_proto::{RunId, TaskSpec};
use ale_sim::Tensor;
use crossterm::event::{KeyEvent, MouseEvent};

use super::eval::Agent;

/// An RPC for the client worker.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    ListTasks,
    CreatePractice {
        task_id: String,
    },
    Reset {
        seed: u64,
    },
    Step {
        action: Tensor,
    },
    /// Up to `steps` steps chosen by a built-in policy; the worker stops at the episode's end.
    Play {
        steps: u32,
        policy: PolicyKind,
    },
}

/// The client worker's answer to a request.
#[derive(Debug, Clone)]
pub enum Reply {
    Tasks(Vec<TaskSpec>),
    Created {
        spec: Box<EnvSpec>,
    },
    Reset {
        observation: Tensor,
        info: Info,
    },
    Stepped {
        /// The action taken: the one asked for, or the one a policy chose.
        action: Tensor,
        observation: Tensor,
        reward: f64,
        terminated: bool,
        truncated: bool,
        info: Info,
    },
    /// A `Play` request is done (possibly early, at an episode's end).
    Played,
    Failed {
        what: String,
        message: String,
        connection_lost: bool,
    },
}

/// How the harness child process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HarnessExit {
    pub success: bool,
    /// The exit status in words, or why the process could not be run or waited for.
    pub description: String,
}

/// What the harness child process reported.
#[derive(Debug, Clone)]
pub enum HarnessEvent {
    Progress(Box<RunProgress>),
    Report {
        report: Box<Report>,
        run_dir: PathBuf,
    },
    /// A line that is not a progress event (a log line, stderr).
    Output(String),
    Exited(HarnessExit),
}

impl From<ProgressEvent> for HarnessEvent {
    fn from(event: ProgressEvent) -> HarnessEvent {
        match event {
            ProgressEvent::Progress(progress) => HarnessEvent::Progress(Box::new(progress)),
            ProgressEvent::Report { run_dir, report } => HarnessEvent::Report { report, run_dir },
        }
    }
}

impl HarnessEvent {
    /// A line of `ale harness run --progress json`'s standard output.
    pub fn from_stdout_line(line: &str) -> HarnessEvent {
        match ProgressEvent::parse(line) {
            Some(event) => event.into(),
            None => HarnessEvent::Output(line.to_string()),
        }
    }
}

/// What verifying a run found.
#[derive(Debug, Clone)]
pub struct Verification {
    pub run_dir: PathBuf,
    pub result: Result<Box<RunVerification>, String>,
}

/// Something for the event loop to do.
#[derive(Debug, Clone, PartialEq)]
pub enum Effect {
    Rpc(Request),
    StartHarness {
        task_id: String,
        agent: Agent,
    },
    CancelHarness,
    LoadRuns,
    VerifyRun(PathBuf),
    ExportPlot {
        run_dir: PathBuf,
        format: PlotFormat,
    },
    /// Read the last `lines` lines of a run's `agent.log`.
    ReadAgentLog {
        run_id: RunId,
        lines: usize,
    },
    /// Verify and rank the runs of a task for the leaderboard.
    LoadLeaderboard {
        task: String,
    },
    /// Read and verify two runs for the comparison screen.
    CompareRuns {
        left: PathBuf,
        right: PathBuf,
    },
    /// Write the comparison on screen as a plot, as `ale plot --compare` draws it.
    ExportComparePlot {
        both: Shown<Comparison>,
        format: PlotFormat,
    },
}

/// What the console shows, shared with an effect that works from it (so an export writes what
/// was on screen, not the files as they are by then). Equal only to itself.
#[derive(Debug)]
pub struct Shown<T>(pub std::sync::Arc<T>);

impl<T> Clone for Shown<T> {
    fn clone(&self) -> Self {
        Shown(std::sync::Arc::clone(&self.0))
    }
}

impl<T> PartialEq for Shown<T> {
    fn eq(&self, other: &Self) -> bool {
        std::sync::Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<T> std::ops::Deref for Shown<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

#[derive(Debug, Clone)]
pub enum Msg {
    Key(KeyEvent),
    Mouse(MouseEvent),
    /// Time passes: drives auto-play and reconnection.
    Tick(Instant),
    Reply(Reply),
    /// The health watcher saw the evaluator answer (`Ok`) or not (`Err`, why), after having
    /// seen the opposite (or at first).
    Health(Result<(), String>),
    Harness(HarnessEvent),
    /// The state dir's runs, or why they could not be listed.
    Runs(Result<Vec<RunEntry>, String>),
    Verified(Verification),
    /// Two runs read for comparison (the folders asked for, left first), or why they cannot
    /// be compared.
    Compared {
        runs: [PathBuf; 2],
        result: Result<Box<Comparison>, String>,
    },
    /// A task's leaderboard, or why it could not be made.
    Ranked {
        task: String,
        result: Result<Leaderboard, String>,
    },
    Exported {
        path: PathBuf,
        result: Result<(), String>,
    },
    /// The last lines of a run's `agent.log`, or why they could not be read.
    AgentLog {
        run_id: RunId,
        tail: Result<Vec<String>, String>,
    },
}
