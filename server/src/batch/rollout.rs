//! The vectorised rollout loop: a block of envs stepped together, the policy evaluated once
//! per step for the whole block.
//!
//! Each slot of a block holds one sim. A step gathers the observations of the slots in play
//! into one float32 matrix, asks the policy for all their actions at once, and steps each sim
//! under the protocol's action rule. A slot whose episode ends hands its record to the run and
//! takes the next planned rollout (rollouts are taken in index order, across all the run's
//! blocks). When the run stops early (a budget, a failure, a cancel), each slot still in play
//! is closed with the stop's outcome.

use std::sync::Arc;
use std::time::Instant;

use ale_proto::records::{EpisodeRecord, Outcome};
use ale_sim::{Sim, SimError, Tensor};

use super::policy::Policy;
use super::pool::{Slice, TIME_SLICE};
use super::run::{BatchRun, Stop};
use crate::action::step_checked;
use crate::error::Error;
use crate::session::close_record;

struct Slot {
    sim: Box<dyn Sim>,
    /// The rollout in play in this slot, if any.
    rollout: Option<EpisodeRecord>,
}

/// Up to `slots` envs of one run, stepped together.
pub struct Block {
    run: Arc<BatchRun>,
    policy: Box<dyn Policy>,
    slots: Vec<Slot>,
    /// `slots × obs_dim` observation rows; the first `n` are in use at a step.
    rows: Vec<f32>,
    actions: Vec<Tensor>,
    /// The slots in play at this step.
    playing: Vec<usize>,
}

impl Block {
    /// A block of `slots` envs playing `policy`, each slot starting the run's next rollout.
    pub fn new(run: Arc<BatchRun>, policy: Box<dyn Policy>, slots: usize) -> Result<Block, String> {
        let task = run.task().clone();
        let mut block = Block {
            rows: vec![0.0; slots * policy.obs_dim()],
            actions: policy.blank_actions(slots),
            playing: Vec::with_capacity(slots),
            slots: Vec::with_capacity(slots),
            run,
            policy,
        };
        for _ in 0..slots {
            let sim = crate::env::build_sim(&task).map_err(|e| e.to_string())?;
            let mut slot = Slot { sim, rollout: None };
            start_next(&block.run, &mut slot);
            block.slots.push(slot);
        }
        Ok(block)
    }

    /// Closes every rollout in play with the stop's outcome.
    fn close_all(&mut self, stop: &Stop) {
        let outcome = stop.in_flight_outcome();
        for slot in &mut self.slots {
            if let Some(mut record) = slot.rollout.take() {
                close_record(self.run.task(), &mut record, outcome, slot.sim.counters());
                self.run.rollout_played(record);
            }
        }
    }

    /// One step of every slot in play; an error is the policy's (or its actions') failure.
    fn step(&mut self) -> Result<(), String> {
        self.playing.clear();
        self.playing.extend(
            self.slots
                .iter()
                .enumerate()
                .filter(|(_, s)| s.rollout.is_some())
                .map(|(i, _)| i),
        );
        let granted = self.run.take_steps(self.playing.len() as u64) as usize;
        self.playing.truncate(granted);
        let n = self.playing.len();
        if n == 0 {
            return Ok(());
        }
        let dim = self.policy.obs_dim();
        for (row, &i) in self.playing.iter().enumerate() {
            self.policy
                .encode(
                    self.slots[i].sim.observation(),
                    &mut self.rows[row * dim..(row + 1) * dim],
                )
                .map_err(|e| format!("the policy cannot read an observation: {e}"))?;
        }
        self.policy
            .act(&self.rows[..n * dim], n, &mut self.actions[..n])
            .map_err(|e| format!("the policy failed: {e}"))?;
        let task = self.run.task().clone();
        for row in 0..n {
            let i = self.playing[row];
            let slot = &mut self.slots[i];
            let transition = match step_checked(&task, slot.sim.as_mut(), &self.actions[row]) {
                Ok(transition) => transition,
                Err(Error::SimFault { cause, .. }) => {
                    // This rollout ends by the sim's fault; the slot takes the next one.
                    tracing::warn!(task = %task.id, cause = %cause, "a batch rollout's sim failed");
                    if let Some(mut record) = slot.rollout.take() {
                        close_record(&task, &mut record, Outcome::SimFault, slot.sim.counters());
                        self.run.rollout_played(record);
                    }
                    start_next(&self.run, slot);
                    continue;
                }
                Err(e) => return Err(format!("the policy's action was refused: {e}")),
            };
            let Some(record) = slot.rollout.as_mut() else {
                continue;
            };
            record.steps = record.steps.saturating_add(1);
            record.episode_return += transition.reward;
            if transition.is_done() {
                if let Some(mut record) = slot.rollout.take() {
                    close_record(&task, &mut record, Outcome::Completed, slot.sim.counters());
                    self.run.rollout_played(record);
                }
                start_next(&self.run, slot);
            }
        }
        Ok(())
    }
}

/// Starts the run's next planned rollout in `slot`, if one is left. A sim that cannot reset
/// stops the run; the rollout is then closed as aborted with the others in play.
/// A sim that fails to reset by its own fault (a hosted sim's host) ends that rollout so, and
/// the slot takes the next.
fn start_next(run: &BatchRun, slot: &mut Slot) {
    while let Some(mut next) = run.next_rollout() {
        match slot.sim.reset(next.seed.reveal()) {
            Ok(()) => {
                slot.rollout = Some(next.record);
                return;
            }
            Err(SimError::Fault(cause)) => {
                tracing::warn!(task = %run.task().id, %cause, "a batch rollout's sim failed to reset");
                close_record(
                    run.task(),
                    &mut next.record,
                    Outcome::SimFault,
                    slot.sim.counters(),
                );
                run.rollout_played(next.record);
            }
            Err(e) => {
                run.stop(Stop::Failed(format!(
                    "the simulator could not start rollout {}: {e}",
                    next.record.index
                )));
                slot.rollout = Some(next.record);
                return;
            }
        }
    }
    slot.rollout = None;
}

impl Slice for Block {
    fn run_slice(&mut self) -> bool {
        let started = Instant::now();
        loop {
            if let Some(stop) = self.run.check_stop(Instant::now()).cloned() {
                self.close_all(&stop);
                self.run.block_done();
                return true;
            }
            if self.slots.iter().all(|s| s.rollout.is_none()) {
                self.run.block_done();
                return true;
            }
            if let Err(why) = self.step() {
                self.run.stop(Stop::Failed(why));
            }
            if started.elapsed() >= TIME_SLICE {
                return false;
            }
        }
    }

    fn abandon(&mut self) {
        self.run.stop(Stop::Failed(
            "the evaluator failed while playing this run (a batch block panicked)".into(),
        ));
        self.run.block_done();
    }
}
