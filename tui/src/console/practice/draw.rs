//! Draws the practice view: the sim drawn live, the observation, the action, charts and
//! history.

use ale_client::{InfoValue, Space};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Chart, Dataset, GraphType, List, ListItem, Paragraph};

use super::{Player, Practice};
use crate::console::theme::Theme;
use crate::console::widgets::{block, bounds, downsample, draw_scene, themed_chart};

/// From this width the episode history gets a column of its own; below it, the latest
/// episodes fill the observation panel's spare rows.
const HISTORY_COLUMN_WIDTH: u16 = 140;
/// The most of a Box action's values shown at once.
const ACTION_ROWS: usize = 4;
/// From this width of the scene panel a sim with a map ([`super::MapReplica`]) gets it drawn
/// beside its own view.
const MAP_MIN_WIDTH: u16 = 50;

/// Draws `p`; `typing_seed` while a seed is typed.
pub fn draw(frame: &mut Frame, p: &Practice, typing_seed: bool, theme: &Theme, area: Rect) {
    let Some(spec) = &p.spec else {
        let text = match &p.creating {
            Some(task) => format!("creating a practice env for {task}…"),
            None => {
                "No practice env yet. Pick a task in the tasks view (1) and press Enter.".into()
            }
        };
        frame.render_widget(
            Paragraph::new(Line::styled(text, theme.muted())).block(block(
                " Practice ",
                theme,
                false,
            )),
            area,
        );
        return;
    };
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(56), Constraint::Percentage(44)]).areas(area);
    let side_width = (area.width * 2 / 5).clamp(30, 48);
    let [scene, side] =
        Layout::horizontal([Constraint::Min(20), Constraint::Length(side_width)]).areas(top);
    let (scene, map_area) = match &p.map {
        Some(_) if scene.width >= MAP_MIN_WIDTH => {
            let [scene, map] =
                Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                    .areas(scene);
            (scene, Some(map))
        }
        _ => (scene, None),
    };

    let seed = p.seed.map_or("-".into(), |s| s.to_string());
    // The longest title that fits: drop "practice", then the episode number.
    let room = scene.width.saturating_sub(2) as usize;
    let candidates = [
        format!(
            "· practice · seed {seed} · ep {} · step {} ",
            p.episode, p.step
        ),
        format!("· seed {seed} · ep {} · step {} ", p.episode, p.step),
        format!("· seed {seed} · step {} ", p.step),
    ];
    let id = if p.recreated {
        format!(" {} (new env after reconnect) ", spec.task.id)
    } else {
        format!(" {} ", spec.task.id)
    };
    let rest = candidates
        .iter()
        .find(|c| id.chars().count() + c.chars().count() <= room)
        .unwrap_or(&candidates[2])
        .clone();
    let title = Line::from(vec![
        Span::styled(id, theme.accent()),
        Span::styled(rest, theme.muted()),
    ]);
    let drawing = p.observation.as_ref().and_then(|obs| {
        crate::sim_catalog()
            .find(&spec.task.sim)
            .and_then(|sim| sim.draw(obs))
    });
    match drawing {
        Some(drawing) => draw_scene(frame, &drawing, theme, scene, title),
        _ => frame.render_widget(
            Paragraph::new(Line::styled("press r to reset", theme.muted()))
                .block(block(title, theme, false)),
            scene,
        ),
    }
    if let (Some(map), Some(area)) = (&p.map, map_area) {
        let title = Line::styled(" map · whole arena (replayed here) ", theme.muted());
        match map.map() {
            Ok(drawing) if p.observation.is_some() => {
                draw_scene(frame, &drawing, theme, area, title)
            }
            Ok(_) => {
                frame.render_widget(Paragraph::new("").block(block(title, theme, false)), area)
            }
            Err(why) => frame.render_widget(
                Paragraph::new(Line::styled(format!("no map: {why}"), theme.muted()))
                    .wrap(ratatui::widgets::Wrap { trim: false })
                    .block(block(title, theme, false)),
                area,
            ),
        }
    }
    let history_column = bottom.width >= HISTORY_COLUMN_WIDTH;
    frame.render_widget(
        Paragraph::new(side_lines(
            p,
            typing_seed,
            theme,
            side.height.saturating_sub(2) as usize,
            side.width.saturating_sub(2) as usize,
            !history_column,
        ))
        .wrap(ratatui::widgets::Wrap { trim: false })
        .block(block(" observation ", theme, false)),
        side,
    );

    let wide = history_column;
    let constraints = if wide {
        vec![
            Constraint::Percentage(40),
            Constraint::Percentage(40),
            Constraint::Percentage(20),
        ]
    } else {
        vec![Constraint::Percentage(50), Constraint::Percentage(50)]
    };
    let cols = Layout::horizontal(constraints).split(bottom);
    draw_reward_chart(frame, p, theme, cols[0]);
    draw_return_chart(frame, p, theme, cols[1]);
    if wide {
        draw_history(frame, p, theme, cols[2]);
    }
}

