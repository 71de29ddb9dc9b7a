//! Each signed record on its own: the evaluator's trajectory (hash chain, well-formed trusted
//! events, a final result that agrees with the per-rollout events, the evaluator's signature
//! on its head) and the harness's own log (its chain, that it names the trajectory's head, the
//! harness's signature), and the public keys they are checked with.

use std::collections::BTreeMap;

use ale_proto::eval::{EpisodeRecord, EvalResultRecord, Outcome};
use ale_proto::task_spec::TaskMode;
use ale_records::event_data::{RolloutStarted, RunStarted, SessionStarted, SubmissionReceived};
use std::path::Path;

use ale_records::signature;
use ale_records::trajectory::{self, EventKind, Level, SealedEvent};
use ed25519_dalek::VerifyingKey;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::harness_log::{HarnessStarted, ResultRead};
use crate::scoring::{Breakdown, ScoringRules};

/// The first place a record breaks, 1-based line, and how.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct VerifyError {
    pub line: usize,
    pub reason: String,
}

/// A trajectory that verified.
#[derive(Debug, Clone, Serialize)]
pub struct VerifiedTrajectory {
    pub run: RunStarted,
    /// The final result (its `trajectory_head` filled in), if the session finished.
    pub result: Option<EvalResultRecord>,
    /// Hash of the last event.
    pub head: String,
    pub events: usize,
    /// The evaluator's signature on `session_finished` (not yet checked against a key).
    pub signature: Option<String>,
    /// A batch run's submission, as the evaluator snapshotted it.
    pub submission: Option<SubmissionReceived>,
}

impl VerifiedTrajectory {
    /// The scoring rules the run was evaluated under.
    pub fn rules(&self) -> ScoringRules {
        ScoringRules::from_run(&self.run)
    }

    /// Checks the evaluator's signature on a finished session's head with `key`. An unfinished
    /// session has nothing signed yet and passes.
    pub fn check_signature(&self, key: &VerifyingKey) -> Result<(), SignatureCheckError> {
        check_signed_head(
            "the evaluator's",
            key,
            Level::TrustedEvaluator,
            &self.head,
            self.result.is_some(),
            self.signature.as_deref(),
        )
    }
}

/// Why the signature closing a record does not check out; `whose` is "the evaluator's" or
/// "the harness's".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureCheckError {
    #[error("{whose} signature on the head {head}: {cause}")]
    Invalid {
        whose: &'static str,
        head: String,
        cause: signature::SignatureError,
    },
    #[error(
        "{whose} signature is missing from the finished record: it was re-sealed without \
         the key (or written by a version that did not sign)"
    )]
    Missing { whose: &'static str },
}

fn check_signed_head(
    whose: &'static str,
    key: &VerifyingKey,
    level: Level,
    head: &str,
    finished: bool,
    signature: Option<&str>,
) -> Result<(), SignatureCheckError> {
    match (finished, signature) {
        (false, None) => Ok(()),
        (_, Some(signature)) => {
            signature::check_head(key, level, head, signature).map_err(|cause| {
                SignatureCheckError::Invalid {
                    whose,
                    head: head.to_string(),
                    cause,
                }
            })
        }
        (true, None) => Err(SignatureCheckError::Missing { whose }),
    }
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
    let mut signature = None;
    let mut submission: Option<SubmissionReceived> = None;

    for (i, sealed) in chain.events.iter().enumerate() {
        let line = i + 1;
        let fail = |reason: String| VerifyError { line, reason };
        let kind = sealed.event.kind;
        if sealed.signature.is_some() && kind != EventKind::SessionFinished {
            return Err(fail(format!(
                "a signed {kind:?} event: only session_finished is signed"
            )));
        }
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
            (EventKind::SubmissionReceived, Some(r)) => {
                if r.mode != TaskMode::Batch {
                    return Err(fail(format!(
                        "submission_received in a run of {} task {}",
                        r.mode, r.task_id
                    )));
                }
                if submission.is_some() {
                    return Err(fail("a second submission_received".into()));
                }
                if commitments.is_some() {
                    return Err(fail("submission_received after session_started".into()));
                }
                submission = Some(parse(sealed, line)?);
            }
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
            (EventKind::RolloutStarted, Some(r)) => {
                let c = commitments
                    .as_ref()
                    .ok_or_else(|| fail("a rollout before session_started".into()))?;
                if r.mode == TaskMode::Batch && submission.is_none() {
                    return Err(fail(
                        "a batch run's rollout with no submission_received before it".into(),
                    ));
                }
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
                signature = sealed.signature.clone();
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
        signature,
        submission,
    })
}

