//! Replays every Gymnasium fixture under sims/tests/fixtures/ (made by
//! scripts/gymnasium_fixtures.py) against the bundled sims.

use std::path::Path;

use ale_sim::parity::Fixture;

#[test]
fn every_gymnasium_fixture_replays_exactly() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .flat_map(|env| std::fs::read_dir(env.unwrap().path()).unwrap())
        .map(|f| f.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    let mut per_env = std::collections::BTreeMap::<String, usize>::new();
    let mut failures = Vec::new();
    for file in &files {
        let fixture = Fixture::parse(&std::fs::read_to_string(file).unwrap()).unwrap();
        *per_env.entry(fixture.env.clone()).or_default() += 1;
        if let Err(e) = fixture.replay(&ale_sims::catalog()) {
            failures.push(format!("{}: {e}", file.display()));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} fixtures failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
    for env in [
        "CartPole-v1",
        "Pendulum-v1",
        "MountainCar-v0",
        "MountainCarContinuous-v0",
        "Acrobot-v1",
    ] {
        assert!(
            per_env.get(env).copied().unwrap_or(0) >= 20,
            "{env}: {per_env:?}"
        );
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
