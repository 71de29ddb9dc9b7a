//! Time spent in `mj_step`, for benchmarks: `ale bench batch` compares it with the batch
//! pipeline's whole cost per env step, on the same trajectories.
//!
//! Off by default, when [`Data::step`](crate::Data::step) costs one relaxed load more. On, each
//! step also reads the clock twice (tens of nanoseconds, against the tens of microseconds of a
//! robot's `mj_step`) and adds its time to a process-wide total, over every thread.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static ON: AtomicBool = AtomicBool::new(false);
static NANOS: AtomicU64 = AtomicU64::new(0);
static STEPS: AtomicU64 = AtomicU64::new(0);

/// Starts (or stops) adding up the time of every `mj_step` in the process.
pub fn measure(on: bool) {
    ON.store(on, Ordering::Relaxed);
}

/// The `mj_step` calls and their nanoseconds so far, on every thread, then both back to 0.
pub fn take() -> (u64, u64) {
    (
        STEPS.swap(0, Ordering::Relaxed),
        NANOS.swap(0, Ordering::Relaxed),
    )
}

/// Runs `step`, timing it if measuring is on.
#[cfg_attr(not(feature = "mujoco"), allow(dead_code))]
#[inline]
pub(crate) fn timed(step: impl FnOnce()) {
    if !ON.load(Ordering::Relaxed) {
        step();
        return;
    }
    let started = std::time::Instant::now();
    step();
    let nanos = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    NANOS.fetch_add(nanos, Ordering::Relaxed);
    STEPS.fetch_add(1, Ordering::Relaxed);
}
