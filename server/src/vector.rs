//! Practice vector envs: N sub-envs of one task behind one handle, reset and stepped together
//! in one call, with Gymnasium 1.x's autoreset modes. The sub-envs live in blocks of [`BLOCK`]
//! ([`SimBlock`]s; [`HOSTED_BLOCK`] for a sim hosted in a process of its own, whose block is
//! one host, stepped in one message); a vector whose calls take long runs them on threads of
//! their own at a lowered priority, its blocks in parallel.
//!
//! Every check comes before anything changes: a bad action in any sub-env, a seed list of the
//! wrong length or a Step in `DISABLED` mode over an ended episode refuses the call and leaves
//! every sub-env as it was.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use ale_sim::{Counter, DType, Holder, SimBlock, Space, Tensor, TensorData, Transition};
use rayon::prelude::*;

use crate::action::{sim_error, step_error};
use crate::error::Error;
use crate::seeds::random_u64;
use crate::task::Task;

/// Sub-envs per block of a sim in the evaluator's process: a block is stepped by one thread,
/// one after the other, so a vector of 64 heavy sims (MuJoCo's Ant) still spreads over 4
/// threads.
pub const BLOCK: usize = 16;

/// Sub-envs per block of a sim hosted in a process of its own: one host each, so fewer and
/// larger blocks (hosts are few: see `ale serve --max-practice-sim-hosts`).
pub const HOSTED_BLOCK: usize = 64;

/// Below this much estimated work (every sub-env at the most one has cost) a call runs where it
/// arrives, on the server's runtime; from it, on the vector threads, its blocks in parallel:
/// the default of [`crate::Limits::vector_inline_work`]. See docs/performance.md "Vector envs"
/// for the crossover this comes from.
pub const INLINE_WORK: Duration = Duration::from_millis(1);

/// Gymnasium 1.x's autoreset modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Autoreset {
    /// The Step after an episode ended resets that sub-env (its action unused, reward 0).
    #[default]
    NextStep,
    /// The Step that ends an episode resets the sub-env too; the last observation and info
    /// are handed back beside the new episode's first.
    SameStep,
    /// Never: the caller resets ended sub-envs with a reset mask.
    Disabled,
}

/// One key of a vector info map, a value per sub-env.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    Integers(Vec<i64>),
    Numbers(Vec<f64>),
}

