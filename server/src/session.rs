//! Interactive eval sessions: the evaluator drives episode boundaries over hidden seeds.
//!
//! Each `Reset` starts the next planned rollout on its hidden seed (any client seed is
//! ignored); a `Reset` in the middle of a rollout aborts it, scores it at the task's failure
//! value and never replays it. After the planned rollouts, or when a budget runs out, the
//! session is finished and holds its result.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ale_proto::eval::{EpisodeRecord, EvalResultRecord, EvalStatus, Outcome};
use ale_proto::{RunId, SessionId};
use ale_records::event_data::{RolloutStarted, SessionStarted};
use ale_records::trajectory::{EventKind, PreparedData};
use ale_records::{SECRET_LEN, seed_commitment};
use ale_sim::{Counter, Sim, SimError, Tensor, Transition};

use crate::action::step_checked;
use crate::error::Error;
use crate::seeds::{HiddenSeed, SeedSource};
use crate::task::{Task, counter};
use crate::trajectory::TrajectoryWriter;

/// One planned rollout: its position, hidden seed and the public commitment to it.
#[derive(Debug)]
struct Rollout {
    seed: HiddenSeed,
    record: EpisodeRecord,
}

/// Times in a row a sim may fail by its own fault to start one rollout before the rollout is
/// recorded as ended by the sim's fault.
pub const MAX_START_FAULTS: u32 = 3;

#[derive(Debug)]
pub struct Session {
    id: SessionId,
    run_id: RunId,
    task: Arc<Task>,
    rollouts: Vec<Rollout>,
    /// The rollout being played, if any.
    current: Option<usize>,
    /// The next rollout a `Reset` starts.
    next: usize,
    total_steps: u64,
    /// Times in a row the sim failed by its own fault to start rollout `next`.
    start_faults: u32,
    deadline: Option<Instant>,
    status: EvalStatus,
    status_message: String,
    /// The run's trajectory, from `session_started` on: every event of the session is written
    /// here, by the session.
    trajectory: TrajectoryWriter,
}

/// A batch rollout played to its end, with the data of its two trajectory events serialised
/// already: the costly part of recording it, done by the worker that played it rather than
/// under the run's lock.
#[derive(Debug)]
pub struct PlayedRollout {
    pub record: EpisodeRecord,
    started: PreparedData,
    finished: PreparedData,
}

impl PlayedRollout {
    pub fn new(record: EpisodeRecord) -> Result<PlayedRollout, Error> {
        let failed = |e: serde_json::Error| {
            Error::Internal(format!("cannot serialise a rollout's event: {e}"))
        };
        Ok(PlayedRollout {
            started: PreparedData::of_sorted(&RolloutStarted {
                index: record.index,
                seed_commitment: record.seed_commitment.clone(),
            })
            .map_err(failed)?,
            finished: PreparedData::of_sorted(&record).map_err(failed)?,
            record,
        })
    }
}

/// A session that could not start: why, and the trajectory it was to own, handed back unchanged
/// but for what the failed write left.
#[derive(Debug)]
pub struct NotStarted {
    pub error: Error,
    pub trajectory: TrajectoryWriter,
}

/// Where the current rollout stands, for the info map.
#[derive(Debug, Clone, Copy)]
pub struct RolloutProgress {
    pub index: u32,
    pub planned: u32,
    pub steps: u64,
    pub episode_return: f64,
}

/// When a time budget of `budget_seconds` that starts at `now` runs out. `None`: no budget (0),
/// or one so long that this clock cannot represent its end, which is then never reached.
pub(crate) fn deadline(now: Instant, budget_seconds: u64) -> Option<Instant> {
    if budget_seconds == 0 {
        return None;
    }
    now.checked_add(Duration::from_secs(budget_seconds))
}

