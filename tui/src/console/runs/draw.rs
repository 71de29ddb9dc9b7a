//! Draws the runs view: the list of past runs, with the marks for comparison; the open one's
//! report, plot and verification; or, in their place, the comparison of two runs.

use ale_harness::leaderboard::Leaderboard;
use ale_harness::runs::RunSummary;
use ale_harness::stats::Interval;
use ale_harness::verify::RunVerification;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph, Wrap};

use super::Runs;
use crate::console::theme::Theme;
use crate::console::widgets::{block, draw_metrics_chart, report_lines};

pub fn draw(frame: &mut Frame, runs: &Runs, theme: &Theme, area: Rect) {
    if let Some(both) = &runs.comparison {
        super::compare::draw(frame, both, theme, area);
        return;
    }
    if let Some(board) = &runs.leaderboard {
        draw_leaderboard(frame, board, theme, area);
        return;
    }
    let items: Vec<ListItem> = runs
        .entries
        .iter()
        .map(|r| {
            let (task, score) = match &r.summary {
                RunSummary::Reported(report) => (
                    report.task.id.clone(),
                    match &report.statistics {
                        Some(s) => {
                            format!("{:.3} ±{:.3}", report.score.score, s.score_ci.half_width())
                        }
                        None => format!("{:.3}", report.score.score),
                    },
                ),
                RunSummary::Unreported { task_id, status } => (task_id.clone(), status.clone()),
                RunSummary::Unreadable(_) => ("?".into(), "unreadable".into()),
            };
            let mark = match runs.mark_of(&r.dir) {
                Some(side) => Span::styled(format!("{side} "), side_style(side, theme)),
                None => Span::raw("  "),
            };
            ListItem::new(Line::from(vec![
                mark,
                Span::styled(
                    format!(
                        "{} ",
                        ale_proto::RunId::from_wire(r.run_id.as_str()).short()
                    ),
                    theme.muted(),
                ),
                Span::raw(format!("{task} ")),
                Span::styled(score, theme.accent()),
            ]))
        })
        .collect();
    // Wide enough for its rows (borders and the cursor's column besides), within half the
    // screen; never under 30 columns, nor over 60.
    let widest = items.iter().map(ListItem::width).max().unwrap_or(0) as u16;
    let list_width = (widest + 4)
        .max(area.width * 2 / 5)
        .min(area.width / 2)
        .clamp(30, 60);
    let [left, right] =
        Layout::horizontal([Constraint::Length(list_width), Constraint::Min(0)]).areas(area);
    let empty = items.is_empty();
    let list = List::new(items)
        .block(block(
            format!(" Runs ({}) ", runs.entries.len()),
            theme,
            true,
        ))
        .highlight_style(theme.selected())
        .highlight_symbol("▸ ");
    let mut state = ListState::default().with_selected((!empty).then_some(runs.cursor));
    frame.render_stateful_widget(list, left, &mut state);

    let Some(entry) = runs.open.and_then(|i| runs.entries.get(i)) else {
        let hint = match &runs.error {
            // An error is read in full, so it wraps.
            Some(why) => {
                Paragraph::new(Line::styled(why.clone(), Style::default().fg(theme.error)))
                    .wrap(Wrap { trim: false })
            }
            None if empty => Paragraph::new(Line::styled(
                "No runs yet: start one in the eval view (3), or run `ale demo`.",
                theme.muted(),
            )),
            None => Paragraph::new(vec![
                Line::styled("Enter opens the selected run.", theme.muted()),
                Line::styled(
                    "To compare two runs of one task side by side, press m on each, then c: \
                     the run marked 1 is shown on the left, 2 on the right.",
                    theme.muted(),
                ),
                Line::styled(
                    "b shows the leaderboard of the selected run's task: each agent's best \
                     verified run.",
                    theme.muted(),
                ),
            ])
            .wrap(Wrap { trim: false }),
        };
        frame.render_widget(hint.block(block(" Run ", theme, false)), right);
        return;
    };
    let outer = block(format!(" {} ", entry.run_id), theme, false);
    let inner = outer.inner(right);
    frame.render_widget(outer, right);
    match &entry.summary {
        RunSummary::Reported(report) => {
            let [chart, text] =
                Layout::vertical([Constraint::Percentage(45), Constraint::Min(0)]).areas(inner);
            let metrics: Vec<f64> = report
                .episodes
                .iter()
                .filter(|e| e.outcome.is_played())
                .map(|e| e.metric)
                .collect();
            draw_metrics_chart(frame, &metrics, report.score.target, theme, chart);
            let mut lines = vec![Line::styled(
                format!("{} — {}", report.task.id, report.task.title),
                theme.accent(),
            )];
            lines.extend(report_lines(report, theme));
            if let Some(v) = &runs.verification
                && v.run_dir == entry.dir
            {
                lines.extend(verification_lines(&v.result, theme));
            }
            frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), text);
        }
        RunSummary::Unreported { task_id, status } => frame.render_widget(
            Paragraph::new(format!(
                "{task_id}: {status}; the harness wrote no report for this run."
            )),
            inner,
        ),
        RunSummary::Unreadable(why) => frame.render_widget(Paragraph::new(why.clone()), inner),
    }
}

