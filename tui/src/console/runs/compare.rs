//! Draws the comparison of two runs of one task: a line naming the task, then the two runs side
//! by side, each with its status, its per-rollout chart (both charts on one scale), its score
//! breakdown, how its agent was confined, and what verifying its records found.

use ale_harness::compare::{Checked, ComparedRun, Comparison, RunReport};
use ale_harness::verify::{RunVerdict, RunVerification};
use ale_proto::eval::Outcome;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::draw::{side_colour, side_style};
use crate::console::theme::Theme;
use crate::console::widgets::{MetricsAxes, RolloutBar, block, draw_rollouts_chart, field};

pub fn draw(frame: &mut Frame, both: &Comparison, theme: &Theme, area: Rect) {
    let [top, columns] = Layout::vertical([Constraint::Length(2), Constraint::Min(0)]).areas(area);
    frame.render_widget(
        Paragraph::new(vec![task_line(both, theme), difference_line(both, theme)]),
        top,
    );
    let halves: [Rect; 2] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(columns);
    let sides: Vec<Column> = both
        .sides()
        .into_iter()
        .enumerate()
        .map(|(i, side)| Column {
            number: i + 1,
            side,
            bars: rollout_bars(side),
            text: text_lines(side, theme),
        })
        .collect();
    let axes = MetricsAxes::fitting(
        sides
            .iter()
            .map(|c| (c.bars.as_slice(), c.side.plot.target)),
    );
    // Both columns are laid out alike, so their charts are as tall as each other: the text
    // takes the rows the longer one needs, the charts the rest (at least a few).
    let width = halves[0].width.saturating_sub(2).max(1);
    let text_rows = sides
        .iter()
        .map(|c| {
            c.text
                .iter()
                .map(|l| (l.width() as u16).div_ceil(width).max(1))
                .sum::<u16>()
        })
        .max()
        .unwrap_or(0);
    for (column, area) in sides.into_iter().zip(halves) {
        column.draw(frame, axes, text_rows, theme, area);
    }
}

/// One run's column.
struct Column<'a> {
    /// 1 (left) or 2 (right), as its mark in the list.
    number: usize,
    side: &'a ComparedRun,
    bars: Vec<RolloutBar>,
    /// What is drawn under the chart.
    text: Vec<Line<'a>>,
}

impl Column<'_> {
    fn draw(self, frame: &mut Frame, axes: MetricsAxes, text_rows: u16, theme: &Theme, area: Rect) {
        let title = Line::from(vec![
            Span::styled(format!(" {} ", self.number), side_style(self.number, theme)),
            Span::raw(format!("{} ", self.side.run_id())),
        ]);
        let outer = block(title, theme, false);
        let inner = outer.inner(area);
        frame.render_widget(outer, area);
        let [head, chart, text] = Layout::vertical([
            Constraint::Length(2),
            Constraint::Min(MIN_CHART_ROWS),
            Constraint::Length(text_rows),
        ])
        .areas(inner);
        // Cut rather than wrapped, so the agent's line is never pushed out.
        frame.render_widget(
            Paragraph::new(head_lines(self.side, self.bars.len(), theme)),
            head,
        );
        draw_rollouts_chart(
            frame,
            &self.bars,
            self.side.plot.target,
            axes,
            side_colour(self.number, theme),
            theme,
            chart,
        );
        frame.render_widget(Paragraph::new(self.text).wrap(Wrap { trim: false }), text);
    }
}

/// The task, its metric and target, and its title: what both runs share.
fn task_line<'a>(both: &Comparison, theme: &Theme) -> Line<'a> {
    let plot = &both.left.plot;
    let mut spans = vec![
        Span::styled(format!(" {}", both.task_id()), theme.accent()),
        Span::styled(
            format!(
                " · {} ({}), target {}",
                plot.metric_name, plot.direction, plot.target
            ),
            theme.muted(),
        ),
    ];
    if let Some(report) = both.sides().into_iter().find_map(ComparedRun::report) {
        spans.push(Span::raw(format!(" · {}", report.task.title)));
    }
    Line::from(spans)
}

/// Left minus right, with its interval, whether it is paired, and P(left better).
fn difference_line<'a>(both: &Comparison, theme: &Theme) -> Line<'a> {
    let d = both.difference();
    Line::from(vec![
        Span::styled(" 1 − 2: ", theme.muted()),
        Span::styled(
            format!(
                "{:+.4} [{:+.4}, {:+.4}]",
                d.mean_difference, d.ci.low, d.ci.high
            ),
            theme.accent(),
        ),
        Span::styled(
            format!(
                " 95% · P(1 better) {:.2} · {}",
                d.probability_of_improvement,
                if d.paired {
                    "paired by seed set"
                } else {
                    "unpaired (each run drew its own seeds)"
                }
            ),
            theme.muted(),
        ),
    ])
}

/// The fewest rows a chart is drawn in, however much text there is.
const MIN_CHART_ROWS: u16 = 5;

fn rollout_bars(side: &ComparedRun) -> Vec<RolloutBar> {
    side.plot
        .episodes
        .iter()
        .filter(|e| e.outcome.is_played())
        .map(|e| RolloutBar {
            metric: e.metric,
            failed: e.outcome != Outcome::Completed,
        })
        .collect()
}