impl Session {
    /// Draws the hidden seeds, records their commitments, and opens the session.
    pub fn start(
        id: SessionId,
        run_id: RunId,
        task: Arc<Task>,
        seeds: &dyn SeedSource,
        secret: &[u8; SECRET_LEN],
        mut trajectory: TrajectoryWriter,
        now: Instant,
    ) -> Result<Session, Box<NotStarted>> {
        // Everything the session holds is computed before its first trusted event is written:
        // `session_started` on disk always stands for a session that exists.
        let deadline = deadline(now, task.time_budget_seconds());
        let rollouts: Vec<Rollout> = (0..task.spec.episodes_per_eval)
            .zip(seeds.draw_many(task.spec.episodes_per_eval as usize))
            .map(|(index, seed)| {
                let commitment = seed_commitment(seed.reveal(), &run_id, secret);
                Rollout {
                    seed,
                    record: EpisodeRecord {
                        index,
                        outcome: Outcome::NotRun,
                        metric: task.spec.metric.failure_value,
                        steps: 0,
                        episode_return: 0.0,
                        seed_commitment: commitment,
                        safety: Default::default(),
                    },
                }
            })
            .collect();
        let started = PreparedData::of_sorted(&SessionStarted {
            session_id: id.clone(),
            seed_commitments: rollouts
                .iter()
                .map(|r| r.record.seed_commitment.clone())
                .collect(),
        })
        .map_err(std::io::Error::other)
        .and_then(|data| trajectory.append_prepared(EventKind::SessionStarted, &data));
        if let Err(e) = started {
            return Err(Box::new(NotStarted {
                error: e.into(),
                trajectory,
            }));
        }
        Ok(Session {
            id,
            run_id,
            deadline,
            task,
            rollouts,
            current: None,
            next: 0,
            total_steps: 0,
            start_faults: 0,
            status: EvalStatus::Running,
            status_message: "running".into(),
            trajectory,
        })
    }

    pub fn planned(&self) -> u32 {
        self.rollouts.len() as u32
    }

    pub fn is_finished(&self) -> bool {
        self.status.is_finished()
    }

    /// Ends the session if its time budget has run out.
    pub fn enforce_deadline(&mut self, sim: &dyn Sim, now: Instant) -> Result<(), Error> {
        if self.is_finished() {
            return Ok(());
        }
        if self.deadline.is_some_and(|d| now >= d) {
            let budget = self.task.time_budget_seconds();
            self.finish(
                sim.counters(),
                EvalStatus::BudgetExceeded,
                Outcome::BudgetExceeded,
                format!("the time budget of {budget} s ran out"),
            )?;
        }
        Ok(())
    }

    fn refuse_if_finished(&self) -> Result<(), Error> {
        if self.is_finished() {
            return Err(Error::SessionFinished(format!(
                "{}; the harness reads its result",
                self.status_message
            )));
        }
        Ok(())
    }

    /// Begins the next planned rollout, aborting the one in progress.
    pub fn reset(&mut self, sim: &mut dyn Sim, now: Instant) -> Result<RolloutProgress, Error> {
        self.enforce_deadline(sim, now)?;
        self.refuse_if_finished()?;
        if let Some(i) = self.current.take() {
            self.close_rollout(i, Outcome::Aborted, sim.counters())?;
        }
        if self.complete_if_all_played("; this Reset aborted the last one")? {
            let n = self.rollouts.len();
            return Err(Error::SessionFinished(format!(
                "this Reset aborted rollout {n} of {n}, the last; the session is complete"
            )));
        }
        let i = self.next;
        let rollout = &mut self.rollouts[i];
        // The sim's own words stay in the evaluator's log: a message could carry what it was
        // given, the hidden seed included, and this answer goes to the agent.
        if let Err(e) = sim.reset(rollout.seed.reveal()) {
            tracing::warn!(task = %self.task.spec.id, sim = %self.task.spec.sim, rollout = i, error = %e,
                "an official rollout's sim failed to reset");
            let said = "it failed to reset for an official rollout (the evaluator's log has its \
                        message); Reset again to retry the same rollout";
            let e = match e {
                SimError::Fault(_) => {
                    self.start_faults += 1;
                    if self.start_faults >= MAX_START_FAULTS {
                        return Err(self.give_up_starting(i, sim.counters())?);
                    }
                    SimError::Fault(said.into())
                }
                SimError::Exhausted(cause) => SimError::Exhausted(cause),
                _ => SimError::Backend(said.into()),
            };
            return Err(crate::action::sim_error(&self.task, e));
        }
        self.start_faults = 0;
        let rollout = &mut self.rollouts[i];
        self.trajectory.append(
            EventKind::RolloutStarted,
            &RolloutStarted {
                index: i as u32,
                seed_commitment: rollout.record.seed_commitment.clone(),
            },
        )?;
        rollout.record.outcome = Outcome::InProgress;
        self.current = Some(i);
        self.next += 1;
        Ok(self.progress(i))
    }