fn check_finished_episode(
    e: &EpisodeRecord,
    run: &RunStarted,
    commitments: &[String],
) -> Result<(), String> {
    if !matches!(
        e.outcome,
        Outcome::Completed | Outcome::Aborted | Outcome::BudgetExceeded | Outcome::SimFault
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

/// A harness log that verified.
#[derive(Debug, Clone, Serialize)]
pub struct VerifiedHarnessLog {
    pub events: usize,
    pub head: String,
    /// The harness's signature on `run_scored` (not yet checked against a key).
    pub signature: Option<String>,
    pub started: HarnessStarted,
    /// Absent until the harness has read the result.
    pub read: Option<ResultRead>,
    /// The score, as `run_scored` records it; absent until the run is scored.
    pub score: Option<Breakdown>,
}

impl VerifiedHarnessLog {
    /// Checks the harness's signature on a scored run's head with `key`.
    pub fn check_signature(&self, key: &VerifyingKey) -> Result<(), SignatureCheckError> {
        check_signed_head(
            "the harness's",
            key,
            Level::Harness,
            &self.head,
            self.score.is_some(),
            self.signature.as_deref(),
        )
    }

    /// Whether the log is signed: only then do its claims (the sandbox) count.
    pub fn is_signed(&self) -> bool {
        self.signature.is_some()
    }
}

/// Checks the harness's log: `harness_started`, then `result_read` naming `trajectory_head` as
/// the head it read, then `run_scored`, each with well-formed data.
pub fn verify_harness_log(
    text: &str,
    trajectory_head: &str,
) -> Result<VerifiedHarnessLog, VerifyError> {
    let log = verify_harness_log_so_far(text, trajectory_head)?;
    if log.read.is_none() {
        return Err(VerifyError {
            line: log.events,
            reason: "the harness log has no result_read event".into(),
        });
    }
    Ok(log)
}

/// [`verify_harness_log`] of a log that may end before `result_read`: the log of a run whose
/// evaluator was interrupted, so that no result was ever there to read.
pub(super) fn verify_harness_log_so_far(
    text: &str,
    trajectory_head: &str,
) -> Result<VerifiedHarnessLog, VerifyError> {
    let chain = trajectory::verify(text).map_err(|e| VerifyError {
        line: e.line,
        reason: e.reason,
    })?;
    let mut started: Option<HarnessStarted> = None;
    let mut read: Option<ResultRead> = None;
    let mut score: Option<Breakdown> = None;
    let mut signature = None;
    for (i, sealed) in chain.events.iter().enumerate() {
        let line = i + 1;
        let fail = |reason: String| VerifyError { line, reason };
        let kind = sealed.event.kind;
        if sealed.event.level != Level::Harness || kind.is_evaluator_event() {
            return Err(fail(format!(
                "a {kind:?} event does not belong in the harness log"
            )));
        }
        if sealed.signature.is_some() && kind != EventKind::RunScored {
            return Err(fail(format!(
                "a signed {kind:?} event: only run_scored is signed"
            )));
        }
        match (kind, &started, &read, &score) {
            (EventKind::HarnessStarted, None, _, _) => started = Some(parse(sealed, line)?),
            (EventKind::ResultRead, Some(_), None, None) => {
                let r: ResultRead = parse(sealed, line)?;
                if r.evaluator_head != trajectory_head {
                    return Err(fail(format!(
                        "the harness read the result at trajectory head {}, but the trajectory's head is {trajectory_head}",
                        r.evaluator_head
                    )));
                }
                read = Some(r);
            }
            (EventKind::RunScored, Some(_), Some(_), None) => {
                score = Some(parse(sealed, line)?);
                signature = sealed.signature.clone();
            }
            (other, _, _, _) => {
                return Err(fail(format!(
                    "a {other:?} event out of order: the log is harness_started, result_read, run_scored"
                )));
            }
        }
    }
    let started = started.ok_or(VerifyError {
        line: 1,
        reason: "the harness log is empty".into(),
    })?;
    Ok(VerifiedHarnessLog {
        events: chain.events.len(),
        head: chain.head,
        signature,
        started,
        read,
        score,
    })
}

/// The public keys a run's records are checked with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordKeys {
    pub evaluator: VerifyingKey,
    pub harness: VerifyingKey,
}

impl RecordKeys {
    /// The public keys an evaluator's state dir holds (`evaluator.pub`, `harness.pub`).
    pub fn from_state_dir(
        state_dir: &Path,
    ) -> Result<RecordKeys, ale_records::signing_keys::KeyError> {
        use ale_records::signing_keys::{KeyRole, read_public_key};
        let read = |role: KeyRole| read_public_key(&state_dir.join(role.public_key_file()));
        Ok(RecordKeys {
            evaluator: read(KeyRole::Evaluator)?,
            harness: read(KeyRole::Harness)?,
        })
    }
}
