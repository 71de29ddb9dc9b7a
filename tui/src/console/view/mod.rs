//! Drawing: every function here reads the app state and paints; none changes anything.

mod eval;
mod practice;
mod runs;
mod tasks;

use ale_sims::{Drawing, Shape};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::canvas::{self, Canvas};
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::app::{App, Connection, View};
use super::keys::Context;
use super::theme::Theme;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame, app: &App) {
    let theme = app.theme();
    let area = frame.area();
    frame.render_widget(Block::default().style(theme.base()), area);
    let [header, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(area);
    draw_header(frame, app, header);
    match app.view {
        View::Tasks => tasks::draw(frame, app, body),
        View::Practice => practice::draw(frame, app, body),
        View::Eval => eval::draw(frame, app, body),
        View::Runs => runs::draw(frame, app, body),
    }
    draw_footer(frame, app, footer);
    if app.help {
        draw_help(frame, app, area);
    }
}

fn draw_header(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme();
    let mut spans = vec![
        Span::styled(" ALE console ", theme.accent()),
        Span::styled("─ ", theme.muted()),
    ];
    for (i, view) in View::ALL.iter().enumerate() {
        let label = format!("F{} {}", i + 1, view.title());
        if *view == app.view {
            spans.push(Span::styled(format!("[{label}]"), theme.accent()));
        } else {
            spans.push(Span::styled(format!(" {label} "), theme.muted()));
        }
        spans.push(Span::raw(" "));
    }
    let (dot, status, style) = match &app.connection {
        Connection::Connecting => ("○", "connecting", Style::default().fg(theme.warn)),
        Connection::Connected => ("●", "connected", Style::default().fg(theme.ok)),
        Connection::Lost { .. } => (
            "●",
            "connection lost, retrying",
            Style::default().fg(theme.error),
        ),
    };
    let left = Line::from(spans);
    let full = Line::from(vec![
        Span::styled(format!("{} ", app.endpoint_label), theme.muted()),
        Span::styled(format!("{dot} {status} "), style),
    ]);
    // On a narrow screen the endpoint gives way to the tabs, then the words to the dot.
    let words = Line::from(Span::styled(format!("{dot} {status} "), style));
    let fits = |line: &Line| left.width() + line.width() < area.width as usize;
    let right = if fits(&full) {
        full
    } else if fits(&words) {
        words
    } else {
        Line::from(Span::styled(format!("{dot} "), style))
    };
    frame.render_widget(Paragraph::new(left), area);
    let right_width = (right.width() as u16).min(area.width);
    let right_area = Rect {
        x: area.x + area.width - right_width,
        width: right_width,
        ..area
    };
    frame.render_widget(Paragraph::new(right), right_area);
}

fn draw_footer(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme();
    if let Some((note, is_error)) = &app.note {
        let style = if *is_error {
            Style::default().fg(theme.error)
        } else {
            Style::default().fg(theme.accent)
        };
        frame.render_widget(
            Paragraph::new(Line::styled(format!(" {note}"), style)),
            area,
        );
        return;
    }
    let owned = |pairs: &[(&str, &'static str)]| -> Vec<(String, &'static str)> {
        pairs.iter().map(|(k, h)| (k.to_string(), *h)).collect()
    };
    // While text is typed, keys mean letters; the footer says how to finish.
    let hints = if app.filtering {
        owned(&[("type", "filter"), ("Enter", "done"), ("Esc", "clear")])
    } else if app.practice.seed_input.is_some() && app.view == View::Practice {
        owned(&[
            ("digits", "seed"),
            ("Enter", "reset with it"),
            ("Esc", "cancel"),
        ])
    } else if app.eval.editing && app.view == View::Eval {
        owned(&[("type", "the agent's command line"), ("Enter", "done")])
    } else {
        app.keymap.footer(app.view.context())
    };
    let mut spans = vec![Span::raw(" ")];
    for (key, help) in hints {
        spans.push(Span::styled(key, theme.accent()));
        spans.push(Span::styled(format!(" {help}   "), theme.muted()));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

fn context_name(c: Context) -> &'static str {
    match c {
        Context::Global => "Everywhere",
        Context::Tasks => "Tasks",
        Context::Practice => "Practice",
        Context::Eval => "Eval",
        Context::Runs => "Runs",
    }
}

fn draw_help(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme();
    let width = area.width.saturating_sub(4).min(72);
    let height = area.height.saturating_sub(2);
    let popup = Rect {
        x: area.x + (area.width - width) / 2,
        y: area.y + 1,
        width,
        height,
    };
    let mut lines = Vec::new();
    let mut last = None;
    for (context, label, help) in app.keymap.help() {
        if last != Some(context) {
            if last.is_some() {
                lines.push(Line::raw(""));
            }
            lines.push(Line::styled(context_name(context), theme.accent()));
            last = Some(context);
        }
        lines.push(Line::from(vec![
            Span::styled(format!("  {label:<10}"), Style::default().fg(theme.accent)),
            Span::styled(help.to_string(), Style::default().fg(theme.text)),
        ]));
    }
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .style(theme.base())
            .wrap(Wrap { trim: false })
            .block(
                Block::bordered()
                    .title(" Keys — any key closes ")
                    .border_style(theme.border(true)),
            ),
        popup,
    );
}

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

/// Bounds of `values` padded a little, never empty.
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

#[cfg(test)]
mod tests {
    use super::*;

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
