//! Drawing pieces the views share: themed blocks and charts, downsampling, sim drawings, the
//! report's lines.

use ale_harness::report::Report;
use ale_proto::eval::running_mean;
use ale_sim::{Drawing, Shape};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::canvas::{self, Canvas};
use ratatui::widgets::{Block, Chart, Dataset, GraphType};

use super::theme::Theme;

/// A bordered block in the theme's colours.
pub fn block<'a>(title: impl Into<Line<'a>>, theme: &Theme, focused: bool) -> Block<'a> {
    Block::bordered()
        .title(title)
        .border_style(theme.border(focused))
        .style(theme.base())
}

/// At most `max_points` points summarising `values` (x = index): each bucket keeps its minimum
/// and maximum, in order, so spikes survive any amount of history.
pub fn downsample(values: &[f64], max_points: usize) -> Vec<(f64, f64)> {
    let n = values.len();
    if n <= max_points || max_points < 4 {
        return values
            .iter()
            .enumerate()
            .map(|(i, v)| (i as f64, *v))
            .collect();
    }
    let buckets = max_points / 2;
    let mut out = Vec::with_capacity(buckets * 2);
    for b in 0..buckets {
        let start = b * n / buckets;
        let end = ((b + 1) * n / buckets).max(start + 1);
        let (mut lo, mut hi) = ((start, values[start]), (start, values[start]));
        for (i, v) in values.iter().enumerate().take(end).skip(start) {
            if *v < lo.1 {
                lo = (i, *v);
            }
            if *v > hi.1 {
                hi = (i, *v);
            }
        }
        let (first, second) = if lo.0 <= hi.0 { (lo, hi) } else { (hi, lo) };
        out.push((first.0 as f64, first.1));
        if second.0 != first.0 {
            out.push((second.0 as f64, second.1));
        }
    }
    out
}

/// Bounds of `values` padded a little, never empty. When no value is negative (a count, a
/// duration, a success rate) the axis starts at 0 and the padding goes only upwards: a chart
/// of steps never shows a negative number of them.
pub fn bounds(values: impl Iterator<Item = f64>) -> [f64; 2] {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return [0.0, 1.0];
    }
    // A flat series still gets a readable range around it.
    let pad = if hi - lo > 1e-9 {
        (hi - lo) * 0.1
    } else {
        (hi.abs() * 0.5).max(1.0)
    };
    if lo >= 0.0 {
        return [0.0, hi + pad];
    }
    [lo - pad, hi + pad]
}

/// Paints a sim's drawing on a canvas, keeping its proportions (a cell is about twice as tall
/// as it is wide).
pub fn draw_scene(
    frame: &mut Frame,
    drawing: &Drawing,
    theme: &Theme,
    area: Rect,
    title: Line<'_>,
) {
    let inner_w = f64::from(area.width.saturating_sub(2).max(1));
    let inner_h = f64::from(area.height.saturating_sub(2).max(1)) * 2.0;
    let v = drawing.viewport;
    let (mut x0, mut x1, mut y0, mut y1) = (v.x_min, v.x_max, v.y_min, v.y_max);
    let world = (x1 - x0) / (y1 - y0);
    let screen = inner_w / inner_h;
    if world < screen {
        let grow = ((y1 - y0) * screen - (x1 - x0)) / 2.0;
        x0 -= grow;
        x1 += grow;
    } else {
        let grow = ((x1 - x0) / screen - (y1 - y0)) / 2.0;
        y0 -= grow;
        y1 += grow;
    }
    let canvas = Canvas::default()
        .block(block(title, theme, false))
        .background_color(theme.background)
        .marker(Marker::Braille)
        .x_bounds([x0, x1])
        .y_bounds([y0, y1])
        .paint(|ctx| {
            for shape in &drawing.shapes {
                match shape {
                    Shape::Line { from, to, role } => ctx.draw(&canvas::Line {
                        x1: from.0,
                        y1: from.1,
                        x2: to.0,
                        y2: to.1,
                        color: theme.role(*role),
                    }),
                    Shape::Circle {
                        center,
                        radius,
                        role,
                    } => ctx.draw(&canvas::Circle {
                        x: center.0,
                        y: center.1,
                        radius: *radius,
                        color: theme.role(*role),
                    }),
                    Shape::Polygon { points, role } => {
                        for (i, a) in points.iter().enumerate() {
                            let b = points[(i + 1) % points.len()];
                            ctx.draw(&canvas::Line {
                                x1: a.0,
                                y1: a.1,
                                x2: b.0,
                                y2: b.1,
                                color: theme.role(*role),
                            });
                        }
                    }
                    Shape::Label { at, text, role } => ctx.print(
                        at.0,
                        at.1,
                        Span::styled(text.clone(), Style::default().fg(theme.role(*role))),
                    ),
                }
            }
        });
    frame.render_widget(canvas, area);
}

