//! Stepping allocates nothing on the Rust side: the observation is rewritten in place and the
//! action read where it lies. (MuJoCo's own memory is its arena, allocated with the `mjData`.)
#![cfg(feature = "mujoco")]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

use ale_sim::{Space, Tensor};

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
fn stepping_any_env_allocates_nothing() {
    let mut report = Vec::new();
    for entry in ale_sims_mujoco::catalog().iter() {
        let mut sim = entry.build_plain(entry.default_max_steps()).unwrap();
        let Space::Box(b) = sim.action_space() else {
            panic!("{}", sim.action_space())
        };
        let actions: Vec<Tensor> = [0.5f32, -0.5]
            .iter()
            .map(|a| Tensor::vector_f32(vec![*a; b.low.len()]))
            .collect();
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
        report.push((entry.id(), ALLOCATIONS.load(Ordering::Relaxed)));
    }
    assert!(report.iter().all(|(_, n)| *n == 0), "{report:?}");
}
