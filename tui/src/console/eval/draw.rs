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
use crate::console::theme::Theme;
use crate::console::view::InputMode;
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
    // Task ids, commands and folders are shown whole, wrapped: a person must be able to read
    // what will run.
    let task_lines = wrap_words(&task, usize::from(area.width.saturating_sub(2)));
    let task_height = u16::try_from(task_lines.len() + 2).unwrap_or(3);
    // An agent command's sandbox folders, below the agents while a command is chosen (not for
    // a policy file, which runs in the evaluator).
    let folder_lines = if mode == TaskMode::Batch || eval.choice_for(mode) != AgentChoice::Command {
        Vec::new()
    } else {
        folder_lines(eval, input, usize::from(area.width.saturating_sub(2)))
    };
    let folders_height = if folder_lines.is_empty() {
        0
    } else {
        u16::try_from(folder_lines.len() + 2).unwrap_or(u16::MAX)
    };
    let [task_area, agents, folders_area] = Layout::vertical([
        Constraint::Length(task_height),
        Constraint::Min(0),
        Constraint::Length(folders_height),
    ])
    .areas(area);
    if !folder_lines.is_empty() {
        frame.render_widget(
            Paragraph::new(
                folder_lines
                    .into_iter()
                    .map(|l| Line::styled(l, theme.muted()))
                    .collect::<Vec<_>>(),
            )
            .block(block(" Command's sandbox ", theme, false)),
            folders_area,
        );
    }
    frame.render_widget(
        Paragraph::new(
            task_lines
                .into_iter()
                .map(|l| Line::styled(l, theme.accent()))
                .collect::<Vec<_>>(),
        )
        .block(block(" Task ←→ ", theme, false)),
        task_area,
    );
    let typed = |label: &str, text: &str, key: char, editing: bool| {
        if text.is_empty() && !editing {
            format!("{label}: ({key} to type one)")
        } else {
            format!("{label}: {text}{}", if editing { "▏" } else { "" })
        }
    };
    // Inside the borders, after the selection marker.
    let item_width = usize::from(agents.width.saturating_sub(4));
    let item = |text: String| ListItem::new(wrap_words(&text, item_width).join("\n"));
    let offered = AgentChoice::offered(mode);
    let items: Vec<ListItem> = offered
        .iter()
        .map(|choice| match choice {
            AgentChoice::Policy(PolicyKind::Heuristic) => {
                item("built-in heuristic policy".to_string())
            }
            AgentChoice::Policy(PolicyKind::Random) => item("built-in random policy".to_string()),
            AgentChoice::Command => item(typed(
                "command",
                &eval.command,
                'c',
                input == InputMode::AgentCommand,
            )),
            AgentChoice::Submission => item(typed(
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

/// The command agent's `--workdir` and `--expose`, as typed, each wrapped to `width`.
fn folder_lines(eval: &Eval, input: InputMode, width: usize) -> Vec<String> {
    let field = |label: &str, text: &str, key: char, editing: bool, what: &str| {
        let shown = if text.is_empty() && !editing {
            format!("{label}: ({key} to type {what})")
        } else {
            format!("{label}: {text}{}", if editing { "▏" } else { "" })
        };
        wrap_words(&shown, width)
    };
    let mut lines = field(
        "workdir",
        &eval.workdir,
        'w',
        input == InputMode::Workdir,
        "one",
    );
    lines.extend(field(
        "expose",
        &eval.expose,
        'e',
        input == InputMode::Expose,
        "some",
    ));
    lines
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
        Agent::Command(c) => c
            .line
            .split_whitespace()
            .next()
            .unwrap_or("command")
            .to_string(),
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

    let mut lines = match &run.report {
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
    if let Some(tail) = &run.agent_log {
        lines.push(Line::raw(""));
        match tail {
            Ok(tail) => {
                lines.push(Line::styled(
                    format!(
                        "the agent failed; the end of its agent.log ({} lines):",
                        tail.len()
                    ),
                    Style::default().fg(theme.error),
                ));
                lines.extend(tail.iter().map(|l| Line::raw(format!("  {l}"))));
            }
            Err(why) => lines.push(Line::styled(
                format!("the agent failed; {why}"),
                Style::default().fg(theme.error),
            )),
        }
    }
    // The end matters most (the agent's last words): scroll so that it shows.
    let text = Paragraph::new(lines).wrap(Wrap { trim: false });
    let overflow = u16::try_from(text.line_count(text_area.width))
        .unwrap_or(u16::MAX)
        .saturating_sub(text_area.height);
    let scroll = if run.agent_log.is_some() { overflow } else { 0 };
    frame.render_widget(text.scroll((scroll, 0)), text_area);
}

/// `text` in lines of at most `width` columns, broken at spaces where it can be and inside a
/// word longer than a line.
pub(crate) fn wrap_words(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split(' ') {
        let needed = line.chars().count() + usize::from(!line.is_empty()) + word.chars().count();
        if !line.is_empty() && needed > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        for c in word.chars() {
            if line.chars().count() == width {
                lines.push(std::mem::take(&mut line));
            }
            line.push(c);
        }
    }
    lines.push(line);
    lines
}

#[cfg(test)]
mod tests {
    use super::wrap_words;

    #[test]
    fn wrapping_keeps_every_character_in_lines_that_fit() {
        assert_eq!(
            wrap_words("policy folder: (s to type one)", 24),
            ["policy folder: (s to", "type one)"]
        );
        assert_eq!(
            wrap_words("mountaincar-sarsa-reproduction", 26),
            ["mountaincar-sarsa-reproduc", "tion"]
        );
        assert_eq!(wrap_words("", 10), [""]);
        for width in 1..12 {
            let text = "python  agent.py --config /a/very/long/path.toml";
            let lines = wrap_words(text, width);
            assert!(
                lines.iter().all(|l| l.chars().count() <= width),
                "{lines:?}"
            );
            let kept: String = lines.concat().chars().filter(|c| *c != ' ').collect();
            assert_eq!(kept, text.replace(' ', ""));
        }
    }
}