fn fmt(v: f64) -> String {
    format!("{v:>10.4}")
}

fn side_lines<'a>(
    p: &Practice,
    typing_seed: bool,
    theme: &Theme,
    rows: usize,
    width: usize,
    with_history: bool,
) -> Vec<Line<'a>> {
    let Some(spec) = &p.spec else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    // The panel's fixed part: reward, flags, player, action.
    let mut tail = vec![
        Line::from(vec![
            Span::styled("reward ", theme.muted()),
            Span::raw(p.last_reward.map_or("-".into(), |r| format!("{r:.3}"))),
            Span::styled("   return ", theme.muted()),
            Span::raw(format!("{:.3}", p.episode_return)),
        ]),
        Line::from(vec![
            Span::styled("terminated ", theme.muted()),
            flag(p.terminated, theme),
            Span::styled("   truncated ", theme.muted()),
            flag(p.truncated, theme),
        ]),
    ];
    for (k, v) in &p.info {
        // Shown above as step and return.
        if [
            ale_proto::info_keys::EPISODE_STEPS,
            ale_proto::info_keys::EPISODE_RETURN,
        ]
        .contains(&k.as_str())
        {
            continue;
        }
        let value = match v {
            InfoValue::Number(x) => format!("{x:.3}"),
            InfoValue::Integer(x) => x.to_string(),
            InfoValue::Flag(x) => x.to_string(),
            InfoValue::Text(x) => x.clone(),
            InfoValue::Tensor(t) => format!("tensor {:?}", t.shape()),
        };
        tail.push(Line::from(vec![
            Span::styled(format!("{k} "), theme.muted()),
            Span::raw(value),
        ]));
    }
    let playing = if p.playing { "▶" } else { "⏸" };
    tail.push(Line::from(vec![
        Span::styled("player ", theme.muted()),
        Span::styled(p.player.name(), theme.accent()),
        Span::raw(format!(" {playing} {} steps/s", p.speed)),
    ]));
    tail.extend(action_lines(p, theme));
    if typing_seed {
        tail.push(Line::from(vec![
            Span::styled("seed: ", theme.accent()),
            Span::raw(format!("{}▏", p.seed_input)),
        ]));
    }
    let room = rows.saturating_sub(tail.len());
    if let Some(obs) = &p.observation {
        let values = obs.to_f64_vec();
        let labels = super::labels::observation_labels(
            &spec.task.sim,
            &spec.observation_space,
            values.len(),
        );
        let shown = if values.len() > room {
            room.saturating_sub(1)
        } else {
            values.len()
        };
        // Values get 10 columns; labels the rest, cut if they must be.
        let label_width = width.saturating_sub(11).clamp(8, 24);
        for (label, value) in labels.iter().zip(&values).take(shown) {
            let label: String = label.chars().take(label_width).collect();
            lines.push(Line::from(vec![
                Span::styled(format!("{label:<label_width$}"), theme.muted()),
                Span::raw(fmt(*value)),
            ]));
        }
        if shown < values.len() {
            lines.push(Line::styled(
                format!("… {} more values", values.len() - shown),
                theme.muted(),
            ));
        }
    }
    lines.extend(tail);
    // Rows the lines take once wrapped to the panel's width.
    let used: usize = lines
        .iter()
        .map(|l| l.width().max(1).div_ceil(width.max(1)))
        .sum();
    let spare = rows.saturating_sub(used);
    if with_history && spare >= 2 && !p.history.is_empty() {
        lines.push(Line::styled("latest episodes", theme.muted()));
        for e in p.history.iter().rev().take(spare - 1) {
            let end = if e.terminated { "term" } else { "trunc" };
            lines.push(Line::from(vec![
                Span::styled(format!("#{:<4}", e.number), theme.muted()),
                Span::raw(format!("{:>9.2} {:>5} {end}", e.episode_return, e.steps)),
            ]));
        }
    }
    lines
}

fn flag<'a>(on: bool, theme: &Theme) -> Span<'a> {
    if on {
        Span::styled("yes", Style::default().fg(theme.warn))
    } else {
        Span::raw("no")
    }
}