/// An info map in Gymnasium's vector layout: each key's values for every sub-env, and which
/// sub-envs hold one (the same for every key here).
#[derive(Debug, Clone, PartialEq)]
pub struct VectorInfo {
    pub columns: Vec<(&'static str, Column)>,
    pub mask: Vec<bool>,
}

/// What a vector Reset answers.
#[derive(Debug, Clone)]
pub struct VectorReset {
    /// `[num_envs, ...]`, every sub-env's (reset or not).
    pub observation: Tensor,
    pub info: VectorInfo,
}

/// What a vector Step answers.
#[derive(Debug, Clone)]
pub struct VectorStep {
    pub observation: Tensor,
    pub rewards: Vec<f64>,
    pub terminations: Vec<bool>,
    pub truncations: Vec<bool>,
    pub info: VectorInfo,
    /// `SAME_STEP`: the sub-envs whose episode ended, their last observations and infos.
    pub finals: Option<Finals>,
}

#[derive(Debug, Clone)]
pub struct Finals {
    pub index: Vec<u32>,
    /// `[index.len(), ...]`.
    pub observation: Tensor,
    /// Over all sub-envs; the mask marks `index`.
    pub info: VectorInfo,
}

/// One sub-env's episode bookkeeping.
#[derive(Debug, Clone, Default)]
struct SubEnv {
    /// Reset at least once.
    started: bool,
    /// Its episode is over: `NEXT_STEP` resets it on the next Step; `DISABLED` waits for a
    /// masked Reset.
    ended: bool,
    steps: u64,
    episode_return: f64,
    /// Where seeds come from when the sim keeps no generator of its own: the last seed, run
    /// on by splitmix64 at each unseeded reset.
    seed_stream: Option<u64>,
    /// The last step's results, gathered after a parallel step.
    transition: Option<Transition>,
    /// `SAME_STEP`: the last observation and info of an episode that ended this step.
    last: Option<Last>,
}

#[derive(Debug, Clone)]
struct Last {
    observation: Tensor,
    steps: u64,
    episode_return: f64,
    counters: Vec<Counter>,
}

/// splitmix64's step: a well-mixed next seed.
fn next_seed(state: u64) -> u64 {
    let mut z = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Runs `f` on the vector threads (at a lowered priority), where a vector env's call runs
/// when it is not quick enough to run on the server's runtime; on the calling thread if they
/// could not be made.
pub fn on_vector_threads<T: Send>(f: impl FnOnce() -> T + Send) -> T {
    match threads() {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// The threads large vector envs step on, made on first use: as many as the machine has
/// cores, at a lowered priority like the batch pool's.
fn threads() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        crate::batch::pool::lowered_threads("ale-vector", n)
            .map_err(
                |e| tracing::warn!(error = %e, "no vector threads; large vector envs step on one"),
            )
            .ok()
    })
    .as_ref()
}

/// A vector env as the env table holds it: what `GetSpec` answers, read without the lock a
/// Step holds, beside the sub-envs.
pub struct SharedVector {
    pub spec: VectorSpec,
    pub env: std::sync::Mutex<VectorEnv>,
}

impl SharedVector {
    pub fn new(env: VectorEnv) -> SharedVector {
        SharedVector {
            spec: VectorSpec {
                task: env.task.clone(),
                observation_space: env.observation_space.clone(),
                action_space: env.action_space.clone(),
                num_envs: env.len(),
                mode: env.mode,
            },
            env: std::sync::Mutex::new(env),
        }
    }
}

/// What never changes about a vector env.
#[derive(Debug, Clone)]
pub struct VectorSpec {
    pub task: Arc<Task>,
    /// One sub-env's.
    pub observation_space: Space,
    pub action_space: Space,
    pub num_envs: usize,
    pub mode: Autoreset,
}

pub struct VectorEnv {
    task: Arc<Task>,
    blocks: Vec<Box<dyn SimBlock>>,
    /// Sub-envs per block (the last may hold fewer).
    block: usize,
    subs: Vec<SubEnv>,
    mode: Autoreset,
    observation_space: Space,
    action_space: Space,
    /// One sub-env's observation and action: shape and dtype.
    observation_shape: Vec<usize>,
    observation_dtype: DType,
    action_shape: Vec<usize>,
    action_dtype: DType,
    /// One action per sub-env, rewritten in place each Step.
    actions: Vec<Tensor>,
    last_used: Instant,
    /// The most one sub-env's reset or step has cost, on average over a call: a call on all
    /// of them is judged by it, however few the last call touched (a Reset of one sub-env says
    /// nothing of what a Step of all will take).
    cost_per_env: Duration,
    /// See [`crate::Limits::vector_inline_work`].
    inline_work: Duration,
}

impl VectorEnv {
    /// `n` (at least 1) fresh sub-envs of `task`, for a practice env of the run `scope`
    /// (`None`: the shared channel).
    pub fn new(
        task: Arc<Task>,
        n: usize,
        mode: Autoreset,
        scope: Option<crate::channel::RunScope>,
        inline_work: Duration,
        now: Instant,
    ) -> Result<VectorEnv, Error> {
        if n == 0 {
            return Err(Error::InvalidRequest(
                "a vector env holds at least one sub-env".into(),
            ));
        }
        let holder = Holder::Practice {
            scope: scope.map(|s| s.0),
        };
        let building = Instant::now();
        let hosted = task
            .sim_entry()
            .is_some_and(|entry| entry.is_process_hosted());
        let block = if hosted { HOSTED_BLOCK } else { BLOCK };
        let mut blocks = Vec::with_capacity(n.div_ceil(block));
        let mut left = n;
        while left > 0 {
            let size = left.min(block);
            let block =
                task.build_block_for(size, holder)
                    .map_err(|cause| Error::SimUnavailable {
                        task: task.spec.id.clone(),
                        sim: task.spec.sim.clone(),
                        cause: cause.to_string(),
                    })?;
            if blocks.is_empty() {
                // Before the rest are built: the answers must fit in a message.
                check_answer_size(&task, block.as_ref(), n)?;
            }
            blocks.push(block);
            left -= size;
        }
        let observation_space = blocks[0].observation_space().clone();
        let action_space = blocks[0].action_space().clone();
        let observation = blocks[0].observation(0);
        let action_dtype = action_space.dtype();
        let action_shape = action_space.shape();
        let action = Tensor::zeros(action_shape.clone(), action_dtype);
        Ok(VectorEnv {
            observation_shape: observation.shape().to_vec(),
            observation_dtype: observation.dtype(),
            actions: vec![action; n],
            action_shape,
            action_dtype,
            task,
            blocks,
            block,
            subs: vec![SubEnv::default(); n],
            mode,
            observation_space,
            action_space,
            last_used: now,
            // Until a call has been measured, what building a sub-env took stands for what
            // resetting or stepping one costs: a vector slow to build is reset off the runtime.
            cost_per_env: building.elapsed() / u32::try_from(n).unwrap_or(u32::MAX),
            inline_work,
        })
    }