/// A task's leaderboard: each agent's best verified run, best first, with the score's and the
/// metric's 95% intervals; below it, the runs left out because their records do not verify.
fn draw_leaderboard(frame: &mut Frame, board: &Leaderboard, theme: &Theme, area: Rect) {
    let ci = |c: Option<Interval>| {
        c.map_or(String::new(), |c| format!(" [{:.3}, {:.3}]", c.low, c.high))
    };
    let mut lines = vec![Line::styled(
        format!(
            "{:>2}  {:<24} {:<24} {:<30} {:>8}  {}",
            "#", "agent", "score [95%]", "metric [95%]", "rollouts", "best run"
        ),
        theme.muted(),
    )];
    if board.standings.is_empty() {
        lines.push(Line::styled(
            format!("no verified run of {} yet", board.task),
            theme.muted(),
        ));
    }
    for s in &board.standings {
        let agent = match &s.seed_set {
            Some(set) => format!("{} · {set}", s.agent),
            None => s.agent.clone(),
        };
        let agent: String = agent.chars().take(24).collect();
        lines.push(Line::from(vec![
            Span::raw(format!("{:>2}  {agent:<24} ", s.rank)),
            Span::styled(
                format!("{:<24} ", format!("{:.3}{}", s.score, ci(s.score_ci))),
                theme.accent(),
            ),
            Span::raw(format!(
                "{:<30} {:>8}  ",
                format!("{:.3}{}", s.value, ci(s.value_ci)),
                s.rollouts
            )),
            Span::styled(
                ale_proto::RunId::from_wire(s.run_id.as_str())
                    .short()
                    .to_string(),
                theme.muted(),
            ),
        ]));
    }
    if !board.left_out.is_empty() {
        lines.push(Line::raw(""));
        lines.push(Line::styled(
            format!("left out, not ranked ({}):", board.left_out.len()),
            Style::default().fg(theme.error),
        ));
        for l in &board.left_out {
            lines.push(Line::styled(
                format!(
                    "  {} {}: {}",
                    ale_proto::RunId::from_wire(l.run_id.as_str()).short(),
                    l.agent,
                    l.reason
                ),
                Style::default().fg(theme.error),
            ));
        }
    }
    let title = format!(" Leaderboard · {} (verified runs only) ", board.task);
    frame.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(block(title, theme, true)),
        area,
    );
}

/// The colour of side `side` (1 or 2) of a comparison: its mark in the list, its title, its
/// bars.
pub(super) fn side_colour(side: usize, theme: &Theme) -> ratatui::style::Color {
    if side == 1 {
        theme.bar_completed
    } else {
        theme.chart_return
    }
}

pub(super) fn side_style(side: usize, theme: &Theme) -> Style {
    Style::default()
        .fg(side_colour(side, theme))
        .add_modifier(ratatui::style::Modifier::BOLD)
}

/// What `verify_run_dir` found, a line per record.
fn verification_lines<'a>(
    result: &Result<Box<RunVerification>, String>,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let v = match result {
        Err(why) => {
            return vec![
                Line::styled("verify: BROKEN", Style::default().fg(theme.error)),
                Line::styled(why.clone(), Style::default().fg(theme.error)),
            ];
        }
        Ok(v) => v,
    };
    let signed = |present: bool| {
        if present {
            "signature ok"
        } else {
            "not signed yet"
        }
    };
    let mut lines = vec![
        Line::styled("verify: ok", Style::default().fg(theme.ok)),
        Line::styled(
            format!(
                "  trajectory   {} events · evaluator {}",
                v.trajectory.events,
                signed(v.trajectory.signature.is_some())
            ),
            theme.muted(),
        ),
    ];
    if let Some(log) = &v.harness_log {
        lines.push(Line::styled(
            format!(
                "  harness log  {} events · harness {}",
                log.events,
                signed(log.is_signed())
            ),
            theme.muted(),
        ));
    }
    let agent = match v.sandbox() {
        Some(sandbox) => sandbox.describe(),
        None => "unverified: no signed harness log".into(),
    };
    lines.push(Line::styled(
        format!("  agent        {agent}"),
        theme.muted(),
    ));
    if v.report.is_some() {
        lines.push(Line::styled(
            "  report       agrees with the signed records",
            theme.muted(),
        ));
    }
    lines
}
