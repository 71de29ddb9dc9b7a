//! `reset(seed)` draws the same initial state as Gymnasium's `reset(seed=seed)`: the noise
//! comes from NumPy's `default_rng(seed)` in Gymnasium's order (recorded in
//! tests/fixtures/resets.json by scripts/gymnasium_mujoco_fixtures.py).
#![cfg(feature = "mujoco")]

use ale_sim::Sim;
use ale_sims_mujoco::{ENV_IDS, GymnasiumMujoco};
use serde::Deserialize;

#[derive(Deserialize)]
struct Reset {
    env: String,
    seed: u64,
    qpos: Vec<f64>,
    qvel: Vec<f64>,
    observation: Vec<f64>,
}

#[test]
fn a_seeded_reset_gives_gymnasiums_state_and_observation_exactly() {
    let text = include_str!("fixtures/resets.json");
    let resets: Vec<Reset> = serde_json::from_str(text).unwrap();
    for id in ENV_IDS {
        assert!(resets.iter().filter(|r| r.env == id).count() >= 3, "{id}");
    }
    for r in resets {
        let mut sim = GymnasiumMujoco::new(&r.env, 1000).unwrap();
        sim.reset(r.seed).unwrap();
        let at = format!("{} seed {}", r.env, r.seed);
        assert_eq!(sim.qpos(), r.qpos.as_slice(), "{at}: qpos");
        assert_eq!(sim.qvel(), r.qvel.as_slice(), "{at}: qvel");
        assert_eq!(
            sim.observation().to_f64_vec(),
            r.observation,
            "{at}: observation"
        );
    }
}
