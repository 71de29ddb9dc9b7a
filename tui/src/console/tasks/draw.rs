//! Draws the tasks view: the list, and the selected task's full spec.

use ale_proto::TaskSpec;
use ale_proto::task_spec::TaskMode;
use ale_sim::Space;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph, Wrap};

use super::Tasks;
use crate::console::theme::Theme;
use crate::console::widgets::{block, field};

/// Draws `tasks`; `filtering` while the filter is typed.
pub fn draw(frame: &mut Frame, tasks: &Tasks, filtering: bool, theme: &Theme, area: Rect) {
    let list_width = (area.width / 3).clamp(24, 40);
    let [left, right] =
        Layout::horizontal([Constraint::Length(list_width), Constraint::Min(0)]).areas(area);
    let visible = tasks.visible();
    let title = if filtering || !tasks.filter.is_empty() {
        format!(
            " Tasks · filter: {}{} ",
            tasks.filter,
            if filtering { "▏" } else { "" }
        )
    } else {
        format!(" Tasks ({}) ", tasks.list.len())
    };
    let items: Vec<ListItem> = visible
        .iter()
        .map(|t| {
            let mode = match t.mode {
                TaskMode::Batch => "batch",
                TaskMode::Interactive => "",
            };
            ListItem::new(Line::from(vec![
                Span::raw(t.id.clone()),
                Span::styled(format!(" {mode}"), theme.muted()),
            ]))
        })
        .collect();
    let empty = items.is_empty();
    let list = List::new(items)
        .block(block(title, theme, true))
        .highlight_style(theme.selected())
        .highlight_symbol("▸ ");
    let mut state = ListState::default().with_selected((!empty).then_some(tasks.cursor));
    frame.render_stateful_widget(list, left, &mut state);
    if empty {
        let message = if tasks.list.is_empty() {
            "waiting for the evaluator…"
        } else {
            "no task matches the filter"
        };
        let inner = Rect {
            x: left.x + 2,
            y: left.y + 1,
            width: left.width.saturating_sub(4),
            height: 1,
        };
        frame.render_widget(Paragraph::new(Line::styled(message, theme.muted())), inner);
    }
    let detail = match tasks.selected() {
        Some(task) => spec_lines(task, theme),
        None => vec![Line::styled(
            "Select a task to see its spec.",
            theme.muted(),
        )],
    };
    frame.render_widget(
        Paragraph::new(detail)
            .wrap(Wrap { trim: false })
            .block(block(" Spec ", theme, false)),
        right,
    );
}

/// A space, one line per element where the space is small enough to list.
fn space_lines<'a>(space: &Space, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = vec![Line::raw(format!("  {space}"))];
    match space {
        Space::Box(b) if b.low.len() <= 12 => {
            for i in 0..b.low.len() {
                let label = b.labels.get(i).cloned().unwrap_or_else(|| format!("[{i}]"));
                lines.push(Line::styled(
                    format!(
                        "    {label:<24} [{}, {}]",
                        fmt_bound(b.low[i]),
                        fmt_bound(b.high[i])
                    ),
                    theme.muted(),
                ));
            }
        }
        Space::Box(b) => lines.push(Line::styled(
            format!(
                "    {} elements; e.g. {}",
                b.low.len(),
                b.labels.first().cloned().unwrap_or_default()
            ),
            theme.muted(),
        )),
        Space::Discrete(d) => {
            for k in 0..d.n.min(10) {
                let label = d.labels.get(k as usize).cloned().unwrap_or_default();
                lines.push(Line::styled(
                    format!("    {:<4} {label}", d.start + k as i64),
                    theme.muted(),
                ));
            }
        }
        _ => {}
    }
    lines
}

fn fmt_bound(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else {
        format!("{v:.4}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

fn spec_lines<'a>(task: &TaskSpec, theme: &Theme) -> Vec<Line<'a>> {
    let metric = &task.metric;
    let budgets = &task.budgets;
    let w = 12;
    let mut lines = vec![
        Line::styled(task.title.clone(), theme.accent()),
        Line::styled(task.description.clone(), Style::default().fg(theme.text)),
        Line::raw(""),
        field(theme, "id", task.id.clone(), w),
        field(theme, "simulator", task.sim.clone(), w),
        field(theme, "mode", task.mode.to_string(), w),
        field(theme, "genre", task.genre.to_string(), w),
        field(
            theme,
            "metric",
            format!(
                "{} ({}), target {}, cap {}",
                metric.name, metric.direction, metric.target, metric.cap
            ),
            w,
        ),
        field(theme, "per episode", metric.description.clone(), w),
        field(
            theme,
            "failure",
            format!("a failed rollout counts as {}", metric.failure_value),
            w,
        ),
        field(
            theme,
            "evaluation",
            format!(
                "{} episodes, at most {} steps each",
                task.episodes_per_eval, task.max_steps_per_episode
            ),
            w,
        ),
        field(
            theme,
            "budgets",
            format!(
                "{} steps, {} s",
                match budgets.max_total_steps {
                    Some(steps) => steps.to_string(),
                    None => "unlimited".into(),
                },
                budgets.time_budget_seconds.unwrap_or(0)
            ),
            w,
        ),
    ];
    if task.safety_metrics.is_empty() {
        lines.push(field(theme, "safety", "none".into(), w));
    }
    for s in &task.safety_metrics {
        lines.push(field(
            theme,
            "safety",
            format!(
                "{} must stay 0, else × {} — {}",
                s.name, s.penalty_factor, s.description
            ),
            w,
        ));
    }
    lines.push(Line::raw(""));
    lines.push(Line::styled("observation space", theme.accent()));
    lines.extend(space_lines(&task.observation_space, theme));
    lines.push(Line::styled("action space", theme.accent()));
    lines.extend(space_lines(&task.action_space, theme));
    if let Some(c) = &task.submission_contract {
        lines.push(field(
            theme,
            "submission",
            format!("{}/{} ({})", c.submission_path, c.entrypoint, c.format),
            w,
        ));
        lines.push(Line::styled(format!("  {}", c.notes), theme.muted()));
    }
    lines
}
