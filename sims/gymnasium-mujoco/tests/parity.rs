//! Episodes recorded from Gymnasium 1.4.0 on MuJoCo 3.17.0 (scripts/gymnasium_mujoco_fixtures.py)
//! replay through this crate's catalog within the parity tolerance, and in fact bit for bit.
#![cfg(feature = "mujoco")]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ale_sim::parity::{Fixture, Start};
use ale_sim::{Sim, Tensor};
use ale_sims_mujoco::{ENV_IDS, GymnasiumMujoco};

fn fixtures() -> Vec<(PathBuf, Fixture)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut out = Vec::new();
    for id in ENV_IDS {
        let dir = root.join(id);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
            .collect();
        files.sort();
        assert!(files.len() >= 3, "{id} has {} fixtures", files.len());
        for path in files {
            let text = std::fs::read_to_string(&path).unwrap();
            let fixture =
                Fixture::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_eq!(fixture.env, id, "{}", path.display());
            out.push((path, fixture));
        }
    }
    out
}

#[test]
fn every_fixture_replays_within_the_parity_tolerance() {
    let catalog = ale_sims_mujoco::catalog();
    let mut steps = 0;
    for (path, fixture) in fixtures() {
        let replayed = fixture
            .replay(&catalog)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert_ne!(
            replayed.initial_observation_exact,
            Some(false),
            "{}",
            path.display()
        );
        steps += replayed.steps;
    }
    assert!(steps > 3000, "only {steps} steps replayed");
}

/// The largest relative difference between two numbers (0 when equal, 1 when exactly one
/// is zero).
fn relative(got: f64, want: f64) -> f64 {
    if got == want {
        0.0
    } else {
        (got - want).abs() / got.abs().max(want.abs())
    }
}

#[test]
fn every_fixture_replays_bit_for_bit() {
    let mut worst: BTreeMap<&str, (f64, String)> = BTreeMap::new();
    for (path, fixture) in fixtures() {
        let id = ENV_IDS.iter().find(|id| **id == fixture.env).unwrap();
        let mut sim = GymnasiumMujoco::new(id, 1000).unwrap();
        let entry = worst.entry(id).or_insert((0.0, String::new()));
        match &fixture.start {
            Start::State(state) => sim.reset_to_state(state).unwrap(),
            Start::Seed { seed, observation } => {
                sim.reset(*seed).unwrap();
                assert_eq!(
                    &sim.observation().to_f64_vec(),
                    observation,
                    "{}",
                    path.display()
                );
            }
        }
        for (step, action) in fixture.actions.iter().enumerate() {
            let action: Vec<f32> = action
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_f64().unwrap() as f32)
                .collect();
            let t = sim.step(&Tensor::vector_f32(action)).unwrap();
            let got = sim.observation().to_f64_vec();
            let pairs = got
                .iter()
                .zip(&fixture.observations[step])
                .enumerate()
                .map(|(i, (g, w))| (format!("observation[{i}]"), *g, *w))
                .chain([("reward".to_string(), t.reward, fixture.rewards[step])]);
            for (what, got, want) in pairs {
                let r = relative(got, want);
                if r > entry.0 {
                    *entry = (
                        r,
                        format!("{} step {step} {what}: {got:e} vs {want:e}", path.display()),
                    );
                }
            }
        }
    }
    let differing: Vec<_> = worst.iter().filter(|(_, (r, _))| *r > 0.0).collect();
    assert!(differing.is_empty(), "not bit for bit: {differing:#?}");
}
