//! The conformance suite: one case per promise of `docs/protocol.md`, run against an endpoint
//! as a client would, in the spirit of dm_env_rpc's compliance tests.
//!
//! Cases that need the harness channel (official envs, eval sessions, results) run only when
//! its socket is given, and are otherwise reported as skipped with the reason. Every case makes
//! its own connections, so a case that fills a connection's env allowance leaves the others
//! theirs.
//!
//! ```no_run
//! # async fn run() -> Result<(), ale_reliability::conformance::ConformanceError> {
//! use ale_reliability::conformance::{Options, run};
//! let options = Options {
//!     endpoint: "http://127.0.0.1:50051".into(),
//!     harness_socket: None,
//! };
//! let summary = run(&options, |case| println!("{case}")).await?;
//! println!("{summary}");
//! # Ok(()) }
//! ```

mod actions;
mod batch;
mod catalog;
mod check;
mod practice;
mod privilege;
mod records;
mod services;
mod session;
mod vector;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use ale_client::{Client, ClientError, TaskSpec};
use tokio::sync::OnceCell;

use check::Problem;

/// What to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// The agent channel: `http://HOST:PORT` or `unix:///PATH`.
    pub endpoint: String,
    /// The harness channel's Unix socket; without it the cases that need it are skipped.
    pub harness_socket: Option<PathBuf>,
}

/// The suite could not begin: an endpoint it was given does not answer.
#[derive(Debug, thiserror::Error)]
pub enum ConformanceError {
    #[error("{0}")]
    Connect(ClientError),
}

/// How one case ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Passed,
    /// What was expected, and what the evaluator did instead.
    Failed(String),
    /// Why the case could not run here.
    Skipped(String),
}

/// One case's line of the report.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseReport {
    pub name: &'static str,
    pub verdict: Verdict,
}

/// `ok    NAME`, `FAIL  NAME: expected …; got …`, `skip  NAME: REASON`.
impl fmt::Display for CaseReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.verdict {
            Verdict::Passed => write!(f, "ok    {}", self.name),
            Verdict::Failed(why) => write!(f, "FAIL  {}: {why}", self.name),
            Verdict::Skipped(why) => write!(f, "skip  {}: {why}", self.name),
        }
    }
}

/// The counts the suite ends with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub skipped: usize,
}

impl Summary {
    pub fn is_success(&self) -> bool {
        self.failed == 0
    }
}

/// `N passed, N failed`, and `, N skipped` when some were.
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} passed, {} failed", self.passed, self.failed)?;
        if self.skipped > 0 {
            write!(f, ", {} skipped", self.skipped)?;
        }
        Ok(())
    }
}

/// Which channels a case needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Agent,
    /// The agent channel and the harness socket.
    Harness,
}

type CaseFuture<'a> = Pin<Box<dyn Future<Output = Result<(), Problem>> + 'a>>;

/// One named check.
pub struct Case {
    pub name: &'static str,
    pub needs: Needs,
    run: for<'a> fn(&'a Ctx) -> CaseFuture<'a>,
}

macro_rules! case {
    ($name:literal, $needs:ident, $f:path) => {
        Case {
            name: $name,
            needs: Needs::$needs,
            run: |ctx| Box::pin($f(ctx)),
        }
    };
}

