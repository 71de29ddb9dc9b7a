//! One batch run: its state, its progress, and its trajectory.
//!
//! The run owns the official env's [`Session`] and with it the trajectory. Blocks on pool
//! threads play rollouts and hand each finished one to [`BatchRun::rollout_played`]; rollouts
//! finish out of order, so a reorder buffer writes their `rollout_started`/`rollout_finished`
//! pairs strictly in index order, as a verifier replays them. When the last block is done the
//! run closes the session (`session_finished`, signed) and settles its state.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use ale_proto::BatchId;
use ale_proto::eval::{EpisodeRecord, EvalResultRecord, EvalStatus, Outcome};

use super::Admission;
use crate::run_resources::RunResources;
use crate::seeds::HiddenSeed;
use crate::session::{PlayedRollout, Session};
use crate::sync::lock;
use crate::task::Task;

/// Where a batch run stands, as `GetBatchEvalStatus` reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchState {
    /// Submitted; waiting for a place among the runs that play at once, or for a pool thread
    /// to load the policy. The time budget starts when it has its place.
    Queued,
    /// Rollouts are being played.
    Running,
    /// Every planned rollout was played, or a budget ended the run: the result is final.
    Succeeded,
    /// The submission could not be run (unreadable file, policy refused or failing, the run
    /// cancelled); the message says why. The result records every rollout not played as failed.
    Failed(String),
}

impl BatchState {
    pub fn is_finished(&self) -> bool {
        matches!(self, BatchState::Succeeded | BatchState::Failed(_))
    }
}

/// What `GetBatchEvalStatus` answers.
#[derive(Debug, Clone)]
pub struct BatchStatus {
    pub state: BatchState,
    /// Fraction of the planned work done, 0..=1.
    pub progress: f64,
    pub message: String,
    /// The authoritative result, once finished; only for the harness channel.
    pub result: Option<EvalResultRecord>,
}

/// Why a run ended before playing every planned rollout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    TimeBudget,
    StepBudget,
    /// The agent's side ended it: the submission could not be played (the policy failed, its
    /// action was refused, its file cannot be used) or the harness ended the run. The record
    /// says `ENDED_EARLY`; the message says why.
    EndedEarly(String),
    /// The evaluator ended it: it shut down, or the pipeline failed. The record says
    /// `EVALUATOR_ENDED`; the message says why.
    Failed(String),
}

impl Stop {
    /// How a rollout in play when the run stops is recorded.
    pub fn in_flight_outcome(&self) -> Outcome {
        match self {
            Stop::TimeBudget | Stop::StepBudget => Outcome::BudgetExceeded,
            Stop::EndedEarly(_) | Stop::Failed(_) => Outcome::Aborted,
        }
    }
}

/// A rollout a block is to play next: its hidden seed and its record as planned.
pub struct NextRollout {
    pub seed: HiddenSeed,
    pub record: EpisodeRecord,
}

#[derive(Debug)]
enum Phase {
    Queued,
    Running,
    Finished(BatchState),
}

#[derive(Debug)]
struct Inner {
    phase: Phase,
    session: Session,
    /// Played rollouts waiting for a lower index to be written first.
    pending: BTreeMap<u32, PlayedRollout>,
    next_to_write: u32,
    blocks_left: usize,
    /// Held while the run has its place among the runs that play at once.
    admission: Option<Admission>,
}

#[derive(Debug)]
pub struct BatchRun {
    id: BatchId,
    task: Arc<Task>,
    seeds: Vec<HiddenSeed>,
    planned: Vec<EpisodeRecord>,
    /// When its time budget runs out: set when the run gets its place (it does not run while
    /// the run waits in line); `None` inside: no budget.
    deadline: OnceLock<Option<Instant>>,
    /// The next rollout index a block takes: rollouts start in index order.
    next_index: AtomicU32,
    /// Rollouts played to their end (or closed when the run stopped).
    done: AtomicU32,
    /// Steps taken, all blocks together.
    steps: AtomicU64,
    stop: OnceLock<Stop>,
    inner: Mutex<Inner>,
    finished: Condvar,
    /// The run's folder and channel, released as soon as the run has finished.
    resources: Mutex<Option<RunResources>>,
    /// Set once the run has finished, readable without its lock (by the line it may wait in).
    finished_flag: AtomicBool,
}