/// The action pane: a Discrete space's actions and the last one taken; a Box's sliders while
/// playing by hand, and while a policy plays, the action it took.
fn action_lines<'a>(p: &Practice, theme: &Theme) -> Vec<Line<'a>> {
    let Some(spec) = &p.spec else {
        return Vec::new();
    };
    let taken = p.last_action.as_ref().map(|a| a.to_f64_vec());
    match &spec.action_space {
        Space::Discrete(d) => {
            let name = |k: i64| match d.labels.get((k - d.start) as usize) {
                Some(l) => format!("{k} {l}"),
                None => k.to_string(),
            };
            let names: Vec<String> = (0..d.n).map(|k| name(d.start + k as i64)).collect();
            let mut lines = vec![Line::from(vec![
                Span::styled("actions ", theme.muted()),
                Span::raw(names.join(" · ")),
            ])];
            if let Some(&[a]) = taken.as_deref() {
                lines.push(Line::from(vec![
                    Span::styled("last action ", theme.muted()),
                    Span::styled(name(a as i64), theme.accent()),
                ]));
            }
            lines
        }
        Space::Box(_) => {
            let by_hand = p.player == Player::Manual;
            let values: Vec<f64> = match (&taken, by_hand) {
                (Some(taken), false) => taken.clone(),
                _ => p.box_action.iter().map(|v| f64::from(*v)).collect(),
            };
            let mut lines = vec![Line::styled(
                if by_hand {
                    "action (yours)"
                } else if taken.is_some() {
                    "action (the policy's last)"
                } else {
                    "action (the policy's, after a step)"
                },
                theme.muted(),
            )];
            let labels =
                super::labels::action_labels(&spec.task.sim, &spec.action_space, values.len());
            // A long action (a swarm's) shows the rows around the one being set, so the
            // observation keeps room.
            let first = p
                .box_cursor
                .saturating_sub(ACTION_ROWS / 2)
                .min(values.len().saturating_sub(ACTION_ROWS));
            lines.extend(
                values
                    .iter()
                    .zip(&labels)
                    .enumerate()
                    .skip(first)
                    .take(ACTION_ROWS)
                    .map(|(i, (v, label))| {
                        let marker = if i == p.box_cursor && by_hand {
                            "▸ "
                        } else {
                            "  "
                        };
                        Line::from(vec![
                            Span::styled(marker.to_string(), theme.accent()),
                            Span::styled(format!("{label:<18}"), theme.muted()),
                            Span::raw(format!("{v:>8.3}")),
                        ])
                    }),
            );
            if values.len() > ACTION_ROWS {
                lines.push(Line::styled(
                    format!("  … {} values in all (↑ ↓)", values.len()),
                    theme.muted(),
                ));
            }
            lines
        }
        _ => Vec::new(),
    }
}

fn draw_reward_chart(frame: &mut Frame, p: &Practice, theme: &Theme, area: Rect) {
    let rewards = &p.rewards;
    let points = downsample(rewards, (area.width as usize).saturating_sub(10).max(4) * 2);
    let n = rewards.len().max(1) as f64;
    let y = bounds(points.iter().map(|p| p.1));
    let datasets = vec![
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(theme.chart_reward))
            .data(&points),
    ];
    let title = format!(" reward per step ({} steps) ", rewards.len());
    let chart = themed_chart(
        Chart::new(datasets).block(block(title, theme, false)),
        theme,
        n,
        y,
        1,
    );
    frame.render_widget(chart, area);
}

fn draw_return_chart(frame: &mut Frame, p: &Practice, theme: &Theme, area: Rect) {
    let returns: Vec<f64> = p.history.iter().map(|e| e.episode_return).collect();
    let points = downsample(
        &returns,
        (area.width as usize).saturating_sub(10).max(4) * 2,
    );
    let points: Vec<(f64, f64)> = points.into_iter().map(|(x, y)| (x + 1.0, y)).collect();
    let n = returns.len().max(1) as f64 + 1.0;
    let target = p.spec.as_ref().map(|s| s.task.metric.target);
    let returns_metric = p
        .spec
        .as_ref()
        .is_some_and(|s| s.task.metric.name == "mean_return");
    let target_line: Vec<(f64, f64)> = match target {
        Some(t) if returns_metric => vec![(0.0, t), (n, t)],
        _ => Vec::new(),
    };
    let y = bounds(
        points
            .iter()
            .map(|p| p.1)
            .chain(target_line.iter().map(|p| p.1))
            .chain([0.0]),
    );
    // The target line first, so the bars are drawn over it: a bar reaching past the target
    // shows whole.
    let mut datasets = Vec::new();
    if !target_line.is_empty() {
        datasets.push(
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(Style::default().fg(theme.chart_target))
                .data(&target_line),
        );
    }
    datasets.push(
        Dataset::default()
            .marker(Marker::Braille)
            .graph_type(GraphType::Bar)
            .style(Style::default().fg(theme.chart_return))
            .data(&points),
    );
    let title = match target {
        Some(t) if returns_metric => format!(" return per episode ── target {t} "),
        _ => " return per episode ".to_string(),
    };
    let chart = themed_chart(
        Chart::new(datasets).block(block(title, theme, false)),
        theme,
        n,
        y,
        0,
    );
    frame.render_widget(chart, area);
}

fn draw_history(frame: &mut Frame, p: &Practice, theme: &Theme, area: Rect) {
    let items: Vec<ListItem> = p
        .history
        .iter()
        .rev()
        .take(area.height as usize)
        .map(|e| {
            let end = if e.terminated { "term" } else { "trunc" };
            ListItem::new(Line::from(vec![
                Span::styled(format!("#{:<4}", e.number), theme.muted()),
                Span::raw(format!("{:>9.2} {:>5} {end}", e.episode_return, e.steps)),
            ]))
        })
        .collect();
    frame.render_widget(
        List::new(items).block(block(" episodes ", theme, false)),
        area,
    );
}
