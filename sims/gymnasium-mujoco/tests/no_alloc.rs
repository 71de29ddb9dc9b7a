//! Stepping allocates nothing on the Rust side: the observation is rewritten in place and the
//! action read where it lies. (MuJoCo's own memory is its arena, allocated with the `mjData`.)
#![cfg(feature = "mujoco")]

use ale_sim::alloc_count::{Counting, count};
use ale_sim::{Space, Tensor};

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
        let mut allocations = 0;
        for i in 0..200 {
            let (t, n) = count(|| sim.step(&actions[i % 2]).unwrap());
            allocations += n;
            if t.is_done() {
                sim.reset(100 + i as u64).unwrap();
            }
        }
        report.push((entry.id(), allocations));
    }
    assert!(report.iter().all(|(_, n)| *n == 0), "{report:?}");
}