impl BatchRun {
    /// A queued run over `session` (started: its `session_started` is written).
    pub fn new(
        id: BatchId,
        task: Arc<Task>,
        session: Session,
        resources: Option<RunResources>,
    ) -> BatchRun {
        BatchRun {
            id,
            task,
            seeds: session.hidden_seeds(),
            planned: session.planned_records(),
            deadline: OnceLock::new(),
            next_index: AtomicU32::new(0),
            done: AtomicU32::new(0),
            steps: AtomicU64::new(0),
            stop: OnceLock::new(),
            inner: Mutex::new(Inner {
                phase: Phase::Queued,
                session,
                pending: BTreeMap::new(),
                next_to_write: 0,
                blocks_left: 0,
                admission: None,
            }),
            finished: Condvar::new(),
            resources: Mutex::new(resources),
            finished_flag: AtomicBool::new(false),
        }
    }

    /// The run has its place: it holds `admission` until it finishes, and its time budget
    /// counts from `now`. A run that ended while it waited hands the place back.
    pub fn begin(&self, admission: Admission, now: Instant) -> Result<(), Admission> {
        let mut inner = lock(&self.inner);
        if matches!(inner.phase, Phase::Finished(_)) {
            return Err(admission);
        }
        let _ = self.deadline.set(crate::session::deadline(
            now,
            self.task.time_budget_seconds(),
        ));
        inner.admission = Some(admission);
        Ok(())
    }

    /// Whether the run has finished, without taking its lock.
    pub fn has_finished(&self) -> bool {
        self.finished_flag.load(Ordering::SeqCst)
    }

    /// Releases the run's folder and channel once it has finished; called with no lock held
    /// (releasing takes the env table's).
    pub fn release_if_finished(&self) {
        if !self.is_finished() {
            return;
        }
        let resources = lock(&self.resources).take();
        if let Some(resources) = resources {
            resources.end();
        }
    }

    pub fn id(&self) -> &BatchId {
        &self.id
    }

    pub fn task(&self) -> &Arc<Task> {
        &self.task
    }

    pub fn planned(&self) -> u32 {
        self.planned.len() as u32
    }

    /// Ends the run early for `stop`, unless it already stopped; the first reason wins.
    pub fn stop(&self, stop: Stop) {
        if self.stop.set(stop).is_ok() {
            tracing::info!(batch = %self.id, stop = ?self.stop.get(), "batch run stopping");
        }
    }

    /// Cancels the run for `stop` (the harness ending it, or the evaluator shutting down):
    /// rollouts in play are aborted, the rest not run; the run ends FAILED. A run still waiting
    /// for its place ends at once (its folder and channel are released by
    /// [`BatchRun::release_if_finished`], which the caller calls once it holds no lock).
    pub fn cancel(&self, stop: Stop) {
        self.stop(stop);
        let mut inner = lock(&self.inner);
        if matches!(inner.phase, Phase::Queued) && inner.admission.is_none() {
            let admission = self.finish(&mut inner);
            drop(inner);
            drop(admission);
        }
    }

    /// Why the run must stop now, if it must: a reason already given, or the time budget.
    pub fn check_stop(&self, now: Instant) -> Option<&Stop> {
        let deadline = self.deadline.get().copied().flatten();
        if self.stop.get().is_none() && deadline.is_some_and(|d| now >= d) {
            self.stop(Stop::TimeBudget);
        }
        self.stop.get()
    }

