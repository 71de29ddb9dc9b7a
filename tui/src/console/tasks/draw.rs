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

/// Columns a list row takes besides the id and mode: the borders and the selection marker.
const LIST_CHROME: usize = 4;

/// The mode's tag after a task's id in the list.
fn mode_tag(task: &TaskSpec) -> &'static str {
    match task.mode {
        TaskMode::Batch => " batch",
        TaskMode::Interactive => "",
    }
}

/// `text` cut to `width` columns, with an ellipsis where it was cut.
pub(crate) fn ellipsis(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_string();
    }
    let kept: String = text.chars().take(width.saturating_sub(1)).collect();
    format!("{kept}…")
}

/// Draws `tasks`; `filtering` while the filter is typed; `page_keys` names the keys that
/// scroll the spec (up, down).
pub fn draw(
    frame: &mut Frame,
    tasks: &Tasks,
    filtering: bool,
    page_keys: (&str, &str),
    theme: &Theme,
    area: Rect,
) {
    // Wide enough for the longest id where the screen allows it (half of it at most); an id
    // cut short ends in an ellipsis, and the spec beside the list names it whole.
    let longest = tasks
        .list
        .iter()
        .map(|t| t.id.chars().count() + mode_tag(t).len())
        .max()
        .unwrap_or(0);
    let list_width = u16::try_from(longest + LIST_CHROME)
        .unwrap_or(u16::MAX)
        .clamp(24, (area.width / 2).max(24));
    let id_room = usize::from(list_width).saturating_sub(LIST_CHROME);
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
            let mode = mode_tag(t);
            ListItem::new(Line::from(vec![
                Span::raw(ellipsis(&t.id, id_room.saturating_sub(mode.len()))),
                Span::styled(mode, theme.muted()),
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
    let spec = Paragraph::new(detail).wrap(Wrap { trim: false });
    let inner_height = right.height.saturating_sub(2);
    let rows = spec.line_count(right.width.saturating_sub(2));
    let last_start = u16::try_from(rows)
        .unwrap_or(u16::MAX)
        .saturating_sub(inner_height);
    tasks.spec_scroll_max.set(last_start);
    let scroll = tasks.spec_scroll.min(last_start);
    let title = if last_start > 0 {
        let (up, down) = page_keys;
        format!(
            " Spec {}–{} of {rows} · {up}/{down} scroll ",
            scroll + 1,
            (usize::from(scroll) + usize::from(inner_height)).min(rows)
        )
    } else {
        " Spec ".to_string()
    };
    frame.render_widget(
        spec.scroll((scroll, 0)).block(block(title, theme, false)),
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
