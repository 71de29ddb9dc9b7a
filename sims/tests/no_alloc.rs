//! Stepping allocates nothing: every sim's hot path reuses its buffers.
//!
//! A counting global allocator wraps the system one; after a warm-up episode, a run of steps
//! (resets excluded) must not allocate. The one exception is reacher2d, whose physics step is
//! rapier2d's multibody solver: it allocates its dynamic matrices on every step (about 19
//! allocations), which this test pins so that a change in either direction is noticed.

use ale_sim::alloc_count::{Counting, count};
use ale_sim::{Space, Tensor, TensorData};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn action(space: &Space, i: usize) -> Tensor {
    match space {
        Space::Discrete(d) => Tensor::scalar_i64(d.start + (i as u64 % d.n) as i64),
        Space::Box(b) => Tensor::new(
            b.shape.clone(),
            TensorData::F32(vec![
                if i.is_multiple_of(2) { 0.5 } else { -0.5 };
                b.low.len()
            ]),
        )
        .unwrap(),
        other => panic!("{other}"),
    }
}

#[test]
fn stepping_any_sim_allocates_nothing() {
    let mut report = Vec::new();
    for info in ale_sims::catalog().iter() {
        let mut sim = info.build_plain(info.default_max_steps()).unwrap();
        let actions: Vec<Tensor> = (0..4).map(|i| action(sim.action_space(), i)).collect();
        sim.reset(1).unwrap();
        // Warm-up: let lazily grown buffers reach their size.
        for i in 0..50 {
            if sim.step(&actions[i % 4]).unwrap().is_done() {
                sim.reset(i as u64).unwrap();
            }
        }
        sim.reset(2).unwrap();
        let (mut counted, mut allocations) = (0, 0);
        for i in 0..200 {
            let (t, n) = count(|| sim.step(&actions[i % 4]).unwrap());
            counted += 1;
            allocations += n;
            if t.is_done() {
                sim.reset(100 + i as u64).unwrap();
            }
        }
        report.push(format!(
            "{}: {allocations} allocations in {counted} steps",
            info.id()
        ));
    }
    let offenders: Vec<_> = report
        .iter()
        .filter(|r| !r.contains(": 0 allocations") && !r.starts_with(ale_sims::reacher2d::ID))
        .collect();
    assert!(offenders.is_empty(), "{report:#?}");
    let reacher = report
        .iter()
        .find(|r| r.starts_with(ale_sims::reacher2d::ID))
        .unwrap();
    let count: usize = reacher
        .split(": ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (1..=30 * 200).contains(&count),
        "rapier2d's per-step allocations changed: {reacher}"
    );
}
