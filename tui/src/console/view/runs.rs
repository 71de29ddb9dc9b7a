//! The runs view: past runs from the state dir; the open one's report and plot.

use ale_harness::runs::RunSummary;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph, Wrap};

use super::block;
use super::eval::{draw_metrics_chart, report_lines};
use crate::console::app::App;

pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme();
    let list_width = (area.width * 2 / 5).clamp(30, 60);
    let [left, right] =
        Layout::horizontal([Constraint::Length(list_width), Constraint::Min(0)]).areas(area);
    let items: Vec<ListItem> = app
        .runs
        .entries
        .iter()
        .map(|r| {
            let (task, score) = match &r.summary {
                RunSummary::Reported(report) => {
                    (report.task.id.clone(), format!("{:.3}", report.score.score))
                }
                RunSummary::Unreported { task_id, status } => (task_id.clone(), status.clone()),
                RunSummary::Unreadable(_) => ("?".into(), "unreadable".into()),
            };
            let short = r.run_id.trim_start_matches("run-");
            ListItem::new(Line::from(vec![
                Span::styled(format!("{} ", &short[..short.len().min(8)]), theme.muted()),
                Span::raw(format!("{task} ")),
                Span::styled(score, theme.accent()),
            ]))
        })
        .collect();
    let empty = items.is_empty();
    let list = List::new(items)
        .block(block(
            format!(" Runs ({}) ", app.runs.entries.len()),
            theme,
            true,
        ))
        .highlight_style(theme.selected())
        .highlight_symbol("▸ ");
    let mut state = ListState::default().with_selected((!empty).then_some(app.runs.cursor));
    frame.render_stateful_widget(list, left, &mut state);

    let Some(entry) = app.runs.open.and_then(|i| app.runs.entries.get(i)) else {
        let hint = if empty {
            "No runs yet: start one in the eval view (3), or run `ale demo`."
        } else {
            "Enter opens the selected run."
        };
        frame.render_widget(
            Paragraph::new(Line::styled(hint, theme.muted())).block(block(" Run ", theme, false)),
            right,
        );
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
                .filter(|e| e.outcome != ale_proto::records::Outcome::NotRun)
                .map(|e| e.metric)
                .collect();
            draw_metrics_chart(frame, &metrics, report.score.target, theme, chart);
            let mut lines = vec![Line::styled(
                format!("{} — {}", report.task.id, report.task.title),
                theme.accent(),
            )];
            lines.extend(report_lines(report, theme));
            if let Some((dir, ok, output)) = &app.runs.verification
                && dir == &entry.dir
            {
                let style = Style::default().fg(if *ok { theme.ok } else { theme.error });
                lines.push(Line::styled(
                    if *ok { "verify: ok" } else { "verify: BROKEN" },
                    style,
                ));
                for line in output.lines().skip(1) {
                    lines.push(Line::styled(line.to_string(), theme.muted()));
                }
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
