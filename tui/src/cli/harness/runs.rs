//! `ale harness runs` (and `runs rm`) and `ale harness leaderboard`: past runs, listed,
//! removed and ranked.

use std::process::ExitCode;

use ale_harness::leaderboard::Leaderboard;
use ale_harness::runs::{self, RunFilter, RunRow};
use anyhow::Context;

use super::{LeaderboardArgs, RmArgs, RunsArgs};

pub(super) fn list_runs(args: &RunsArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    let entries = runs::list(&state_dir)
        .with_context(|| format!("cannot list runs in {}", state_dir.display()))?;
    let filter = RunFilter {
        task: args.task.clone(),
        tags: args.tags.clone(),
        name: args.name.clone(),
    };
    let rows: Vec<RunRow> = entries
        .iter()
        .map(RunRow::of)
        .filter(|r| filter.keeps(r))
        .collect();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
        return Ok(ExitCode::SUCCESS);
    }
    if args.csv {
        print!("{}", runs::to_csv(&rows));
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        if entries.is_empty() {
            println!("No runs in {} yet. Try: ale demo", state_dir.display());
        } else {
            println!(
                "None of the {} runs in {} match.",
                entries.len(),
                state_dir.display()
            );
        }
        return Ok(ExitCode::SUCCESS);
    }
    let table: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            let who = match &r.name {
                Some(name) => name.clone(),
                None => r.agent.clone(),
            };
            let score = match (r.score, r.score_ci) {
                (Some(s), Some(ci)) => format!("{s:.3} ± {:.3}", ci.half_width()),
                (Some(s), None) => format!("{s:.3}"),
                _ => "-".into(),
            };
            let duration = r
                .duration_seconds
                .map_or("-".into(), |d| format!("{d:.1} s"));
            let status = match &r.sandbox {
                Some(s) if s.starts_with("unsandboxed") => format!("{} (unsandboxed)", r.status),
                _ => r.status.clone(),
            };
            [
                r.started[..16.min(r.started.len())].to_string(),
                duration,
                r.task.clone(),
                who,
                status,
                score,
                r.run_id.clone(),
            ]
        })
        .collect();
    print_columns(
        &[
            "STARTED (UTC)",
            "TIME",
            "TASK",
            "NAME / AGENT",
            "STATUS",
            "SCORE ± 95%",
            "RUN",
        ],
        &table,
    );
    Ok(ExitCode::SUCCESS)
}

/// A table with a header, each column as wide as its widest cell (the last one unpadded).
fn print_columns<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    let mut widths = header.map(|h| h.chars().count());
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == N {
                out.push_str(cell);
            } else {
                out.push_str(&format!("{cell:<w$}  "));
            }
        }
        println!("{}", out.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}

pub(super) fn remove_runs(args: &RmArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    for run in &args.runs {
        let dir = crate::cli::run_arg::resolve(run, &state_dir)?;
        let gone = runs::remove(&state_dir, &dir, args.archive, args.force)?;
        if args.archive {
            println!("archived {} to {}", dir.display(), gone.display());
        } else {
            println!("removed {}", gone.display());
        }
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn leaderboard(args: &LeaderboardArgs) -> anyhow::Result<ExitCode> {
    let state_dir = args.state_dir.resolve();
    let board = Leaderboard::load(&state_dir, &args.task)
        .with_context(|| format!("cannot list runs in {}", state_dir.display()))?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&board)?);
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "Leaderboard of {} (verified, sandboxed runs only; each agent on each seed set apart)",
        board.task
    );
    if board.standings.is_empty() {
        println!("  no verified run of {} yet", board.task);
    } else {
        let rows: Vec<[String; 7]> = board
            .standings
            .iter()
            .map(|s| {
                let ci = |c: Option<ale_harness::stats::Interval>| {
                    c.map_or(String::new(), |c| format!(" [{:.3}, {:.3}]", c.low, c.high))
                };
                [
                    s.rank.to_string(),
                    match &s.seed_set {
                        Some(set) => format!("{} · seed set {set}", s.agent),
                        None => s.agent.clone(),
                    },
                    format!("{:.3}{}", s.score, ci(s.score_ci)),
                    format!("{:.3}{}", s.value, ci(s.value_ci)),
                    format!(
                        "{} · {} run{}",
                        s.rollouts,
                        s.runs,
                        if s.runs == 1 { "" } else { "s" }
                    ),
                    s.started[..16.min(s.started.len())].to_string(),
                    s.run_id.clone(),
                ]
            })
            .collect();
        let metric = board
            .standings
            .first()
            .map_or("METRIC".to_string(), |s| s.metric_name.to_uppercase());
        print_columns(
            &[
                "#",
                "AGENT",
                "SCORE [95%]",
                &format!("{metric} [95%]"),
                "ROLLOUTS · RUNS",
                "STARTED (UTC)",
                "BEST RUN",
            ],
            &rows,
        );
    }
    if !board.left_out.is_empty() {
        println!("Left out, not ranked ({}):", board.left_out.len());
        for l in &board.left_out {
            println!("  {}  {}  {}", l.run_id, l.agent, l.reason);
        }
    }
    Ok(ExitCode::SUCCESS)
}