/// Under the chart: the score breakdown, the sandbox, the verification.
fn text_lines<'a>(side: &ComparedRun, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = score_lines(side, theme);
    lines.push(sandbox_line(side, theme));
    lines.extend(verification_lines(&side.checked, theme));
    lines
}

/// Score, status, and the rollouts played if not all were; then the agent's command line.
fn head_lines<'a>(side: &ComparedRun, played: usize, theme: &Theme) -> Vec<Line<'a>> {
    let status = side
        .status()
        .map_or("unfinished".to_string(), |s| s.to_string());
    let score = match side.breakdown() {
        Some(b) => Span::styled(format!("score {:.4}", b.score), theme.accent()),
        None => Span::styled("not scored", Style::default().fg(theme.warn)),
    };
    let planned = side.plot.episodes.len();
    let rollouts = if played < planned {
        format!(" · {played}/{planned} rollouts played")
    } else {
        String::new()
    };
    let agent = match side.report() {
        Some(report) => agent_command(&report.agent.command),
        None => "agent unknown: no report".into(),
    };
    // Beside the score, so no one reads an unverified run's numbers as good ones.
    let warning = side.records_warning().map_or(Span::raw(""), |w| {
        Span::styled(format!(" · {w}"), Style::default().fg(theme.error))
    });
    vec![
        Line::from(vec![
            score,
            warning,
            Span::raw(format!(" · {status}")),
            Span::styled(rollouts, theme.muted()),
        ]),
        Line::styled(agent, theme.muted()),
    ]
}

/// A command line with its program's folder left out: `ale agent --policy random`.
fn agent_command(command: &[String]) -> String {
    let mut words = command.iter().map(String::as_str);
    let program = words
        .next()
        .map(|p| p.rsplit('/').next().unwrap_or(p))
        .unwrap_or("");
    std::iter::once(program)
        .chain(words)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The score breakdown, a row per factor, or what is missing.
fn score_lines<'a>(side: &ComparedRun, theme: &Theme) -> Vec<Line<'a>> {
    match &side.report {
        RunReport::Written(report) => {
            let rows = report.score.lines();
            let width = rows.iter().map(|(label, _)| label.len()).max().unwrap_or(0);
            rows.into_iter()
                .map(|(label, text)| field(theme, &label, text, width))
                .collect()
        }
        RunReport::Missing(what) => {
            vec![Line::styled(what.clone(), Style::default().fg(theme.warn))]
        }
    }
}

/// How the agent was confined: as the signed harness log says, or else the report's unsigned
/// claim, marked as one.
fn sandbox_line<'a>(side: &ComparedRun, theme: &Theme) -> Line<'a> {
    let (text, style) = match (side.sandbox(), side.claimed_sandbox()) {
        (Some(sandbox), _) if sandbox.warning().is_some() => {
            (sandbox.describe(), Style::default().fg(theme.error))
        }
        (Some(sandbox), _) => (sandbox.describe(), Style::default().fg(theme.text)),
        (None, Some(claim)) => (
            format!(
                "{} (the report says; no verified harness log)",
                claim.describe()
            ),
            Style::default().fg(theme.warn),
        ),
        (None, None) => (
            "unknown: no report and no verified harness log".into(),
            Style::default().fg(theme.warn),
        ),
    };
    Line::from(vec![
        Span::styled("sandbox ", theme.muted()),
        Span::styled(text, style),
    ])
}

/// What verifying the run's records concluded, and each signature.
fn verification_lines<'a>(checked: &Checked, theme: &Theme) -> Vec<Line<'a>> {
    let verdict = |word: &str, colour| {
        Line::from(vec![
            Span::styled("verify  ", theme.muted()),
            Span::styled(word.to_string(), Style::default().fg(colour)),
        ])
    };
    match checked {
        Checked::NoKeys(why) => vec![
            verdict("not checked", theme.warn),
            Line::styled(why.clone(), theme.muted()),
        ],
        Checked::Verdict(RunVerdict::Broken(e)) => vec![
            verdict("BROKEN", theme.error),
            Line::styled(e.to_string(), Style::default().fg(theme.error)),
        ],
        Checked::Verdict(RunVerdict::Verified(v)) => {
            let mut lines = vec![verdict("ok", theme.ok)];
            lines.extend(signature_lines(v, theme));
            lines
        }
    }
}

fn signature_lines<'a>(v: &RunVerification, theme: &Theme) -> Vec<Line<'a>> {
    let signed = |present: bool| if present { "ok" } else { "none yet" };
    let mut lines = vec![Line::styled(
        format!(
            "  evaluator signature {} · {} events",
            signed(v.trajectory.signature.is_some()),
            v.trajectory.events
        ),
        theme.muted(),
    )];
    match &v.harness_log {
        Some(log) => lines.push(Line::styled(
            format!(
                "  harness signature {} · {} events",
                signed(log.is_signed()),
                log.events
            ),
            theme.muted(),
        )),
        None => lines.push(Line::styled("  no harness log", theme.muted())),
    }
    if v.report.is_some() {
        lines.push(Line::styled(
            "  report agrees with the signed records",
            theme.muted(),
        ));
    }
    lines
}