    /// Records rollout `i`, which its sim failed [`MAX_START_FAULTS`] times in a row to start,
    /// as ended by the sim's fault, so that a sim that cannot start one hidden seed does not
    /// hold the session; the answer says so.
    fn give_up_starting(&mut self, i: usize, counters: &[Counter]) -> Result<Error, Error> {
        self.start_faults = 0;
        let commitment = self.rollouts[i].record.seed_commitment.clone();
        self.trajectory.append(
            EventKind::RolloutStarted,
            &RolloutStarted {
                index: i as u32,
                seed_commitment: commitment,
            },
        )?;
        self.close_rollout(i, Outcome::SimFault, counters)?;
        self.next += 1;
        let n = self.rollouts.len();
        let next = if self.complete_if_all_played("")? {
            "the session is complete"
        } else {
            "Reset starts the next rollout"
        };
        Ok(Error::SimFault {
            task: self.task.spec.id.clone(),
            sim: self.task.spec.sim.clone(),
            cause: format!(
                "it failed {MAX_START_FAULTS} times to start rollout {} of {n} (the evaluator's \
                 log has why), which is recorded as ended by the sim's fault; {next}",
                i + 1
            ),
        })
    }

    /// Applies one action to the rollout in progress.
    pub fn step(
        &mut self,
        sim: &mut dyn Sim,
        action: &Tensor,
        now: Instant,
    ) -> Result<(Transition, RolloutProgress), Error> {
        self.enforce_deadline(sim, now)?;
        self.refuse_if_finished()?;
        let Some(i) = self.current else {
            return Err(if self.next == 0 {
                Error::StepBeforeReset
            } else {
                Error::EpisodeOver
            });
        };
        let max_total = self.task.max_total_steps();
        if max_total > 0 && self.total_steps >= max_total {
            self.finish(
                sim.counters(),
                EvalStatus::BudgetExceeded,
                Outcome::BudgetExceeded,
                format!("the step budget of {max_total} steps ran out"),
            )?;
            return Err(Error::SessionFinished(self.status_message.clone()));
        }
        let transition = match step_checked(&self.task, sim, action) {
            Ok(transition) => transition,
            Err(Error::SimFault {
                task,
                sim: name,
                cause,
            }) => {
                // The rollout ends by the sim's fault, on record; the session goes on. The
                // host's own words stay in the evaluator's log: they could carry the seed.
                tracing::warn!(task = %task, sim = %name, rollout = i, cause = %cause,
                    "an official rollout's sim failed");
                self.current = None;
                self.close_rollout(i, Outcome::SimFault, sim.counters())?;
                let n = self.rollouts.len();
                let next = if self.complete_if_all_played("")? {
                    "the session is complete".to_string()
                } else {
                    "Reset starts the next rollout on a fresh host".to_string()
                };
                return Err(Error::SimFault {
                    task,
                    sim: name,
                    cause: format!(
                        "its host process failed during rollout {} of {n} (the evaluator's log \
                         has why), which is recorded as ended by the sim's fault; {next}",
                        i + 1
                    ),
                });
            }
            Err(other) => return Err(other),
        };
        self.total_steps = self.total_steps.saturating_add(1);
        let record = &mut self.rollouts[i].record;
        record.steps = record.steps.saturating_add(1);
        record.episode_return += transition.reward;
        if transition.is_done() {
            self.current = None;
            self.close_rollout(i, Outcome::Completed, sim.counters())?;
            self.complete_if_all_played("")?;
        }
        Ok((transition, self.progress(i)))
    }

