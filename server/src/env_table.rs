//! The env table: every env the evaluator holds, in pools with their own caps. Practice envs
//! are capped per connection and in total, the shared agent channel's apart from each run's
//! own channel's; official envs (harness channel only) have a separate cap, so no amount of
//! practice load can refuse the harness its official env, and no run's agent can take another
//! run's share.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ale_proto::{EnvHandle, RunId, SessionId};

use crate::channel::{Channel, RunScope};
use crate::env::Env;
use crate::error::{EnvCap, Error};
use crate::sync::lock;
use crate::vector::SharedVector;

pub(crate) type Shared<T> = Arc<Mutex<T>>;

/// Identifies one accepted connection, on either listener, for the life of the evaluator.
/// Assigned at accept time; a client cannot choose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(pub(crate) u64);

/// Caps that protect the evaluator from a runaway client. Each pool reclaims only its own idle
/// envs, and only when that makes room.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Practice envs held at once, over all connections (`ale serve --max-practice-envs`). A
    /// vector env counts as its sub-envs, here and in the other practice caps.
    pub max_practice_envs: usize,
    /// Practice envs created over one connection and held at once
    /// (`ale serve --max-practice-envs-per-connection`).
    pub max_practice_envs_per_connection: usize,
    /// Official envs held at once (`ale serve --max-official-envs`).
    pub max_official_envs: usize,
    /// Practice envs created over one run's own agent channel and held at once, all its
    /// connections together (`ale serve --max-run-practice-envs`); they count apart from the
    /// shared channel's [`Limits::max_practice_envs`].
    pub max_run_practice_envs: usize,
    /// A practice env unused this long may be dropped to make room for a new practice env.
    pub practice_idle: Duration,
    /// A vector env whose last Step's stepping took less than this steps where its call
    /// arrives, on the server's runtime; one that took longer, on a blocking thread with its
    /// blocks in parallel on the vector threads (`ale serve --vector-inline-us`).
    pub vector_inline_work: Duration,
    /// An official env whose session finished this long ago may be dropped to make room for a
    /// new official env (its record is on disk; its result can no longer be read over the wire).
    pub finished_official_idle: Duration,
    /// An official env whose final result the harness read this long ago may be dropped to
    /// make room at once, however recently it was used: its run is over for everyone.
    pub read_official_idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // Caps count sub-envs: a vector env of 4,096 (what one agent trains on) fits
            // one connection's share.
            max_practice_envs: 8192,
            max_practice_envs_per_connection: 4096,
            max_official_envs: 256,
            max_run_practice_envs: 256,
            practice_idle: Duration::from_secs(300),
            vector_inline_work: crate::vector::INLINE_WORK,
            finished_official_idle: Duration::from_secs(600),
            read_official_idle: Duration::from_secs(30),
        }
    }
}

/// Which pool an env is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// Created over `connection`; `None` for a request that did not come through a listener
    /// (an in-process caller), all of which count as one connection. `run`: created over that
    /// run's own agent channel, counted against the run's share instead of the shared one.
    Practice {
        connection: Option<ConnectionId>,
        run: Option<RunScope>,
    },
    /// The official env of the run `run`.
    Official { run: RunScope },
}

/// How many envs each pool holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnvCounts {
    /// Practice envs of the shared agent channel (and in-process callers).
    pub practice: usize,
    /// Practice envs created over runs' own channels, all runs together.
    pub run_practice: usize,
    pub official: usize,
}

/// What a handle names: an env, or a practice vector env of many sub-envs.
#[derive(Clone)]
pub enum Held {
    Env(Shared<Env>),
    Vector(Arc<SharedVector>),
}

impl Held {
    /// When it was last used, unless a call holds it now (a busy env is in use, and never
    /// waited on under the table's lock).
    fn last_used_if_free(&self) -> Option<Instant> {
        match self {
            Held::Env(env) => env.try_lock().ok().map(|env| env.last_used()),
            Held::Vector(vector) => vector.env.try_lock().ok().map(|v| v.last_used()),
        }
    }

    fn as_env(&self) -> Option<&Shared<Env>> {
        match self {
            Held::Env(env) => Some(env),
            Held::Vector(_) => None,
        }
    }
}

