//! Draws the whole screen: the header with the view tabs and the connection, the current
//! view's body (each view draws its own), the footer and the help overlay. Drawing reads the
//! app state and changes nothing.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph};

use super::app::{App, Connection};
use super::bindings::{Command, Context, FooterEntry};
use super::view::{InputMode, View};
use super::{eval, practice, runs, tasks};

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
        View::Tasks => {
            let key = |command| {
                app.keymap
                    .first_key(Context::Tasks, command)
                    .unwrap_or_default()
            };
            let (up, down) = (key(Command::PageUp), key(Command::PageDown));
            tasks::draw(
                frame,
                &app.tasks,
                app.input == InputMode::Filter,
                (&up, &down),
                theme,
                body,
            )
        }
        View::Practice => practice::draw(
            frame,
            &app.practice,
            app.input == InputMode::Seed,
            theme,
            body,
        ),
        View::Eval => eval::draw(
            frame,
            &app.eval,
            app.tasks.selected(),
            app.input,
            theme,
            body,
        ),
        View::Runs => runs::draw(frame, &app.runs, theme, body),
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
        Connection::Reconnected { .. } => ("●", "reconnected", Style::default().fg(theme.ok)),
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
    if let Some(note) = &app.note {
        let style = if note.is_error {
            Style::default().fg(theme.error)
        } else {
            Style::default().fg(theme.accent)
        };
        frame.render_widget(
            Paragraph::new(Line::styled(format!(" {}", note.text), style)),
            area,
        );
        return;
    }
    let typing = |pairs: &[(&str, &'static str)]| -> Vec<FooterEntry> {
        pairs
            .iter()
            .map(|(keys, word)| FooterEntry {
                keys: keys.to_string(),
                word,
            })
            .collect()
    };
    // While text is typed, keys mean letters; the footer says how to finish.
    let hints = match app.input {
        InputMode::Filter => typing(&[("type", "filter"), ("Enter", "done"), ("Esc", "clear")]),
        InputMode::Seed => typing(&[
            ("digits", "seed"),
            ("Enter", "reset with it"),
            ("Esc", "cancel"),
        ]),
        InputMode::AgentCommand => {
            typing(&[("type", "the agent's command line"), ("Enter", "done")])
        }
        InputMode::SubmissionDir => typing(&[
            ("type", "the folder holding the policy file"),
            ("Enter", "done"),
        ]),
        InputMode::Workdir => typing(&[
            ("type", "the command's working directory (empty: default)"),
            ("Enter", "done"),
        ]),
        InputMode::Expose => typing(&[
            ("type", "folders shown read-only, separated by spaces"),
            ("Enter", "done"),
        ]),
        InputMode::Commands => app.keymap.footer(app.context()),
    };
    let mut spans = vec![Span::raw(" ")];
    for hint in hints {
        spans.push(Span::styled(hint.keys, theme.accent()));
        spans.push(Span::styled(format!(" {}  ", hint.word), theme.muted()));
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
        Context::Compare => "Comparing runs",
        Context::Leaderboard => "Leaderboard",
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
    // Everywhere first, then the keys of where you are, then the rest.
    let here = app.context();
    let rank = |c: Context| match c {
        Context::Global => 0,
        c if c == here => 1,
        _ => 2,
    };
    let mut entries = app.keymap.help();
    entries.sort_by_key(|e| rank(e.context));
    let mut lines = Vec::new();
    let mut last = None;
    for entry in entries {
        if last != Some(entry.context) {
            if last.is_some() {
                lines.push(Line::raw(""));
            }
            lines.push(Line::styled(context_name(entry.context), theme.accent()));
            last = Some(entry.context);
        }
        lines.push(Line::from(vec![
            Span::styled(
                format!("  {:<10}", entry.keys),
                Style::default().fg(theme.accent),
            ),
            Span::styled(entry.help.to_string(), Style::default().fg(theme.text)),
            Span::styled(
                entry
                    .exceptions
                    .iter()
                    .map(|e| format!(" ({e})"))
                    .collect::<String>(),
                theme.muted(),
            ),
        ]));
    }
    // Lines are short enough not to wrap at the overlay's width, so a line is a row.
    let shown = popup.height.saturating_sub(2);
    let last_start = (lines.len() as u16).saturating_sub(shown);
    app.help_scroll_max.set(last_start);
    let scroll = app.help_scroll.min(last_start);
    let title = if last_start > 0 {
        format!(
            " Keys {}–{} of {} — ↑/↓ PgUp/PgDn scroll, any other key closes ",
            scroll + 1,
            (scroll + shown).min(lines.len() as u16),
            lines.len()
        )
    } else {
        " Keys — any key closes ".to_string()
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(lines)
            .style(theme.base())
            .scroll((scroll, 0))
            .block(
                Block::bordered()
                    .title(title)
                    .border_style(theme.border(true)),
            ),
        popup,
    );
}
