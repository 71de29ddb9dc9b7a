//! The batch pipeline: a submitted policy rolled out by the evaluator itself, in-process, on
//! hidden seeds.
//!
//! - `submission`: the snapshot of the submission file, taken once at submit.
//! - `policy`: the policy as the pipeline plays it, and the loader for the contract's format.
//! - `run`: one run's state, progress and trajectory (a reorder buffer keeps its rollout
//!   events in index order).
//! - `rollout`: the vectorised loop over a block of envs.
//! - `pool`: the rayon pool the blocks run on, at a lowered priority, taking turns.
//! - here: the line runs wait in for a place (`--max-batch-runs` play at once), and the
//!   runs the evaluator knows.

/// The policy trait and loader hook are public for benchmarks (`ale bench batch` plays a
/// uniform-random policy through them); `ale serve` always loads with [`policy::load`].
#[doc(hidden)]
pub mod policy;
pub(crate) mod pool;
pub(crate) mod rollout;
pub(crate) mod run;
pub(crate) mod submission;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, Weak};

use ale_proto::BatchId;

use crate::channel::{Channel, RunScope};
use crate::error::Error;
use crate::sync::lock;
use policy::Loader;
use pool::Pool;
use rollout::Block;
use run::{BatchRun, Stop};

/// The most blocks a batch run of a sim hosted in a process of its own plays at once (each
/// holds one host): with the default `--max-batch-runs` 4, the default 32 official hosts.
pub const MAX_HOSTED_BLOCKS: usize = 8;

pub use run::{BatchState, BatchStatus};

/// How the evaluator runs batch evaluations (`ale serve` flags).
#[derive(Debug, Clone)]
pub struct BatchOptions {
    /// The largest submission file read (`--max-submission-bytes`); a root evaluator sizes
    /// each run's submission tmpfs to it (see `run_resources::submission_folder`).
    pub max_submission_bytes: u64,
    /// Batch runs playing at once (`--max-batch-runs`); a run submitted beyond it waits in
    /// line (`QUEUED`), its time budget not yet counting.
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

/// A place among the runs that play at once; given back when its run finishes (or is dropped),
/// which starts the run first in line.
#[derive(Debug)]
pub struct Admission(Option<Arc<Gate>>);

impl Admission {
    /// The place, not taken after all: the gate counts it back itself, without a wake-up.
    fn disarm(mut self) {
        self.0 = None;
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        if let Some(gate) = self.0.take() {
            gate.leave();
        }
    }
}

/// Where a submitted run waits for a place: at most `max_runs` play at once, the rest wait in
/// submission order. Nothing is refused here: every official env submits once, and a run
/// ended while it waits leaves the line, so the line is no longer than the official envs
/// (`--max-official-envs`); a waiting run holds its snapshot (at most
/// `--max-submission-bytes`).
struct Gate {
    max_runs: usize,
    starter: Starter,
    line: Mutex<Line>,
}

#[derive(Default)]
struct Line {
    playing: usize,
    waiting: VecDeque<Waiting>,
}

/// A run waiting for its place, with the policy it plays.
struct Waiting {
    run: Arc<BatchRun>,
    format: String,
    bytes: Vec<u8>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let line = lock(&self.line);
        f.debug_struct("Gate")
            .field("max_runs", &self.max_runs)
            .field("playing", &line.playing)
            .field("waiting", &line.waiting.len())
            .finish()
    }
}

impl Gate {
    /// Puts `waiting` at the end of the line and fills the free places. No run's lock is
    /// taken while the line is held, and nothing here recurses.
    fn enter(self: &Arc<Self>, waiting: Waiting) {
        let mut line = lock(&self.line);
        if line.playing >= self.max_runs {
            tracing::info!(batch = %waiting.run.id(), ahead = line.waiting.len(), "batch run waiting for a place");
        }
        line.waiting.push_back(waiting);
        self.fill(line);
    }

    /// A place is given back: the runs first in line take the free places.
    fn leave(self: &Arc<Self>) {
        let mut line = lock(&self.line);
        line.playing = line.playing.saturating_sub(1);
        self.fill(line);
    }

    /// Starts runs from the front of the line while places are free; a run that ended while
    /// it waited is passed over.
    fn fill<'a>(self: &'a Arc<Self>, mut line: std::sync::MutexGuard<'a, Line>) {
        let mut passed_over = Vec::new();
        while line.playing < self.max_runs {
            let Some(next) = line.waiting.pop_front() else {
                break;
            };
            if next.run.has_finished() {
                passed_over.push(next);
                continue;
            }
            line.playing += 1;
            drop(line);
            let refused = self.starter.start(Admission(Some(self.clone())), next);
            line = lock(&self.line);
            if let Some(refused) = refused {
                refused.disarm();
                line.playing -= 1;
            }
        }
        drop(line);
        // Dropped with no lock held: a run's last reference may release its folder.
        drop(passed_over);
    }

    /// Takes `run` out of the line (it ended while it waited).
    fn withdraw(&self, run: &Arc<BatchRun>) {
        let withdrawn: VecDeque<Waiting> = {
            let mut line = lock(&self.line);
            let (gone, kept) = std::mem::take(&mut line.waiting)
                .into_iter()
                .partition(|w| Arc::ptr_eq(&w.run, run));
            line.waiting = kept;
            gone
        };
        drop(withdrawn);
    }
}