struct Slot {
    held: Held,
    pool: Pool,
    /// How many envs it counts as against its pool's caps: a vector env's sub-envs.
    weight: usize,
    /// When the practice env's creating connection closed: from then it is reclaimable
    /// however recently it was used before, until it is used again (over another connection).
    orphaned: Option<Instant>,
}

impl Slot {
    /// Whether a request on `channel` may reach this env: the harness reaches every env; a
    /// run's channel only its run's official env and the practice envs made over it; the
    /// shared agent channel every env but those of runs' channels.
    fn is_reachable_from(&self, channel: Channel) -> bool {
        match (channel, self.pool) {
            (Channel::Harness, _) => true,
            (Channel::Agent, Pool::Practice { run, .. }) => run.is_none(),
            (Channel::Agent, Pool::Official { .. }) => true,
            (Channel::Run(scope), Pool::Practice { run, .. }) => run == Some(scope),
            (Channel::Run(scope), Pool::Official { run }) => run == scope,
        }
    }
}

/// The idle envs that must go so one more env fits; see [`EnvTable::room_for`].
#[must_use = "room is only made when the new env is inserted with it"]
pub struct Room(Vec<EnvHandle>);

/// What [`EnvTable::insert`] dropped to make room: the caller forgets the sessions, and drops
/// the envs (their runs' folders and sockets go with them) once it holds no lock.
#[must_use = "the reclaimed envs are dropped, and their sessions forgotten, by the caller"]
pub struct Reclaimed {
    pub sessions: Vec<SessionId>,
    pub envs: Vec<Held>,
}

/// A run whose own agent channel is open: `ended` once the run has ended or its official env
/// is gone, while its listener lingers; practice envs are created over it only before.
struct RunChannelState {
    run_id: RunId,
    ended: bool,
}

#[derive(Default)]
pub struct EnvTable {
    envs: HashMap<EnvHandle, Slot>,
    counts: EnvCounts,
    practice_by_connection: HashMap<Option<ConnectionId>, usize>,
    practice_by_run: HashMap<RunScope, usize>,
    /// The runs whose own agent channel's listener is open, until it closes.
    run_channels: HashMap<RunScope, RunChannelState>,
}

/// Takes from `envs` the env that frees `needed` sub-envs with the least waste: the lightest
/// that weighs at least `needed`, else the heaviest (ties by handle, so the choice does not
/// depend on hash order).
fn take_best_fit(envs: &mut Vec<(EnvHandle, usize)>, needed: usize) -> Option<(EnvHandle, usize)> {
    let by_weight = |a: &&(EnvHandle, usize), b: &&(EnvHandle, usize)| {
        a.1.cmp(&b.1).then_with(|| a.0.cmp(&b.0))
    };
    let fits = envs.iter().filter(|(_, w)| *w >= needed).min_by(by_weight);
    let pick = fits.or_else(|| envs.iter().max_by(by_weight))?.0.clone();
    let at = envs.iter().position(|(h, _)| *h == pick)?;
    Some(envs.swap_remove(at))
}

/// Picks idle envs to reclaim, the biggest holder's first: while more are `needed`, one idle
/// env of whichever holder has the most left goes. `held` is each holder's count,
/// `idle` each holder's idle envs. Returns fewer than `needed` if there are not enough.
/// Weights (a vector env's sub-envs) count: picking stops once the envs picked weigh `needed`.
fn biggest_holders_first<H: Eq + std::hash::Hash + Copy + Ord>(
    mut held: HashMap<H, usize>,
    mut idle: HashMap<H, Vec<(EnvHandle, usize)>>,
    needed: usize,
) -> (Vec<EnvHandle>, usize) {
    let mut picked = Vec::new();
    let mut freed = 0;
    while freed < needed {
        // Ties go to the lowest holder id, so the choice does not depend on hash order.
        let Some(holder) = idle
            .iter()
            .filter(|(_, envs)| !envs.is_empty())
            .map(|(holder, _)| *holder)
            .max_by(|a, b| {
                let count = |h: &H| held.get(h).copied().unwrap_or(0);
                count(a).cmp(&count(b)).then(b.cmp(a))
            })
        else {
            break;
        };
        let Some((handle, weight)) = idle
            .get_mut(&holder)
            .and_then(|envs| take_best_fit(envs, needed - freed))
        else {
            break;
        };
        picked.push(handle);
        freed += weight;
        if let Some(n) = held.get_mut(&holder) {
            *n = n.saturating_sub(weight);
        }
    }
    (picked, freed)
}

