//! Hidden seeds: drawn from the OS CSPRNG, held only in memory, never printed.

use std::fmt;

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
