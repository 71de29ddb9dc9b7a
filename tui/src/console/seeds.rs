//! The seeds "reset with a random seed" uses. The app owns its generator, so a test that
//! gives it a fixed seed sees the same resets every time.

/// Draws reset seeds.
///
/// ```
/// use ale_tui::console::seeds::Seeds;
/// let (mut a, mut b) = (Seeds::new(7), Seeds::new(7));
/// assert_eq!(a.next_seed(), b.next_seed());
/// assert!(a.next_seed() < 1_000_000);
/// ```
#[derive(Debug, Clone)]
pub struct Seeds {
    rng: ale_sim::Rng,
}

impl Seeds {
    /// Seeds drawn from a generator seeded with `seed`.
    pub fn new(seed: u64) -> Seeds {
        Seeds {
            rng: ale_sim::Rng::new(seed),
        }
    }

    /// Seeds that differ from one start of the console to the next (the generator is seeded
    /// from the clock).
    pub fn from_clock() -> Seeds {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Seeds::new(nanos)
    }

    /// The next seed. Six digits at most: the console shows it, and it is easy to read back and
    /// type in again.
    pub fn next_seed(&mut self) -> u64 {
        self.rng.below(1_000_000)
    }
}
