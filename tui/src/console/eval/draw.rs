//! Draws the eval view: the task and agent chosen, and the run's progress or report.

use ale_client::TaskMode;
use ale_client::policy::PolicyKind;
use ale_proto::TaskSpec;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Gauge, List, ListItem, ListState, Paragraph, Wrap};

use super::{Agent, AgentChoice, Eval, EvalRun};
use crate::console::app::InputMode;
use crate::console::theme::Theme;
use crate::console::widgets::{block, draw_metrics_chart, report_lines};

/// Draws `eval` for `task` (the tasks view's selection); `input` says what is being typed.
pub fn draw(
    frame: &mut Frame,
    eval: &Eval,
    task: Option<&TaskSpec>,
    input: InputMode,
    theme: &Theme,
    area: Rect,
) {
    let left_width = (area.width / 3).clamp(28, 44);
    let [left, right] =
        Layout::horizontal([Constraint::Length(left_width), Constraint::Min(0)]).areas(area);
    draw_setup(frame, eval, task, input, theme, left);
    let how = match task.map(|t| (t.mode, t.submission_contract.as_ref())) {
        Some((TaskMode::Batch, Some(contract))) => format!(
            "This is a batch task: the evaluator plays a policy file itself. With a policy folder (s), Enter starts `ale harness run --submission FOLDER` as a separate process: it hands FOLDER/{} ({}) to the evaluator, which rolls it out on hidden seeds, and reports the authoritative result. An agent command (c) runs in the harness's sandbox and submits the file itself.",
            contract.entrypoint, contract.format
        ),
        _ => "Enter starts `ale harness run` as a separate process: it creates the official env over the evaluator's private socket, launches the agent with the env's handle, and reports the authoritative result. This console only shows what the harness reports.".to_string(),
    };
    match &eval.run {
        None => frame.render_widget(
            Paragraph::new(vec![
                Line::styled("An official run", theme.accent()),
                Line::raw(""),
                Line::raw(how),
                Line::raw(""),
                Line::styled(
                    "← → change the task, ↑ ↓ the agent; Enter starts.",
                    theme.muted(),
                ),
            ])
            .wrap(Wrap { trim: false })
            .block(block(" Official evaluation ", theme, false)),
            right,
        ),
        Some(run) => draw_run(frame, run, theme, right),
    }
}

fn draw_setup(
    frame: &mut Frame,
    eval: &Eval,
    task: Option<&TaskSpec>,
    input: InputMode,
    theme: &Theme,
    area: Rect,
) {
    let mode = task.map_or(TaskMode::Interactive, |t| t.mode);
    let task = task.map_or("(none: pick one in Tasks)".to_string(), |t| t.id.clone());
    let [task_area, agents] =
        Layout::vertical([Constraint::Length(3), Constraint::Min(0)]).areas(area);
    frame.render_widget(
        Paragraph::new(Line::styled(task, theme.accent())).block(block(" Task ←→ ", theme, false)),
        task_area,
    );
    let typed = |label: &str, text: &str, key: char, editing: bool| {
        if text.is_empty() && !editing {
            format!("{label}: ({key} to type one)")
        } else {
            format!("{label}: {text}{}", if editing { "▏" } else { "" })
        }
    };
    let offered = AgentChoice::offered(mode);
    let items: Vec<ListItem> = offered
        .iter()
        .map(|choice| match choice {
            AgentChoice::Policy(PolicyKind::Heuristic) => {
                ListItem::new("built-in heuristic policy")
            }
            AgentChoice::Policy(PolicyKind::Random) => ListItem::new("built-in random policy"),
            AgentChoice::Command => ListItem::new(typed(
                "command",
                &eval.command,
                'c',
                input == InputMode::AgentCommand,
            )),
            AgentChoice::Submission => ListItem::new(typed(
                "policy folder",
                &eval.submission,
                's',
                input == InputMode::SubmissionDir,
            )),
        })
        .collect();
    let list = List::new(items)
        .block(block(" Agent ", theme, true))
        .highlight_style(theme.selected())
        .highlight_symbol("▸ ");
    let choice = eval.choice_for(mode);
    let selected = offered.iter().position(|c| *c == choice);
    let mut state = ListState::default().with_selected(selected);
    frame.render_stateful_widget(list, agents, &mut state);
}

