//! The vectorised rollout loop: a block of envs stepped together, the policy evaluated once
//! per step for the whole block.
//!
//! A block holds a [`SimBlock`] of envs, one slot each. A step gathers the observations of the
//! slots in play into one float32 matrix, asks the policy for all their actions at once, checks
//! each action under the protocol's action rule, and steps the slots in play together (one
//! message for a hosted sim's block). A slot whose episode ends hands its record to the run and
//! takes the next planned rollout (rollouts are taken in index order, across all the run's
//! blocks); one whose sim failed (`SimError::Fault`) is recorded `sim_fault` and takes the
//! next. When the run stops early (a budget, a failure, a cancel), each slot still in play is
//! closed with the stop's outcome.

use std::sync::Arc;
use std::time::Instant;

use ale_proto::eval::{EpisodeRecord, Outcome};
use ale_sim::{SimBlock, SimError, Tensor, Transition};

use super::policy::Policy;
use super::pool::{Slice, TIME_SLICE};
use super::run::{BatchRun, Stop};
use crate::session::close_record;

/// Up to `slots` envs of one run, stepped together.
pub struct Block {
    run: Arc<BatchRun>,
    policy: Box<dyn Policy>,
    sims: Box<dyn SimBlock>,
    /// The rollout in play in each slot, if any.
    rollouts: Vec<Option<EpisodeRecord>>,
    /// `slots × obs_dim` observation rows; the first `n` are in use at a step.
    rows: Vec<f32>,
    actions: Vec<Tensor>,
    /// The slots in play at this step.
    playing: Vec<usize>,
    results: Vec<Result<Transition, SimError>>,
}

impl Block {
    /// A block of `slots` envs playing `policy`, each slot starting the run's next rollout.
    pub fn new(run: Arc<BatchRun>, policy: Box<dyn Policy>, slots: usize) -> Result<Block, String> {
        let task = run.task().clone();
        let sims = task.build_block(slots).map_err(|e| {
            format!(
                "task {}'s simulator {} failed: {e}",
                task.spec.id, task.spec.sim
            )
        })?;
        let slots = sims.len();
        let mut block = Block {
            rows: vec![0.0; slots * policy.obs_dim()],
            actions: policy.blank_actions(slots),
            playing: Vec::with_capacity(slots),
            rollouts: vec![None; slots],
            results: Vec::with_capacity(slots),
            sims,
            run,
            policy,
        };
        for slot in 0..slots {
            block.start_next(slot);
        }
        Ok(block)
    }

    /// Closes every rollout in play with the stop's outcome.
    fn close_all(&mut self, stop: &Stop) {
        let outcome = stop.in_flight_outcome();
        for slot in 0..self.rollouts.len() {
            if let Some(mut record) = self.rollouts[slot].take() {
                close_record(
                    self.run.task(),
                    &mut record,
                    outcome,
                    self.sims.counters(slot),
                );
                self.run.rollout_played(record);
            }
        }
    }

    /// One step of every slot in play; an error is the policy's (or its actions') failure.
    fn step(&mut self) -> Result<(), String> {
        self.playing.clear();
        self.playing.extend(
            self.rollouts
                .iter()
                .enumerate()
                .filter(|(_, r)| r.is_some())
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
                    self.sims.observation(i),
                    &mut self.rows[row * dim..(row + 1) * dim],
                )
                .map_err(|e| format!("the policy cannot read an observation: {e}"))?;
        }
        self.policy
            .act(&self.rows[..n * dim], n, &mut self.actions[..n])
            .map_err(|e| format!("the policy failed: {e}"))?;
        let task = self.run.task().clone();
        // The protocol's action rule, for every action before any env steps.
        for action in &self.actions[..n] {
            self.sims.action_space().check(action).map_err(|e| {
                let refused = crate::action::step_error(&task, SimError::Action(e));
                format!("the policy's action was refused: {refused}")
            })?;
        }
        let mut results = std::mem::take(&mut self.results);
        self.sims
            .step(&self.playing, &self.actions[..n], &mut results);
        let playing = std::mem::take(&mut self.playing);
        let mut outcome = Ok(());
        for (&slot, result) in playing.iter().zip(results.drain(..)) {
            let transition = match result {
                Ok(transition) => transition,
                Err(SimError::Fault(cause)) => {
                    // This rollout ends by the sim's fault; the slot takes the next one.
                    tracing::warn!(task = %task.spec.id, %cause, "a batch rollout's sim failed");
                    if let Some(mut record) = self.rollouts[slot].take() {
                        close_record(
                            &task,
                            &mut record,
                            Outcome::SimFault,
                            self.sims.counters(slot),
                        );
                        self.run.rollout_played(record);
                    }
                    self.start_next(slot);
                    continue;
                }
                Err(e) => {
                    outcome = Err(format!(
                        "the policy's action was refused: {}",
                        crate::action::step_error(&task, e)
                    ));
                    break;
                }
            };
            let Some(record) = self.rollouts[slot].as_mut() else {
                continue;
            };
            record.steps = record.steps.saturating_add(1);
            record.episode_return += transition.reward;
            if transition.is_done() {
                if let Some(mut record) = self.rollouts[slot].take() {
                    close_record(
                        &task,
                        &mut record,
                        Outcome::Completed,
                        self.sims.counters(slot),
                    );
                    self.run.rollout_played(record);
                }
                self.start_next(slot);
            }
        }
        self.playing = playing;
        self.results = results;
        outcome
    }

    /// Starts the run's next planned rollout in `slot`, if one is left. A sim that fails to
    /// reset by its own fault (a hosted sim's host) ends that rollout so, and the slot takes
    /// the next; any other failure to reset stops the run, the rollout then closed with the
    /// others in play.
    fn start_next(&mut self, slot: usize) {
        while let Some(mut next) = self.run.next_rollout() {
            match self.sims.reset(slot, next.seed.reveal()) {
                Ok(()) => {
                    self.rollouts[slot] = Some(next.record);
                    return;
                }
                Err(SimError::Fault(cause)) => {
                    tracing::warn!(task = %self.run.task().spec.id, %cause, "a batch rollout's sim failed to reset");
                    close_record(
                        self.run.task(),
                        &mut next.record,
                        Outcome::SimFault,
                        self.sims.counters(slot),
                    );
                    self.run.rollout_played(next.record);
                }
                Err(e) => {
                    self.run.stop(Stop::Failed(format!(
                        "the simulator could not start rollout {}: {e}",
                        next.record.index
                    )));
                    self.rollouts[slot] = Some(next.record);
                    return;
                }
            }
        }
        self.rollouts[slot] = None;
    }
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
            if self.rollouts.iter().all(Option::is_none) {
                self.run.block_done();
                return true;
            }
            if let Err(why) = self.step() {
                // The submission's failure, not the evaluator's.
                self.run.stop(Stop::EndedEarly(why));
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
