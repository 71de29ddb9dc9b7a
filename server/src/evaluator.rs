//! The evaluator: the env table, official runs and sessions, and the privilege rules. The gRPC
//! service is a thin layer over this.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use ale_proto::eval::{EvalResultRecord, EvalStatus};
use ale_proto::{BatchId, EnvHandle, RunId, SessionId};
use ale_records::SECRET_LEN;
use ale_records::event_data::SubmissionReceived;
use ale_records::signing_keys::{SigningKey, encode_public_key};
use ale_sim::{Space, Tensor, Transition};

use crate::batch::run::{BatchRun, Stop};
use crate::batch::{BatchOptions, BatchStatus, Batches, policy, submission};
use crate::channel::{Channel, RunScope};
use crate::env::{Env, OfficialRun, StepInfo};
use crate::env_table::{ConnectionId, EnvCounts, EnvTable, Held, Limits, Pool, Shared};
use crate::error::Error;
use crate::interrupted::{MarkedRun, mark_interrupted_runs};
use crate::run_resources::submission_folder::Leftovers;
use crate::run_resources::{RunChannels, RunResources, RunSetup};
use crate::seeds::{OsSeeds, SeedSet, SeedSource, random_id_bytes};
use crate::state_dir::{self, StateDirError};
use crate::sync::lock;
use crate::task::{Task, TaskRegistry};
use crate::vector::{Autoreset, SharedVector, VectorEnv, VectorReset, VectorStep};

/// An env as `CreateEnv` reports it.
#[derive(Debug, Clone)]
pub struct CreatedEnv {
    pub handle: EnvHandle,
    pub task_id: String,
    /// Present for an official env.
    pub official: Option<(SessionId, RunId)>,
    /// Sub-envs: 1 for a single env.
    pub num_envs: usize,
    pub autoreset: Autoreset,
}

/// What `CreateEnv` asks for beyond the task: one env, or a practice vector env.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvShape {
    /// Sub-envs; 0 and 1 both mean a single env, unless `vector`.
    pub num_envs: u32,
    pub autoreset: Autoreset,
    /// A vector env even of one sub-env.
    pub vector: bool,
}

impl Default for EnvShape {
    fn default() -> Self {
        EnvShape {
            num_envs: 1,
            autoreset: Autoreset::NextStep,
            vector: false,
        }
    }
}

/// What a Reset answers: a single env's observation and info, or a vector env's batch.
#[derive(Debug, Clone)]
pub enum ResetAnswer {
    Single(Tensor, StepInfo),
    Vector(VectorReset),
}

/// What a Step answers.
#[derive(Debug, Clone)]
pub enum StepAnswer {
    Single(Tensor, Transition, StepInfo),
    Vector(VectorStep),
}

/// What `GetSpec` reports.
#[derive(Debug, Clone)]
pub struct Spec {
    pub observation_space: Space,
    pub action_space: Space,
    pub task: Arc<Task>,
    pub official: bool,
    /// Sub-envs: 1 for a single env.
    pub num_envs: usize,
    pub autoreset: Autoreset,
}

pub struct Evaluator {
    tasks: TaskRegistry,
    state_dir: PathBuf,
    secret: [u8; SECRET_LEN],
    signing_key: SigningKey,
    seeds: Box<dyn SeedSource>,
    limits: Limits,
    /// Shared with runs' resources, which drop their channel's practice envs when they end.
    envs: Arc<Mutex<EnvTable>>,
    sessions: Mutex<HashMap<SessionId, Shared<Env>>>,
    max_submission_bytes: u64,
    batches: Batches,
    next_run: AtomicU64,
    /// Opens runs' own agent channels; set once by the listeners' side.
    run_channels: OnceLock<Box<dyn RunChannels>>,
    /// Runs' submission folders whose removal failed, removed again by [`Evaluator::sweep`]
    /// and when envs are reclaimed.
    leftovers: Leftovers,
    /// Whether a task's sim is hosted in a process of its own.
    hosts_processes: bool,
    /// Sub-envs of vector envs being built for `CreateEnv`s not yet answered: room is taken
    /// in the env table only once one is built, so this bounds what concurrent requests can
    /// make the evaluator hold meanwhile (at most `max_practice_envs` more).
    building: std::sync::atomic::AtomicUsize,
}

/// What one [`Evaluator::sweep`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Swept {
    /// Runs ended because their time budget had run out.
    pub runs_ended: usize,
    /// Runs' submission folders removed on another try.
    pub folders_removed: usize,
}

/// Sub-envs counted as being built, until dropped.
struct Building<'a> {
    count: &'a std::sync::atomic::AtomicUsize,
    n: usize,
}

