//! The bodies of the fuzz targets, one function per target (`fuzz_targets/<name>.rs` calls
//! `ale_fuzz::<name>`). Each takes arbitrary bytes, as a hostile client, task author, policy
//! submitter or record forger could hand them over, and must never panic, hang or allocate
//! from a size the input declares; what it checks beyond that is said in each.
//!
//! The normal test suite runs these same functions on the seed corpus (`fuzz/corpus/<name>/`)
//! and on every input a fuzz run once crashed on (`server/tests/fuzz_seeds.rs`).

use std::sync::OnceLock;

use ale_proto::pb;
use ale_sim::{Rng, Sim, Space, Tensor};
use prost::Message;

/// One fresh sim of every simulator, reset, for targets that step them.
fn sims() -> Vec<Box<dyn Sim>> {
    ale_sims::catalog()
        .iter()
        .map(|info| {
            let mut sim = info.build_plain(info.default_max_steps()).unwrap();
            sim.reset(7).unwrap();
            sim
        })
        .collect()
}

/// Every simulator's (observation space, action space).
fn spaces() -> &'static [(Space, Space)] {
    static SPACES: OnceLock<Vec<(Space, Space)>> = OnceLock::new();
    SPACES.get_or_init(|| {
        sims()
            .iter()
            .map(|sim| (sim.observation_space().clone(), sim.action_space().clone()))
            .collect()
    })
}

/// A `Step` request as the evaluator receives it: the protobuf is decoded, its action tensor
/// converted to the domain type (dtype, shape, data length), checked against every
/// simulator's action space and, where it is a member, stepped. A tensor the check accepts
/// must never make a sim refuse it as malformed or panic.
pub fn tensor_action(data: &[u8]) {
    let Ok(request) = pb::StepRequest::decode(data) else {
        return;
    };
    let Some(action) = request.action else {
        return;
    };
    let Ok(tensor) = Tensor::try_from(action) else {
        return;
    };
    let accepted: Vec<bool> = spaces()
        .iter()
        .map(|(observation, action)| {
            let _ = observation.check(&tensor);
            action.check(&tensor).is_ok()
        })
        .collect();
    if accepted.iter().any(|a| *a) {
        for (mut sim, accepted) in sims().into_iter().zip(accepted) {
            if accepted {
                // A sim may still refuse an action by its state (SimError::State); never
                // panic.
                let _ = sim.step(&tensor);
            }
        }
    }
}

/// A `Space` as a client decodes it from `GetSpec` (a hostile or broken evaluator's): decoded,
/// validated, and, if valid, its size computed and, when small, a sample drawn, which must be
/// a member of the space and survive a round trip through the wire form.
pub fn space(data: &[u8]) {
    let Ok(wire) = pb::Space::decode(data) else {
        return;
    };
    let Ok(space) = Space::try_from(wire) else {
        return;
    };
    let len = space.flat_len();
    let _ = space.shape();
    if len <= 1 << 12 {
        let mut rng = Rng::new(len as u64);
        let sample = space.sample(&mut rng);
        if let Err(e) = space.check(&sample) {
            panic!("a sample of {space:?} is not in it: {e}");
        }
    }
    let again = Space::try_from(pb::Space::from(&space)).expect("a valid space re-decodes");
    assert_eq!(format!("{again:?}"), format!("{space:?}"));
}

/// Plays a loaded policy for one block of zero observations: whatever the file held, it must
/// act or refuse, never panic.
fn act_once(mut policy: Box<dyn ale_policy::BatchPolicy + Send>) {
    let rows = 2;
    let observations = vec![0.0f32; rows * policy.obs_dim()];
    let mut actions = policy.action_map().blank_actions(rows);
    let _ = policy.act(&observations, rows, &mut actions);
}

/// A batch submission read as `mlp-safetensors` for every simulator's spaces: Box → Discrete
/// (CartPole), Box → Box (Pendulum, nav2d), [R, F] → [R, A] Boxes (the swarm, whose MLP may be
/// per row), and spaces the loader refuses.
pub fn policy_safetensors(data: &[u8]) {
    for (observation, action) in spaces() {
        if let Ok(policy) = ale_policy::load(ale_policy::MLP_SAFETENSORS, data, observation, action)
        {
            act_once(policy);
        }
    }
}

/// A batch submission read as `onnx` for every simulator's spaces (with the `onnx` feature;
/// without it the loader refuses the format, which is all there is to check). The loader
/// catches tract's own panics (hostile bytes reach its parser) and refuses the file; the fuzz
/// target lets panics unwind (see `fuzz_targets/policy_onnx.rs`), so only one that escapes the
/// loader is a crash.
pub fn policy_onnx(data: &[u8]) {
    for (observation, action) in spaces() {
        if let Ok(policy) = ale_policy::load(ale_policy::ONNX, data, observation, action) {
            act_once(policy);
        }
    }
}

/// A task file as `ale serve --tasks-dir` reads it; a task that loads must also describe
/// itself on the wire.
pub fn task_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(task) = ale_server::Task::from_toml("fuzz.toml", text, &ale_sims::catalog()) {
        let _ = task.spec();
        let _ = ale_server::service::task_metadata(&task);
    }
}

/// A trajectory as `ale harness verify` reads it, twice: as given (where the hash chain
/// refuses nearly everything at its first line), and re-sealed, each JSON line's `level`,
/// `kind` and `data` chained again with the public rule, as a forger without the key would,
/// so that the event rules behind the chain (order, rollouts, the result's arithmetic) see
/// arbitrary events. The harness log's rules get the same re-sealed text.
pub fn trajectory(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = ale_harness::verify::verify_trajectory(text);
    let resealed = reseal(text);
    if let Ok(verified) = ale_harness::verify::verify_trajectory(&resealed) {
        let _ = verified.rules();
    }
    let _ = ale_harness::verify::verify_harness_log(&resealed, "");
}

fn reseal(text: &str) -> String {
    use ale_records::trajectory::{Chain, EventKind, Level};
    let mut chain = Chain::new();
    let mut out = String::new();
    for line in text.lines() {
        let Ok(serde_json::Value::Object(mut event)) = serde_json::from_str(line) else {
            continue;
        };
        let level = event
            .remove("level")
            .and_then(|l| serde_json::from_value::<Level>(l).ok())
            .unwrap_or(Level::TrustedEvaluator);
        let Some(kind) = event
            .remove("kind")
            .and_then(|k| serde_json::from_value::<EventKind>(k).ok())
        else {
            continue;
        };
        let data = event.remove("data").unwrap_or(serde_json::Value::Null);
        let (sealed, _) = chain.seal(level, kind, 0, data);
        out.push_str(&sealed);
        out.push('\n');
    }
    out
}
