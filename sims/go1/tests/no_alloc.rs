//! Stepping allocates nothing on the Rust side: the observation is rewritten in place and the
//! action read where it lies. (MuJoCo's own memory is its arena, allocated with the `mjData`.)
#![cfg(feature = "mujoco")]

use ale_sim::Tensor;
use ale_sim::alloc_count::{Counting, count};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn stepping_allocates_nothing() {
    use ale_sim::Sim;
    let mut sim = ale_sims_go1::Go1Joystick::new(1000).unwrap();
    let actions = [0.3f32, -0.3].map(|a| Tensor::vector_f32(vec![a; 12]));
    sim.reset(1).unwrap();
    let mut allocations = 0;
    for i in 0..200 {
        let (t, n) = count(|| sim.step(&actions[i % 2]).unwrap());
        allocations += n;
        if t.is_done() {
            sim.reset(100 + i as u64).unwrap();
        }
    }
    assert_eq!(allocations, 0);
}