    pub fn len(&self) -> usize {
        self.subs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    pub fn mode(&self) -> Autoreset {
        self.mode
    }

    pub fn task(&self) -> &Arc<Task> {
        &self.task
    }

    pub fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    pub fn action_space(&self) -> &Space {
        &self.action_space
    }

    pub fn last_used(&self) -> Instant {
        self.last_used
    }

    /// Whether the next call should run where it arrives: a call on every sub-env, at the
    /// most a sub-env has cost per call so far, takes less than
    /// [`crate::Limits::vector_inline_work`].
    pub fn steps_inline(&self) -> bool {
        self.cost_per_env
            .saturating_mul(u32::try_from(self.len()).unwrap_or(u32::MAX))
            < self.inline_work
    }

    /// Counts a call's `work` over `envs` sub-envs into the cost per sub-env: the highest of
    /// what it was and this call's average, decaying slowly, so that a cheap call cannot make
    /// the next dear one run on the runtime.
    fn count_work(&mut self, work: Duration, envs: usize) {
        let Some(per_env) = u32::try_from(envs)
            .ok()
            .filter(|&n| n > 0)
            .map(|n| work / n)
        else {
            return;
        };
        self.cost_per_env = per_env.max(self.cost_per_env.mul_f64(0.95));
    }

    fn locate(&self, env: usize) -> (usize, usize) {
        (env / self.block, env % self.block)
    }

    /// Resets the sub-envs `mask` marks (empty: all): sub-env i from `seeds[i]` if given,
    /// else from `seed + i`, else from its own generator. Changes nothing if the arguments
    /// are bad.
    pub fn reset(
        &mut self,
        seed: Option<u64>,
        seeds: &[u64],
        mask: &[bool],
        now: Instant,
    ) -> Result<VectorReset, Error> {
        let n = self.len();
        if seed.is_some() && !seeds.is_empty() {
            return Err(Error::InvalidRequest(
                "ResetRequest: set `seed` (sub-env i gets seed + i) or `seeds` (one per \
                 sub-env), not both"
                    .into(),
            ));
        }
        if !seeds.is_empty() && seeds.len() != n {
            return Err(Error::InvalidRequest(format!(
                "ResetRequest.seeds holds {} seeds for a vector env of {n} sub-envs; give one \
                 per sub-env, or one base `seed`",
                seeds.len()
            )));
        }
        if !mask.is_empty() && mask.len() != n {
            return Err(Error::InvalidRequest(format!(
                "ResetRequest.reset_mask holds {} flags for a vector env of {n} sub-envs",
                mask.len()
            )));
        }
        if !mask.is_empty() && !mask.contains(&true) {
            return Err(Error::InvalidRequest(
                "ResetRequest.reset_mask marks no sub-env: mark at least one".into(),
            ));
        }
        self.last_used = now;
        let started = Instant::now();
        let chosen = |i: usize| mask.is_empty() || mask[i];
        let mut reset = 0;
        for i in 0..n {
            if !chosen(i) {
                continue;
            }
            let given = match (seed, seeds.get(i)) {
                (_, Some(&s)) => Some(s),
                (Some(base), None) => Some(base.wrapping_add(i as u64)),
                (None, None) => None,
            };
            self.reset_one(i, given)?;
            reset += 1;
        }
        self.count_work(started.elapsed(), reset);
        let info = self.info(chosen);
        Ok(VectorReset {
            observation: self.observations()?,
            info,
        })
    }

    /// Resets sub-env `i` from `seed`, or (none given) from its own generator.
    fn reset_one(&mut self, i: usize, seed: Option<u64>) -> Result<(), Error> {
        let (b, j) = self.locate(i);
        reset_in_block(
            &self.task,
            self.blocks[b].as_mut(),
            j,
            &mut self.subs[i],
            seed,
        )
        .map_err(|e| in_sub_env(i, e))
    }

    /// One Step of every sub-env, `action` holding one action per sub-env (`[num_envs, ...]`).
    /// Every action is checked before any sub-env steps.
    pub fn step(&mut self, action: &Tensor, now: Instant) -> Result<VectorStep, Error> {
        let n = self.len();
        if let Some(i) = self.subs.iter().position(|s| !s.started) {
            return Err(in_sub_env(i, Error::StepBeforeReset));
        }
        if self.mode == Autoreset::Disabled {
            let ended: Vec<usize> = (0..n).filter(|&i| self.subs[i].ended).collect();
            if !ended.is_empty() {
                return Err(Error::SubEnvsEnded(ended));
            }
        }
        self.split_actions(action)?;
        for (i, a) in self.actions.iter().enumerate() {
            self.action_space.check(a).map_err(|e| Error::BadAction {
                task: self.task.spec.id.clone(),
                detail: format!("sub-env {i}: {e}"),
            })?;
        }
        self.last_used = now;
        let mode = self.mode;
        let task = &self.task;
        let size = self.block;
        let parallel = self.blocks.len() > 1 && !self.steps_inline();
        let work = self
            .blocks
            .iter_mut()
            .zip(self.subs.chunks_mut(self.block))
            .zip(self.actions.chunks(self.block));
        // The blocks' own times, summed: what the Step would take on one thread, wherever it
        // ran, so where the next one runs does not flip with where this one did.
        let work_ns = std::sync::atomic::AtomicU64::new(0);
        let one_block = |b: usize, block: &mut Box<dyn SimBlock>, subs, actions| {
            let started = Instant::now();
            let stepped = step_block(task, mode, block.as_mut(), subs, actions)
                .map_err(|(j, e)| (b * size + j, e));
            let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
            work_ns.fetch_add(ns, std::sync::atomic::Ordering::Relaxed);
            stepped
        };
        let outcome: Result<(), (usize, Error)> = match threads().filter(|_| parallel) {
            Some(pool) => pool.install(|| {
                work.collect::<Vec<_>>()
                    .into_par_iter()
                    .enumerate()
                    .try_for_each(|(b, ((block, subs), actions))| {
                        one_block(b, block, subs, actions)
                    })
            }),
            None => work
                .enumerate()
                .try_for_each(|(b, ((block, subs), actions))| one_block(b, block, subs, actions)),
        };
        let n = self.len();
        self.count_work(Duration::from_nanos(work_ns.into_inner()), n);
        outcome.map_err(|(i, e)| in_sub_env(i, e))?;
        self.gather()
    }

    /// Cuts the batched action into one action per sub-env, checking its dtype and shape.
    fn split_actions(&mut self, action: &Tensor) -> Result<(), Error> {
        let n = self.len();
        let per = self.action_shape.iter().product::<usize>();
        let expected: Vec<usize> = std::iter::once(n)
            .chain(self.action_shape.iter().copied())
            .collect();
        // A MultiBinary action may travel as bool as well as uint8, as a single env's may.
        let dtype_ok = action.dtype() == self.action_dtype
            || matches!(
                (&self.action_space, action.dtype()),
                (Space::MultiBinary(_), DType::Bool)
            );
        if !dtype_ok || action.shape() != expected.as_slice() {
            return Err(Error::BadAction {
                task: self.task.spec.id.clone(),
                detail: format!(
                    "a vector env of {n} sub-envs takes one action per sub-env: dtype {} and \
                     shape {expected:?} (num_envs first), got {} of shape {}",
                    self.action_dtype,
                    action.dtype(),
                    ale_sim::Echo(action.shape())
                ),
            });
        }
        if self
            .actions
            .first()
            .is_some_and(|a| a.dtype() != action.dtype())
        {
            self.actions = vec![Tensor::zeros(self.action_shape.clone(), action.dtype()); n];
        }
        for (i, one) in self.actions.iter_mut().enumerate() {
            let range = i * per..(i + 1) * per;
            match (action.data(), one) {
                (TensorData::F32(all), t) => t.as_f32_mut().map(|d| d.copy_from_slice(&all[range])),
                (TensorData::F64(all), t) => t.as_f64_mut().map(|d| d.copy_from_slice(&all[range])),
                (TensorData::I64(all), t) => t.as_i64_mut().map(|d| d.copy_from_slice(&all[range])),
                (TensorData::U8(all), t) => t.as_u8_mut().map(|d| d.copy_from_slice(&all[range])),
                (TensorData::I32(all), t) => t.as_i32_mut().map(|d| d.copy_from_slice(&all[range])),
                (TensorData::Bool(all), t) => {
                    t.as_bool_mut().map(|d| d.copy_from_slice(&all[range]))
                }
            }
            .ok_or_else(|| Error::Internal("a sub-env's action buffer changed dtype".into()))?;
        }
        Ok(())
    }

    /// The Step's answer from the sub-envs' state after stepping.
    fn gather(&mut self) -> Result<VectorStep, Error> {
        let n = self.len();
        let mut rewards = Vec::with_capacity(n);
        let mut terminations = Vec::with_capacity(n);
        let mut truncations = Vec::with_capacity(n);
        for sub in &self.subs {
            let t = sub.transition.unwrap_or(Transition {
                reward: 0.0,
                terminated: false,
                truncated: false,
            });
            rewards.push(t.reward);
            terminations.push(t.terminated);
            truncations.push(t.truncated);
        }
        let finals = match self.mode {
            Autoreset::SameStep => self.finals()?,
            Autoreset::NextStep | Autoreset::Disabled => None,
        };
        Ok(VectorStep {
            observation: self.observations()?,
            rewards,
            terminations,
            truncations,
            info: self.info(|_| true),
            finals,
        })
    }

    /// `SAME_STEP`'s last observations and infos of the episodes that ended this step.
    fn finals(&mut self) -> Result<Option<Finals>, Error> {
        let n = self.len();
        let index: Vec<u32> = (0..n)
            .filter(|&i| self.subs[i].last.is_some())
            .map(|i| i as u32)
            .collect();
        if index.is_empty() {
            return Ok(None);
        }
        let lasts: Vec<Last> = self.subs.iter_mut().filter_map(|s| s.last.take()).collect();
        let mut data = empty_like(self.observation_dtype, lasts.len() * self.observation_len());
        for last in &lasts {
            append(&mut data, last.observation.data());
        }
        let shape = std::iter::once(lasts.len())
            .chain(self.observation_shape.iter().copied())
            .collect();
        let counters = lasts.first().map_or(&[][..], |l| l.counters.as_slice());
        let mut columns = vec![
            (
                ale_proto::info_keys::EPISODE_STEPS,
                Column::Integers(vec![0; n]),
            ),
            (
                ale_proto::info_keys::EPISODE_RETURN,
                Column::Numbers(vec![0.0; n]),
            ),
        ];
        columns.extend(
            counters
                .iter()
                .map(|c| (c.name, Column::Numbers(vec![0.0; n]))),
        );
        let mut mask = vec![false; n];
        for (&i, last) in index.iter().zip(&lasts) {
            let i = i as usize;
            mask[i] = true;
            if let Column::Integers(v) = &mut columns[0].1 {
                v[i] = i64::try_from(last.steps).unwrap_or(i64::MAX);
            }
            if let Column::Numbers(v) = &mut columns[1].1 {
                v[i] = last.episode_return;
            }
            for (k, c) in last.counters.iter().enumerate() {
                if let Some((_, Column::Numbers(v))) = columns.get_mut(2 + k) {
                    v[i] = c.value;
                }
            }
        }
        Ok(Some(Finals {
            index,
            observation: batch(shape, data)?,
            info: VectorInfo { columns, mask },
        }))
    }

    fn observation_len(&self) -> usize {
        self.observation_shape.iter().product()
    }

    /// Every sub-env's observation, batched `[num_envs, ...]`.
    fn observations(&self) -> Result<Tensor, Error> {
        let n = self.len();
        let mut data = empty_like(self.observation_dtype, n * self.observation_len());
        for block in &self.blocks {
            for j in 0..block.len() {
                append(&mut data, block.observation(j).data());
            }
        }
        let shape = std::iter::once(n)
            .chain(self.observation_shape.iter().copied())
            .collect();
        batch(shape, data)
    }

    /// The info map in the vector layout, `has(i)` marking the sub-envs it reports.
    fn info(&self, has: impl Fn(usize) -> bool) -> VectorInfo {
        let n = self.len();
        let mask: Vec<bool> = (0..n).map(&has).collect();
        let steps = self
            .subs
            .iter()
            .zip(&mask)
            .map(|(s, &m)| {
                if m {
                    i64::try_from(s.steps).unwrap_or(i64::MAX)
                } else {
                    0
                }
            })
            .collect();
        let returns = self
            .subs
            .iter()
            .zip(&mask)
            .map(|(s, &m)| if m { s.episode_return } else { 0.0 })
            .collect();
        let mut columns = vec![
            (ale_proto::info_keys::EPISODE_STEPS, Column::Integers(steps)),
            (
                ale_proto::info_keys::EPISODE_RETURN,
                Column::Numbers(returns),
            ),
        ];
        let names: Vec<&'static str> = self.blocks[0].counters(0).iter().map(|c| c.name).collect();
        for (k, name) in names.into_iter().enumerate() {
            let mut values = Vec::with_capacity(n);
            for block in &self.blocks {
                for j in 0..block.len() {
                    let i = values.len();
                    let value = block.counters(j).get(k).map_or(0.0, |c| c.value);
                    values.push(if mask[i] { value } else { 0.0 });
                }
            }
            columns.push((name, Column::Numbers(values)));
        }
        VectorInfo { columns, mask }
    }
}

/// The bytes one sub-env adds to a Step's answer at most: its observation twice (the batch,
/// and a `SAME_STEP` final observation), its reward and two flags, and its info values and
/// masks twice (the info, and a final info), with room for framing.
fn answer_bytes_per_env(block: &dyn SimBlock) -> usize {
    let observation = block.observation(0);
    let observation_bytes = observation.len() * ale_proto::convert::raw_width(observation.dtype());
    let info_keys = 2 + block.counters(0).len();
    2 * observation_bytes + 8 + 2 + 2 * info_keys * 9 + 16
}

/// Refuses a vector env whose Step answers could exceed one message.
fn check_answer_size(task: &Task, block: &dyn SimBlock, n: usize) -> Result<(), Error> {
    let per_env = answer_bytes_per_env(block);
    let max = crate::serve::MAX_MESSAGE_BYTES;
    // A little for the message's own fields and keys.
    let room = max - 4096;
    let bytes = per_env.saturating_mul(n);
    if bytes > room {
        return Err(Error::VectorTooLarge {
            task: task.spec.id.clone(),
            envs: n,
            per_env,
            bytes,
            max,
            fits: room / per_env.max(1),
        });
    }
    Ok(())
}

/// An error of sub-env `i`, saying so.
fn in_sub_env(i: usize, e: Error) -> Error {
    match e {
        Error::BadAction { task, detail } => Error::BadAction {
            task,
            detail: format!("sub-env {i}: {detail}"),
        },
        other => Error::SubEnv {
            index: i,
            error: Box::new(other),
        },
    }
}

/// Resets env `j` of `block` (sub-env `sub`) from `seed`, or from its own generator, or from
/// its seed stream.
fn reset_in_block(
    task: &Task,
    block: &mut dyn SimBlock,
    j: usize,
    sub: &mut SubEnv,
    seed: Option<u64>,
) -> Result<(), Error> {
    let result = match seed {
        Some(seed) => {
            sub.seed_stream = Some(seed);
            block.reset(j, seed)
        }
        None => match block.reset_continuing(j) {
            Some(result) => result,
            None => {
                let seed = sub.seed_stream.map_or_else(random_u64, next_seed);
                sub.seed_stream = Some(seed);
                block.reset(j, seed)
            }
        },
    };
    result.map_err(|e| sim_error(task, e))?;
    sub.started = true;
    sub.ended = false;
    sub.steps = 0;
    sub.episode_return = 0.0;
    Ok(())
}

/// Steps one block: sub-envs whose episode ended last step reset instead (`NEXT_STEP`), the
/// others step on their action; in `SAME_STEP` an episode that ends is reset at once, its
/// last observation and info kept. An error names the env within the block.
fn step_block(
    task: &Task,
    mode: Autoreset,
    block: &mut dyn SimBlock,
    subs: &mut [SubEnv],
    actions: &[Tensor],
) -> Result<(), (usize, Error)> {
    let mut which = Vec::with_capacity(subs.len());
    for (j, sub) in subs.iter_mut().enumerate() {
        sub.transition = None;
        sub.last = None;
        if mode == Autoreset::NextStep && sub.ended {
            reset_in_block(task, block, j, sub, None).map_err(|e| (j, e))?;
        } else {
            which.push(j);
        }
    }
    let mut results = Vec::with_capacity(which.len());
    if which.len() == actions.len() {
        block.step(&which, actions, &mut results);
    } else {
        // Some reset instead: the others' actions, in order (the only copies a Step makes).
        let chosen: Vec<Tensor> = which.iter().map(|&j| actions[j].clone()).collect();
        block.step(&which, &chosen, &mut results);
    }
    for (&j, result) in which.iter().zip(results) {
        let t = result.map_err(|e| (j, step_error(task, e)))?;
        let sub = &mut subs[j];
        sub.steps = sub.steps.saturating_add(1);
        sub.episode_return += t.reward;
        sub.transition = Some(t);
        if t.is_done() {
            sub.ended = true;
            if mode == Autoreset::SameStep {
                sub.last = Some(Last {
                    observation: block.observation(j).clone(),
                    steps: sub.steps,
                    episode_return: sub.episode_return,
                    counters: block.counters(j).to_vec(),
                });
                reset_in_block(task, block, j, sub, None).map_err(|e| (j, e))?;
            }
        }
    }
    Ok(())
}

/// The batched observations; a sub-env whose observation broke its space's shape or dtype
/// (which the sims and the host checks rule out) makes an internal error, not a panic.
fn batch(shape: Vec<usize>, data: TensorData) -> Result<Tensor, Error> {
    Tensor::new(shape, data)
        .map_err(|e| Error::Internal(format!("a vector env's batched observation: {e}")))
}

fn empty_like(dtype: DType, capacity: usize) -> TensorData {
    match dtype {
        DType::F32 => TensorData::F32(Vec::with_capacity(capacity)),
        DType::F64 => TensorData::F64(Vec::with_capacity(capacity)),
        DType::I64 => TensorData::I64(Vec::with_capacity(capacity)),
        DType::I32 => TensorData::I32(Vec::with_capacity(capacity)),
        DType::U8 => TensorData::U8(Vec::with_capacity(capacity)),
        DType::Bool => TensorData::Bool(Vec::with_capacity(capacity)),
    }
}

/// Appends `more` to `data` (the same dtype: every sub-env's observation has the space's).
fn append(data: &mut TensorData, more: &TensorData) {
    match (data, more) {
        (TensorData::F32(a), TensorData::F32(b)) => a.extend_from_slice(b),
        (TensorData::F64(a), TensorData::F64(b)) => a.extend_from_slice(b),
        (TensorData::I64(a), TensorData::I64(b)) => a.extend_from_slice(b),
        (TensorData::I32(a), TensorData::I32(b)) => a.extend_from_slice(b),
        (TensorData::U8(a), TensorData::U8(b)) => a.extend_from_slice(b),
        (TensorData::Bool(a), TensorData::Bool(b)) => a.extend_from_slice(b),
        (data, more) => tracing::error!(
            expected = %data.dtype(),
            got = %more.dtype(),
            "a sub-env's observation changed dtype"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cartpoles(n: usize) -> VectorEnv {
        let registry = crate::task::TaskRegistry::builtin(&ale_sims::catalog()).unwrap();
        let task = registry.get("cartpole-balance").unwrap().clone();
        VectorEnv::new(
            task,
            n,
            Autoreset::NextStep,
            None,
            Duration::from_millis(1),
            Instant::now(),
        )
        .unwrap()
    }

    /// A Reset of one sub-env costs little; the Step of all after it must still be judged by
    /// what a sub-env costs, or a client could run a long Step on the server's runtime.
    #[test]
    fn a_cheap_call_on_few_sub_envs_does_not_bring_a_dear_vector_inline() {
        let mut vector = cartpoles(100);
        vector.count_work(Duration::from_millis(50), 100);
        assert!(!vector.steps_inline(), "100 × 500 µs");
        vector.count_work(Duration::from_micros(1), 1);
        assert!(!vector.steps_inline(), "one cheap reset changes nothing");
        // Cheap calls of all of them bring it back, slowly.
        for _ in 0..200 {
            vector.count_work(Duration::from_micros(10), 100);
        }
        assert!(vector.steps_inline());
    }
}