/// What starting a run needs: the pool, the loader, the block size.
#[derive(Clone)]
struct Starter {
    pool: Arc<Pool>,
    loader: Loader,
    block_size: usize,
}

/// The evaluator's batch runs and the pool they run on.
pub(crate) struct Batches {
    gate: Arc<Gate>,
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
            gate: Arc::new(Gate {
                max_runs: options.max_runs.max(1),
                starter: Starter {
                    pool: Arc::new(pool),
                    loader,
                    block_size: options.block_size.max(1),
                },
                line: Mutex::default(),
            }),
            runs: Mutex::default(),
        })
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

    /// Runs waiting in line.
    #[cfg(test)]
    pub fn waiting(&self) -> usize {
        lock(&self.gate.line).waiting.len()
    }

    /// Takes `run` out of the line if it ended while it waited there (its snapshot goes).
    pub fn withdraw(&self, run: &Arc<BatchRun>) {
        if run.has_finished() {
            self.gate.withdraw(run);
        }
    }

    /// Plays `run` with the policy in `bytes` once it has a place: at once if fewer than
    /// `--max-batch-runs` runs are playing, else after the runs ahead of it in line. Its time
    /// budget counts from then.
    pub fn submit(&self, run: Arc<BatchRun>, format: String, bytes: Vec<u8>) {
        self.gate.enter(Waiting { run, format, bytes });
    }
}

impl Starter {
    /// Gives `waiting` its place (its time budget starts now), loads its policy on a pool
    /// thread and queues its blocks; a policy that cannot be loaded fails the run with the
    /// loader's message. A run that has already ended hands the place back.
    #[must_use]
    fn start(&self, admission: Admission, waiting: Waiting) -> Option<Admission> {
        let Waiting { run, format, bytes } = waiting;
        if let Err(refused) = run.begin(admission, std::time::Instant::now()) {
            return Some(refused);
        }
        let pool = self.pool.clone();
        let loader = self.loader;
        let block_size = self.block_size;
        let abandoned = run.clone();
        self.pool.spawn_or(
            move || {
                if run.check_stop(std::time::Instant::now()).is_some() {
                    return run.end_before_start();
                }
                let task = run.task().clone();
                let (obs, act) = match crate::task::build_sim(&task, ale_sim::Holder::Official) {
                    Ok(sim) => (sim.observation_space().clone(), sim.action_space().clone()),
                    Err(e) => return run.fail_before_start(Stop::Failed(e.to_string())),
                };
                let planned = run.planned() as usize;
                // A hosted sim's block holds a host of the evaluator's official pool: a run
                // takes at most MAX_HOSTED_BLOCKS of them, so the runs that play at once share
                // the pool's default size.
                let threads = if task.sim_entry().is_some_and(|e| e.is_process_hosted()) {
                    pool.threads().min(MAX_HOSTED_BLOCKS)
                } else {
                    pool.threads()
                };
                let blocks = threads.min(planned).max(1);
                let slots = planned.div_ceil(blocks).min(block_size);
                // Every block plays its own copy of the policy; all are loaded before any
                // rollout is taken, so a refused policy leaves no rollout half-started.
                let mut policies = Vec::with_capacity(blocks);
                for _ in 0..blocks {
                    // A large model takes a while to load: a cancelled run (the evaluator
                    // shutting down) stops between loads rather than after all of them.
                    if run.check_stop(std::time::Instant::now()).is_some() {
                        return run.end_before_start();
                    }
                    match loader(&format, &bytes, &obs, &act) {
                        Ok(policy) => policies.push(policy),
                        Err(e) => {
                            return run.fail_before_start(Stop::EndedEarly(format!(
                                "the submitted policy cannot be used: {e}"
                            )));
                        }
                    }
                }
                let mut queued = Vec::with_capacity(blocks);
                for policy in policies {
                    match Block::new(run.clone(), policy, slots) {
                        Ok(block) => queued.push(block),
                        Err(why) => return run.fail_before_start(Stop::Failed(why)),
                    }
                }
                drop(bytes);
                run.set_running(queued.len());
                for block in queued {
                    pool.schedule(Box::new(block));
                }
            },
            move || {
                abandoned.fail_before_start(Stop::Failed(
                    "the evaluator failed while loading the policy (it panicked)".into(),
                ))
            },
        );
        None
    }
}

#[cfg(test)]
mod tests;