impl EnvTable {
    /// The env `handle` names, if `channel` may reach it; otherwise `None`, exactly as for a
    /// handle that names nothing.
    pub fn get(&self, handle: &EnvHandle, channel: Channel) -> Option<Held> {
        self.envs
            .get(handle)
            .filter(|slot| slot.is_reachable_from(channel))
            .map(|slot| slot.held.clone())
    }

    /// The official envs, each with its run.
    pub fn officials(&self) -> Vec<Shared<Env>> {
        self.envs
            .values()
            .filter(|slot| matches!(slot.pool, Pool::Official { .. }))
            .filter_map(|slot| slot.held.as_env().cloned())
            .collect()
    }

    /// Refuses an env in `pool` that may no longer be made: a practice env over the channel
    /// of a run that has ended (its listener lingers) or whose channel has closed.
    pub fn check_open(&self, pool: Pool) -> Result<(), Error> {
        let Pool::Practice { run: Some(run), .. } = pool else {
            return Ok(());
        };
        match self.run_channels.get(&run) {
            Some(state) if !state.ended => Ok(()),
            Some(state) => Err(Error::RunEnded {
                run_id: state.run_id.clone(),
            }),
            None => Err(Error::RunSocketClosed),
        }
    }

    /// `run`'s own agent channel is open: practice envs may be made over it until the run ends.
    pub fn open_run_channel(&mut self, run: RunScope, run_id: RunId) {
        self.run_channels.insert(
            run,
            RunChannelState {
                run_id,
                ended: false,
            },
        );
    }

    /// `run` has ended (or its official env is gone): no practice env is made over its channel
    /// from now on, and those made are dropped.
    pub fn end_run(&mut self, run: RunScope) {
        if let Some(state) = self.run_channels.get_mut(&run) {
            state.ended = true;
        }
        self.remove_run_practice(run);
    }

    /// `run`'s channel's listener has closed and its connections are gone: it is forgotten, and
    /// any practice env made over it meanwhile is dropped.
    pub fn forget_run_channel(&mut self, run: RunScope) {
        self.run_channels.remove(&run);
        self.remove_run_practice(run);
    }

    /// Marks the practice envs made over `connection` reclaimable at once (see
    /// [`crate::Evaluator`]'s `connection_closed`).
    pub fn connection_closed(&mut self, connection: ConnectionId) {
        if !self.practice_by_connection.contains_key(&Some(connection)) {
            return;
        }
        let now = Instant::now();
        for slot in self.envs.values_mut() {
            if let Pool::Practice {
                connection: Some(c),
                ..
            } = slot.pool
                && c == connection
            {
                slot.orphaned = Some(now);
            }
        }
    }

    pub fn counts(&self) -> EnvCounts {
        self.counts
    }

