//! Stepping allocates nothing on the Rust side: the observation is rewritten in place and the
//! action read where it lies. (MuJoCo's own memory is its arena, allocated with the `mjData`.)
#![cfg(feature = "mujoco")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use ale_sim::Tensor;

struct Counting;

thread_local! {
    // Only the stepping thread counts, not the test harness's own threads.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

// SAFETY: forwards to the system allocator unchanged; only counts calls.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if counting() {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn stepping_allocates_nothing() {
    use ale_sim::Sim;
    let mut sim = ale_sims_go1::Go1Joystick::new(1000).unwrap();
    let actions = [0.3f32, -0.3].map(|a| Tensor::vector_f32(vec![a; 12]));
    sim.reset(1).unwrap();
    ALLOCATIONS.store(0, Ordering::Relaxed);
    for i in 0..200 {
        COUNTING.set(true);
        let t = sim.step(&actions[i % 2]).unwrap();
        COUNTING.set(false);
        if t.is_done() {
            sim.reset(100 + i as u64).unwrap();
        }
    }
    assert_eq!(ALLOCATIONS.load(Ordering::Relaxed), 0);
}
