//! The `mlp-safetensors` format on real files: written here with the safetensors crate, by
//! hand where a file must be malformed, and by the checked-in Python example.

use ale_policy::{BatchPolicy, Mlp, MlpPolicy, PolicyError, Scratch, load};
use ale_sim::{BoxSpace, DType, DiscreteSpace, MultiDiscreteSpace, Space, Tensor, TensorData};
use safetensors::{Dtype, tensor::TensorView};

// ---------------------------------------------------------------------------------------------
// Files

/// One tensor to write: name, dtype, shape, little-endian bytes.
struct T {
    name: String,
    dtype: Dtype,
    shape: Vec<usize>,
    bytes: Vec<u8>,
}

fn f32s(name: &str, shape: &[usize], values: &[f32]) -> T {
    T {
        name: name.into(),
        dtype: Dtype::F32,
        shape: shape.to_vec(),
        bytes: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

fn write(tensors: &[T], metadata: &[(&str, &str)]) -> Vec<u8> {
    let views: Vec<(String, TensorView<'_>)> = tensors
        .iter()
        .map(|t| {
            let view = TensorView::new(t.dtype, t.shape.clone(), &t.bytes).expect("test tensor");
            (t.name.clone(), view)
        })
        .collect();
    let metadata = (!metadata.is_empty()).then(|| {
        metadata
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    });
    safetensors::serialize(views, metadata).expect("serialize")
}

/// A file with a hand-written header (for malformed ones).
fn raw(header: &str, data: &[u8]) -> Vec<u8> {
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    bytes
}

/// Deterministic values in [-1, 1).
fn values(count: usize, seed: u64) -> Vec<f32> {
    let mut x = seed
        .wrapping_mul(6_364_136_223_846_793_005)
        .wrapping_add(1_442_695_040_888_963_407);
    (0..count)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A net as the tests know it: (weight [out, in], bias [out]) per layer.
struct Net {
    sizes: Vec<usize>,
    layers: Vec<(Vec<f32>, Vec<f32>)>,
}

impl Net {
    fn random(sizes: &[usize], seed: u64) -> Net {
        let layers = sizes
            .windows(2)
            .enumerate()
            .map(|(i, p)| {
                let w = values(p[0] * p[1], seed + 2 * i as u64);
                let b = values(p[1], seed + 2 * i as u64 + 1);
                (w, b)
            })
            .collect();
        Net {
            sizes: sizes.to_vec(),
            layers,
        }
    }

    /// Tensors under `key(i)` for layer i.
    fn tensors(&self, key: impl Fn(usize) -> String) -> Vec<T> {
        self.layers
            .iter()
            .enumerate()
            .flat_map(|(i, (w, b))| {
                let (inp, out) = (self.sizes[i], self.sizes[i + 1]);
                [
                    f32s(&format!("{}.weight", key(i)), &[out, inp], w),
                    f32s(&format!("{}.bias", key(i)), &[out], b),
                ]
            })
            .collect()
    }

    /// The forward pass written out, in f64 with the true tanh.
    fn forward(&self, x: &[f32], act: fn(f64) -> f64) -> Vec<f64> {
        let mut h: Vec<f64> = x.iter().map(|v| f64::from(*v)).collect();
        for (i, (w, b)) in self.layers.iter().enumerate() {
            let (inp, out) = (self.sizes[i], self.sizes[i + 1]);
            let mut y = vec![0.0; out];
            for o in 0..out {
                let mut s = f64::from(b[o]);
                for k in 0..inp {
                    s += f64::from(w[o * inp + k]) * h[k];
                }
                y[o] = if i + 1 < self.layers.len() { act(s) } else { s };
            }
            h = y;
        }
        h
    }
}

fn obs_box(n: usize) -> Space {
    Space::Box(BoxSpace::uniform(vec![n], DType::F32, -10.0, 10.0))
}

fn discrete(n: u64) -> Space {
    Space::Discrete(DiscreteSpace::new(n))
}

fn cartpole_net() -> Net {
    Net::random(&[4, 16, 16, 2], 7)
}

fn sequential(net: &Net) -> Vec<T> {
    net.tensors(|i| (2 * i).to_string())
}

fn load_err(bytes: &[u8], obs: &Space, act: &Space) -> PolicyError {
    Mlp::from_safetensors(bytes, obs, act).expect_err("the file must be refused")
}

fn assert_close(got: &[f32], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (f64::from(*g) - w).abs() <= tol,
            "element {i}: got {g}, want {w}"
        );
    }
}

fn obs_rows(n: usize, dim: usize) -> Vec<f32> {
    values(n * dim, 99).iter().map(|v| v * 2.0).collect()
}

// ---------------------------------------------------------------------------------------------
// Files that load

#[test]
fn pytorch_sequential_keys_load_and_compute_the_forward_pass() {
    let net = cartpole_net();
    let bytes = write(&sequential(&net), &[("activation", "tanh")]);
    let mlp = Mlp::from_safetensors(&bytes, &obs_box(4), &discrete(2)).expect("load");
    assert_eq!(mlp.sizes(), vec![4, 16, 16, 2]);

    let n = 37;
    let obs = obs_rows(n, 4);
    let mut out = vec![0.0; n * 2];
    mlp.forward_batch(&obs, n, &mut Scratch::new(), &mut out)
        .expect("forward");
    for r in 0..n {
        let want = net.forward(&obs[r * 4..r * 4 + 4], f64::tanh);
        assert_close(&out[r * 2..r * 2 + 2], &want, 1e-5);
    }
}

#[test]
fn layers_list_keys_load_and_compute_with_relu() {
    let net = Net::random(&[4, 8, 8, 8, 3], 11);
    let bytes = write(
        &net.tensors(|i| format!("layers.{i}")),
        &[("activation", "relu")],
    );
    let mlp = Mlp::from_safetensors(&bytes, &obs_box(4), &discrete(3)).expect("load");
    assert_eq!(mlp.sizes(), vec![4, 8, 8, 8, 3]);
    let n = 5;
    let obs = obs_rows(n, 4);
    let mut out = vec![0.0; n * 3];
    mlp.forward_batch(&obs, n, &mut Scratch::new(), &mut out)
        .expect("forward");
    for r in 0..n {
        let want = net.forward(&obs[r * 4..r * 4 + 4], |x| x.max(0.0));
        assert_close(&out[r * 3..r * 3 + 3], &want, 1e-5);
    }
}

#[test]
fn one_common_prefix_is_accepted() {
    let net = cartpole_net();
    let bytes = write(
        &net.tensors(|i| format!("actor.net.{}", 2 * i)),
        &[("activation", "tanh")],
    );
    let mlp = Mlp::from_safetensors(&bytes, &obs_box(4), &discrete(2)).expect("load");
    assert_eq!(mlp.sizes(), vec![4, 16, 16, 2]);
}

#[test]
fn identity_activation_is_a_product_of_linear_maps() {
    let net = Net::random(&[4, 3, 2], 3);
    let bytes = write(&sequential(&net), &[("activation", "identity")]);
    let mlp = Mlp::from_safetensors(&bytes, &obs_box(4), &discrete(2)).expect("load");
    let obs = obs_rows(1, 4);
    let mut out = vec![0.0; 2];
    mlp.forward_batch(&obs, 1, &mut Scratch::new(), &mut out)
        .expect("forward");
    assert_close(&out, &net.forward(&obs, |x| x), 1e-5);
}

#[test]
fn a_per_row_policy_applies_the_same_weights_to_each_row_of_a_swarm() {
    // Three robots, two features each, two velocity outputs each: out = (f0, -f1), clipped.
    let obs = Space::Box(BoxSpace::uniform(vec![3, 2], DType::F32, -10.0, 10.0));
    let act = Space::Box(BoxSpace::uniform(vec![3, 2], DType::F32, -1.0, 1.0));
    let bytes = write(&[f32s("0.weight", &[2, 2], &[1.0, 0.0, 0.0, -1.0])], &[]);
    let mut policy = MlpPolicy::from_safetensors(&bytes, &obs, &act).expect("per-row load");
    assert_eq!(policy.rows_per_observation(), 3);
    let mut actions = policy.action_map().blank_actions(2);
    let block = [
        0.5, 0.25, 2.0, -3.0, -0.1, 0.0, // env 0
        0.0, 1.0, 0.3, 0.3, -5.0, -0.5, // env 1
    ];
    policy.act(&block, 2, &mut actions).expect("act");
    let close = |t: &Tensor, want: [f64; 6]| {
        let got = t.to_f64_vec();
        assert!(
            got.iter().zip(want).all(|(g, w)| (g - w).abs() < 1e-6),
            "{got:?} != {want:?}"
        );
    };
    close(&actions[0], [0.5, -0.25, 1.0, 1.0, -0.1, 0.0]);
    close(&actions[1], [0.0, -1.0, 0.3, -0.3, -1.0, 0.5]);
    assert_eq!(actions[0].shape(), &[3, 2]);

    // A width that fits neither the whole observation nor one row is refused as before.
    let bytes = write(&[f32s("0.weight", &[2, 5], &[0.0; 10])], &[]);
    let e = MlpPolicy::from_safetensors(&bytes, &obs, &act).expect_err("refused");
    assert!(
        matches!(
            e,
            PolicyError::ObsMismatch {
                expected: 6,
                got: 5,
                ..
            }
        ),
        "{e}"
    );
    // A per-row input with a whole-action output is refused on the output.
    let bytes = write(&[f32s("0.weight", &[6, 2], &[0.0; 12])], &[]);
    let e = MlpPolicy::from_safetensors(&bytes, &obs, &act).expect_err("refused");
    assert!(
        matches!(
            e,
            PolicyError::ActMismatch {
                expected: 2,
                got: 6,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn a_linear_controller_reproduces_a_hand_written_cartpole_policy() {
    // Push right when the pole falls right: theta + 0.5 * theta_dot > 0.
    let hand = |o: &[f32]| i64::from(o[2] + 0.5 * o[3] > 0.0);
    let weight = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.5];
    let bytes = write(&[f32s("0.weight", &[2, 4], &weight)], &[]);
    let mut policy = load("mlp-safetensors", &bytes, &obs_box(4), &discrete(2)).expect("load");

    let n = 500;
    let obs = obs_rows(n, 4);
    let mut actions = policy.action_map().blank_actions(n);
    policy.act(&obs, n, &mut actions).expect("act");
    let mut pushes = [0; 2];
    for (r, action) in actions.iter().enumerate() {
        let want = hand(&obs[r * 4..r * 4 + 4]);
        assert_eq!(action, &Tensor::scalar_i64(want), "row {r}");
        pushes[want as usize] += 1;
    }
    assert!(
        pushes[0] > 100 && pushes[1] > 100,
        "both actions exercised: {pushes:?}"
    );
}

#[test]
fn box_actions_are_clipped_to_the_bounds() {
    // Pendulum-like: torque = -3 * obs[0] + 0.25, clipped to [-2, 2].
    let bytes = write(
        &[
            f32s("0.weight", &[1, 3], &[-3.0, 0.0, 0.0]),
            f32s("0.bias", &[1], &[0.25]),
        ],
        &[],
    );
    let act = Space::Box(BoxSpace::uniform(vec![1], DType::F32, -2.0, 2.0));
    let mut policy = load("mlp-safetensors", &bytes, &obs_box(3), &act).expect("load");
    let obs = [1.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.25, 0.0, 0.0];
    let mut actions = policy.action_map().blank_actions(3);
    policy.act(&obs, 3, &mut actions).expect("act");
    let got: Vec<f32> = actions.iter().map(|a| a.as_f32().unwrap()[0]).collect();
    assert_eq!(got, vec![-2.0, 2.0, -0.5]);
    for a in &actions {
        act.check(a).expect("a member of the action space");
    }
}

#[test]
fn discrete_start_multidiscrete_and_multibinary_map_outputs_to_actions() {
    let eye = |n: usize| -> Vec<f32> {
        (0..n * n)
            .map(|i| if i % (n + 1) == 0 { 1.0 } else { 0.0 })
            .collect()
    };
    let identity_file = |n: usize| write(&[f32s("0.weight", &[n, n], &eye(n))], &[]);
    let run = |act: Space, obs: &[f32]| -> Tensor {
        let n = obs.len();
        let mut policy =
            load("mlp-safetensors", &identity_file(n), &obs_box(n), &act).expect("load");
        let mut actions = policy.action_map().blank_actions(1);
        policy.act(obs, 1, &mut actions).expect("act");
        act.check(&actions[0]).expect("member");
        actions.remove(0)
    };

    let start = Space::Discrete(DiscreteSpace {
        n: 3,
        start: -1,
        labels: vec![],
    });
    assert_eq!(run(start, &[0.1, 0.9, 0.3]), Tensor::scalar_i64(0));

    let multi = Space::MultiDiscrete(MultiDiscreteSpace {
        nvec: vec![2, 3],
        start: vec![0, 5],
    });
    let got = run(multi, &[0.0, 1.0, 0.2, 0.1, 0.7]);
    assert_eq!(got.data(), &TensorData::I64(vec![1, 7]));

    let binary = Space::MultiBinary(vec![3]);
    let got = run(binary, &[0.5, -0.5, 0.0]);
    assert_eq!(got.data(), &TensorData::U8(vec![1, 0, 0]));
}

#[test]
fn a_discrete_observation_is_one_hot() {
    let obs_space = discrete(3);
    // out = 10 * one_hot: output index = observation.
    let weight: Vec<f32> = (0..9)
        .map(|i| if i % 4 == 0 { 10.0 } else { 0.0 })
        .collect();
    let bytes = write(&[f32s("0.weight", &[3, 3], &weight)], &[]);
    let mut policy = load("mlp-safetensors", &bytes, &obs_space, &discrete(3)).expect("load");
    let mut row = vec![0.0; 3];
    for v in 0..3 {
        policy
            .obs_encoder()
            .encode(&Tensor::scalar_i64(v), &mut row)
            .expect("encode");
        let mut actions = policy.action_map().blank_actions(1);
        policy.act(&row, 1, &mut actions).expect("act");
        assert_eq!(actions[0], Tensor::scalar_i64(v));
    }
    let err = policy
        .obs_encoder()
        .encode(&Tensor::scalar_i64(3), &mut row)
        .unwrap_err();
    assert!(matches!(err, PolicyError::BadObservation { .. }), "{err}");
}

#[test]
fn observation_normalisation_is_applied() {
    let weight = [1.0, 1.0];
    let mut tensors = vec![f32s("0.weight", &[1, 2], &weight)];
    tensors.push(f32s("obs_mean", &[2], &[1.0, -2.0]));
    tensors.push(f32s("obs_std", &[2], &[2.0, 0.0]));
    let bytes = write(&tensors, &[]);
    let act = Space::Box(BoxSpace::uniform(vec![1], DType::F32, -1e9, 1e9));
    let mlp = Mlp::from_safetensors(&bytes, &obs_box(2), &act).expect("load");
    let mut out = [0.0];
    // (3 - 1) / 2 + (-2 - -2) / max(0, eps) = 1.
    mlp.forward_batch(&[3.0, -2.0], 1, &mut Scratch::new(), &mut out)
        .expect("forward");
    assert_eq!(out, [1.0]);
}

#[test]
fn float64_float16_and_bfloat16_weights_are_converted() {
    let w = [0.5f32, -0.25, 1.0, 2.0];
    let as_dtype = |dtype: Dtype| -> T {
        let bytes = match dtype {
            Dtype::F64 => w.iter().flat_map(|v| f64::from(*v).to_le_bytes()).collect(),
            Dtype::F16 => w
                .iter()
                .flat_map(|v| half::f16::from_f32(*v).to_le_bytes())
                .collect(),
            Dtype::BF16 => w
                .iter()
                .flat_map(|v| half::bf16::from_f32(*v).to_le_bytes())
                .collect(),
            _ => unreachable!(),
        };
        T {
            name: "0.weight".into(),
            dtype,
            shape: vec![2, 2],
            bytes,
        }
    };
    let act = Space::Box(BoxSpace::uniform(vec![2], DType::F32, -100.0, 100.0));
    for dtype in [Dtype::F64, Dtype::F16, Dtype::BF16] {
        let bytes = write(&[as_dtype(dtype)], &[]);
        let mlp = Mlp::from_safetensors(&bytes, &obs_box(2), &act).expect("load");
        let mut out = [0.0; 2];
        mlp.forward_batch(&[1.0, 2.0], 1, &mut Scratch::new(), &mut out)
            .expect("forward");
        assert_eq!(out, [0.0, 5.0], "{dtype:?}");
    }
}

#[test]
fn blocks_of_any_size_reuse_the_scratch_and_agree_row_by_row() {
    let net = cartpole_net();
    let bytes = write(&sequential(&net), &[("activation", "tanh")]);
    let mlp = Mlp::from_safetensors(&bytes, &obs_box(4), &discrete(2)).expect("load");
    let mut scratch = Scratch::new();
    let obs = obs_rows(64, 4);
    let mut all = vec![0.0; 128];
    mlp.forward_batch(&obs, 64, &mut scratch, &mut all)
        .expect("forward");
    for r in [0, 17, 63] {
        let mut one = [0.0; 2];
        mlp.forward_batch(&obs[r * 4..r * 4 + 4], 1, &mut scratch, &mut one)
            .expect("forward");
        assert_close(
            &one,
            &[f64::from(all[2 * r]), f64::from(all[2 * r + 1])],
            1e-6,
        );
    }
    let mut none: [f32; 0] = [];
    mlp.forward_batch(&[], 0, &mut scratch, &mut none)
        .expect("empty block");
}

#[test]
fn the_python_example_file_loads_and_matches_numpy() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let bytes = std::fs::read(format!("{dir}/cartpole_mlp.safetensors")).expect("data file");
    let expected: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{dir}/cartpole_mlp.expected.json")).expect("json"),
    )
    .expect("expected.json");
    let rows = |key: &str| -> Vec<Vec<f32>> {
        expected[key]
            .as_array()
            .expect(key)
            .iter()
            .map(|r| {
                r.as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_f64().unwrap() as f32)
                    .collect()
            })
            .collect()
    };
    let (observations, outputs) = (rows("observations"), rows("outputs"));
    let want_actions: Vec<i64> = expected["actions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();

    let obs: Vec<f32> = observations.concat();
    let n = observations.len();
    let mlp = Mlp::from_safetensors(&bytes, &obs_box(4), &discrete(2)).expect("load");
    assert_eq!(mlp.sizes(), vec![4, 8, 8, 2]);
    let mut out = vec![0.0; n * 2];
    mlp.forward_batch(&obs, n, &mut Scratch::new(), &mut out)
        .expect("forward");
    let want: Vec<f64> = outputs.concat().iter().map(|v| f64::from(*v)).collect();
    assert_close(&out, &want, 1e-5);

    let mut policy = MlpPolicy::from_safetensors(&bytes, &obs_box(4), &discrete(2)).expect("load");
    let mut actions = policy.action_map().blank_actions(n);
    policy.act(&obs, n, &mut actions).expect("act");
    let got: Vec<i64> = actions.iter().map(|a| a.to_f64_vec()[0] as i64).collect();
    assert_eq!(got, want_actions);
}

// ---------------------------------------------------------------------------------------------
// Files that are refused, each with its own error

fn valid_cartpole_file() -> Vec<u8> {
    write(&sequential(&cartpole_net()), &[("activation", "tanh")])
}

#[test]
fn a_truncated_file_is_refused() {
    let bytes = valid_cartpole_file();
    for cut in [bytes.len() - 1, bytes.len() / 2, 40, 5] {
        let err = load_err(&bytes[..cut], &obs_box(4), &discrete(2));
        assert!(
            matches!(err, PolicyError::Truncated { .. }),
            "cut at {cut}: {err}"
        );
    }
}

#[test]
fn garbage_bytes_are_refused() {
    let err = load_err(&raw("this is not json!!", &[]), &obs_box(4), &discrete(2));
    assert!(matches!(err, PolicyError::BadHeader(_)), "{err}");
    let err = load_err(&raw("{\"a\": 1}", &[]), &obs_box(4), &discrete(2));
    assert!(matches!(err, PolicyError::BadHeader(_)), "{err}");
    // Random bytes of every length up to 300: an error each time, never a panic.
    let noise: Vec<u8> = values(300, 5)
        .iter()
        .map(|v| (v.to_bits() >> 7) as u8)
        .collect();
    for len in 0..noise.len() {
        assert!(Mlp::from_safetensors(&noise[..len], &obs_box(4), &discrete(2)).is_err());
    }
    // Extra bytes after the last tensor.
    let mut bytes = valid_cartpole_file();
    bytes.extend_from_slice(&[0; 4]);
    let err = load_err(&bytes, &obs_box(4), &discrete(2));
    assert!(matches!(err, PolicyError::BadHeader(_)), "{err}");
}

#[test]
fn a_header_claiming_huge_sizes_is_refused_before_allocating() {
    // A header length of 2^62.
    let mut bytes = (1u64 << 62).to_le_bytes().to_vec();
    bytes.extend_from_slice(b"{}");
    let err = load_err(&bytes, &obs_box(4), &discrete(2));
    assert!(matches!(err, PolicyError::OverCap { .. }), "{err}");

    // A tensor of 2^40 elements whose offsets agree with its shape.
    let huge = raw(
        r#"{"0.weight":{"dtype":"F32","shape":[1099511627776, 1],"data_offsets":[0,4398046511104]}}"#,
        &[0; 16],
    );
    let err = load_err(&huge, &obs_box(4), &discrete(2));
    assert!(matches!(err, PolicyError::OverCap { .. }), "{err}");

    // Offsets at the top of u64, where unchecked arithmetic would wrap.
    let wrap = raw(
        r#"{"0.weight":{"dtype":"U8","shape":[18446744073709551615],"data_offsets":[0,18446744073709551615]}}"#,
        &[0; 16],
    );
    let err = load_err(&wrap, &obs_box(4), &discrete(2));
    assert!(matches!(err, PolicyError::OverCap { .. }), "{err}");

    // A shape whose element count overflows, with small offsets.
    let overflow = raw(
        r#"{"0.weight":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,16]}}"#,
        &[0; 16],
    );
    let err = load_err(&overflow, &obs_box(4), &discrete(2));
    assert!(matches!(err, PolicyError::BadHeader(_)), "{err}");

    // A well-formed layer wider than the cap.
    let wide = write(&[f32s("0.weight", &[9000, 1], &vec![0.0; 9000])], &[]);
    let err = load_err(&wide, &obs_box(1), &discrete(9000));
    assert!(
        matches!(err, PolicyError::UnsupportedActSpace { .. }),
        "{err}"
    );
    let err = load_err(&wide, &obs_box(1), &discrete(2));
    assert!(matches!(err, PolicyError::TooLarge { .. }), "{err}");
}

#[test]
fn a_missing_layer_is_refused() {
    let net = Net::random(&[4, 16, 16, 16, 2], 1);
    let mut tensors = sequential(&net);
    // Drop 2.weight and 2.bias: what is left is 0, 4, 6.
    tensors.retain(|t| !t.name.starts_with("2."));
    let err = load_err(
        &write(&tensors, &[("activation", "tanh")]),
        &obs_box(4),
        &discrete(2),
    );
    assert_eq!(
        err,
        PolicyError::MissingLayer {
            key: "2.weight".into()
        }
    );

    // A bias whose weight is gone.
    let mut tensors = sequential(&cartpole_net());
    tensors.retain(|t| t.name != "2.weight");
    let err = load_err(
        &write(&tensors, &[("activation", "tanh")]),
        &obs_box(4),
        &discrete(2),
    );
    assert!(
        matches!(&err, PolicyError::MissingTensor { name, .. } if name == "2.weight"),
        "{err}"
    );

    // No layers at all.
    let err = load_err(
        &write(&[f32s("obs_mean", &[4], &[0.0; 4])], &[]),
        &obs_box(4),
        &discrete(2),
    );
    assert_eq!(err, PolicyError::NoLayers);
}

#[test]
fn a_first_layer_that_does_not_take_the_observation_is_refused() {
    let err = load_err(&valid_cartpole_file(), &obs_box(6), &discrete(2));
    assert!(
        matches!(&err, PolicyError::ObsMismatch { tensor, expected: 6, got: 4, .. } if tensor == "0.weight"),
        "{err}"
    );
}

#[test]
fn a_last_layer_that_does_not_give_the_action_is_refused() {
    let err = load_err(&valid_cartpole_file(), &obs_box(4), &discrete(3));
    assert!(
        matches!(&err, PolicyError::ActMismatch { tensor, expected: 3, got: 2, .. } if tensor == "4.weight"),
        "{err}"
    );
    let box_act = Space::Box(BoxSpace::uniform(vec![3], DType::F32, -1.0, 1.0));
    let err = load_err(&valid_cartpole_file(), &obs_box(4), &box_act);
    assert!(matches!(err, PolicyError::ActMismatch { .. }), "{err}");
}

#[test]
fn layers_that_do_not_chain_and_misshapen_tensors_are_refused() {
    let a = Net::random(&[4, 16], 1);
    let b = Net::random(&[8, 2], 2);
    let mut tensors = a.tensors(|_| "0".into());
    tensors.extend(b.tensors(|_| "2".into()));
    let err = load_err(
        &write(&tensors, &[("activation", "tanh")]),
        &obs_box(4),
        &discrete(2),
    );
    assert!(
        matches!(
            err,
            PolicyError::LayerChain {
                expected: 16,
                got: 8,
                ..
            }
        ),
        "{err}"
    );

    let mut tensors = sequential(&cartpole_net());
    tensors.retain(|t| t.name != "0.bias");
    tensors.push(f32s("0.bias", &[15], &[0.0; 15]));
    let err = load_err(
        &write(&tensors, &[("activation", "tanh")]),
        &obs_box(4),
        &discrete(2),
    );
    assert!(
        matches!(&err, PolicyError::BadTensorShape { tensor, .. } if tensor == "0.bias"),
        "{err}"
    );

    let err = load_err(
        &write(&[f32s("0.weight", &[8], &[0.0; 8])], &[]),
        &obs_box(4),
        &discrete(2),
    );
    assert!(matches!(err, PolicyError::BadTensorShape { .. }), "{err}");
}

fn with_value(name: &str, index: usize, value: f32) -> Vec<u8> {
    let net = cartpole_net();
    let mut tensors = sequential(&net);
    let t = tensors.iter_mut().find(|t| t.name == name).expect("tensor");
    t.bytes[index * 4..index * 4 + 4].copy_from_slice(&value.to_le_bytes());
    write(&tensors, &[("activation", "tanh")])
}

#[test]
fn a_nan_weight_is_refused_naming_the_tensor() {
    let err = load_err(
        &with_value("2.weight", 5, f32::NAN),
        &obs_box(4),
        &discrete(2),
    );
    assert!(
        matches!(&err, PolicyError::NonFinite { tensor, index: 5, value } if tensor == "2.weight" && value.is_nan()),
        "{err}"
    );
    assert!(err.to_string().contains("NaN"), "{err}");
}

#[test]
fn an_infinite_weight_is_refused_naming_the_tensor() {
    let err = load_err(
        &with_value("4.bias", 1, f32::NEG_INFINITY),
        &obs_box(4),
        &discrete(2),
    );
    assert!(
        matches!(&err, PolicyError::NonFinite { tensor, index: 1, value } if tensor == "4.bias" && value.is_infinite()),
        "{err}"
    );
    // A float64 beyond float32's range becomes infinite, and is refused too.
    let t = T {
        name: "0.weight".into(),
        dtype: Dtype::F64,
        shape: vec![1, 1],
        bytes: 1e300f64.to_le_bytes().to_vec(),
    };
    let act = Space::Box(BoxSpace::uniform(vec![1], DType::F32, -1.0, 1.0));
    let err = load_err(&write(&[t], &[]), &obs_box(1), &act);
    assert!(matches!(err, PolicyError::NonFinite { .. }), "{err}");
}

#[test]
fn an_unknown_or_missing_activation_is_refused() {
    let bytes = write(&sequential(&cartpole_net()), &[("activation", "gelu")]);
    let err = load_err(&bytes, &obs_box(4), &discrete(2));
    assert!(
        matches!(&err, PolicyError::UnknownActivation { got, .. } if got == "gelu"),
        "{err}"
    );
    assert!(err.to_string().contains("tanh, relu, identity"), "{err}");

    let bytes = write(&sequential(&cartpole_net()), &[]);
    let err = load_err(&bytes, &obs_box(4), &discrete(2));
    assert_eq!(err, PolicyError::MissingActivation { layers: 3 });
}

#[test]
fn an_unknown_format_string_is_refused_listing_the_known_ones() {
    let err = load(
        "torch_state_dict",
        &valid_cartpole_file(),
        &obs_box(4),
        &discrete(2),
    )
    .err()
    .expect("refused");
    assert!(matches!(err, PolicyError::UnknownFormat { .. }), "{err}");
    assert!(err.to_string().contains("mlp-safetensors, onnx"), "{err}");
}

#[cfg(not(feature = "onnx"))]
#[test]
fn onnx_without_the_feature_names_the_feature() {
    let err = load("onnx", b"", &obs_box(4), &discrete(2))
        .err()
        .expect("refused");
    assert!(
        matches!(
            err,
            PolicyError::FormatNotBuilt {
                feature: "onnx",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn an_unsupported_dtype_is_refused() {
    let t = T {
        name: "0.weight".into(),
        dtype: Dtype::I32,
        shape: vec![2, 4],
        bytes: vec![0; 32],
    };
    let err = load_err(&write(&[t], &[]), &obs_box(4), &discrete(2));
    assert!(
        matches!(&err, PolicyError::UnsupportedDtype { tensor, dtype } if tensor == "0.weight" && dtype == "I32"),
        "{err}"
    );
}

#[test]
fn unknown_tensors_and_two_prefixes_are_refused() {
    let mut tensors = sequential(&cartpole_net());
    tensors.push(f32s("log_std", &[2], &[0.0; 2]));
    let err = load_err(
        &write(&tensors, &[("activation", "tanh")]),
        &obs_box(4),
        &discrete(2),
    );
    assert_eq!(
        err,
        PolicyError::UnknownTensor {
            name: "log_std".into()
        }
    );

    let mut tensors = cartpole_net().tensors(|i| format!("actor.{}", 2 * i));
    tensors.extend(Net::random(&[4, 1], 3).tensors(|_| "critic.0".into()));
    let err = load_err(
        &write(&tensors, &[("activation", "tanh")]),
        &obs_box(4),
        &discrete(2),
    );
    assert!(matches!(err, PolicyError::AmbiguousPrefix { .. }), "{err}");
}

#[test]
fn half_a_normaliser_or_a_negative_std_is_refused() {
    let mut tensors = sequential(&cartpole_net());
    tensors.push(f32s("obs_mean", &[4], &[0.0; 4]));
    let err = load_err(
        &write(&tensors, &[("activation", "tanh")]),
        &obs_box(4),
        &discrete(2),
    );
    assert!(
        matches!(&err, PolicyError::MissingTensor { name, .. } if name == "obs_std"),
        "{err}"
    );

    tensors.push(f32s("obs_std", &[4], &[1.0, -1.0, 1.0, 1.0]));
    let err = load_err(
        &write(&tensors, &[("activation", "tanh")]),
        &obs_box(4),
        &discrete(2),
    );
    assert!(
        matches!(err, PolicyError::BadValue { index: 1, .. }),
        "{err}"
    );
}

#[test]
fn unsupported_spaces_are_refused() {
    let dict = Space::Dict(vec![("a".into(), obs_box(2))]);
    let err = load_err(&valid_cartpole_file(), &dict, &discrete(2));
    assert!(
        matches!(err, PolicyError::UnsupportedObsSpace { .. }),
        "{err}"
    );
    let int_box = Space::Box(BoxSpace::uniform(vec![2], DType::I64, 0.0, 3.0));
    let err = load_err(&valid_cartpole_file(), &obs_box(4), &int_box);
    assert!(
        matches!(err, PolicyError::UnsupportedActSpace { .. }),
        "{err}"
    );
}

#[test]
fn wrong_batch_buffers_and_non_finite_outputs_are_errors_not_panics() {
    let mut policy = MlpPolicy::from_safetensors(&valid_cartpole_file(), &obs_box(4), &discrete(2))
        .expect("load");
    let mut actions = policy.action_map().blank_actions(2);
    let err = policy.act(&[0.0; 7], 2, &mut actions).unwrap_err();
    assert!(
        matches!(
            err,
            PolicyError::BatchShape {
                expected: 8,
                got: 7,
                ..
            }
        ),
        "{err}"
    );
    let err = policy.act(&[0.0; 12], 3, &mut actions).unwrap_err();
    assert!(
        matches!(
            err,
            PolicyError::BatchShape {
                what: "actions",
                ..
            }
        ),
        "{err}"
    );
    let mut wrong = vec![Tensor::vector_f32(vec![0.0])];
    let err = policy.act(&[0.0; 4], 1, &mut wrong).unwrap_err();
    assert!(matches!(err, PolicyError::BatchShape { .. }), "{err}");
    let err = policy
        .act(
            &[0.0, 0.0, f32::NAN, 0.0, 0.0, 0.0, 0.0, 0.0],
            2,
            &mut actions,
        )
        .unwrap_err();
    assert!(
        matches!(err, PolicyError::NonFiniteOutput { row: 0, .. }),
        "{err}"
    );
}