    /// Whether one more env of `weight` sub-envs (1, or a vector env's count) fits in `pool`,
    /// counting its envs that are idle enough to be reclaimed as gone. Changes nothing: the
    /// reclaiming happens in [`EnvTable::insert`].
    ///
    /// Practice envs are reclaimed only as many as needed, the biggest holder's first: within
    /// the caller's own cap its own idle envs; past a total cap (the shared channel's, or the
    /// caller's run's), idle envs of whichever connection holds the most in that pool. Caps
    /// count sub-envs: a vector env of 256 takes 256.
    pub fn room_for(
        &self,
        pool: Pool,
        weight: usize,
        limits: &Limits,
        now: Instant,
    ) -> Result<Room, Error> {
        match pool {
            Pool::Official { .. } => {
                let held = self.counts.official;
                if held < limits.max_official_envs {
                    return Ok(Room(Vec::new()));
                }
                let idle = self.reclaimable(|slot| {
                    if !matches!(slot.pool, Pool::Official { .. }) {
                        return false;
                    }
                    // An env busy in a call (a hosted sim may wait on its host for seconds)
                    // is in use, not idle: the table's lock never waits on an env's.
                    let Held::Env(env) = &slot.held else {
                        return false;
                    };
                    env.try_lock().is_ok_and(|env| {
                        env.is_official_reclaimable(
                            now,
                            limits.finished_official_idle,
                            limits.read_official_idle,
                        )
                    })
                });
                if held.saturating_sub(idle.len()) < limits.max_official_envs {
                    Ok(Room(idle))
                } else {
                    Err(Error::TooManyEnvs(EnvCap::Official {
                        cap: limits.max_official_envs,
                        idle: limits.finished_official_idle,
                    }))
                }
            }
            Pool::Practice { connection, run } => {
                let (held, total_cap) = match run {
                    None => (self.counts.practice, limits.max_practice_envs),
                    Some(run) => (
                        self.practice_by_run.get(&run).copied().unwrap_or(0),
                        limits.max_run_practice_envs,
                    ),
                };
                let mine = self.practice_of(connection);
                let per_connection = limits.max_practice_envs_per_connection;
                if weight > per_connection || weight > total_cap {
                    let (cap, what, flag) = match (weight > per_connection, run) {
                        (true, _) => (
                            per_connection,
                            "a connection's share",
                            "--max-practice-envs-per-connection",
                        ),
                        (false, None) => (total_cap, "the total", "--max-practice-envs"),
                        (false, Some(_)) => (total_cap, "a run's share", "--max-run-practice-envs"),
                    };
                    return Err(Error::VectorOverCap {
                        envs: weight,
                        cap,
                        what,
                        flag,
                    });
                }
                if held + weight <= total_cap && mine + weight <= per_connection {
                    return Ok(Room(Vec::new()));
                }
                // The idle envs of this pool (the shared one, or this run's), by connection,
                // each with its weight.
                let mut idle: HashMap<Option<ConnectionId>, Vec<(EnvHandle, usize)>> =
                    HashMap::new();
                for (handle, slot) in &self.envs {
                    let Pool::Practice {
                        connection: owner,
                        run: owner_run,
                    } = slot.pool
                    else {
                        continue;
                    };
                    if owner_run != run {
                        continue;
                    }
                    // Busy in a call: in use, and never waited on under the table's lock.
                    let Some(last_used) = slot.held.last_used_if_free() else {
                        continue;
                    };
                    if slot.orphaned.is_some_and(|closed| last_used <= closed)
                        || now.saturating_duration_since(last_used) >= limits.practice_idle
                    {
                        idle.entry(owner)
                            .or_default()
                            .push((handle.clone(), slot.weight));
                    }
                }
                // Below the total cap only the caller's own idle envs make room: one client
                // at its own cap cannot evict another's. The lightest go first.
                let need_mine = (mine + weight).saturating_sub(per_connection);
                let mut own_idle = idle.remove(&connection).unwrap_or_default();
                let own_weight: usize = own_idle.iter().map(|(_, w)| w).sum();
                if own_weight < need_mine {
                    return Err(Error::TooManyEnvs(match run {
                        None => EnvCap::PracticePerConnection {
                            cap: per_connection,
                            idle: limits.practice_idle,
                        },
                        Some(_) => EnvCap::RunPracticePerConnection {
                            cap: per_connection,
                            idle: limits.practice_idle,
                        },
                    }));
                }
                let mut room = Vec::new();
                let mut freed = 0;
                while freed < need_mine {
                    let Some((handle, w)) = take_best_fit(&mut own_idle, need_mine - freed) else {
                        break;
                    };
                    room.push(handle);
                    freed += w;
                }
                let need_total = (held + weight)
                    .saturating_sub(total_cap)
                    .saturating_sub(freed);
                if need_total > 0 {
                    idle.insert(connection, own_idle);
                    let held_by: HashMap<Option<ConnectionId>, usize> = idle
                        .keys()
                        .map(|owner| {
                            let taken = if *owner == connection { freed } else { 0 };
                            (*owner, self.practice_of(*owner).saturating_sub(taken))
                        })
                        .collect();
                    let (more, more_freed) = biggest_holders_first(held_by, idle, need_total);
                    if more_freed < need_total {
                        return Err(Error::TooManyEnvs(match run {
                            None => EnvCap::PracticeTotal {
                                cap: total_cap,
                                idle: limits.practice_idle,
                            },
                            Some(_) => EnvCap::RunPractice {
                                cap: total_cap,
                                idle: limits.practice_idle,
                            },
                        }));
                    }
                    room.extend(more);
                }
                Ok(Room(room))
            }
        }
    }