impl Drop for Building<'_> {
    fn drop(&mut self) {
        self.count.fetch_sub(self.n, Ordering::AcqRel);
    }
}

/// Where a call runs; see [`Evaluator::placement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    Inline,
    Blocking,
    VectorThreads,
}

/// What `create_env` made, before it enters the table.
enum Made {
    Env(Env),
    Vector(Box<VectorEnv>),
}

/// How long an agent's call waits for an env another call holds, in an evaluator with hosted
/// sims, before it is refused as busy.
const BUSY_ENV_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Why shutdown ends sessions and batch runs, as their records say.
const SHUT_DOWN: &str = "the evaluator shut down during the session";

impl Evaluator {
    /// An evaluator over `state_dir` (created 0700, with its secret and key) hosting `tasks`.
    pub fn new(tasks: TaskRegistry, state_dir: &Path) -> Result<Evaluator, StateDirError> {
        Self::with_limits(tasks, state_dir, Limits::default())
    }

    /// As [`Evaluator::new`], with caps other than the defaults.
    pub fn with_limits(
        tasks: TaskRegistry,
        state_dir: &Path,
        limits: Limits,
    ) -> Result<Evaluator, StateDirError> {
        Self::with_seed_source(tasks, state_dir, Box::new(OsSeeds), limits)
    }

    /// Prepares `state_dir` (see [`state_dir::prepare`]) and loads or creates the evaluator
    /// secret and signing key in it; a state dir or file that is not the evaluator's own is
    /// refused.
    pub fn with_seed_source(
        tasks: TaskRegistry,
        state_dir: &Path,
        seeds: Box<dyn SeedSource>,
        limits: Limits,
    ) -> Result<Evaluator, StateDirError> {
        Self::with_options(tasks, state_dir, seeds, limits, &BatchOptions::default())
    }

    /// As [`Evaluator::with_seed_source`], with the batch pipeline's options.
    pub fn with_options(
        tasks: TaskRegistry,
        state_dir: &Path,
        seeds: Box<dyn SeedSource>,
        limits: Limits,
        batch: &BatchOptions,
    ) -> Result<Evaluator, StateDirError> {
        Self::with_policy_loader(tasks, state_dir, seeds, limits, batch, policy::load)
    }

    /// As [`Evaluator::with_options`], reading policies with `loader` instead of
    /// [`policy::load`]: for tests and benchmarks (`ale bench batch`), which play policies no
    /// file format describes.
    #[doc(hidden)]
    pub fn with_policy_loader(
        tasks: TaskRegistry,
        state_dir: &Path,
        seeds: Box<dyn SeedSource>,
        limits: Limits,
        batch: &BatchOptions,
        loader: policy::Loader,
    ) -> Result<Evaluator, StateDirError> {
        state_dir::prepare(state_dir)?;
        let secret = state_dir::load_or_create_secret(state_dir)?;
        let signing_key = state_dir::load_or_create_evaluator_key(state_dir)?;
        let batches = Batches::new(batch, loader).map_err(StateDirError::Pipeline)?;
        let hosts_processes = tasks
            .iter()
            .any(|t| t.sim_entry().is_some_and(|e| e.is_process_hosted()));
        Ok(Evaluator {
            hosts_processes,
            building: std::sync::atomic::AtomicUsize::new(0),
            max_submission_bytes: batch.max_submission_bytes,
            batches,
            tasks,
            state_dir: state_dir.to_path_buf(),
            secret,
            signing_key,
            seeds,
            limits,
            envs: Arc::new(Mutex::new(EnvTable::default())),
            sessions: Mutex::new(HashMap::new()),
            next_run: AtomicU64::new(0),
            run_channels: OnceLock::new(),
            leftovers: Leftovers::default(),
        })
    }

    /// Gives every official env made from now on its own agent channel, opened by
    /// `channels`. Set once; a second call is ignored (and says so).
    pub(crate) fn set_run_channels(&self, channels: Box<dyn RunChannels>) -> bool {
        self.run_channels.set(channels).is_ok()
    }

    pub fn tasks(&self) -> &TaskRegistry {
        &self.tasks
    }

