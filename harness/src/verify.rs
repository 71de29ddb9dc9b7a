//! Verifying a run's records: the evaluator's trajectory (hash chain, well-formed trusted
//! events, a final result that agrees with the per-rollout events) and the harness's own log
//! (its chain, and that it names the trajectory's head).

use std::collections::BTreeMap;

use ale_proto::records::{
    EpisodeRecord, EvalResultRecord, Outcome, RolloutStarted, RunStarted, SessionStarted,
};
use ale_proto::trajectory::{self, EventKind, Level, SealedEvent};
use serde::de::DeserializeOwned;

use crate::scoring::ScoringRules;

/// The first place a record breaks, 1-based line, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct VerifyError {
    pub line: usize,
    pub reason: String,
}

/// A trajectory that verified.
#[derive(Debug, Clone)]
pub struct VerifiedTrajectory {
    pub run: RunStarted,
    /// The final result (its `trajectory_head` filled in), if the session finished.
    pub result: Option<EvalResultRecord>,
    /// Hash of the last event.
    pub head: String,
    pub events: usize,
}

impl VerifiedTrajectory {
    pub fn rules(&self) -> ScoringRules {
        rules_from(&self.run)
    }
}

/// The scoring rules a run was evaluated under, as its `run_started` event records them.
pub fn rules_from(run: &RunStarted) -> ScoringRules {
    ScoringRules::new(
        &run.metric_name,
        run.direction,
        run.target,
        run.cap,
        run.safety
            .iter()
            .map(|s| (s.name.clone(), s.penalty_factor)),
        run.genre,
    )
}