    /// Completes the session once every planned rollout has been played; says whether it did.
    fn complete_if_all_played(&mut self, note: &str) -> Result<bool, Error> {
        if self.next < self.rollouts.len() {
            return Ok(false);
        }
        let n = self.rollouts.len();
        let message = format!("all {n} rollouts played{note}");
        // No rollout is in progress here.
        self.finish(&[], EvalStatus::Completed, Outcome::NotRun, message)?;
        Ok(true)
    }

    /// Ends a running session now: the rollout in progress gets `in_progress_outcome` (with
    /// `counters`, the sim's counters for that episode), the rest are not run. Used by budgets,
    /// by the harness when its agent has gone, at evaluator shutdown, and by a batch run when
    /// it ends.
    pub fn finish(
        &mut self,
        counters: &[Counter],
        status: EvalStatus,
        in_progress_outcome: Outcome,
        message: String,
    ) -> Result<(), Error> {
        if self.is_finished() {
            return Ok(());
        }
        let failure = self.task.spec.metric.failure_value;
        if let Some(i) = self.current.take() {
            self.close_rollout(i, in_progress_outcome, counters)?;
        }
        for rollout in &mut self.rollouts[self.next..] {
            rollout.record.outcome = Outcome::NotRun;
            rollout.record.metric = failure;
        }
        let running_next = std::mem::replace(&mut self.next, self.rollouts.len());
        let running_status = std::mem::replace(&mut self.status, status);
        let running_message = std::mem::replace(&mut self.status_message, message);
        // The event cannot hold its own hash; readers take the head from the chain.
        let record = self.record_at(String::new());
        // The last event, signed: a re-sealed record no longer verifies.
        let recorded = PreparedData::of_sorted(&record)
            .map_err(|e| Error::Internal(format!("cannot serialise the session's result: {e}")))
            .and_then(|data| {
                self.trajectory
                    .append_final(EventKind::SessionFinished, &data)
                    .map_err(Error::from)
            });
        if let Err(e) = recorded {
            // A result that is not on record is not the session's result: it stays running
            // (and can record nothing more), so no reader takes it for a final one.
            self.next = running_next;
            self.status = running_status;
            self.status_message = running_message;
            return Err(e);
        }
        tracing::info!(session = %self.id, status = ?self.status, value = record.value, "eval session finished");
        Ok(())
    }

    /// Records how rollout `i` ended (see [`close_record`]), from `counters`, the counters of
    /// the sim that still holds that episode.
    fn close_rollout(
        &mut self,
        i: usize,
        outcome: Outcome,
        counters: &[Counter],
    ) -> Result<(), Error> {
        let record = &mut self.rollouts[i].record;
        close_record(&self.task, record, outcome, counters);
        self.trajectory.append(EventKind::RolloutFinished, record)?;
        Ok(())
    }

    /// A batch run's hidden seeds, in rollout order, for the pipeline that plays them.
    pub fn hidden_seeds(&self) -> Vec<HiddenSeed> {
        self.rollouts.iter().map(|r| r.seed).collect()
    }

    /// The rollout records as planned (index, commitment), before any is played.
    pub fn planned_records(&self) -> Vec<EpisodeRecord> {
        self.rollouts.iter().map(|r| r.record.clone()).collect()
    }