/// A chart in the theme's colours, with `n` along x and `y` (labelled to `decimals`) up.
pub fn themed_chart<'a>(
    chart: ratatui::widgets::Chart<'a>,
    theme: &Theme,
    n: f64,
    y: [f64; 2],
    decimals: usize,
) -> ratatui::widgets::Chart<'a> {
    use ratatui::widgets::Axis;
    chart
        .style(theme.base())
        .x_axis(Axis::default().bounds([0.0, n]).style(theme.muted()))
        .y_axis(
            Axis::default()
                .bounds(y)
                .labels([
                    format!("{:.decimals$}", y[0]),
                    format!("{:.decimals$}", y[1]),
                ])
                .style(theme.muted()),
        )
}

/// A label and value line for key/value panels.
pub fn field<'a>(theme: &Theme, label: &str, value: String, width: usize) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!("{label:<width$} "), theme.muted()),
        Span::styled(
            value,
            Style::default()
                .fg(theme.text)
                .add_modifier(Modifier::empty()),
        ),
    ])
}

/// One played rollout in a chart: its metric, and whether it failed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RolloutBar {
    pub metric: f64,
    pub failed: bool,
}

/// The axes of a metrics chart: rollouts along x, values up. Charts drawn on the same axes
/// compare at a glance.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricsAxes {
    /// The x axis runs from 0 to this (one more than the rollouts, so the last bar shows).
    pub x_max: f64,
    pub y: [f64; 2],
}

impl MetricsAxes {
    /// Axes that hold every series (its rollouts and its target), 0 and the targets included.
    pub fn fitting<'a>(series: impl IntoIterator<Item = (&'a [RolloutBar], f64)>) -> MetricsAxes {
        let mut rollouts = 0;
        let mut values = vec![0.0];
        for (bars, target) in series {
            rollouts = rollouts.max(bars.len());
            values.extend(bars.iter().map(|b| b.metric));
            values.push(target);
        }
        MetricsAxes {
            x_max: rollouts.max(1) as f64 + 1.0,
            y: bounds(values.into_iter()),
        }
    }
}

/// The per-rollout metric as bars, the running mean and the target.
pub fn draw_metrics_chart(
    frame: &mut Frame,
    metrics: &[f64],
    target: f64,
    theme: &Theme,
    area: Rect,
) {
    let bars: Vec<RolloutBar> = metrics
        .iter()
        .map(|&metric| RolloutBar {
            metric,
            failed: false,
        })
        .collect();
    let axes = MetricsAxes::fitting([(bars.as_slice(), target)]);
    draw_rollouts_chart(frame, &bars, target, axes, theme.bar_completed, theme, area);
}

/// Per-rollout bars in `colour` (failed ones in the theme's failure colour), the running mean
/// (failures counted at their metric) and the target, on `axes`.
pub fn draw_rollouts_chart(
    frame: &mut Frame,
    rollouts: &[RolloutBar],
    target: f64,
    axes: MetricsAxes,
    colour: ratatui::style::Color,
    theme: &Theme,
    area: Rect,
) {
    let bars = |failed: bool| -> Vec<(f64, f64)> {
        rollouts
            .iter()
            .enumerate()
            .filter(|(_, b)| b.failed == failed)
            .map(|(i, b)| (i as f64 + 1.0, b.metric))
            .collect()
    };
    let (completed, failed) = (bars(false), bars(true));
    let mean: Vec<(f64, f64)> = running_mean(rollouts.iter().map(|b| b.metric))
        .into_iter()
        .enumerate()
        .map(|(i, m)| (i as f64 + 1.0, m))
        .collect();
    let target_line = if target.is_finite() {
        vec![(0.0, target), (axes.x_max, target)]
    } else {
        Vec::new()
    };
    // The target line first, so the bars are drawn over it: a bar reaching past the target
    // shows whole. The running mean, a trend, stays on top.
    let datasets = vec![
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(theme.chart_target))
            .data(&target_line),
        Dataset::default()
            .graph_type(GraphType::Bar)
            .marker(Marker::Braille)
            .style(Style::default().fg(colour))
            .data(&completed),
        Dataset::default()
            .graph_type(GraphType::Bar)
            .marker(Marker::Braille)
            .style(Style::default().fg(theme.bar_failed))
            .data(&failed),
        Dataset::default()
            .graph_type(GraphType::Line)
            .marker(Marker::Braille)
            .style(Style::default().fg(theme.chart_mean))
            .data(&mean),
    ];
    let chart = themed_chart(Chart::new(datasets), theme, axes.x_max, axes.y, 0);
    frame.render_widget(chart, area);
}

