//! `ale harness run`: an official evaluation, its pre-flight checks, its progress and its
//! summary.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use ale_harness::agent::AgentOutput;
use ale_harness::preflight::Verdict;
use ale_harness::progress::{ProgressEvent, RunProgress};
use ale_harness::report::{Report, RunEnding};
use ale_harness::run::RunLabels;
use ale_harness::{Progress, RunOptions, run_batch, run_interactive};
use ale_proto::eval::Outcome;
use anyhow::{Context, bail};

use super::{ProgressStyle, RunArgs, print_table};

/// The command line of a built-in agent: this executable's `agent` subcommand.
pub fn builtin_agent(policy: &str) -> anyhow::Result<Vec<String>> {
    let exe = std::env::current_exe().context("cannot find the ale executable")?;
    Ok(vec![
        exe.to_string_lossy().to_string(),
        "agent".into(),
        "--policy".into(),
        policy.into(),
    ])
}

pub(super) fn run_official(args: RunArgs) -> anyhow::Result<ExitCode> {
    let agent_command = match (&args.policy, args.agent.is_empty(), &args.submission) {
        (_, _, Some(_)) => Vec::new(),
        (Some(policy), _, None) => builtin_agent(policy)?,
        (None, false, None) => args.agent.clone(),
        (None, true, None) => bail!(
            "give an agent: --policy random|heuristic, or a command after `--` \
             (a batch task: --submission DIR)"
        ),
    };
    let state_dir = match &args.harness_socket {
        Some(socket) => {
            anyhow::ensure!(
                socket
                    .file_name()
                    .is_some_and(|n| n == ale_records::layout::HARNESS_SOCKET),
                "{} is not an evaluator's harness socket (expected a path ending in {})",
                socket.display(),
                ale_records::layout::HARNESS_SOCKET
            );
            socket.parent().map(Path::to_path_buf).unwrap_or_default()
        }
        None => args.state_dir.resolve(),
    };
    let display = ProgressDisplay::new(args.progress);
    let options = RunOptions {
        task_id: args.task.clone(),
        state_dir,
        ale_exe: std::env::current_exe().context("cannot find the ale executable")?,
        endpoint: args.endpoint.clone(),
        agent_command,
        submission: args.submission.clone(),
        poll_interval: Duration::from_millis(100),
        faithfulness: args.faithfulness.clone(),
        sandbox: args.sandbox.options(),
        labels: RunLabels {
            name: args.name.clone(),
            tags: args.tags.clone(),
        },
        builtin_policy: args.policy.clone(),
        seed_set: args.seed_set.clone(),
        // A bar redrawn in place would be broken by the agent's lines: they go to agent.log.
        agent_output: if display.bar {
            AgentOutput::LogOnly
        } else {
            AgentOutput::Echoed
        },
        tasks_dir: args.tasks_dir.clone(),
    };
    let mut preflight = ale_harness::preflight::check(&options);
    preflight.checks.insert(
        0,
        task_check(&args.task, args.tasks_dir.as_deref(), &options.state_dir),
    );
    if args.dry_run {
        println!(
            "Dry run of {} (nothing started, nothing recorded)",
            args.task
        );
        let rows: Vec<(String, String)> = preflight
            .checks
            .iter()
            .map(|c| (c.what.clone(), format!("{}: {}", c.verdict, c.detail)))
            .collect();
        print_table(&rows);
        return Ok(if preflight.is_fine() {
            println!("Every check passed.");
            ExitCode::SUCCESS
        } else {
            println!("Fix the checks above that are not ok before the run.");
            ExitCode::FAILURE
        });
    }
    if let Some(failed) = preflight
        .checks
        .iter()
        .find(|c| c.what == "task" && c.verdict == Verdict::Failed)
    {
        bail!("{}", failed.detail);
    }
    // The agent runs anyway (a path may be meant for its own /tmp); the operator is told.
    for warning in preflight.warnings() {
        eprintln!("warning: {}", warning.detail);
    }
    let mut display = display;
    let rt = crate::cli::runtime(1)?;
    // Ctrl-C or SIGTERM (the console's cancel) abandons the run: dropping it kills the agent's
    // process group and any evaluator this harness started.
    let report = rt.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        tokio::select! {
            report = async {
                if options.submission.is_some() {
                    run_batch(&options, |p| display.update(p)).await
                } else {
                    run_interactive(&options, |p| display.update(p)).await
                }
            } => Ok(report?),
            _ = tokio::signal::ctrl_c() => bail!("cancelled; the agent was stopped"),
            _ = term.recv() => bail!("cancelled; the agent was stopped"),
        }
    })?;
    display.finish();
    let run_dir = ale_records::layout::run_dir(&options.state_dir, &report.run_id);
    if args.progress == ProgressStyle::Json {
        let event = ProgressEvent::Report {
            run_dir: run_dir.clone(),
            report: Box::new(report.clone()),
        };
        println!("{}", event.to_line());
    } else {
        print_summary(&report, &run_dir);
    }
    let ending = report.ending();
    if ending != RunEnding::Played && args.progress != ProgressStyle::Json {
        eprintln!("error: {ending} (exit code {})", ending.exit_code());
    }
    Ok(ExitCode::from(ending.exit_code()))
}

