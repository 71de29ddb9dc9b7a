//! Rows per second of a 4 → 64 → 64 → 2 tanh MLP (CartPole's sizes), single-threaded.
//!
//!     cargo bench -p ale-policy --bench mlp
//!
//! `forward_batch` is the matrix products and activations for a block of rows; `act` adds the
//! mapping of each output row to a Discrete action tensor, as the batch pipeline calls it.

use std::hint::black_box;

use ale_policy::{BatchPolicy, Mlp, MlpPolicy, Scratch};
use ale_sim::{BoxSpace, DType, DiscreteSpace, Space};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use safetensors::{Dtype, tensor::TensorView};

const SIZES: [usize; 4] = [4, 64, 64, 2];
const BLOCKS: [usize; 3] = [64, 256, 1024];

/// A deterministic spread of values in [-0.5, 0.5).
fn values(count: usize, seed: u32) -> Vec<u8> {
    let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(1);
    (0..count)
        .flat_map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            ((x as f32 / u32::MAX as f32) - 0.5).to_le_bytes()
        })
        .collect()
}

/// The bytes of a safetensors file as PyTorch writes an `nn.Sequential` (keys 0, 2, 4).
fn file() -> Vec<u8> {
    let mut buffers = Vec::new();
    for (layer, pair) in SIZES.windows(2).enumerate() {
        let (inputs, outputs) = (pair[0], pair[1]);
        let index = 2 * layer;
        buffers.push((
            format!("{index}.weight"),
            vec![outputs, inputs],
            values(outputs * inputs, index as u32),
        ));
        buffers.push((
            format!("{index}.bias"),
            vec![outputs],
            values(outputs, 100 + index as u32),
        ));
    }
    let views: Vec<(String, TensorView<'_>)> = buffers
        .iter()
        .map(|(name, shape, data)| {
            (
                name.clone(),
                TensorView::new(Dtype::F32, shape.clone(), data).expect("bench tensor"),
            )
        })
        .collect();
    let metadata = [("activation".to_string(), "tanh".to_string())]
        .into_iter()
        .collect();
    safetensors::serialize(views, Some(metadata)).expect("bench file")
}

fn spaces() -> (Space, Space) {
    let obs = Space::Box(BoxSpace::uniform(vec![4], DType::F32, -5.0, 5.0));
    (obs, Space::Discrete(DiscreteSpace::new(2)))
}

fn forward_batch(c: &mut Criterion) {
    let (obs_space, act_space) = spaces();
    let mlp = Mlp::from_safetensors(&file(), &obs_space, &act_space).expect("bench MLP");
    let mut group = c.benchmark_group("mlp_4_64_64_2/forward_batch");
    for n in BLOCKS {
        let obs: Vec<f32> = (0..n * 4).map(|i| ((i % 17) as f32 - 8.0) * 0.1).collect();
        let mut out = vec![0.0f32; n * 2];
        let mut scratch = Scratch::new();
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(format!("{n}_rows"), |b| {
            b.iter(|| {
                mlp.forward_batch(black_box(&obs), n, &mut scratch, &mut out)
                    .expect("forward");
                black_box(&out);
            })
        });
    }
    group.finish();
}

fn act(c: &mut Criterion) {
    let (obs_space, act_space) = spaces();
    let mut policy =
        MlpPolicy::from_safetensors(&file(), &obs_space, &act_space).expect("bench MLP");
    let mut group = c.benchmark_group("mlp_4_64_64_2/act");
    for n in BLOCKS {
        let obs: Vec<f32> = (0..n * 4).map(|i| ((i % 17) as f32 - 8.0) * 0.1).collect();
        let mut actions = policy.action_map().blank_actions(n);
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(format!("{n}_rows"), |b| {
            b.iter(|| {
                policy.act(black_box(&obs), n, &mut actions).expect("act");
                black_box(&actions);
            })
        });
    }
    group.finish();
}

criterion_group!(benches, forward_batch, act);
criterion_main!(benches);