fn parse<T: DeserializeOwned>(event: &SealedEvent, line: usize) -> Result<T, VerifyError> {
    serde_json::from_value(event.event.data.clone()).map_err(|e| VerifyError {
        line,
        reason: format!("malformed {:?} event: {e}", event.event.kind),
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Checks a trajectory line by line.
pub fn verify_trajectory(text: &str) -> Result<VerifiedTrajectory, VerifyError> {
    let chain = trajectory::verify(text).map_err(|e| VerifyError {
        line: e.line,
        reason: e.reason,
    })?;
    let mut run: Option<RunStarted> = None;
    let mut commitments: Option<Vec<String>> = None;
    let mut finished: BTreeMap<u32, EpisodeRecord> = BTreeMap::new();
    let mut in_progress: Option<u32> = None;
    let mut next_index: u32 = 0;
    let mut result: Option<EvalResultRecord> = None;

    for (i, sealed) in chain.events.iter().enumerate() {
        let line = i + 1;
        let fail = |reason: String| VerifyError { line, reason };
        let kind = sealed.event.kind;
        if sealed.event.level != Level::TrustedEvaluator || !kind.is_evaluator_event() {
            return Err(fail(format!(
                "a {kind:?} event at level {:?} does not belong in the evaluator's trajectory",
                sealed.event.level
            )));
        }
        if result.is_some() {
            return Err(fail("an event after session_finished".into()));
        }
        match (kind, &run) {
            (EventKind::RunStarted, None) => run = Some(parse(sealed, line)?),
            (_, None) => return Err(fail("the trajectory must begin with run_started".into())),
            (EventKind::RunStarted, Some(_)) => return Err(fail("a second run_started".into())),
            (EventKind::SessionStarted, Some(r)) => {
                if commitments.is_some() {
                    return Err(fail("a second session_started".into()));
                }
                let s: SessionStarted = parse(sealed, line)?;
                if s.session_id != r.session_id {
                    return Err(fail(format!(
                        "session {} is not the run's session {}",
                        s.session_id, r.session_id
                    )));
                }
                if s.seed_commitments.len() != r.episodes as usize {
                    return Err(fail(format!(
                        "{} seed commitments for {} planned rollouts",
                        s.seed_commitments.len(),
                        r.episodes
                    )));
                }
                commitments = Some(s.seed_commitments);
            }
            (EventKind::RolloutStarted, Some(_)) => {
                let c = commitments
                    .as_ref()
                    .ok_or_else(|| fail("a rollout before session_started".into()))?;
                let s: RolloutStarted = parse(sealed, line)?;
                if let Some(open) = in_progress {
                    return Err(fail(format!(
                        "rollout {} started while rollout {open} was in progress",
                        s.index
                    )));
                }
                if s.index != next_index {
                    return Err(fail(format!(
                        "rollout {} started where rollout {next_index} was next",
                        s.index
                    )));
                }
                if c.get(s.index as usize) != Some(&s.seed_commitment) {
                    return Err(fail(format!(
                        "rollout {}'s seed commitment differs from the session's",
                        s.index
                    )));
                }
                in_progress = Some(s.index);
                next_index += 1;
            }
            (EventKind::RolloutFinished, Some(r)) => {
                let e: EpisodeRecord = parse(sealed, line)?;
                if in_progress != Some(e.index) {
                    return Err(fail(format!(
                        "rollout {} finished but was not in progress",
                        e.index
                    )));
                }
                check_finished_episode(&e, r, commitments.as_deref().unwrap_or(&[]))
                    .map_err(fail)?;
                in_progress = None;
                finished.insert(e.index, e);
            }
            (EventKind::SessionFinished, Some(r)) => {
                let c = commitments
                    .as_ref()
                    .ok_or_else(|| fail("session_finished before session_started".into()))?;
                if let Some(open) = in_progress {
                    return Err(fail(format!(
                        "the session finished with rollout {open} still open"
                    )));
                }
                let mut recorded: EvalResultRecord = parse(sealed, line)?;
                check_result(&recorded, r, c, &finished).map_err(fail)?;
                recorded.trajectory_head = sealed.hash.clone();
                result = Some(recorded);
            }
            (other, _) => return Err(fail(format!("unexpected {other:?} event"))),
        }
    }
    let run = run.ok_or(VerifyError {
        line: 1,
        reason: "the trajectory is empty".into(),
    })?;
    Ok(VerifiedTrajectory {
        run,
        result,
        head: chain.head,
        events: chain.events.len(),
    })
}

fn check_finished_episode(
    e: &EpisodeRecord,
    run: &RunStarted,
    commitments: &[String],
) -> Result<(), String> {
    if !matches!(
        e.outcome,
        Outcome::Completed | Outcome::Aborted | Outcome::BudgetExceeded
    ) {
        return Err(format!(
            "rollout {} finished with outcome {:?}",
            e.index, e.outcome
        ));
    }
    if e.outcome != Outcome::Completed && e.metric != run.failure_value {
        return Err(format!(
            "rollout {} failed ({:?}) but its metric is {}, not the failure value {}",
            e.index, e.outcome, e.metric, run.failure_value
        ));
    }
    if commitments.get(e.index as usize) != Some(&e.seed_commitment) {
        return Err(format!(
            "rollout {}'s seed commitment differs from the session's",
            e.index
        ));
    }
    let names: Vec<&String> = e.safety.keys().collect();
    let expected: Vec<&String> = run
        .safety
        .iter()
        .map(|s| &s.name)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    if names != expected {
        return Err(format!(
            "rollout {} reports safety metrics {names:?}, the task has {expected:?}",
            e.index
        ));
    }
    Ok(())
}

/// The recorded result must be exactly what the rollout events add up to.
fn check_result(
    r: &EvalResultRecord,
    run: &RunStarted,
    commitments: &[String],
    finished: &BTreeMap<u32, EpisodeRecord>,
) -> Result<(), String> {
    if r.run_id != run.run_id || r.session_id != run.session_id || r.task_id != run.task_id {
        return Err("the result names another run, session or task".into());
    }
    if r.metric_name != run.metric_name || r.direction != run.direction {
        return Err("the result's metric differs from the run's".into());
    }
    if !r.status.is_finished() {
        return Err("session_finished records a running session".into());
    }
    if !r.trajectory_head.is_empty() {
        return Err("session_finished must not name a head (it is its own hash)".into());
    }
    if r.seed_commitments != commitments {
        return Err("the result's seed commitments differ from the session's".into());
    }
    if r.episodes.len() != run.episodes as usize {
        return Err(format!(
            "the result lists {} rollouts, {} were planned",
            r.episodes.len(),
            run.episodes
        ));
    }
    for (i, e) in r.episodes.iter().enumerate() {
        let i = i as u32;
        match finished.get(&i) {
            Some(f) if f == e => {}
            Some(_) => {
                return Err(format!(
                    "rollout {i} in the result differs from its rollout_finished event"
                ));
            }
            None => {
                let not_run = e.outcome == Outcome::NotRun
                    && e.metric == run.failure_value
                    && e.steps == 0
                    && e.episode_return == 0.0
                    && e.index == i
                    && commitments.get(i as usize) == Some(&e.seed_commitment);
                if !not_run {
                    return Err(format!(
                        "rollout {i} never ran, but the result says {:?} with metric {}",
                        e.outcome, e.metric
                    ));
                }
            }
        }
    }
    let mean = r.episodes.iter().map(|e| e.metric).sum::<f64>() / r.episodes.len().max(1) as f64;
    if !close(mean, r.value) {
        return Err(format!(
            "the result's value {} is not the mean of its rollouts, {mean}",
            r.value
        ));
    }
    let steps: u64 = r.episodes.iter().map(|e| e.steps).sum();
    if steps != r.total_steps {
        return Err(format!(
            "the result counts {} steps, its rollouts {steps}",
            r.total_steps
        ));
    }
    for s in &run.safety {
        let total: f64 = r
            .episodes
            .iter()
            .filter_map(|e| e.safety.get(&s.name))
            .sum();
        match r.safety.get(&s.name) {
            Some(v) if close(*v, total) => {}
            other => {
                return Err(format!(
                    "safety {} is {other:?} in the result, its rollouts sum to {total}",
                    s.name
                ));
            }
        }
    }
    Ok(())
}

/// Checks the harness's log and that it names `trajectory_head` as the head it read.
pub fn verify_harness_log(text: &str, trajectory_head: &str) -> Result<usize, VerifyError> {
    let chain = trajectory::verify(text).map_err(|e| VerifyError {
        line: e.line,
        reason: e.reason,
    })?;
    let mut read_head = None;
    for (i, sealed) in chain.events.iter().enumerate() {
        let line = i + 1;
        if sealed.event.level != Level::Harness || sealed.event.kind.is_evaluator_event() {
            return Err(VerifyError {
                line,
                reason: format!(
                    "a {:?} event does not belong in the harness log",
                    sealed.event.kind
                ),
            });
        }
        if sealed.event.kind == EventKind::ResultRead {
            read_head = sealed
                .event
                .data
                .get("evaluator_head")
                .and_then(|v| v.as_str())
                .map(str::to_string);
            if read_head.as_deref() != Some(trajectory_head) {
                return Err(VerifyError {
                    line,
                    reason: format!(
                        "the harness read the result at trajectory head {}, but the trajectory's head is {trajectory_head}",
                        read_head.unwrap_or_default()
                    ),
                });
            }
        }
    }
    if read_head.is_none() {
        return Err(VerifyError {
            line: chain.events.len().max(1),
            reason: "the harness log has no result_read event".into(),
        });
    }
    Ok(chain.events.len())
}
