//! Counting one thread's heap allocations, for the tests that pin a hot path's (a sim's step, a
//! policy's act): the test binary installs [`Counting`] as its global allocator and measures
//! with [`count`].
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: ale_sim::alloc_count::Counting = ale_sim::alloc_count::Counting;
//!
//! let (_, allocations) = ale_sim::alloc_count::count(|| sim.step(&action));
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting the allocations and reallocations of the threads inside
/// [`count`].
pub struct Counting;

thread_local! {
    // Per thread: only the measured code counts, not the test harness's other threads.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
}

fn note() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note();
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Runs `f` and answers what it returned with how many allocations it made on this thread.
///
/// Panics if [`Counting`] is not the global allocator: a count of 0 must mean none were made.
pub fn count<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let (_, probe) = counted(|| drop(std::hint::black_box(Box::new(0u8))));
    assert_eq!(
        probe, 1,
        "install ale_sim::alloc_count::Counting as the test's #[global_allocator]"
    );
    counted(f)
}

fn counted<T>(f: impl FnOnce() -> T) -> (T, usize) {
    COUNT.set(0);
    COUNTING.set(true);
    let value = f();
    COUNTING.set(false);
    (value, COUNT.get())
}
