//! Hidden seeds: drawn from the OS CSPRNG, held only in memory, never printed; or, for a run on
//! a task's named evaluation seed set, derived from the evaluator secret ([`SeedSet`]).

use std::fmt;

use ale_records::SECRET_LEN;
use ale_records::commitment::seed_set_commitment;
use ale_records::event_data::SeedSetRecord;
use sha2::{Digest, Sha256};

use crate::error::Error;
use crate::task::Task;

/// A rollout's hidden seed. Its `Debug` shows nothing, so a log line cannot leak it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct HiddenSeed(u64);

impl HiddenSeed {
    pub fn new(value: u64) -> Self {
        HiddenSeed(value)
    }

    /// The raw value, for seeding the sim and computing the commitment only.
    pub fn reveal(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for HiddenSeed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("HiddenSeed(..)")
    }
}

/// Where hidden seeds come from. The evaluator uses [`OsSeeds`]; an embedding program may
/// supply another source (tests record what was drawn to search agent traffic for it).
pub trait SeedSource: Send + Sync {
    fn draw(&self) -> HiddenSeed;

    /// `n` seeds, in order: a session's whole plan.
    fn draw_many(&self, n: usize) -> Vec<HiddenSeed> {
        (0..n).map(|_| self.draw()).collect()
    }
}

/// Seeds from the operating system's CSPRNG.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsSeeds;

impl SeedSource for OsSeeds {
    fn draw(&self) -> HiddenSeed {
        HiddenSeed(random_u64())
    }

    /// One request to the OS for all of them (a batch task may plan thousands).
    fn draw_many(&self, n: usize) -> Vec<HiddenSeed> {
        let mut bytes = vec![0u8; n * 8];
        if let Err(e) = getrandom::fill(&mut bytes) {
            panic!("the OS random source failed: {e}");
        }
        bytes
            .chunks_exact(8)
            .map(|chunk| {
                let mut word = [0u8; 8];
                word.copy_from_slice(chunk);
                HiddenSeed(u64::from_le_bytes(word))
            })
            .collect()
    }
}

/// A task's named evaluation seed set: rollout i of every official run on it plays the seed
/// `first 8 bytes of SHA256("ale-seed-set-seed/v1" ‖ 0 ‖ task ‖ 0 ‖ name ‖ 0 ‖ i as u32 BE ‖
/// secret)`. Only the evaluator, which holds the secret, can compute them; runs record the
/// set's commitment ([`ale_records::commitment::seed_set_commitment`]) and, per rollout, the
/// usual commitment, which mixes in the run id, so no record repeats between runs.
#[derive(Clone)]
pub struct SeedSet {
    task_id: String,
    name: String,
    secret: [u8; SECRET_LEN],
}

impl fmt::Debug for SeedSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SeedSet({}/{}, ..)", self.task_id, self.name)
    }
}

impl SeedSet {
    /// The set `name` of `task`, refused unless the task declares it.
    pub fn of(task: &Task, name: &str, secret: &[u8; SECRET_LEN]) -> Result<SeedSet, Error> {
        if !task.spec.seed_sets.iter().any(|s| s == name) {
            return Err(Error::UnknownSeedSet {
                task: task.spec.id.clone(),
                name: name.chars().take(80).collect(),
                declared: task.spec.seed_sets.clone(),
            });
        }
        Ok(SeedSet {
            task_id: task.spec.id.clone(),
            name: name.to_string(),
            secret: *secret,
        })
    }

    /// What the run's `run_started` event records of the set.
    pub fn record(&self) -> SeedSetRecord {
        SeedSetRecord {
            commitment: seed_set_commitment(&self.task_id, &self.name, &self.secret),
            name: self.name.clone(),
        }
    }

    fn seed(&self, index: u32) -> HiddenSeed {
        let mut h = Sha256::new();
        h.update(b"ale-seed-set-seed/v1\0");
        h.update(self.task_id.as_bytes());
        h.update(b"\0");
        h.update(self.name.as_bytes());
        h.update(b"\0");
        h.update(index.to_be_bytes());
        h.update(self.secret);
        let digest = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        HiddenSeed(u64::from_be_bytes(first))
    }
}

impl SeedSource for SeedSet {
    /// The set's first seed (a session takes its whole plan with `draw_many`).
    fn draw(&self) -> HiddenSeed {
        self.seed(0)
    }

    fn draw_many(&self, n: usize) -> Vec<HiddenSeed> {
        (0..n)
            .map(|i| self.seed(u32::try_from(i).unwrap_or(u32::MAX)))
            .collect()
    }
}

/// 64 bits from the OS CSPRNG. The OS source failing is unrecoverable for an evaluator
/// whose guarantees rest on it, so it aborts rather than fall back to something guessable.
pub fn random_u64() -> u64 {
    match getrandom::u64() {
        Ok(v) => v,
        Err(e) => panic!("the OS random source failed: {e}"),
    }
}

/// 128 random bits for an unguessable id.
pub fn random_id_bytes() -> [u8; 16] {
    let mut bytes = [0u8; 16];
    if let Err(e) = getrandom::fill(&mut bytes) {
        panic!("the OS random source failed: {e}");
    }
    bytes
}