    /// The env caps it was started with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn state_dir(&self) -> &Path {
        &self.state_dir
    }

    /// Where the batch run `run_id` reads its submission: its own folder, made with its
    /// official env (`<state>/submissions/<run_id>/`).
    pub fn run_submission_dir(&self, run_id: &RunId) -> PathBuf {
        ale_records::layout::run_submission_dir(&self.state_dir, run_id)
    }

    /// Where the run `run_id`'s agent reaches the evaluator (`<state>/agents/<run_id>.sock`),
    /// while the run lasts, when the evaluator serves listeners.
    pub fn run_agent_socket(&self, run_id: &RunId) -> PathBuf {
        ale_records::layout::run_agent_socket(&self.state_dir, run_id)
    }

    /// The evaluator's Ed25519 signing key (`<state>/evaluator.key`).
    pub fn signing_key(&self) -> &SigningKey {
        &self.signing_key
    }

    /// The evaluator's public key as `evaluator.pub` holds it: 64 lowercase hex characters.
    pub fn public_key_hex(&self) -> String {
        encode_public_key(&self.signing_key.verifying_key())
    }

    /// The env `handle` names, if `channel` may reach it; otherwise, exactly as for a handle
    /// that names nothing, `NOT_FOUND`.
    fn held(&self, channel: Channel, handle: &EnvHandle) -> Result<Held, Error> {
        lock(&self.envs)
            .get(handle, channel)
            .ok_or_else(|| Error::UnknownHandle(handle.clone()))
    }

    /// The env `handle` names; a vector env (practice only) is refused with `vector`.
    fn env(
        &self,
        channel: Channel,
        handle: &EnvHandle,
        vector: impl FnOnce() -> Error,
    ) -> Result<Shared<Env>, Error> {
        match self.held(channel, handle)? {
            Held::Env(env) => Ok(env),
            Held::Vector(_) => Err(vector()),
        }
    }

    /// Runs `f` on the vector env `vector` under its lock. A vector env takes one call at a
    /// time: a call while another is in progress is refused as busy at once, never waited
    /// for (a long Step holds the lock, and a wait could hold the runtime's thread).
    fn with_vector<T>(
        handle: &EnvHandle,
        vector: &SharedVector,
        f: impl FnOnce(&mut VectorEnv) -> Result<T, Error>,
    ) -> Result<T, Error> {
        match vector.env.try_lock() {
            Ok(mut guard) => f(&mut guard),
            Err(std::sync::TryLockError::Poisoned(p)) => f(&mut p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => Err(Error::EnvBusy(handle.clone())),
        }
    }

    /// Where a call on `handle` runs: where it arrives, on the server's runtime (a single env
    /// of an evaluator hosting no sim process, or a vector env of native sims whose call on
    /// every sub-env is quick, judged by the most a sub-env has cost); on a blocking thread
    /// (sims hosted in processes, whose calls wait on their hosts); or on the vector threads,
    /// at a lowered priority (a vector env whose calls take longer).
    pub fn placement(&self, channel: Channel, handle: &EnvHandle) -> Placement {
        let vector = match lock(&self.envs).get(handle, channel) {
            Some(Held::Vector(vector)) => {
                Some(vector.env.try_lock().is_ok_and(|v| v.steps_inline()))
            }
            _ => None,
        };
        match (vector, self.hosts_processes) {
            (_, true) => Placement::Blocking,
            (None | Some(true), false) => Placement::Inline,
            (Some(false), false) => Placement::VectorThreads,
        }
    }

    /// Runs `f` on the env `handle` names under its lock; then, if `f` ended its run,
    /// releases the run's folder and channel (outside the lock).
    fn with_env<T>(
        &self,
        channel: Channel,
        handle: &EnvHandle,
        f: impl FnOnce(&mut Env) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let env = self.env(channel, handle, || Error::PracticeEnvInEval(handle.clone()))?;
        // With sims hosted in processes, a call may hold an env for seconds: an agent's call
        // on an env already in a call is refused rather than queued, so no client can pile
        // up waiting threads; the harness's waits its turn.
        if self.hosts_processes && channel != Channel::Harness {
            let waited = Instant::now();
            loop {
                match env.try_lock() {
                    Ok(guard) => return Self::on_guard(guard, f),
                    Err(std::sync::TryLockError::Poisoned(p)) => {
                        return Self::on_guard(p.into_inner(), f);
                    }
                    // Held briefly (the harness reading the result, the sweep): wait a
                    // little; held by a call waiting on its host: refuse.
                    Err(std::sync::TryLockError::WouldBlock)
                        if waited.elapsed() < BUSY_ENV_WAIT =>
                    {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    Err(std::sync::TryLockError::WouldBlock) => {
                        return Err(Error::EnvBusy(handle.clone()));
                    }
                }
            }
        }
        Self::on_env(&env, f)
    }

    fn on_env<T>(
        env: &Shared<Env>,
        f: impl FnOnce(&mut Env) -> Result<T, Error>,
    ) -> Result<T, Error> {
        Self::on_guard(lock(env), f)
    }

    fn on_guard<T>(
        mut guard: std::sync::MutexGuard<'_, Env>,
        f: impl FnOnce(&mut Env) -> Result<T, Error>,
    ) -> Result<T, Error> {
        let out = f(&mut guard);
        let ended = guard.take_ended_resources();
        drop(guard);
        if let Some(resources) = ended {
            resources.end();
        }
        out
    }

    fn task(&self, id: &str) -> Result<&Arc<Task>, Error> {
        self.tasks.get(id).ok_or_else(|| Error::UnknownTask {
            id: id.to_string(),
            known: self.tasks.ids().join(", "),
        })
    }

    /// Creates an env of `task_id`: official (harness channel only) or practice, counted
    /// against `connection`'s practice allowance (`None`: an in-process caller, all of which
    /// share one allowance) and, on a run's channel, that run's (refused once that run has
    /// ended). An official env gets its run's folder (a batch task), its run's agent channel
    /// (when serving), and disk reserved for its record. A refused request leaves the table,
    /// and the state dir, as they were.
    ///
    /// Room is checked under the env table's lock, the env is made outside it (folders,
    /// mounts, sockets and the trajectory take I/O, and every request takes that lock), then
    /// room is checked again as it is inserted; if it is gone, what was made is removed.
    /// Counts `n` sub-envs as being built until the guard is dropped; refused when the
    /// vectors other requests are building already hold the total practice cap's worth.
    fn start_building(&self, n: usize) -> Result<Building<'_>, Error> {
        let cap = self.limits.max_practice_envs;
        self.building
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(n).filter(|&total| total <= cap)
            })
            .map_err(|held| Error::BuildingTooMany {
                building: held,
                asked: n,
                cap,
            })?;
        Ok(Building {
            count: &self.building,
            n,
        })
    }

    /// Whether any task's sim is hosted in a process of its own (whose calls may block).
    pub fn hosts_processes(&self) -> bool {
        self.hosts_processes
    }

    pub fn create_env(
        &self,
        channel: Channel,
        connection: Option<ConnectionId>,
        task_id: &str,
        official: bool,
    ) -> Result<CreatedEnv, Error> {
        self.create_env_shaped(
            channel,
            connection,
            task_id,
            official,
            EnvShape::default(),
            None,
        )
    }

    /// [`Evaluator::create_env`] of a practice vector env when `shape` asks for one (more than
    /// one sub-env, or `vector`); an official env must be single. An official env is played
    /// on the task's evaluation seed set `seed_set` when one is named.
    pub fn create_env_shaped(
        &self,
        channel: Channel,
        connection: Option<ConnectionId>,
        task_id: &str,
        official: bool,
        shape: EnvShape,
        seed_set: Option<&str>,
    ) -> Result<CreatedEnv, Error> {
        if official && channel != Channel::Harness {
            return Err(Error::OfficialNeedsHarness);
        }
        if official && (shape.num_envs > 1 || shape.vector) {
            return Err(Error::OfficialVector);
        }
        if !official && seed_set.is_some() {
            return Err(Error::SeedSetForPractice);
        }
        let num_envs = usize::try_from(shape.num_envs.max(1)).unwrap_or(usize::MAX);
        let task = self.task(task_id)?.clone();
        let seed_set = seed_set
            .map(|name| SeedSet::of(&task, name, &self.secret))
            .transpose()?;
        let run = RunScope(self.next_run.fetch_add(1, Ordering::Relaxed));
        let pool = match (official, channel) {
            (true, _) => Pool::Official { run },
            (false, Channel::Run(scope)) => Pool::Practice {
                connection,
                run: Some(scope),
            },
            (false, Channel::Agent | Channel::Harness) => Pool::Practice {
                connection,
                run: None,
            },
        };
        let now = Instant::now();
        {
            let envs = lock(&self.envs);
            envs.check_open(pool)?;
            // Only whether it fits: the room is taken when the env is inserted.
            drop(envs.room_for(pool, num_envs, &self.limits, now)?);
        }
        let handle = EnvHandle::from_random(random_id_bytes());
        let (held, ids, has_channel) = if official {
            let ids = OfficialRun {
                run_id: RunId::from_random(random_id_bytes()),
                session_id: SessionId::from_random(random_id_bytes()),
                scope: run,
            };
            let resources = RunResources::open(RunSetup {
                state_dir: &self.state_dir,
                run,
                run_id: &ids.run_id,
                submission_cap: task.spec.is_batch().then_some(self.max_submission_bytes),
                channels: self.run_channels.get().map(|c| c.as_ref()),
                envs: Arc::downgrade(&self.envs),
                leftovers: &self.leftovers,
            })?;
            let has_channel = resources.has_channel();
            let env = Env::official(
                handle.clone(),
                task,
                ids.clone(),
                seed_set,
                &ale_records::layout::runs_dir(&self.state_dir),
                self.signing_key.clone(),
                Some(resources),
                now,
            )?;
            (Made::Env(env), Some(ids), has_channel)
        } else {
            let scope = match channel {
                Channel::Run(scope) => Some(scope),
                Channel::Agent | Channel::Harness => None,
            };
            let made = if num_envs > 1 || shape.vector {
                let _building = self.start_building(num_envs)?;
                Made::Vector(Box::new(VectorEnv::new(
                    task,
                    num_envs,
                    shape.autoreset,
                    scope,
                    self.limits.vector_inline_work,
                    now,
                )?))
            } else {
                Made::Env(Env::practice(handle.clone(), task, scope, now)?)
            };
            (made, None, false)
        };
        let mut envs = lock(&self.envs);
        let room = match envs
            .check_open(pool)
            .and_then(|()| envs.room_for(pool, num_envs, &self.limits, Instant::now()))
        {
            Ok(room) => room,
            Err(e) => {
                drop(envs);
                // Another request took the room (or ended the run) meanwhile.
                if let Made::Env(env) = held {
                    env.discard(&ale_records::layout::runs_dir(&self.state_dir));
                }
                return Err(e);
            }
        };
        let (held, env) = match held {
            Made::Env(env) => {
                let env = Arc::new(Mutex::new(env));
                (Held::Env(env.clone()), Some(env))
            }
            Made::Vector(vector) => (Held::Vector(Arc::new(SharedVector::new(*vector))), None),
        };
        let reclaimed = envs.insert(room, handle.clone(), held, pool, num_envs);
        if let (true, Some(ids)) = (has_channel, &ids) {
            envs.open_run_channel(run, ids.run_id.clone());
        }
        let mut sessions = lock(&self.sessions);
        for id in &reclaimed.sessions {
            sessions.remove(id);
        }
        if let (Some(ids), Some(env)) = (&ids, env) {
            sessions.insert(ids.session_id.clone(), env);
        }
        drop(sessions);
        drop(envs);
        if let Some(ids) = &ids {
            tracing::info!(%handle, run_id = %ids.run_id, task = task_id, "official env created");
        }
        // The reclaimed envs' folders and sockets go now, outside the locks; so do folders an
        // earlier removal left.
        if !reclaimed.envs.is_empty() {
            drop(reclaimed);
            self.leftovers.retry();
        }
        Ok(CreatedEnv {
            handle,
            task_id: task_id.to_string(),
            official: ids.map(|ids| (ids.session_id, ids.run_id)),
            num_envs,
            // A single env has no autoreset; it reports what GetSpec does.
            autoreset: if num_envs > 1 || shape.vector {
                shape.autoreset
            } else {
                Autoreset::NextStep
            },
        })
    }

    /// Ends every run that has outlived its time budget and removes the runs' folders an
    /// earlier removal left; what `ale serve` does every second (see `serve::SWEEP_INTERVAL`),
    /// so that a run whose harness died, or whose agent went silent, gives back its folder,
    /// socket and connections without waiting for a request. A started session past its
    /// deadline ends `BUDGET_EXCEEDED`, as on any request; a run never started (nor submitted)
    /// whose time budget, counted from its `CreateEnv`, has passed ends `ENDED_EARLY` (see
    /// `Env::end_if_overdue`). Each record is closed, signed and whole. Cheap when nothing is
    /// due: one lock of each official env.
    pub fn sweep(&self, now: Instant) -> Swept {
        let officials = lock(&self.envs).officials();
        let mut swept = Swept::default();
        for env in officials {
            match Self::on_env(&env, |env| {
                env.end_if_overdue(self.seeds.as_ref(), &self.secret, now)
            }) {
                Ok(true) => swept.runs_ended += 1,
                Ok(false) => {}
                Err(e) => {
                    tracing::error!(error = %e, "could not end a run past its time budget");
                }
            }
        }
        swept.folders_removed = self.leftovers.retry();
        if swept.runs_ended > 0 {
            tracing::info!(
                runs = swept.runs_ended,
                "runs past their time budget ended by the sweep"
            );
        }
        swept
    }

    /// The own agent channel of `run` has closed (its listener and connections are gone):
    /// the run's scope is forgotten, and any practice env made over it dropped.
    pub(crate) fn run_channel_closed(&self, run: RunScope) {
        lock(&self.envs).forget_run_channel(run);
    }

    /// The connection `id` has closed: the practice envs made over it are reclaimed first,
    /// however recently used, when a new env needs room (their handles still work until then,
    /// from any connection that has them).
    pub(crate) fn connection_closed(&self, id: ConnectionId) {
        lock(&self.envs).connection_closed(id);
    }

    /// How many envs the evaluator holds, per pool.
    pub fn env_counts(&self) -> EnvCounts {
        lock(&self.envs).counts()
    }

    pub fn spec(&self, channel: Channel, handle: &EnvHandle) -> Result<Spec, Error> {
        match self.held(channel, handle)? {
            Held::Env(env) => {
                let env = lock(&env);
                Ok(Spec {
                    observation_space: env.sim().observation_space().clone(),
                    action_space: env.sim().action_space().clone(),
                    task: env.task().clone(),
                    official: env.is_official(),
                    num_envs: 1,
                    autoreset: Autoreset::NextStep,
                })
            }
            // Never locked: a Step in progress does not hold up a GetSpec.
            Held::Vector(vector) => Ok(Spec {
                observation_space: vector.spec.observation_space.clone(),
                action_space: vector.spec.action_space.clone(),
                task: vector.spec.task.clone(),
                official: false,
                num_envs: vector.spec.num_envs,
                autoreset: vector.spec.mode,
            }),
        }
    }

    /// Begins an episode and returns its first observation: of a single env (`seed`, or a
    /// fresh one), or of the sub-envs of a vector env (`seeds` one each, or `seed + i`, or
    /// each its own generator; `mask` marks which, empty for all). `seeds` and `mask` must be
    /// empty for a single env.
    pub fn reset_any(
        &self,
        channel: Channel,
        handle: &EnvHandle,
        seed: Option<u64>,
        seeds: &[u64],
        mask: &[bool],
    ) -> Result<ResetAnswer, Error> {
        match self.held(channel, handle)? {
            Held::Vector(vector) => Self::with_vector(handle, &vector, |v| {
                v.reset(seed, seeds, mask, Instant::now())
                    .map(ResetAnswer::Vector)
            }),
            Held::Env(_) if !seeds.is_empty() || !mask.is_empty() => {
                Err(Error::InvalidRequest(format!(
                    "{handle} is a single env: ResetRequest.seeds and reset_mask are for vector \
                     envs (CreateEnv with num_envs above 1); give one `seed`"
                )))
            }
            Held::Env(_) => self.with_env(channel, handle, |env| {
                let info = env.reset(seed, Instant::now())?;
                Ok(ResetAnswer::Single(env.sim().observation().clone(), info))
            }),
        }
    }

    /// Begins an episode of the single env `handle` and returns its first observation.
    pub fn reset(
        &self,
        channel: Channel,
        handle: &EnvHandle,
        seed: Option<u64>,
    ) -> Result<(Tensor, StepInfo), Error> {
        self.env(channel, handle, || Self::batched(handle))?;
        match self.reset_any(channel, handle, seed, &[], &[])? {
            ResetAnswer::Single(observation, info) => Ok((observation, info)),
            ResetAnswer::Vector(_) => Err(Self::batched(handle)),
        }
    }

    /// The refusal of a single env's call on a vector env (before it changes anything).
    fn batched(handle: &EnvHandle) -> Error {
        Error::InvalidRequest(format!("{handle} is a vector env: its answers are batched"))
    }

    /// One step of the single env `handle`.
    pub fn step(
        &self,
        channel: Channel,
        handle: &EnvHandle,
        action: &Tensor,
    ) -> Result<(Tensor, Transition, StepInfo), Error> {
        self.env(channel, handle, || Self::batched(handle))?;
        match self.step_any(channel, handle, action)? {
            StepAnswer::Single(observation, transition, info) => {
                Ok((observation, transition, info))
            }
            StepAnswer::Vector(_) => Err(Self::batched(handle)),
        }
    }

    /// One step: of a single env, or of every sub-env of a vector env (`action` batched).
    pub fn step_any(
        &self,
        channel: Channel,
        handle: &EnvHandle,
        action: &Tensor,
    ) -> Result<StepAnswer, Error> {
        match self.held(channel, handle)? {
            Held::Vector(vector) => Self::with_vector(handle, &vector, |v| {
                v.step(action, Instant::now()).map(StepAnswer::Vector)
            }),
            Held::Env(_) => self.with_env(channel, handle, |env| {
                let (transition, info) = env.step(action, Instant::now())?;
                Ok(StepAnswer::Single(
                    env.sim().observation().clone(),
                    transition,
                    info,
                ))
            }),
        }
    }

    pub fn start_eval_session(
        &self,
        channel: Channel,
        handle: &EnvHandle,
    ) -> Result<(SessionId, u32), Error> {
        self.with_env(channel, handle, |env| {
            env.start_eval_session(self.seeds.as_ref(), &self.secret, Instant::now())
        })
    }

    /// The authoritative result. Harness channel only.
    pub fn eval_result(
        &self,
        channel: Channel,
        session_id: &SessionId,
        end_session: bool,
    ) -> Result<EvalResultRecord, Error> {
        if channel != Channel::Harness {
            return Err(Error::ResultNeedsHarness);
        }
        let env = lock(&self.sessions)
            .get(session_id)
            .cloned()
            .ok_or_else(|| Error::UnknownSession(session_id.clone()))?;
        let record = Self::on_env(&env, |env| {
            env.eval_result(
                self.seeds.as_ref(),
                &self.secret,
                end_session,
                Instant::now(),
            )
        });
        // A batch run ended while it waited in line is finished now: its folder and channel
        // go, with no env's lock held.
        let batch_run = lock(&env).batch_run();
        if let Some(run) = batch_run {
            self.batches.withdraw(&run);
            run.release_if_finished();
        }
        record
    }

    /// Submits the official env `handle` of a batch task for evaluation: snapshots its
    /// submission, records it, and queues the run (it plays once it has a place among the
    /// `--max-batch-runs` that play at once). Protocol misuse is an error that changes nothing
    /// (unknown handle, practice env, interactive task, second submission); anything wrong
    /// with the submission itself is not: the run is made and ends FAILED with a message that
    /// names the problem.
    pub fn submit_batch_eval(
        &self,
        channel: Channel,
        handle: &EnvHandle,
    ) -> Result<BatchId, Error> {
        let env = self.env(channel, handle, || {
            Error::PracticeEnvInBatch(handle.clone())
        })?;
        let mut env = lock(&env);
        env.check_submittable()?;
        let run_id = env
            .run_id()
            .cloned()
            .ok_or_else(|| Error::PracticeEnvInBatch(handle.clone()))?;
        let scope = env
            .run_scope()
            .ok_or_else(|| Error::PracticeEnvInBatch(handle.clone()))?;
        let task = env.task().clone();
        let contract = task.spec.submission_contract.as_ref().ok_or_else(|| {
            Error::Internal(format!(
                "batch task {} has no submission contract",
                task.spec.id
            ))
        })?;
        // The run's own folder, and no other: no run can submit what another wrote.
        let snapshot = submission::snapshot(
            &self.run_submission_dir(&run_id),
            &contract.entrypoint,
            self.max_submission_bytes,
        );
        let received = snapshot.as_ref().ok().map(|s| SubmissionReceived {
            entrypoint: contract.entrypoint.clone(),
            format: contract.format.clone(),
            bytes: s.bytes.len() as u64,
            sha256: s.sha256.clone(),
        });
        let batch_id = BatchId::from_random(random_id_bytes());
        let run = env.submit_batch(
            batch_id.clone(),
            received.as_ref(),
            self.seeds.as_ref(),
            &self.secret,
            Instant::now(),
        )?;
        drop(env);
        self.batches.insert(&run, scope);
        match snapshot {
            Ok(snapshot) => self
                .batches
                .submit(run, contract.format.clone(), snapshot.bytes),
            Err(problem) => {
                tracing::info!(batch = %batch_id, %problem, "batch submission refused");
                run.fail_before_start(Stop::EndedEarly(problem.to_string()));
            }
        }
        Ok(batch_id)
    }

    /// Batch runs waiting in line for a place.
    #[cfg(test)]
    pub(crate) fn batch_runs_waiting(&self) -> usize {
        self.batches.waiting()
    }

    /// A batch run's state and progress; the result too, once finished, on the harness
    /// channel only.
    pub fn batch_status(&self, channel: Channel, batch_id: &BatchId) -> Result<BatchStatus, Error> {
        let run = self.batches.get(batch_id, channel)?;
        Ok(run.status(channel == Channel::Harness))
    }

    /// Marks the runs an earlier evaluator on this state dir left unfinished (see
    /// [`crate::interrupted`]) and returns them. Call it once this evaluator is known to be the
    /// state dir's only one (its sockets are bound); its own runs are never marked.
    pub fn mark_interrupted_runs(&self) -> Vec<MarkedRun> {
        // Held throughout, so that no official env (no run folder) is made while runs are read.
        let _envs = lock(&self.envs);
        let live: HashSet<String> = lock(&self.sessions)
            .values()
            .filter_map(|env| lock(env).run_id().map(|r| r.as_str().to_string()))
            .collect();
        mark_interrupted_runs(&ale_records::layout::runs_dir(&self.state_dir), &live)
    }

    /// The batch runs in play, each still attached to its session.
    fn batch_runs(&self) -> Vec<Arc<BatchRun>> {
        let envs: Vec<Shared<Env>> = lock(&self.sessions).values().cloned().collect();
        envs.iter()
            .filter_map(|env| lock(env).batch_run())
            .collect()
    }

    /// The first step of shutdown: cancels every batch run, so that each closes its record
    /// while the connections drain. Agents' sessions are left to the requests in flight.
    pub fn begin_shutdown(&self) {
        for run in self.batch_runs() {
            run.cancel(Stop::Failed(SHUT_DOWN.into()));
            self.batches.withdraw(&run);
            run.release_if_finished();
        }
    }

    /// Ends every running session (the evaluator is going away) and flushes their
    /// trajectories to disk; waits until `deadline` at most for batch runs to close theirs.
    /// A run still open past it is left as it stands, signed as far as it goes, and the next
    /// evaluator on the state dir marks it interrupted.
    pub fn shutdown(&self, deadline: Instant) {
        self.begin_shutdown();
        let batch_runs = self.batch_runs();
        let envs: Vec<Shared<Env>> = lock(&self.sessions).values().cloned().collect();
        for env in envs {
            let mut env = lock(&env);
            if let Err(e) = env.end_session(
                SHUT_DOWN,
                EvalStatus::EvaluatorEnded,
                self.seeds.as_ref(),
                &self.secret,
                Instant::now(),
            ) {
                tracing::error!(error = %e, "could not close an eval session at shutdown");
            }
        }
        for run in batch_runs {
            let left = deadline.saturating_duration_since(Instant::now());
            if !run.wait_finished(left) {
                tracing::error!(
                    batch = %run.id(),
                    "a batch run did not close its record by the shutdown deadline"
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_process_callers_share_one_connection_allowance() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_practice_envs_per_connection: 2,
            ..Limits::default()
        };
        let state = dir.path().join("state");
        let evaluator = Evaluator::with_limits(
            TaskRegistry::builtin(&ale_sims::catalog()).unwrap(),
            &state,
            limits,
        )
        .unwrap();
        let create = |connection| {
            evaluator.create_env(Channel::Agent, connection, "cartpole-balance", false)
        };
        create(None).unwrap();
        create(None).unwrap();
        let err = create(None).unwrap_err();
        assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err}");
        create(Some(ConnectionId(7))).unwrap();
        assert_eq!(
            evaluator.env_counts(),
            EnvCounts {
                practice: 3,
                run_practice: 0,
                official: 0
            }
        );
    }

    /// Opens no socket: on its first `open` it creates another official env itself, as a
    /// concurrent request would while the first one's resources are being made.
    struct RacingChannels {
        evaluator: Arc<OnceLock<std::sync::Weak<Evaluator>>>,
        raced: std::sync::atomic::AtomicBool,
        closed: Arc<Mutex<Vec<bool>>>,
    }

    struct StubChannel(Arc<Mutex<Vec<bool>>>);

    impl crate::run_resources::RunChannel for StubChannel {
        fn close(&mut self, run_ended: bool) {
            lock(&self.0).push(run_ended);
        }
    }

    impl RunChannels for RacingChannels {
        fn open(
            &self,
            _run: RunScope,
            _socket: &Path,
        ) -> Result<Box<dyn crate::run_resources::RunChannel>, Error> {
            if !self.raced.swap(true, Ordering::SeqCst)
                && let Some(evaluator) = self.evaluator.get().and_then(std::sync::Weak::upgrade)
            {
                evaluator
                    .create_env(Channel::Harness, None, "cartpole-balance", true)
                    .expect("the racing request fits");
            }
            Ok(Box::new(StubChannel(self.closed.clone())))
        }
    }

    /// Regression: the run's folder, socket and trajectory were made under the env table's
    /// lock, which every request takes. Made outside it, a request that loses the room to
    /// another meanwhile is refused and leaves nothing.
    #[test]
    fn a_create_that_loses_its_room_while_making_its_run_is_refused_and_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            max_official_envs: 1,
            ..Limits::default()
        };
        let state = dir.path().join("state");
        let evaluator = Arc::new(
            Evaluator::with_limits(
                TaskRegistry::builtin(&ale_sims::catalog()).unwrap(),
                &state,
                limits,
            )
            .unwrap(),
        );
        let closed = Arc::new(Mutex::new(Vec::new()));
        let slot = Arc::new(OnceLock::new());
        slot.set(Arc::downgrade(&evaluator)).unwrap();
        assert!(evaluator.set_run_channels(Box::new(RacingChannels {
            evaluator: slot,
            raced: Default::default(),
            closed: closed.clone(),
        })));

        let err = evaluator
            .create_env(Channel::Harness, None, "cartpole-balance", true)
            .unwrap_err();
        assert_eq!(err.code(), tonic::Code::ResourceExhausted, "{err}");
        assert_eq!(evaluator.env_counts().official, 1, "the racing one");
        let runs = std::fs::read_dir(state.join("runs")).unwrap().count();
        assert_eq!(runs, 1, "the refused run left no run folder");
        assert_eq!(*lock(&closed), vec![false], "its channel closed at once");
    }
}