/// Every case, in the order they run; `docs/protocol.md` maps each rule to these names.
#[rustfmt::skip]
pub const CASES: &[Case] = &[
    case!("health-serving", Agent, services::health_serving),
    case!("reflection-lists-services", Agent, services::reflection_lists_services),
    case!("harness-channel-serves-catalog-health-reflection", Harness, services::harness_channel_services),
    case!("catalog-tasks-valid", Agent, catalog::tasks_valid),
    case!("spec-matches-catalog", Agent, catalog::spec_matches_catalog),
    case!("handles-are-prefixed-random", Agent, catalog::handles_are_prefixed_random),
    case!("observations-in-space", Agent, practice::observations_in_space),
    case!("info-map-keys", Agent, practice::info_map_keys),
    case!("episodes-end-by-termination-or-max-steps", Agent, practice::episodes_end),
    case!("step-after-episode-end-refused", Agent, practice::step_after_episode_end),
    case!("step-before-reset-refused", Agent, practice::step_before_reset),
    case!("reset-deterministic-for-seed", Agent, practice::reset_deterministic),
    case!("reset-without-seed-draws-one", Agent, practice::reset_without_seed),
    case!("action-wrong-dtype-rejected", Agent, actions::wrong_dtype),
    case!("action-wrong-shape-rejected", Agent, actions::wrong_shape),
    case!("action-out-of-bounds-rejected", Agent, actions::out_of_bounds),
    case!("action-nan-rejected", Agent, actions::nan),
    case!("action-malformed-tensor-rejected", Agent, actions::malformed_tensor),
    case!("message-over-4mib-refused", Agent, actions::oversized_message),
    case!("unknown-handle-not-found", Agent, practice::unknown_handle),
    case!("unknown-task-not-found", Agent, practice::unknown_task),
    case!("unknown-batch-not-found", Agent, practice::unknown_batch),
    case!("practice-cap-per-connection", Agent, practice::cap_per_connection),
    case!("vector-env-batched", Agent, vector::batched),
    case!("vector-bad-action-steps-nothing", Agent, vector::bad_action_steps_nothing),
    case!("vector-disabled-autoreset-refuses-ended", Agent, vector::disabled_mode_refuses_ended),
    case!("vector-official-refused", Harness, vector::official_refused),
    case!("agent-cannot-create-official", Agent, privilege::cannot_create_official),
    case!("agent-cannot-read-results", Agent, privilege::cannot_read_results),
    case!("agent-cannot-end-sessions", Harness, privilege::cannot_end_sessions),
    case!("official-env-handed-to-agent", Harness, privilege::official_env_handed_to_agent),
    case!("unknown-session-not-found", Harness, privilege::unknown_session),
    case!("session-needs-official-env", Agent, session::needs_official_env),
    case!("official-env-needs-session", Harness, session::official_env_needs_session),
    case!("session-starts-once", Harness, session::starts_once),
    case!("session-ignores-seeds", Harness, session::ignores_seeds),
    case!("session-mid-episode-reset-aborts", Harness, session::mid_episode_reset_aborts),
    case!("session-completes", Harness, session::completes),
    case!("session-ended-by-harness", Harness, session::ended_by_harness),
    case!("session-step-budget", Harness, session::step_budget),
    case!("session-time-budget", Harness, session::time_budget),
    case!("batch-submit-practice-env-refused", Agent, batch::submit_practice_env),
    case!("batch-submit-interactive-official-refused", Harness, batch::submit_interactive_official),
    case!("batch-official-refuses-reset-step", Harness, batch::official_refuses_reset_step),
    case!("batch-second-submission-refused", Harness, batch::second_submission),
    case!("batch-run-reports-status", Harness, batch::run_reports_status),
    case!("trajectory-verifies", Harness, records::trajectory_verifies),
    case!("state-dir-private", Harness, records::state_dir_private),
];

/// How long one case may take before it is failed as hung.
const CASE_TIMEOUT: Duration = Duration::from_secs(180);

/// What every case may use: the endpoints, the catalog as first read, and practice episodes
/// played once for the cases that examine them.
pub(crate) struct Ctx {
    endpoint: String,
    harness_endpoint: Option<String>,
    harness_socket: Option<PathBuf>,
    /// The catalog, or why it could not be read.
    catalog: Result<Vec<TaskSpec>, String>,
    episodes: OnceCell<Vec<practice::Played>>,
}

impl Ctx {
    /// A new connection to the agent channel.
    async fn agent(&self) -> Result<Client, Problem> {
        Client::connect(&self.endpoint)
            .await
            .map_err(|e| Problem::fail("a connection to the agent channel", e))
    }

    /// A new connection to the harness channel.
    async fn harness(&self) -> Result<Client, Problem> {
        let endpoint = self
            .harness_endpoint
            .as_ref()
            .ok_or_else(|| Problem::Skip(NO_HARNESS.into()))?;
        Client::connect(endpoint)
            .await
            .map_err(|e| Problem::fail("a connection to the harness channel", e))
    }

