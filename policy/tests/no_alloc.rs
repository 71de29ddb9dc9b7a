//! Acting on a block allocates nothing of ale-policy's own once its buffers have grown.
//!
//! A counting global allocator wraps the system one. The only allocations left per call are
//! matrixmultiply's packing buffers, one per layer and sgemm call; the test pins that count so
//! a change either way is noticed.

use ale_policy::{BatchPolicy, MlpPolicy};
use ale_sim::alloc_count::{Counting, count};
use ale_sim::{BoxSpace, DType, DiscreteSpace, Space};
use safetensors::{Dtype, tensor::TensorView};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn cartpole_mlp() -> Vec<u8> {
    let sizes = [4usize, 64, 64, 2];
    let buffers: Vec<(String, Vec<usize>, Vec<u8>)> = sizes
        .windows(2)
        .enumerate()
        .flat_map(|(i, p)| {
            let w: Vec<u8> = (0..p[0] * p[1])
                .flat_map(|k| (((k % 13) as f32 - 6.0) * 0.05).to_le_bytes())
                .collect();
            [
                (format!("{}.weight", 2 * i), vec![p[1], p[0]], w),
                (format!("{}.bias", 2 * i), vec![p[1]], vec![0; 4 * p[1]]),
            ]
        })
        .collect();
    let views: Vec<(String, TensorView<'_>)> = buffers
        .iter()
        .map(|(n, s, d)| {
            (
                n.clone(),
                TensorView::new(Dtype::F32, s.clone(), d).unwrap(),
            )
        })
        .collect();
    let metadata = [("activation".to_string(), "tanh".to_string())]
        .into_iter()
        .collect();
    safetensors::serialize(views, Some(metadata)).unwrap()
}

#[test]
fn acting_on_a_block_allocates_only_the_matrix_packing_buffers() {
    let obs_space = Space::Box(BoxSpace::uniform(vec![4], DType::F32, -5.0, 5.0));
    let act_space = Space::Discrete(DiscreteSpace::new(2));
    let mut policy = MlpPolicy::from_safetensors(&cartpole_mlp(), &obs_space, &act_space).unwrap();
    let n = 256;
    let obs: Vec<f32> = (0..n * 4).map(|i| (i % 9) as f32 * 0.1 - 0.4).collect();
    let mut actions = policy.action_map().blank_actions(n);
    // Warm-up: the scratch buffers grow to the block size.
    policy.act(&obs, n, &mut actions).unwrap();

    let calls = 50;
    let ((), allocations) = count(|| {
        for i in 0..calls {
            // Smaller blocks reuse the same buffers.
            let rows = if i % 2 == 0 { n } else { 64 };
            policy.act(&obs[..rows * 4], rows, &mut actions).unwrap();
        }
    });
    let layers = 3;
    assert_eq!(
        allocations,
        calls * layers,
        "expected exactly one allocation (sgemm's packing buffer) per layer per call"
    );
}
