//! A task's leaderboard: the best verified run of each agent, by score, with its interval.
//! Runs whose records do not verify (or cannot be checked), and runs whose agent ran
//! unsandboxed (it could have tampered with the record), are left out and listed as such,
//! never ranked. An agent's runs on different seed sets (or fresh seeds) rank apart. `ale harness leaderboard` and the console's leaderboard view read a
//! [`Leaderboard`].

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::report::Report;
use crate::runs::{self, RunSummary};
use crate::stats::Interval;
use crate::verify::{RecordKeys, verify_run_dir};

/// One ranked agent: its best verified run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Standing {
    pub rank: usize,
    /// The run's name, or its agent in a few words ([`Report::agent_label`]).
    pub agent: String,
    /// The evaluation seed set its runs played, or `None` for fresh seeds.
    pub seed_set: Option<String>,
    pub score: f64,
    pub score_ci: Option<Interval>,
    pub metric_name: String,
    pub value: f64,
    pub value_ci: Option<Interval>,
    pub rollouts: usize,
    pub run_id: String,
    pub started: String,
    /// How many verified runs this agent has on the task.
    pub runs: usize,
}

/// A run left off the board, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeftOut {
    pub run_id: String,
    pub agent: String,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Leaderboard {
    pub task: String,
    pub standings: Vec<Standing>,
    pub left_out: Vec<LeftOut>,
}

impl Leaderboard {
    /// The board of `task` from the runs in `state_dir`, each verified with the state dir's
    /// public keys (without them, every run is left out: nothing could be checked).
    pub fn load(state_dir: &Path, task: &str) -> std::io::Result<Leaderboard> {
        let keys = RecordKeys::from_state_dir(state_dir);
        let mut verified = Vec::new();
        let mut left_out = Vec::new();
        for entry in runs::list(state_dir)? {
            let report = match entry.summary {
                RunSummary::Reported(report) => report,
                // A run of the task with no report the harness can read is not ranked, and
                // the board says so.
                RunSummary::Unreported { task_id, status } if task_id == task => {
                    left_out.push(LeftOut {
                        run_id: entry.run_id,
                        agent: "-".into(),
                        reason: format!("no readable report ({status})"),
                    });
                    continue;
                }
                _ => continue,
            };
            if report.task.id != task {
                continue;
            }
            let check = match &keys {
                Err(e) => Err(format!("not checked: {e}")),
                Ok(keys) => verify_run_dir(&entry.dir, keys)
                    .map(|_| ())
                    .map_err(|e| format!("NOT VERIFIED: {e}")),
            };
            let check = check.and_then(|()| match report.sandbox.warning() {
                Some(warning) => Err(warning.to_string()),
                None => Ok(()),
            });
            match check {
                Ok(()) => verified.push(*report),
                Err(reason) => left_out.push(LeftOut {
                    run_id: entry.run_id,
                    agent: report.agent_label(),
                    reason,
                }),
            }
        }
        Ok(Leaderboard::rank(task, verified, left_out))
    }

    /// Ranks verified reports: each agent's best score (ties: the earlier run), agents by
    /// that score, best first.
    pub fn rank(task: &str, verified: Vec<Report>, left_out: Vec<LeftOut>) -> Leaderboard {
        let mut by_agent: BTreeMap<(String, Option<String>), Vec<Report>> = BTreeMap::new();
        for report in verified {
            let set = report.seed_set.as_ref().map(|s| s.name.clone());
            by_agent
                .entry((report.agent_label(), set))
                .or_default()
                .push(report);
        }
        let mut standings: Vec<Standing> = by_agent
            .into_iter()
            .filter_map(|((agent, seed_set), mut reports)| {
                let runs = reports.len();
                reports.sort_by(|a, b| {
                    b.score
                        .score
                        .total_cmp(&a.score.score)
                        .then(a.timings.started_unix_ms.cmp(&b.timings.started_unix_ms))
                });
                let best = reports.into_iter().next()?;
                Some(Standing {
                    rank: 0,
                    agent,
                    seed_set,
                    score: best.score.score,
                    score_ci: best.statistics.as_ref().map(|s| s.score_ci),
                    metric_name: best.score.metric_name.clone(),
                    value: best.value,
                    value_ci: best.statistics.as_ref().map(|s| s.metric.mean_ci),
                    rollouts: best.episodes.len(),
                    run_id: best.run_id.to_string(),
                    started: runs::format_utc(best.timings.started_unix_ms),
                    runs,
                })
            })
            .collect();
        standings.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.agent.cmp(&b.agent)));
        for (i, s) in standings.iter_mut().enumerate() {
            s.rank = i + 1;
        }
        Leaderboard {
            task: task.to_string(),
            standings,
            left_out,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ale_proto::RunId;

    fn run(id: &str, name: Option<&str>, score: f64, started: u64) -> Report {
        let mut r = crate::report::tests::sample();
        r.run_id = RunId::from_wire(id);
        r.name = name.map(str::to_string);
        r.score.score = score;
        r.timings.started_unix_ms = started;
        r
    }

    #[test]
    fn each_agent_gets_its_best_run_and_agents_rank_by_it() {
        let board = Leaderboard::rank(
            "cartpole-balance",
            vec![
                run("run-a1", Some("ppo"), 0.8, 1),
                run("run-a2", Some("ppo"), 1.0, 2),
                run("run-b1", Some("sac"), 0.9, 3),
                run("run-c1", None, 0.9, 0),
            ],
            vec![LeftOut {
                run_id: "run-x".into(),
                agent: "cheat".into(),
                reason: "NOT VERIFIED".into(),
            }],
        );
        let order: Vec<(&str, &str, usize)> = board
            .standings
            .iter()
            .map(|s| (s.agent.as_str(), s.run_id.as_str(), s.runs))
            .collect();
        // "agent" (no name: the sample's command) and sac tie at 0.9: by name.
        assert_eq!(
            order,
            [
                ("ppo", "run-a2", 2),
                ("agent", "run-c1", 1),
                ("sac", "run-b1", 1)
            ]
        );
        assert_eq!(board.standings[2].rank, 3);
        assert_eq!(board.left_out.len(), 1);
    }
}