    /// The tasks `ListTasks` answered with.
    fn tasks(&self) -> Result<&[TaskSpec], Problem> {
        match &self.catalog {
            Ok(tasks) if !tasks.is_empty() => Ok(tasks),
            Ok(_) => Err(Problem::fail("ListTasks to name a task", "none")),
            Err(e) => Err(Problem::fail("ListTasks to answer", e)),
        }
    }

    /// One seeded practice episode of every task, played the first time a case asks.
    async fn episodes(&self) -> Result<&[practice::Played], Problem> {
        let tasks = self.tasks()?;
        Ok(self
            .episodes
            .get_or_init(|| practice::play_all(&self.endpoint, tasks))
            .await)
    }

    /// The first task of the catalog `accept` takes, [`PREFERRED_TASK`] if it does.
    fn task_where(&self, accept: impl Fn(&TaskSpec) -> bool) -> Result<Option<&TaskSpec>, Problem> {
        let tasks = self.tasks()?;
        Ok(tasks
            .iter()
            .find(|t| t.id == PREFERRED_TASK && accept(t))
            .or_else(|| tasks.iter().find(|t| accept(t))))
    }
}

/// The task cases use when any would do and it is there (ours: episodes end within tens of
/// random steps).
const PREFERRED_TASK: &str = "cartpole-balance";

const NO_HARNESS: &str = "needs the harness channel: pass --harness-socket PATH";

/// Runs every case against `options`' endpoints, handing each report to `report` as it ends.
pub async fn run(
    options: &Options,
    mut report: impl FnMut(&CaseReport),
) -> Result<Summary, ConformanceError> {
    let agent = Client::connect(&options.endpoint)
        .await
        .map_err(ConformanceError::Connect)?;
    let harness_endpoint = options
        .harness_socket
        .as_ref()
        .map(|path| format!("unix://{}", path.display()));
    if let Some(endpoint) = &harness_endpoint {
        Client::connect(endpoint)
            .await
            .map_err(ConformanceError::Connect)?;
    }
    let ctx = Ctx {
        endpoint: options.endpoint.clone(),
        harness_endpoint,
        harness_socket: options.harness_socket.clone(),
        catalog: agent.list_tasks().await.map_err(|e| e.to_string()),
        episodes: OnceCell::new(),
    };
    drop(agent);
    let mut summary = Summary::default();
    for case in CASES {
        let verdict = if case.needs == Needs::Harness && ctx.harness_endpoint.is_none() {
            Verdict::Skipped(NO_HARNESS.into())
        } else {
            match tokio::time::timeout(CASE_TIMEOUT, (case.run)(&ctx)).await {
                Ok(Ok(())) => Verdict::Passed,
                Ok(Err(Problem::Fail { expected, got })) => {
                    Verdict::Failed(format!("expected {expected}; got {got}"))
                }
                Ok(Err(Problem::Skip(why))) => Verdict::Skipped(why),
                Err(_) => Verdict::Failed(format!(
                    "expected the case to finish within {} s; got no end",
                    CASE_TIMEOUT.as_secs()
                )),
            }
        };
        match verdict {
            Verdict::Passed => summary.passed += 1,
            Verdict::Failed(_) => summary.failed += 1,
            Verdict::Skipped(_) => summary.skipped += 1,
        }
        report(&CaseReport {
            name: case.name,
            verdict,
        });
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_names_are_unique_and_each_is_in_the_protocol_table() {
        let doc = include_str!("../../../docs/protocol.md");
        let mut seen = std::collections::HashSet::new();
        for case in CASES {
            assert!(seen.insert(case.name), "{} twice", case.name);
            assert!(
                doc.contains(&format!("`{}`", case.name)),
                "docs/protocol.md does not map a rule to {}",
                case.name
            );
        }
    }

    #[test]
    fn reports_read_as_the_cli_prints_them() {
        let failed = CaseReport {
            name: "step-before-reset-refused",
            verdict: Verdict::Failed("expected FAILED_PRECONDITION; got OK".into()),
        };
        assert_eq!(
            failed.to_string(),
            "FAIL  step-before-reset-refused: expected FAILED_PRECONDITION; got OK"
        );
        let summary = Summary {
            passed: 3,
            failed: 0,
            skipped: 2,
        };
        assert_eq!(summary.to_string(), "3 passed, 0 failed, 2 skipped");
        assert!(summary.is_success());
    }
}
