//! The fuzz targets' bodies (`fuzz/src/lib.rs`), run by the normal suite on each target's seed
//! corpus (`fuzz/corpus/<target>/`) and on the inputs a fuzz run once crashed on, so that the
//! targets keep compiling and the crashes stay fixed without libFuzzer or nightly.
//!
//! `ALE_UPDATE_FUZZ_SEEDS=1 cargo test -p ale-server --test fuzz_seeds` rewrites the seeds
//! made from the project's own values (every sim's spaces and actions, a real trajectory);
//! the task files and policy files are copied from where they live.

#[path = "../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod bodies;

use std::path::{Path, PathBuf};

use ale_proto::pb;
use prost::Message;

fn corpus(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus")
        .join(target)
}

/// Runs `body` on every file of the target's corpus; there must be some.
fn run_corpus(target: &str, body: fn(&[u8])) {
    let dir = corpus(target);
    let mut ran = 0;
    for entry in std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
    {
        body(&std::fs::read(entry.path()).unwrap());
        ran += 1;
    }
    assert!(ran > 0, "no seeds in {}", dir.display());
}

fn updating() -> bool {
    std::env::var_os("ALE_UPDATE_FUZZ_SEEDS").is_some()
}

fn write_seed(target: &str, name: &str, bytes: &[u8]) {
    let dir = corpus(target);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(name), bytes).unwrap();
}

#[test]
fn tensor_action_seeds() {
    if updating() {
        for info in ale_sims::catalog().iter() {
            let sim = info.build_plain(info.default_max_steps()).unwrap();
            let mut rng = ale_sim::Rng::new(1);
            let action = sim.action_space().sample(&mut rng);
            let request = pb::StepRequest {
                handle: "env-0".into(),
                action: Some(action.into()),
            };
            write_seed("tensor_action", info.id(), &request.encode_to_vec());
        }
    }
    run_corpus("tensor_action", bodies::tensor_action);
}

#[test]
fn space_seeds() {
    if updating() {
        for info in ale_sims::catalog().iter() {
            let sim = info.build_plain(info.default_max_steps()).unwrap();
            for (which, space) in [
                ("observation", sim.observation_space()),
                ("action", sim.action_space()),
            ] {
                let wire = pb::Space::from(space);
                write_seed(
                    "space",
                    &format!("{}-{which}", info.id()),
                    &wire.encode_to_vec(),
                );
            }
        }
    }
    run_corpus("space", bodies::space);
}

#[test]
fn policy_safetensors_seeds() {
    if updating() {
        let file = include_bytes!("../../policy/tests/data/cartpole_mlp.safetensors");
        write_seed("policy_safetensors", "cartpole_mlp.safetensors", file);
    }
    run_corpus("policy_safetensors", bodies::policy_safetensors);
}

#[test]
fn policy_onnx_seeds() {
    if updating() {
        for name in [
            "mlp_4_8_2.onnx",
            "mlp_4_8_2_batch3.onnx",
            "unsupported_op.onnx",
        ] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../policy/tests/data")
                .join(name);
            write_seed("policy_onnx", name, &std::fs::read(path).unwrap());
        }
    }
    // Built without `onnx`, the loader refuses the format: the body still runs.
    run_corpus("policy_onnx", bodies::policy_onnx);
}

#[test]
fn task_file_seeds() {
    if updating() {
        let tasks = Path::new(env!("CARGO_MANIFEST_DIR")).join("tasks");
        for entry in std::fs::read_dir(tasks).unwrap().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            write_seed("task_file", &name, &std::fs::read(entry.path()).unwrap());
        }
    }
    run_corpus("task_file", bodies::task_file);
}

/// A real trajectory: a two-rollout session of CartPole played to its end.
fn played_trajectory() -> Vec<u8> {
    use ale_server::{Channel, Evaluator, TaskRegistry};
    let tmp = tempfile::tempdir().unwrap();
    let tasks = tmp.path().join("tasks");
    std::fs::create_dir(&tasks).unwrap();
    let task = include_str!("../tasks/cartpole-balance.toml")
        .replace("id = \"cartpole-balance\"", "id = \"cartpole-two\"")
        .replace("episodes = 20", "episodes = 2");
    std::fs::write(tasks.join("two.toml"), task).unwrap();
    let evaluator = Evaluator::new(
        TaskRegistry::with_dir(&tasks, &ale_sims::catalog()).unwrap(),
        &tmp.path().join("state"),
    )
    .unwrap();
    let env = evaluator
        .create_env(Channel::Harness, None, "cartpole-two", true)
        .unwrap();
    let (session, _) = evaluator
        .start_eval_session(Channel::Harness, &env.handle)
        .unwrap();
    for _ in 0..2 {
        evaluator
            .reset(Channel::Harness, &env.handle, None)
            .unwrap();
        while !evaluator
            .step(
                Channel::Harness,
                &env.handle,
                &ale_sim::Tensor::scalar_i64(1),
            )
            .unwrap()
            .1
            .is_done()
        {}
    }
    let result = evaluator
        .eval_result(Channel::Harness, &session, false)
        .unwrap();
    assert!(result.status.is_finished());
    let run_id = env.official.unwrap().1;
    std::fs::read(
        ale_records::layout::run_dir(&tmp.path().join("state"), &run_id)
            .join(ale_records::trajectory::TRAJECTORY_FILE),
    )
    .unwrap()
}

#[test]
fn trajectory_seeds() {
    if updating() {
        write_seed(
            "trajectory",
            "cartpole-two-rollouts.jsonl",
            &played_trajectory(),
        );
    }
    run_corpus("trajectory", bodies::trajectory);
}