    /// The handles of the envs `is_reclaimable` picks.
    fn reclaimable(&self, mut is_reclaimable: impl FnMut(&Slot) -> bool) -> Vec<EnvHandle> {
        self.envs
            .iter()
            .filter(|(_, slot)| is_reclaimable(slot))
            .map(|(handle, _)| handle.clone())
            .collect()
    }

    fn practice_of(&self, connection: Option<ConnectionId>) -> usize {
        self.practice_by_connection
            .get(&connection)
            .copied()
            .unwrap_or(0)
    }

    /// Takes the envs `room` names out of the table and adds `env` to `pool`. Returns what was
    /// taken out, for the caller to forget and drop.
    pub fn insert(
        &mut self,
        room: Room,
        handle: EnvHandle,
        held: Held,
        pool: Pool,
        weight: usize,
    ) -> Reclaimed {
        if !room.0.is_empty() {
            tracing::info!(
                reclaimed = room.0.len(),
                ?pool,
                "idle envs reclaimed to make room"
            );
        }
        let mut reclaimed = Reclaimed {
            sessions: Vec::new(),
            envs: Vec::new(),
        };
        for handle in room.0 {
            if let Some(slot) = self.remove(&handle) {
                if let Some(id) = slot
                    .held
                    .as_env()
                    .and_then(|env| lock(env).session_id().cloned())
                {
                    reclaimed.sessions.push(id);
                }
                reclaimed.envs.push(slot.held);
            }
        }
        self.count(pool, weight);
        // Handles are 128-bit random tokens, so a repeat means a broken random source; the
        // counts must still match the table.
        let slot = Slot {
            held,
            pool,
            weight,
            orphaned: None,
        };
        if let Some(old) = self.envs.insert(handle, slot) {
            tracing::error!("an env handle was issued twice; the older env is dropped");
            self.uncount(old.pool, old.weight);
            reclaimed.envs.push(old.held);
        }
        reclaimed
    }

    /// Drops the practice envs made over the channel of `run`; returns how many went.
    fn remove_run_practice(&mut self, run: RunScope) -> usize {
        let handles: Vec<EnvHandle> = self
            .envs
            .iter()
            .filter(
                |(_, slot)| matches!(slot.pool, Pool::Practice { run: Some(r), .. } if r == run),
            )
            .map(|(handle, _)| handle.clone())
            .collect();
        for handle in &handles {
            self.remove(handle);
        }
        handles.len()
    }

    /// Removes one env; an official env ends its run's channel for practice envs and takes
    /// those made over it with it.
    fn remove(&mut self, handle: &EnvHandle) -> Option<Slot> {
        let slot = self.envs.remove(handle)?;
        self.uncount(slot.pool, slot.weight);
        if let Pool::Official { run } = slot.pool {
            self.end_run(run);
        }
        Some(slot)
    }

    fn count(&mut self, pool: Pool, weight: usize) {
        match pool {
            Pool::Official { .. } => self.counts.official += weight,
            Pool::Practice { connection, run } => {
                match run {
                    None => self.counts.practice += weight,
                    Some(run) => {
                        self.counts.run_practice += weight;
                        *self.practice_by_run.entry(run).or_insert(0) += weight;
                    }
                }
                *self.practice_by_connection.entry(connection).or_insert(0) += weight;
            }
        }
    }

    fn uncount(&mut self, pool: Pool, weight: usize) {
        fn decrement<K: Eq + std::hash::Hash>(map: &mut HashMap<K, usize>, key: K, by: usize) {
            if let Some(n) = map.get_mut(&key) {
                *n = n.saturating_sub(by);
                if *n == 0 {
                    map.remove(&key);
                }
            }
        }
        match pool {
            Pool::Official { .. } => {
                self.counts.official = self.counts.official.saturating_sub(weight)
            }
            Pool::Practice { connection, run } => {
                match run {
                    None => self.counts.practice = self.counts.practice.saturating_sub(weight),
                    Some(run) => {
                        self.counts.run_practice = self.counts.run_practice.saturating_sub(weight);
                        decrement(&mut self.practice_by_run, run, weight);
                    }
                }
                decrement(&mut self.practice_by_connection, connection, weight);
            }
        }
    }
}
