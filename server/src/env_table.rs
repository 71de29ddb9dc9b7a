//! The env table: every env the evaluator holds, in two pools with their own caps. Practice
//! envs are capped per connection and in total; official envs (harness channel only) have a
//! separate cap, so no amount of practice load can refuse the harness its official env.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ale_proto::{EnvHandle, SessionId};

use crate::env::Env;
use crate::error::{EnvCap, Error};

pub(crate) type Shared<T> = Arc<Mutex<T>>;

/// A poisoned lock means a panic mid-update elsewhere; the data is still the best we have.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Identifies one accepted connection, on either listener, for the life of the evaluator.
/// Assigned at accept time; a client cannot choose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub(crate) u64);

/// Caps that protect the evaluator from a runaway client. Each pool reclaims only its own idle
/// envs, and only when that makes room.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Practice envs held at once, over all connections (`ale serve --max-practice-envs`).
    pub max_practice_envs: usize,
    /// Practice envs created over one connection and held at once
    /// (`ale serve --max-practice-envs-per-connection`).
    pub max_practice_envs_per_connection: usize,
    /// Official envs held at once (`ale serve --max-official-envs`).
    pub max_official_envs: usize,
    /// A practice env unused this long may be dropped to make room for a new practice env.
    pub practice_idle: Duration,
    /// An official env whose session finished this long ago may be dropped to make room for a
    /// new official env (its record is on disk; its result can no longer be read over the wire).
    pub finished_official_idle: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_practice_envs: 1024,
            max_practice_envs_per_connection: 64,
            max_official_envs: 256,
            practice_idle: Duration::from_secs(300),
            finished_official_idle: Duration::from_secs(600),
        }
    }
}

/// Which pool an env is counted in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pool {
    /// Created over `connection`; `None` for a request that did not come through a listener
    /// (an in-process caller), all of which count as one connection.
    Practice {
        connection: Option<ConnectionId>,
    },
    Official,
}

/// How many envs each pool holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnvCounts {
    pub practice: usize,
    pub official: usize,
}

struct Slot {
    env: Shared<Env>,
    pool: Pool,
}

/// The idle envs that must go so one more env fits; see [`EnvTable::room_for`].
#[must_use = "room is only made when the new env is inserted with it"]
pub struct Room(Vec<EnvHandle>);

#[derive(Default)]
pub struct EnvTable {
    envs: HashMap<EnvHandle, Slot>,
    counts: EnvCounts,
    practice_by_connection: HashMap<Option<ConnectionId>, usize>,
}

impl EnvTable {
    pub fn get(&self, handle: &EnvHandle) -> Option<Shared<Env>> {
        self.envs.get(handle).map(|slot| slot.env.clone())
    }

    pub fn counts(&self) -> EnvCounts {
        self.counts
    }

    /// Whether one more env fits in `pool`, counting its envs that are idle enough to be
    /// reclaimed as gone. Changes nothing: the reclaiming happens in [`EnvTable::insert`].
    pub fn room_for(&self, pool: Pool, limits: &Limits, now: Instant) -> Result<Room, Error> {
        match pool {
            Pool::Official => {
                let held = self.counts.official;
                if held < limits.max_official_envs {
                    return Ok(Room(Vec::new()));
                }
                let idle = self.reclaimable(|slot| {
                    if slot.pool != Pool::Official {
                        return false;
                    }
                    let env = lock(&slot.env);
                    env.is_official_at_rest()
                        && now.saturating_duration_since(env.last_used())
                            >= limits.finished_official_idle
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
            Pool::Practice { connection } => {
                let held = self.counts.practice;
                let mine = self.practice_of(connection);
                if held < limits.max_practice_envs && mine < limits.max_practice_envs_per_connection
                {
                    return Ok(Room(Vec::new()));
                }
                // Below the total cap only the caller's own idle envs make room: one client
                // at its own cap cannot evict another's.
                let total_is_full = held >= limits.max_practice_envs;
                let mut idle_mine = 0;
                let idle = self.reclaimable(|slot| {
                    let Pool::Practice { connection: owner } = slot.pool else {
                        return false;
                    };
                    let last_used = lock(&slot.env).last_used();
                    let idle = now.saturating_duration_since(last_used) >= limits.practice_idle;
                    let mine = owner == connection;
                    if idle && mine {
                        idle_mine += 1;
                    }
                    idle && (mine || total_is_full)
                });
                if mine.saturating_sub(idle_mine) >= limits.max_practice_envs_per_connection {
                    Err(Error::TooManyEnvs(EnvCap::PracticePerConnection {
                        cap: limits.max_practice_envs_per_connection,
                        idle: limits.practice_idle,
                    }))
                } else if held.saturating_sub(idle.len()) >= limits.max_practice_envs {
                    Err(Error::TooManyEnvs(EnvCap::PracticeTotal {
                        cap: limits.max_practice_envs,
                        idle: limits.practice_idle,
                    }))
                } else {
                    Ok(Room(idle))
                }
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

    /// Drops the envs `room` names and adds `env` to `pool`. Returns the session ids of the
    /// official envs dropped, which the caller forgets too.
    pub fn insert(
        &mut self,
        room: Room,
        handle: EnvHandle,
        env: Shared<Env>,
        pool: Pool,
    ) -> Vec<SessionId> {
        if !room.0.is_empty() {
            tracing::info!(
                reclaimed = room.0.len(),
                ?pool,
                "idle envs reclaimed to make room"
            );
        }
        let mut dropped_sessions = Vec::new();
        for handle in room.0 {
            if let Some(slot) = self.remove(&handle)
                && let Some(id) = lock(&slot.env).session_id()
            {
                dropped_sessions.push(id.clone());
            }
        }
        match pool {
            Pool::Official => self.counts.official += 1,
            Pool::Practice { connection } => {
                self.counts.practice += 1;
                *self.practice_by_connection.entry(connection).or_insert(0) += 1;
            }
        }
        // Handles are 128-bit random tokens, so a repeat means a broken random source; the
        // counts must still match the table.
        if let Some(old) = self.envs.insert(handle, Slot { env, pool }) {
            tracing::error!("an env handle was issued twice; the older env is dropped");
            self.uncount(old.pool);
        }
        dropped_sessions
    }

    fn remove(&mut self, handle: &EnvHandle) -> Option<Slot> {
        let slot = self.envs.remove(handle)?;
        self.uncount(slot.pool);
        Some(slot)
    }

    fn uncount(&mut self, pool: Pool) {
        match pool {
            Pool::Official => self.counts.official = self.counts.official.saturating_sub(1),
            Pool::Practice { connection } => {
                self.counts.practice = self.counts.practice.saturating_sub(1);
                if let Some(n) = self.practice_by_connection.get_mut(&connection) {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        self.practice_by_connection.remove(&connection);
                    }
                }
            }
        }
    }
}