/// The report's essentials, for the eval and runs views.
pub fn report_lines<'a>(report: &Report, theme: &Theme) -> Vec<Line<'a>> {
    let s = &report.score;
    let mut lines = vec![
        Line::from(vec![
            Span::styled("score ", theme.muted()),
            Span::styled(format!("{:.4}", s.score), theme.accent()),
            Span::styled(format!("   status {}", report.status), theme.muted()),
        ]),
        Line::raw(format!(
            "{} = {:.4}, target {} → ratio {:.4}, capped at {} → {:.4}",
            s.metric_name, report.value, s.target, s.ratio, s.cap, s.capped
        )),
    ];
    if let Some(stats) = &report.statistics {
        let m = &stats.metric;
        lines.push(Line::raw(format!(
            "95%: score [{:.4}, {:.4}] · {} [{:.4}, {:.4}]",
            stats.score_ci.low, stats.score_ci.high, s.metric_name, m.mean_ci.low, m.mean_ci.high
        )));
        lines.push(Line::styled(
            format!(
                "std {:.4} · IQM {:.4} [{:.4}, {:.4}] · n {} (bootstrap)",
                m.std, m.iqm, m.iqm_ci.low, m.iqm_ci.high, m.n
            ),
            theme.muted(),
        ));
    }
    if let Some(name) = &report.name {
        lines.push(Line::styled(format!("name {name}"), theme.muted()));
    }
    if let Some(set) = &report.seed_set {
        lines.push(Line::styled(
            format!("seed set {}", set.name),
            theme.muted(),
        ));
    }
    for p in &s.penalties {
        lines.push(Line::raw(format!("safety {} = {p}", p.name)));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_of_non_negative_values_starts_at_zero_and_pads_upwards() {
        // acrobot-swingup's mean_steps: the axis once ran from -14 to 152.
        let steps = [143.0, 61.0, 500.0, 88.0];
        assert_eq!(bounds(steps.iter().copied()), [0.0, 500.0 + 43.9]);
        assert_eq!(bounds([0.0, 0.0].into_iter()), [0.0, 1.0]);
        assert_eq!(bounds([1.0].into_iter()), [0.0, 2.0]);
        // A metric that can be negative keeps padding on both sides.
        assert_eq!(bounds([-200.0, -100.0].into_iter()), [-210.0, -90.0]);
        assert_eq!(bounds([].into_iter()), [0.0, 1.0]);
    }

    #[test]
    fn charts_fitted_together_share_one_scale_from_zero() {
        let bar = |metric| RolloutBar {
            metric,
            failed: false,
        };
        let heuristic = [bar(500.0), bar(500.0), bar(500.0)];
        let random = [bar(12.0), bar(31.0)];
        let axes = MetricsAxes::fitting([(&heuristic[..], 475.0), (&random[..], 475.0)]);
        assert_eq!(axes.y, [0.0, 550.0]);
        assert_eq!(axes.x_max, 4.0);
    }

    /// Bars of 500 over a target of 300: on the target's row, the bars' columns show the
    /// bars, so no bar looks cut off below the line.
    #[test]
    fn the_target_line_is_drawn_behind_the_bars() {
        use ratatui::Terminal;
        use ratatui::backend::TestBackend;
        let theme = crate::console::theme::load_all(None).unwrap().remove(0);
        let metrics = [500.0; 8];
        let mut terminal = Terminal::new(TestBackend::new(40, 12)).unwrap();
        terminal
            .draw(|f| draw_metrics_chart(f, &metrics, 300.0, &theme, f.area()))
            .unwrap();
        let buffer = terminal.backend().buffer();
        let target_cells: Vec<(u16, u16)> = (0..12)
            .flat_map(|y| (0..40).map(move |x| (x, y)))
            .filter(|&(x, y)| buffer[(x, y)].fg == theme.chart_target)
            .collect();
        assert!(!target_cells.is_empty(), "the target line is drawn");
        let target_row = target_cells[0].1;
        let bar_cells = (0..40)
            .filter(|&x| buffer[(x, target_row)].fg == theme.bar_completed)
            .count();
        assert!(
            bar_cells >= 4,
            "the bars show on the target's row: {bar_cells} cells"
        );
    }

    #[test]
    fn downsampling_bounds_the_points_and_keeps_the_extremes() {
        let mut values: Vec<f64> = (0..100_000).map(|i| (i % 7) as f64).collect();
        values[54_321] = 99.0;
        values[12_345] = -5.0;
        let points = downsample(&values, 200);
        assert!(points.len() <= 200);
        assert!(points.iter().any(|p| p.1 == 99.0 && p.0 == 54_321.0));
        assert!(points.iter().any(|p| p.1 == -5.0));
        assert!(points.windows(2).all(|w| w[0].0 <= w[1].0), "in order");
        assert_eq!(downsample(&[1.0, 2.0], 200), vec![(0.0, 1.0), (1.0, 2.0)]);
    }
}