    /// The next planned rollout to play, unless all are taken or the run is stopping.
    pub fn next_rollout(&self) -> Option<NextRollout> {
        if self.stop.get().is_some() {
            return None;
        }
        let planned = self.planned();
        let i = self
            .next_index
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |i| {
                (i < planned).then_some(i + 1)
            })
            .ok()?;
        let mut record = self.planned[i as usize].clone();
        record.outcome = Outcome::InProgress;
        Some(NextRollout {
            seed: self.seeds[i as usize],
            record,
        })
    }

    /// Takes up to `want` steps from the step budget; returns how many may be taken. Fewer
    /// than asked: the budget is spent and the run stops.
    pub fn take_steps(&self, want: u64) -> u64 {
        let max = self.task.max_total_steps();
        if max == 0 {
            self.steps.fetch_add(want, Ordering::Relaxed);
            return want;
        }
        let granted = match self
            .steps
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |taken| {
                (taken < max).then(|| taken + want.min(max - taken))
            }) {
            Ok(taken) => want.min(max - taken),
            Err(_) => 0,
        };
        if granted < want {
            self.stop(Stop::StepBudget);
        }
        granted
    }

    /// Records a rollout played to its end (closed with [`crate::session::close_record`]).
    /// Its events are written once every rollout before it has been.
    pub fn rollout_played(&self, record: EpisodeRecord) {
        self.done.fetch_add(1, Ordering::Relaxed);
        // Serialising the rollout's events is most of recording it: done here, unlocked.
        let played = match PlayedRollout::new(record) {
            Ok(played) => played,
            Err(e) => return self.stop(Stop::Failed(format!("the evaluator failed: {e}"))),
        };
        let mut inner = lock(&self.inner);
        inner.pending.insert(played.record.index, played);
        if let Err(e) = Self::flush(&mut inner) {
            drop(inner);
            self.stop(Stop::Failed(format!("the evaluator failed: {e}")));
        }
    }

    fn flush(inner: &mut Inner) -> Result<(), crate::Error> {
        while let Some(played) = inner.pending.remove(&inner.next_to_write) {
            inner.session.record_played(played)?;
            inner.next_to_write += 1;
        }
        Ok(())
    }

    /// The policy loaded and `blocks` blocks were queued.
    pub fn set_running(&self, blocks: usize) {
        let mut inner = lock(&self.inner);
        inner.blocks_left = blocks;
        inner.phase = Phase::Running;
        if let Err(e) = inner.session.buffer_records() {
            drop(inner);
            self.stop(Stop::Failed(format!("the evaluator failed: {e}")));
        }
    }

    /// One block has closed its last rollout; the last one finishes the run.
    pub fn block_done(&self) {
        let mut inner = lock(&self.inner);
        inner.blocks_left = inner.blocks_left.saturating_sub(1);
        let admission = (inner.blocks_left == 0)
            .then(|| self.finish(&mut inner))
            .flatten();
        drop(inner);
        // The place goes to the next run with no run's lock held.
        drop(admission);
        self.release_if_finished();
    }

    /// Finishes a run that cannot start, for `stop`: its submission or policy is refused
    /// ([`Stop::EndedEarly`]), or the evaluator failed to set it up ([`Stop::Failed`]).
    pub fn fail_before_start(&self, stop: Stop) {
        self.stop(stop);
        self.end_before_start();
    }

    /// Finishes a run that stopped (a budget, a cancel) before it started playing.
    pub fn end_before_start(&self) {
        let mut inner = lock(&self.inner);
        let admission = self.finish(&mut inner);
        drop(inner);
        drop(admission);
        self.release_if_finished();
    }

    /// Closes the run's record and settles its state; returns its place, to be given back
    /// once the caller has let go of `inner`.
    #[must_use]
    fn finish(&self, inner: &mut Inner) -> Option<Admission> {
        if matches!(inner.phase, Phase::Finished(_)) {
            return None;
        }
        let n = self.planned();
        let (status, message, state) = match self.stop.get() {
            None => (
                EvalStatus::Completed,
                format!("all {n} rollouts played"),
                BatchState::Succeeded,
            ),
            Some(Stop::TimeBudget) => (
                EvalStatus::BudgetExceeded,
                format!(
                    "the time budget of {} s ran out",
                    self.task.time_budget_seconds()
                ),
                BatchState::Succeeded,
            ),
            Some(Stop::StepBudget) => (
                EvalStatus::BudgetExceeded,
                format!(
                    "the step budget of {} steps ran out",
                    self.task.max_total_steps()
                ),
                BatchState::Succeeded,
            ),
            Some(Stop::EndedEarly(why)) => (
                EvalStatus::EndedEarly,
                why.clone(),
                BatchState::Failed(why.clone()),
            ),
            Some(Stop::Failed(why)) => (
                EvalStatus::EvaluatorEnded,
                why.clone(),
                BatchState::Failed(why.clone()),
            ),
        };
        let written = Self::flush(inner).and_then(|()| {
            // Every rollout in play was closed by its block: none is in progress here.
            inner.session.finish(&[], status, Outcome::NotRun, message)
        });
        let state = match written {
            Ok(()) => state,
            Err(e) => {
                tracing::error!(batch = %self.id, error = %e, "could not close a batch run's trajectory");
                BatchState::Failed(format!("the evaluator failed: {e}"))
            }
        };
        tracing::info!(batch = %self.id, ?state, "batch run finished");
        inner.phase = Phase::Finished(state);
        self.finished_flag.store(true, Ordering::SeqCst);
        self.finished.notify_all();
        inner.admission.take()
    }

    pub fn is_finished(&self) -> bool {
        matches!(lock(&self.inner).phase, Phase::Finished(_))
    }

    /// Waits up to `timeout` for the run to finish; says whether it did.
    pub fn wait_finished(&self, timeout: Duration) -> bool {
        let inner = lock(&self.inner);
        let (inner, _) = self
            .finished
            .wait_timeout_while(inner, timeout, |i| !matches!(i.phase, Phase::Finished(_)))
            .unwrap_or_else(|p| p.into_inner());
        matches!(inner.phase, Phase::Finished(_))
    }

    /// The run's session result as it stands (RUNNING until the run finishes).
    pub fn record(&self) -> EvalResultRecord {
        lock(&self.inner).session.record()
    }

    /// The run's status; `with_result` adds the result once finished (harness channel).
    pub fn status(&self, with_result: bool) -> BatchStatus {
        let inner = lock(&self.inner);
        let planned = self.planned().max(1);
        let done = self.done.load(Ordering::Relaxed).min(planned);
        let (state, message) = match &inner.phase {
            Phase::Queued if inner.admission.is_none() => (
                BatchState::Queued,
                format!(
                    "queued: waiting for a place among the batch runs that play at once \
                     (ale serve --max-batch-runs); its time budget of {} s starts then",
                    self.task.time_budget_seconds()
                ),
            ),
            Phase::Queued => (
                BatchState::Queued,
                "queued: its policy is being loaded".to_string(),
            ),
            Phase::Running => (
                BatchState::Running,
                format!("running: {done} of {planned} rollouts played"),
            ),
            Phase::Finished(state) => {
                let record = inner.session.record();
                let message = match state {
                    BatchState::Failed(why) => why.clone(),
                    _ => record.status_message.clone(),
                };
                (state.clone(), message)
            }
        };
        let progress = if state.is_finished() {
            1.0
        } else {
            // A rollout may be long: steps taken count too, against the most a run can take.
            let by_rollouts = f64::from(done) / f64::from(planned);
            let most_steps =
                f64::from(planned) * f64::from(self.task.spec.max_steps_per_episode.max(1));
            let by_steps = self.steps.load(Ordering::Relaxed) as f64 / most_steps;
            by_rollouts.max(by_steps).min(0.999)
        };
        let result = (with_result && state.is_finished()).then(|| inner.session.record());
        BatchStatus {
            state,
            progress,
            message,
            result,
        }
    }
}
