//! The eval view: choose an agent, start an official run (a separate `ale harness run`
//! process), follow its progress, read its report.

use ale_harness::report::Report;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Chart, Dataset, Gauge, GraphType, List, ListItem, ListState, Paragraph, Wrap,
};

use super::{block, bounds, themed_chart};
use crate::console::app::{App, EvalRun};
use crate::console::theme::Theme;

pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme();
    let left_width = (area.width / 3).clamp(28, 44);
    let [left, right] =
        Layout::horizontal([Constraint::Length(left_width), Constraint::Min(0)]).areas(area);
    draw_setup(frame, app, theme, left);
    match &app.eval.run {
        None => frame.render_widget(
            Paragraph::new(vec![
                Line::styled("An official run", theme.accent()),
                Line::raw(""),
                Line::raw("Enter starts `ale harness run` as a separate process: it creates the official env over the evaluator's private socket, launches the agent with the env's handle, and reports the authoritative result. This console only shows what the harness reports."),
                Line::raw(""),
                Line::styled("← → change the task, ↑ ↓ the agent; Enter starts.", theme.muted()),
            ])
            .wrap(Wrap { trim: false })
            .block(block(" Official evaluation ", theme, false)),
            right,
        ),
        Some(run) => draw_run(frame, run, theme, right),
    }
}

fn draw_setup(frame: &mut Frame, app: &App, theme: &Theme, area: Rect) {
    let task = app
        .selected_task()
        .map_or("(none: pick one in Tasks)".to_string(), |t| t.id.clone());
    let [task_area, agents] =
        Layout::vertical([Constraint::Length(3), Constraint::Min(0)]).areas(area);
    frame.render_widget(
        Paragraph::new(Line::styled(task, theme.accent())).block(block(" Task ←→ ", theme, false)),
        task_area,
    );
    let command = if app.eval.command.is_empty() && !app.eval.editing {
        "command: (c to type one)".to_string()
    } else {
        format!(
            "command: {}{}",
            app.eval.command,
            if app.eval.editing { "▏" } else { "" }
        )
    };
    let items = vec![
        ListItem::new("built-in heuristic policy"),
        ListItem::new("built-in random policy"),
        ListItem::new(command),
    ];
    let list = List::new(items)
        .block(block(" Agent ", theme, true))
        .highlight_style(theme.selected())
        .highlight_symbol("▸ ");
    let mut state = ListState::default().with_selected(Some(app.eval.choice));
    frame.render_stateful_widget(list, agents, &mut state);
}

fn draw_run(frame: &mut Frame, run: &EvalRun, theme: &Theme, area: Rect) {
    let status = match (&run.finished, &run.report, run.cancelled) {
        (_, Some(_), _) => Span::styled("finished", Style::default().fg(theme.ok)),
        (Some(_), None, true) => Span::styled("cancelled", Style::default().fg(theme.warn)),
        (Some((_, why)), None, false) => {
            Span::styled(format!("failed ({why})"), Style::default().fg(theme.error))
        }
        (None, _, true) => Span::styled("cancelling…", Style::default().fg(theme.warn)),
        (None, _, false) => Span::styled("running", Style::default().fg(theme.accent)),
    };
    let agent = match &run.agent {
        crate::console::app::AgentChoice::Policy(kind) => kind.name().to_string(),
        crate::console::app::AgentChoice::Command(c) => {
            c.split_whitespace().next().unwrap_or("command").to_string()
        }
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
            .filter(|e| e.outcome != ale_proto::records::Outcome::NotRun)
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

/// The per-rollout metric as bars, the running mean and the target.
pub fn draw_metrics_chart(
    frame: &mut Frame,
    metrics: &[f64],
    target: f64,
    theme: &Theme,
    area: Rect,
) {
    let bars: Vec<(f64, f64)> = metrics
        .iter()
        .enumerate()
        .map(|(i, m)| (i as f64 + 1.0, *m))
        .collect();
    let mut sum = 0.0;
    let mean: Vec<(f64, f64)> = metrics
        .iter()
        .enumerate()
        .map(|(i, m)| {
            sum += m;
            (i as f64 + 1.0, sum / (i + 1) as f64)
        })
        .collect();
    let n = metrics.len().max(1) as f64 + 1.0;
    let target_line = if target.is_finite() {
        vec![(0.0, target), (n, target)]
    } else {
        Vec::new()
    };
    let y = bounds(
        metrics
            .iter()
            .copied()
            .chain([0.0])
            .chain(target_line.iter().map(|p| p.1)),
    );
    let datasets = vec![
        Dataset::default()
            .graph_type(GraphType::Bar)
            .marker(Marker::Braille)
            .style(Style::default().fg(theme.bar_completed))
            .data(&bars),
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(theme.chart_mean))
            .data(&mean),
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(theme.chart_target))
            .data(&target_line),
    ];
    let chart = themed_chart(Chart::new(datasets), theme, n, y, 0);
    frame.render_widget(chart, area);
}

/// The report's essentials, for the eval and runs views.
pub fn report_lines<'a>(report: &Report, theme: &Theme) -> Vec<Line<'a>> {
    let s = &report.score;
    let mut lines = vec![
        Line::from(vec![
            Span::styled("score ", theme.muted()),
            Span::styled(format!("{:.4}", s.score), theme.accent()),
            Span::styled(
                format!("   status {:?}", report.status).to_lowercase(),
                theme.muted(),
            ),
        ]),
        Line::raw(format!(
            "{} = {:.4}, target {} → ratio {:.4}, capped at {} → {:.4}",
            s.metric_name, report.value, s.target, s.ratio, s.cap, s.capped
        )),
    ];
    for p in &s.penalties {
        lines.push(Line::raw(format!(
            "safety {} = {} → {}",
            p.name,
            p.value,
            if p.applied {
                format!("× {}", p.penalty_factor)
            } else {
                "no penalty".into()
            }
        )));
    }
    if s.faithfulness.required {
        lines.push(Line::raw(format!(
            "faithfulness: {} ({})",
            if s.faithfulness.passed {
                "passed"
            } else {
                "failed"
            },
            s.faithfulness.reason
        )));
    }
    if let Some(why) = &s.zeroed_because {
        lines.push(Line::styled(
            format!("score 0: {why}"),
            Style::default().fg(theme.error),
        ));
    }
    lines.push(Line::styled(report.status_message.clone(), theme.muted()));
    lines.push(Line::styled(
        format!("agent {}", report.sandbox.describe()),
        if report.sandbox.warning().is_some() {
            Style::default().fg(theme.error)
        } else {
            theme.muted()
        },
    ));
    let verified = if report.trajectory.verified {
        "verified"
    } else {
        "NOT verified"
    };
    lines.push(Line::from(vec![
        Span::styled("trajectory ", theme.muted()),
        Span::styled(
            verified.to_string(),
            Style::default().fg(if report.trajectory.verified {
                theme.ok
            } else {
                theme.error
            }),
        ),
        Span::raw(format!(
            " · {} events · head {}…",
            report.trajectory.events,
            &report.trajectory.head[..report.trajectory.head.len().min(16)]
        )),
    ]));
    let commitments: Vec<String> = report
        .seed_commitments
        .iter()
        .take(3)
        .map(|c| format!("{}…", &c[..c.len().min(12)]))
        .collect();
    lines.push(Line::from(vec![
        Span::styled("seed commitments ", theme.muted()),
        Span::raw(format!(
            "{} (of {})",
            commitments.join(" "),
            report.seed_commitments.len()
        )),
    ]));
    lines
}