/// Whether `task` is one the evaluator will have: a built-in task, or one in `tasks_dir`
/// (which must load). An evaluator already serving the state dir has the tasks it was started
/// with: a task this binary does not know is left to it (the run itself finds out).
fn task_check(
    task: &str,
    tasks_dir: Option<&Path>,
    state_dir: &Path,
) -> ale_harness::preflight::Check {
    use ale_harness::preflight::Check;
    let catalog = crate::sim_catalog();
    let (registry, source) = match tasks_dir {
        Some(dir) => (
            ale_server::TaskRegistry::with_dir(dir, catalog),
            format!("the built-in tasks and {}", dir.display()),
        ),
        None => (
            ale_server::TaskRegistry::builtin(catalog),
            "the built-in tasks".to_string(),
        ),
    };
    let (verdict, detail) = match registry {
        Err(e) => (Verdict::Failed, format!("cannot load {source}: {e:#}")),
        Ok(registry) if registry.get(task).is_some() => {
            (Verdict::Ok, format!("{task}, one of {source}"))
        }
        Ok(_)
            if ale_harness::evaluator_process::socket_is_live(
                &ale_records::layout::harness_socket(state_dir),
            ) =>
        {
            (
                Verdict::Ok,
                format!(
                    "{task}: not one of {source}; the evaluator serving {} has its own tasks",
                    state_dir.display()
                ),
            )
        }
        Ok(registry) => {
            let ids = registry.ids();
            (
                Verdict::Failed,
                format!(
                    "no task {task} in {source}; the tasks are: {} (an evaluator already \
                     serving the state dir may have others)",
                    ids.join(", ")
                ),
            )
        }
    };
    Check {
        what: "task".into(),
        verdict,
        detail,
    }
}

/// Shows a run's progress as the chosen style.
struct ProgressDisplay {
    style: ProgressStyle,
    bar: bool,
    announced: usize,
}

impl ProgressDisplay {
    fn new(style: ProgressStyle) -> Self {
        ProgressDisplay {
            style,
            bar: style == ProgressStyle::Auto && std::io::stderr().is_terminal(),
            announced: 0,
        }
    }

    fn update(&mut self, p: Progress<'_>) {
        let r = p.result;
        let done = r.episodes.iter().filter(|e| e.outcome.is_played()).count();
        let current = r.episodes.iter().find(|e| e.outcome == Outcome::InProgress);
        match self.style {
            ProgressStyle::None => {}
            ProgressStyle::Json => {
                let line = ProgressEvent::Progress(RunProgress::from(&p)).to_line();
                println!("{line}");
                let _ = std::io::stdout().flush();
            }
            ProgressStyle::Auto if self.bar => {
                let planned = r.episodes.len().max(1);
                let width = 24;
                let filled = done * width / planned;
                let current = current.map_or(String::new(), |e| {
                    format!(" · current return {:.1}", e.episode_return)
                });
                eprint!(
                    "\r{} [{}{}] {done}/{planned}{current} · mean {:.2} · {:.1} s   ",
                    p.task.id,
                    "█".repeat(filled),
                    "░".repeat(width - filled),
                    r.value,
                    p.elapsed.as_secs_f64()
                );
            }
            ProgressStyle::Auto => {
                for e in r
                    .episodes
                    .iter()
                    .filter(|e| e.outcome.is_played())
                    .skip(self.announced)
                {
                    eprintln!(
                        "rollout {}/{}: {:?}, {} = {:.2} in {} steps",
                        e.index + 1,
                        r.episodes.len(),
                        e.outcome,
                        r.metric_name,
                        e.metric,
                        e.steps
                    );
                }
                self.announced = done;
            }
        }
    }

    fn finish(&self) {
        if self.bar {
            eprintln!();
        }
    }
}

fn print_summary(report: &Report, run_dir: &Path) {
    let count = |o: Outcome| report.episodes.iter().filter(|e| e.outcome == o).count();
    let mut rows = vec![("run".to_string(), report.run_id.to_string())];
    if let Some(name) = &report.name {
        rows.push(("name".into(), name.clone()));
    }
    if !report.tags.is_empty() {
        rows.push(("tags".into(), report.tags.join(", ")));
    }
    if let Some(set) = &report.seed_set {
        rows.push((
            "seed set".into(),
            format!("{} · commitment {}", set.name, set.commitment),
        ));
    }
    rows.extend([
        (
            "task".into(),
            format!("{} — {}", report.task.id, report.task.title),
        ),
        (
            "status".into(),
            format!("{} — {}", report.status, report.status_message),
        ),
        (
            "agent".into(),
            format!("{} ({})", report.agent.command.join(" "), report.agent.exit),
        ),
        ("sandbox".into(), report.sandbox.describe()),
    ]);
    if let Some(limits) = report.sandbox.describe_limits() {
        rows.push(("limits".into(), limits));
    }
    let sim_faults = match count(Outcome::SimFault) {
        0 => String::new(),
        n => format!(", {n} ended by the sim's fault"),
    };
    rows.extend([(
        "rollouts".into(),
        format!(
            "{} completed, {} aborted, {} over budget, {} not run{sim_faults} · {} steps",
            count(Outcome::Completed),
            count(Outcome::Aborted),
            count(Outcome::BudgetExceeded),
            count(Outcome::NotRun),
            report.total_steps
        ),
    )]);
    rows.extend(report.score.lines());
    rows.extend(report.statistics_lines());
    rows.push((
        "trajectory".into(),
        format!(
            "verified · {} events · head {}",
            report.trajectory.events, report.trajectory.head
        ),
    ));
    rows.push((
        "report".into(),
        run_dir
            .join(ale_records::layout::REPORT_FILE)
            .display()
            .to_string(),
    ));
    if !report.agent.command.is_empty() {
        rows.push((
            "agent log".into(),
            run_dir
                .join(ale_records::layout::AGENT_LOG_FILE)
                .display()
                .to_string(),
        ));
    }
    rows.push((
        "plots".into(),
        run_dir
            .join(ale_harness::plot::PLOT_FILES[0])
            .display()
            .to_string(),
    ));
    println!("Official run");
    print_table(&rows);
}
