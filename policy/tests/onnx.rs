//! The `onnx` format on the graphs `tests/data/make_onnx.py` writes.
#![cfg(feature = "onnx")]

use ale_policy::{Mlp, OnnxPolicy, PolicyError, Scratch, load};
use ale_sim::{BoxSpace, DType, DiscreteSpace, Space, Tensor};
use safetensors::{Dtype, tensor::TensorView};

fn data(name: &str) -> Vec<u8> {
    std::fs::read(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).expect(name)
}

fn obs_space() -> Space {
    Space::Box(BoxSpace::uniform(vec![4], DType::F32, -10.0, 10.0))
}

/// A Box wide enough that actions are the raw outputs.
fn raw_outputs(n: usize) -> Space {
    Space::Box(BoxSpace::uniform(vec![n], DType::F32, -1e6, 1e6))
}

/// The MLP of `mlp_4_8_2.weights.json`, loaded through the safetensors path.
fn same_mlp_in_rust() -> Mlp {
    let weights: serde_json::Value =
        serde_json::from_slice(&data("mlp_4_8_2.weights.json")).expect("weights json");
    let flat = |key: &str| -> Vec<u8> {
        let v = &weights[key];
        let values: Vec<f32> = match v.as_array().expect(key).first() {
            Some(serde_json::Value::Array(_)) => v
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|row| {
                    row.as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_f64().unwrap() as f32)
                })
                .collect(),
            _ => v
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect(),
        };
        values.iter().flat_map(|x| x.to_le_bytes()).collect()
    };
    let (w1, b1, w2, b2) = (flat("w1"), flat("b1"), flat("w2"), flat("b2"));
    let views = vec![
        (
            "0.weight",
            TensorView::new(Dtype::F32, vec![8, 4], &w1).unwrap(),
        ),
        ("0.bias", TensorView::new(Dtype::F32, vec![8], &b1).unwrap()),
        (
            "2.weight",
            TensorView::new(Dtype::F32, vec![2, 8], &w2).unwrap(),
        ),
        ("2.bias", TensorView::new(Dtype::F32, vec![2], &b2).unwrap()),
    ];
    let metadata = [("activation".to_string(), "tanh".to_string())]
        .into_iter()
        .collect();
    let bytes = safetensors::serialize(views, Some(metadata)).expect("serialize");
    Mlp::from_safetensors(&bytes, &obs_space(), &raw_outputs(2)).expect("rust mlp")
}

fn observations(n: usize) -> Vec<f32> {
    (0..n * 4)
        .map(|i| ((i * 37 % 23) as f32 - 11.0) * 0.15)
        .collect()
}

fn check_against_rust(file: &str, n: usize) {
    let mut policy = load("onnx", &data(file), &obs_space(), &raw_outputs(2)).expect("load onnx");
    let obs = observations(n);
    let mut actions = policy.action_map().blank_actions(n);
    policy.act(&obs, n, &mut actions).expect("act");
    let got: Vec<f32> = actions
        .iter()
        .flat_map(|a| a.as_f32().unwrap().to_vec())
        .collect();

    let mut want = vec![0.0; n * 2];
    same_mlp_in_rust()
        .forward_batch(&obs, n, &mut Scratch::new(), &mut want)
        .expect("forward");
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() < 1e-5,
            "{file} element {i}: tract {g}, rust {w}"
        );
    }
    // Not all zero: the comparison means something.
    assert!(got.iter().any(|v| v.abs() > 0.1), "{got:?}");
}

#[test]
fn a_symbolic_batch_graph_matches_the_same_mlp_in_rust() {
    check_against_rust("mlp_4_8_2.onnx", 7);
    check_against_rust("mlp_4_8_2.onnx", 1);
}

#[test]
fn a_fixed_batch_graph_runs_in_padded_blocks() {
    // Batch fixed at 3: 7 rows run as 3 + 3 + 1 padded.
    check_against_rust("mlp_4_8_2_batch3.onnx", 7);
}

#[test]
fn discrete_actions_come_from_the_graph_output() {
    let discrete = Space::Discrete(DiscreteSpace::new(2));
    let mut policy = load("onnx", &data("mlp_4_8_2.onnx"), &obs_space(), &discrete).expect("load");
    let n = 9;
    let obs = observations(n);
    let mut actions = policy.action_map().blank_actions(n);
    policy.act(&obs, n, &mut actions).expect("act");
    let mut want = vec![0.0; n * 2];
    same_mlp_in_rust()
        .forward_batch(&obs, n, &mut Scratch::new(), &mut want)
        .unwrap();
    for (r, a) in actions.iter().enumerate() {
        let best = i64::from(want[2 * r + 1] > want[2 * r]);
        assert_eq!(a, &Tensor::scalar_i64(best), "row {r}");
    }
}

#[test]
fn a_graph_with_the_wrong_input_shape_is_refused_before_running() {
    let err = OnnxPolicy::from_bytes(&data("wrong_input.onnx"), &obs_space(), &raw_outputs(2))
        .expect_err("refused");
    assert!(
        matches!(err, PolicyError::OnnxShape { which: "input", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("[batch, 4]"), "{err}");
}

#[test]
fn a_graph_with_the_wrong_output_shape_is_refused_before_running() {
    let err = OnnxPolicy::from_bytes(&data("mlp_4_8_2.onnx"), &obs_space(), &raw_outputs(3))
        .expect_err("refused");
    assert!(
        matches!(
            err,
            PolicyError::OnnxShape {
                which: "output",
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn a_graph_with_an_unsupported_operator_is_refused_naming_it() {
    let err = OnnxPolicy::from_bytes(&data("unsupported_op.onnx"), &obs_space(), &raw_outputs(1))
        .expect_err("refused");
    assert!(matches!(err, PolicyError::OnnxModel(_)), "{err}");
    assert!(err.to_string().contains("Det"), "{err}");
}

#[test]
fn garbage_and_truncated_graphs_are_refused() {
    let err = OnnxPolicy::from_bytes(b"definitely not protobuf", &obs_space(), &raw_outputs(2))
        .expect_err("refused");
    assert!(matches!(err, PolicyError::OnnxModel(_)), "{err}");
    let bytes = data("mlp_4_8_2.onnx");
    for cut in [bytes.len() / 3, bytes.len() - 10] {
        let err = OnnxPolicy::from_bytes(&bytes[..cut], &obs_space(), &raw_outputs(2))
            .expect_err("refused");
        assert!(
            matches!(
                err,
                PolicyError::OnnxModel(_) | PolicyError::OnnxShape { .. }
            ),
            "cut {cut}: {err}"
        );
    }
}

/// Found by the `policy_onnx` fuzz target: a graph whose output names no node's output makes
/// tract panic ("no entry found for key") while it reads the model. The loader catches it and
/// refuses the file, so a hostile submission cannot take the evaluator down.
#[test]
fn a_graph_that_makes_tract_panic_is_refused() {
    let bytes = data("output_names_no_node.onnx");
    for (observation, action) in [(obs_space(), raw_outputs(1)), (obs_space(), raw_outputs(2))] {
        let err = OnnxPolicy::from_bytes(&bytes, &observation, &action).expect_err("refused");
        assert!(matches!(err, PolicyError::OnnxModel(_)), "{err}");
        assert!(err.to_string().contains("tract panicked"), "{err}");
    }
}