fn draw_run(frame: &mut Frame, run: &EvalRun, theme: &Theme, area: Rect) {
    let status = match (&run.finished, &run.report, run.cancelled) {
        (_, Some(_), _) => Span::styled("finished", Style::default().fg(theme.ok)),
        (Some(_), None, true) => Span::styled("cancelled", Style::default().fg(theme.warn)),
        (Some(exit), None, false) => Span::styled(
            format!("failed ({})", exit.description),
            Style::default().fg(theme.error),
        ),
        (None, _, true) => Span::styled("cancelling…", Style::default().fg(theme.warn)),
        (None, _, false) => Span::styled("running", Style::default().fg(theme.accent)),
    };
    let agent = match &run.agent {
        Agent::Policy(kind) => kind.name().to_string(),
        Agent::Command(c) => c.split_whitespace().next().unwrap_or("command").to_string(),
        Agent::Submission(dir) => format!("submission {}", dir.display()),
    };
    let elapsed = match &run.report {
        Some(r) => r.timings.duration_seconds,
        None => run.started.elapsed().as_secs_f64(),
    };
    let title = Line::from(vec![
        Span::styled(format!(" {} · {agent} · ", run.task_id), theme.muted()),
        status,
        Span::styled(format!(" · {elapsed:>5.1} s "), theme.muted()),
    ]);
    let outer = block(title, theme, false);
    let inner = outer.inner(area);
    frame.render_widget(outer, area);

    let [gauge_area, chart_area, text_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Percentage(45),
        Constraint::Min(0),
    ])
    .areas(inner);
    let progress = run.progress.as_deref();
    let (done, planned) = progress.map_or((0, 0), |p| (p.done, p.planned));
    let ratio = if planned > 0 {
        (done as f64 / planned as f64).clamp(0.0, 1.0)
    } else {
        0.0
    };
    frame.render_widget(
        Gauge::default()
            .gauge_style(Style::default().fg(theme.accent).bg(theme.border))
            .ratio(ratio)
            .label(format!("{done}/{planned} rollouts")),
        gauge_area,
    );
    let metrics: Vec<f64> = match &run.report {
        Some(r) => r
            .episodes
            .iter()
            .filter(|e| e.outcome.is_played())
            .map(|e| e.metric)
            .collect(),
        None => progress
            .map(|p| p.episode_metrics.clone())
            .unwrap_or_default(),
    };
    let target = progress.map_or_else(
        || run.report.as_ref().map_or(f64::NAN, |r| r.score.target),
        |p| p.target.unwrap_or(f64::NAN),
    );
    draw_metrics_chart(frame, &metrics, target, theme, chart_area);

    let lines = match &run.report {
        Some(report) => report_lines(report, theme),
        None => {
            let mut lines = Vec::new();
            if let Some(p) = progress {
                if let Some(c) = p.current {
                    lines.push(Line::raw(format!(
                        "rollout {} · step {} · return {:.2}",
                        c.index + 1,
                        c.steps,
                        c.episode_return
                    )));
                }
                let budget_left = p.time_budget_seconds as f64 - p.elapsed_seconds;
                lines.push(Line::from(vec![
                    Span::styled("budgets left ", theme.muted()),
                    Span::raw(if p.max_total_steps > 0 {
                        format!("{} steps", p.max_total_steps.saturating_sub(p.total_steps))
                    } else {
                        "unlimited steps".into()
                    }),
                    Span::raw(format!(" · {:.0} s", budget_left.max(0.0))),
                ]));
                lines.push(Line::from(vec![
                    Span::styled("running mean ", theme.muted()),
                    Span::raw(format!("{:.3} (target {target})", p.value)),
                ]));
            } else {
                lines.push(Line::styled("starting the harness…", theme.muted()));
            }
            for line in run.output.iter().rev().take(4).rev() {
                lines.push(Line::styled(line.clone(), theme.muted()));
            }
            lines
        }
    };
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), text_area);
}
