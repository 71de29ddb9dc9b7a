//! Replays every Gymnasium fixture under sims/tests/fixtures/<env>/ (made by
//! scripts/gymnasium_fixtures.py) against the bundled sims: the state fixtures `NN.json` and
//! the seeded ones `sNN.json`.

use std::path::Path;

use ale_sim::parity::{Fixture, ReplayError, Start};

const CLASSIC_CONTROL: [&str; 5] = [
    "CartPole-v1",
    "Pendulum-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "Acrobot-v1",
];

#[test]
fn every_gymnasium_fixture_replays_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .flat_map(|env| std::fs::read_dir(env).unwrap())
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut per_env = std::collections::BTreeMap::<String, (usize, usize)>::new();
    let mut failures = Vec::new();
    for file in &files {
        let fixture = Fixture::parse(&std::fs::read_to_string(file).unwrap()).unwrap();
        let counts = per_env.entry(fixture.env.clone()).or_default();
        match fixture.start {
            Start::State(_) => counts.0 += 1,
            Start::Seed { .. } => counts.1 += 1,
        }
        match fixture.replay(&ale_sims::catalog()) {
            Ok(replayed) if replayed.initial_observation_exact == Some(false) => failures.push(
                format!("{}: reset observation not bit for bit", file.display()),
            ),
            Ok(_) => {}
            Err(e) => failures.push(format!("{}: {e}", file.display())),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    for env in CLASSIC_CONTROL {
        let (states, seeds) = per_env.get(env).copied().unwrap_or_default();
        assert!(states >= 20 && seeds >= 5, "{env}: {per_env:?}");
    }
}

#[test]
fn a_tampered_fixture_fails_at_the_right_step() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/Acrobot-v1/00.json");
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let obs = &mut value["observations"][5][4];
    *obs = serde_json::json!(obs.as_f64().unwrap() * (1.0 + 1e-5));
    let fixture = Fixture::parse(&value.to_string()).unwrap();
    let err = fixture
        .replay(&ale_sims::catalog())
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("step 5: observation[4]"), "{err}");
}

fn seeded_fixture(path: &str) -> serde_json::Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(path);
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_seeded_fixture_starts_from_its_seed_and_must_give_gymnasiums_first_observation() {
    // s05 is reset(seed=2**63 + 7).
    let mut value = seeded_fixture("Acrobot-v1/s05.json");
    assert_eq!(
        value["seed"],
        serde_json::json!(9_223_372_036_854_775_815u64)
    );
    let replayed = Fixture::parse(&value.to_string())
        .unwrap()
        .replay(&ale_sims::catalog())
        .unwrap();
    assert_eq!(replayed.initial_observation_exact, Some(true));

    // One ULP off in float32 is within tolerance, but not bit for bit.
    let x = value["initial_observation"][0].as_f64().unwrap() as f32;
    value["initial_observation"][0] = serde_json::json!(f32::from_bits(x.to_bits() - 1));
    let replayed = Fixture::parse(&value.to_string())
        .unwrap()
        .replay(&ale_sims::catalog())
        .unwrap();
    assert_eq!(replayed.initial_observation_exact, Some(false));

    // Another seed's start fails at the reset, before any step.
    value["seed"] = serde_json::json!(7);
    let err = Fixture::parse(&value.to_string())
        .unwrap()
        .replay(&ale_sims::catalog())
        .unwrap_err();
    assert!(matches!(err, ReplayError::Reset { seed: 7, .. }), "{err}");
    assert!(
        err.to_string().starts_with("reset(seed=7): observation[0]"),
        "{err}"
    );
}
