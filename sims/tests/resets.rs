//! Every classic-control sim's `reset(seed)` gives the observation Gymnasium's
//! `env.reset(seed=seed)` gives, bit for bit, for each of the 1075 seeds in
//! tests/fixtures/resets.jsonl (recorded by scripts/gymnasium_fixtures.py: 0..1000, the edges
//! of the u32 and u64 ranges, and seeds drawn across the u64 range).

use std::path::Path;

use serde_json::Value;

const FIXTURE: &str = "tests/fixtures/resets.jsonl";

#[test]
fn reset_observations_are_gymnasiums_bit_for_bit() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(FIXTURE))
        .expect("fixture missing: run scripts/gymnasium_fixtures.py");
    let mut lines = text
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap());
    let header = lines.next().unwrap();
    let envs: Vec<&str> = header["envs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap())
        .collect();
    assert_eq!(envs.len(), 5, "{header}");
    let lines: Vec<Value> = lines.collect();
    assert_eq!(lines.len() as u64, header["seeds"].as_u64().unwrap());
    assert!(lines.len() >= 1000);

    let catalog = ale_sims::catalog();
    let mut sims: Vec<_> = envs
        .iter()
        .map(|env| {
            let entry = catalog.find(env).unwrap();
            entry.build_plain(entry.default_max_steps()).unwrap()
        })
        .collect();
    let mut seeds = std::collections::BTreeSet::new();
    let mut failures = Vec::new();
    for line in &lines {
        let seed = line["seed"].as_u64().unwrap();
        seeds.insert(seed);
        for (env, sim) in envs.iter().zip(&mut sims) {
            sim.reset(seed).unwrap();
            let ours: Vec<u32> = sim
                .observation()
                .as_f32()
                .unwrap()
                .iter()
                .map(|x| x.to_bits())
                .collect();
            let gymnasium: Vec<u32> = line[env]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| u32::from_str_radix(h.as_str().unwrap(), 16).unwrap())
                .collect();
            if ours != gymnasium {
                failures.push(format!(
                    "{env} reset(seed={seed}): ours {:?}, Gymnasium {:?}",
                    ours.iter().map(|&b| f32::from_bits(b)).collect::<Vec<_>>(),
                    gymnasium
                        .iter()
                        .map(|&b| f32::from_bits(b))
                        .collect::<Vec<_>>()
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} resets differ:\n{}",
        failures.len(),
        lines.len() * envs.len(),
        failures.join("\n")
    );
    // The edges of the seed range are in it.
    for seed in [0, u64::from(u32::MAX), 1 << 32, (1 << 63) + 7, u64::MAX] {
        assert!(seeds.contains(&seed), "{seed}");
    }
}
