//! The batch pipeline: a submitted policy rolled out by the evaluator itself, in-process, on
//! hidden seeds.
//!
//! - `folder`: each run's own submission folder, its quota, its removal.
//! - `submission`: the snapshot of the submission file, taken once at submit.
//! - `policy`: the policy as the pipeline plays it, and the loader for the contract's format.
//! - `run`: one run's state, progress and trajectory (a reorder buffer keeps its rollout
//!   events in index order).
//! - `rollout`: the vectorised loop over a block of envs.
//! - `pool`: the rayon pool the blocks run on, at a lowered priority, taking turns.

pub(crate) mod folder;
/// The policy trait and loader hook are public for benchmarks (`ale bench batch` plays a
/// uniform-random policy through them); `ale serve` always loads with [`policy::load`].
#[doc(hidden)]
pub mod policy;
pub(crate) mod pool;
pub(crate) mod rollout;
pub(crate) mod run;
pub(crate) mod submission;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use ale_proto::BatchId;

use crate::env_table::{RunScope, lock};
use crate::error::Error;
use crate::evaluator::Channel;
use policy::Loader;
use pool::Pool;
use rollout::Block;
use run::BatchRun;

pub use run::{BatchState, BatchStatus};

/// How the evaluator runs batch evaluations (`ale serve` flags).
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// The largest submission file read (`--max-submission-bytes`); a root evaluator sizes
    /// each run's submission tmpfs to it (see `batch::folder`).
    pub max_submission_bytes: u64,
    /// Batch runs queued or running at once (`--max-batch-runs`); beyond it `SubmitBatchEval`
    /// answers `RESOURCE_EXHAUSTED`.
    pub max_runs: usize,
    /// Envs stepped together in one block.
    pub block_size: usize,
    /// Pipeline threads; 0: one per core.
    pub threads: usize,
}

impl Default for BatchOptions {
    fn default() -> Self {
        BatchOptions {
            max_submission_bytes: 64 << 20,
            max_runs: 4,
            block_size: 64,
            threads: 0,
        }
    }
}

/// A place among the runs in flight; given back when the run finishes (or is never made).
#[derive(Debug)]
pub struct Admission(Arc<AtomicUsize>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The evaluator's batch runs and the pool they run on.
pub(crate) struct Batches {
    pool: Arc<Pool>,
    loader: Loader,
    in_flight: Arc<AtomicUsize>,
    max_runs: usize,
    block_size: usize,
    runs: Mutex<HashMap<BatchId, Entry>>,
}

/// A batch run the evaluator knows, while its official env holds it.
struct Entry {
    /// The run scope of its official env: that run's own channel may ask about it.
    scope: RunScope,
    run: Weak<BatchRun>,
}

impl Batches {
    pub fn new(options: &BatchOptions, loader: Loader) -> Result<Batches, std::io::Error> {
        let threads = match options.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let pool = Pool::new(threads).map_err(std::io::Error::other)?;
        Ok(Batches {
            pool: Arc::new(pool),
            loader,
            in_flight: Arc::default(),
            max_runs: options.max_runs.max(1),
            block_size: options.block_size.max(1),
            runs: Mutex::default(),
        })
    }

    /// A place for one more run, or `RESOURCE_EXHAUSTED` at the cap.
    pub fn admit(&self) -> Result<Admission, Error> {
        let cap = self.max_runs;
        self.in_flight
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < cap).then_some(n + 1)
            })
            .map_err(|_| Error::TooManyBatchRuns(cap))?;
        Ok(Admission(self.in_flight.clone()))
    }

    /// Adds `run`, the batch run of the official env of `scope`.
    pub fn insert(&self, run: &Arc<BatchRun>, scope: RunScope) {
        let mut runs = lock(&self.runs);
        // A run whose env is gone can no longer be asked about.
        runs.retain(|_, entry| entry.run.strong_count() > 0);
        runs.insert(
            run.id().clone(),
            Entry {
                scope,
                run: Arc::downgrade(run),
            },
        );
    }

    /// The run `id` names, if `channel` may ask about it: a run's own channel only about its
    /// run's; otherwise `NOT_FOUND`, as for an id that names nothing.
    pub fn get(&self, id: &BatchId, channel: Channel) -> Result<Arc<BatchRun>, Error> {
        lock(&self.runs)
            .get(id)
            .filter(|entry| match channel {
                Channel::Run(asking) => entry.scope == asking,
                Channel::Agent | Channel::Harness => true,
            })
            .and_then(|entry| entry.run.upgrade())
            .ok_or_else(|| Error::UnknownBatch(id.clone()))
    }

    /// Loads the policy from `bytes` on a pool thread and queues the run's blocks; a policy
    /// that cannot be loaded fails the run with the loader's message.
    pub fn start(&self, run: Arc<BatchRun>, format: String, bytes: Vec<u8>) {
        let pool = self.pool.clone();
        let loader = self.loader;
        let block_size = self.block_size;
        let abandoned = run.clone();
        self.pool.spawn_or(
            move || {
                if let Some(run::Stop::Failed(why)) = run.check_stop(std::time::Instant::now()) {
                    let why = why.clone();
                    run.fail_before_start(why);
                    return;
                }
                let task = run.task().clone();
                let (obs, act) = match crate::env::build_sim(&task) {
                    Ok(sim) => (sim.observation_space().clone(), sim.action_space().clone()),
                    Err(e) => return run.fail_before_start(e.to_string()),
                };
                let planned = run.planned() as usize;
                let blocks = pool.threads().min(planned).max(1);
                let slots = planned.div_ceil(blocks).min(block_size);
                // Every block plays its own copy of the policy; all are loaded before any
                // rollout is taken, so a refused policy leaves no rollout half-started.
                let mut policies = Vec::with_capacity(blocks);
                for _ in 0..blocks {
                    // A large model takes a while to load: a cancelled run (the evaluator
                    // shutting down) stops between loads rather than after all of them.
                    if let Some(run::Stop::Failed(why)) = run.check_stop(std::time::Instant::now())
                    {
                        let why = why.clone();
                        return run.fail_before_start(why);
                    }
                    match loader(&format, &bytes, &obs, &act) {
                        Ok(policy) => policies.push(policy),
                        Err(e) => {
                            return run.fail_before_start(format!(
                                "the submitted policy cannot be used: {e}"
                            ));
                        }
                    }
                }
                let mut queued = Vec::with_capacity(blocks);
                for policy in policies {
                    match Block::new(run.clone(), policy, slots) {
                        Ok(block) => queued.push(block),
                        Err(why) => return run.fail_before_start(why),
                    }
                }
                drop(bytes);
                run.set_running(queued.len());
                for block in queued {
                    pool.schedule(Box::new(block));
                }
            },
            move || {
                abandoned.fail_before_start(
                    "the evaluator failed while loading the policy (it panicked)".into(),
                )
            },
        );
    }
}

#[cfg(test)]
mod tests;
