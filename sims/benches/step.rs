//! In-process steps per second of every bundled sim, single-threaded.
//!
//!     cargo bench -p ale-sims --bench step
//!
//! Each iteration is one `Sim::step` through the trait object the evaluator uses, with a
//! fixed cycle of valid actions and a reset whenever an episode ends (resets are counted in the
//! time, as they are in real use).

use std::hint::black_box;

use ale_sim::{Space, Tensor, TensorData};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// A few valid actions for the space, cycled through.
fn actions(space: &Space) -> Vec<Tensor> {
    match space {
        Space::Discrete(d) => (0..d.n as i64)
            .map(|a| Tensor::scalar_i64(d.start + a))
            .collect(),
        Space::Box(b) => {
            let n = b.low.len();
            [0.3f32, -0.6, 0.9]
                .iter()
                .map(|&v| {
                    let values = (0..n).map(|i| if i % 2 == 0 { v } else { -v }).collect();
                    Tensor::new(b.shape.clone(), TensorData::F32(values)).unwrap()
                })
                .collect()
        }
        other => panic!("no bench actions for {other}"),
    }
}

fn step(c: &mut Criterion) {
    let mut group = c.benchmark_group("step");
    group.throughput(Throughput::Elements(1));
    for info in ale_sims::catalog().iter() {
        let mut sim = info.build_plain(info.default_max_steps()).unwrap();
        let actions = actions(sim.action_space());
        let mut seed = 0;
        sim.reset(seed).unwrap();
        let mut i = 0;
        group.bench_function(info.id(), |b| {
            b.iter(|| {
                i += 1;
                let t = sim
                    .step(black_box(&actions[i % actions.len()]))
                    .unwrap_or_else(|e| panic!("{e}"));
                if t.terminated || t.truncated {
                    seed += 1;
                    sim.reset(seed).unwrap();
                }
                black_box(sim.observation());
            })
        });
    }
    group.finish();
}

criterion_group!(benches, step);
criterion_main!(benches);