    /// Records a rollout a batch run played to its end, closed with [`close_record`]: its
    /// `rollout_started` and `rollout_finished` events. Rollouts are recorded in index order,
    /// each once; a batch run's reorder buffer sees to it.
    pub fn record_played(&mut self, played: PlayedRollout) -> Result<(), Error> {
        let PlayedRollout {
            record,
            started,
            finished,
        } = played;
        let i = record.index as usize;
        if self.is_finished() || i != self.next || self.current.is_some() {
            return Err(Error::Internal(format!(
                "batch rollout {i} recorded out of order (next is {})",
                self.next
            )));
        }
        self.trajectory
            .append_prepared(EventKind::RolloutStarted, &started)?;
        self.trajectory
            .append_prepared(EventKind::RolloutFinished, &finished)?;
        self.total_steps = self.total_steps.saturating_add(record.steps);
        self.rollouts[i].record = record;
        self.next += 1;
        Ok(())
    }

    /// Lets the session's further events wait in memory until its signed last one: for a
    /// batch run, which writes thousands of rollouts a second and answers no RPC per event.
    pub fn buffer_records(&mut self) -> Result<(), Error> {
        self.trajectory.set_buffered().map_err(Error::Trajectory)
    }

    /// The session's result as it stands, naming the trajectory's latest event as its head.
    pub fn record(&self) -> EvalResultRecord {
        self.record_at(self.trajectory.head())
    }

    /// `trajectory_head` is the hash of the run's latest trajectory event.
    fn record_at(&self, trajectory_head: String) -> EvalResultRecord {
        let counted: Vec<f64> = self
            .rollouts
            .iter()
            .filter(|r| {
                self.is_finished()
                    || matches!(r.record.outcome, Outcome::Completed | Outcome::Aborted)
            })
            .map(|r| r.record.metric)
            .collect();
        let value = if counted.is_empty() {
            0.0
        } else {
            counted.iter().sum::<f64>() / counted.len() as f64
        };
        EvalResultRecord {
            session_id: self.id.clone(),
            run_id: self.run_id.clone(),
            task_id: self.task.spec.id.clone(),
            metric_name: self.task.spec.metric.name.clone(),
            value,
            direction: self.task.spec.metric.direction,
            status: self.status,
            status_message: self.status_message.clone(),
            episodes: self.rollouts.iter().map(|r| r.record.clone()).collect(),
            seed_commitments: self
                .rollouts
                .iter()
                .map(|r| r.record.seed_commitment.clone())
                .collect(),
            trajectory_head,
            total_steps: self.total_steps,
            safety: self
                .task
                .spec
                .safety_metrics
                .iter()
                .map(|s| {
                    let total = self
                        .rollouts
                        .iter()
                        .filter_map(|r| r.record.safety.get(&s.name))
                        .sum();
                    (s.name.clone(), total)
                })
                .collect(),
        }
    }

    fn progress(&self, i: usize) -> RolloutProgress {
        let record = &self.rollouts[i].record;
        RolloutProgress {
            index: i as u32,
            planned: self.planned(),
            steps: record.steps,
            episode_return: record.episode_return,
        }
    }
}

/// Closes a rollout's record: its outcome, its metric (the task's per-episode measure if it
/// completed, the failure value otherwise) and its safety values, from `counters`, the counters
/// of the sim that played the episode. Interactive sessions and batch runs both close their
/// rollouts with this, so a rollout scores the same either way.
pub(crate) fn close_record(
    task: &Task,
    record: &mut EpisodeRecord,
    outcome: Outcome,
    counters: &[Counter],
) {
    record.outcome = outcome;
    record.metric = match outcome {
        Outcome::Completed => {
            task.episode_metric
                .measure(record.episode_return, record.steps, counters)
        }
        _ => task.spec.metric.failure_value,
    };
    record.safety = task
        .spec
        .safety_metrics
        .iter()
        .zip(&task.safety_counters)
        .map(|(s, name)| (s.name.clone(), counter(counters, name)))
        .collect();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_beyond_the_clock_has_no_deadline() {
        let now = Instant::now();
        assert_eq!(deadline(now, 0), None);
        assert_eq!(deadline(now, 600), Some(now + Duration::from_secs(600)));
        assert_eq!(deadline(now, u64::MAX), None);
    }
}
