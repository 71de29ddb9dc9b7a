//! Keeps the Python client's port of the sims' drawings (`client/python/src/ale_client/render.py`)
//! in step with the Rust ones.
//!
//! For every registered sim this test resets it on a few seeds, steps it with actions sampled
//! from its action space by a generator seeded the same, and draws the observation it reaches:
//! one case per seed, after a different number of steps (0 is the reset observation). The
//! cases (sim id, observation widened to f64, drawing) must equal the checked-in
//! `client/python/tests/fixtures/drawings.json`, which the Python tests replay through the
//! port. Run with `ALE_UPDATE_FIXTURES=1` to rewrite the file after a deliberate change to a
//! drawing, then commit it together with the matching change to `render.py`.

use std::path::{Path, PathBuf};

use ale_sim::{Drawing, Rng};
use serde::Serialize;

/// (seed, steps): each sim is reset on the seed, stepped that many times (fewer if the
/// episode ends first), and its observation drawn. One case per seed keeps the file small.
const CASES: [(u64, usize); 3] = [(0, 0), (1, 1), (2, 5)];
/// The fixture must stay smaller than this many bytes.
const MAX_BYTES: usize = 150_000;

#[derive(Serialize)]
struct Case {
    sim_id: &'static str,
    seed: u64,
    steps: usize,
    observation: Vec<f64>,
    drawing: Drawing,
}

/// The fixture's `about` field, for a reader who opens the file.
const ABOUT: &str = "Made by sims/tests/drawing_fixture.rs (ALE_UPDATE_FIXTURES=1 rewrites it); \
                     replayed by client/python/tests/test_render.py.";

fn fixture_path() -> PathBuf {
    let sims = Path::new(env!("CARGO_MANIFEST_DIR"));
    sims.parent()
        .unwrap_or(sims)
        .join("client/python/tests/fixtures/drawings.json")
}

fn cases() -> Vec<Case> {
    let mut cases = Vec::new();
    for info in ale_sims::catalog().iter() {
        let mut sim = info.build_plain(info.default_max_steps()).unwrap();
        for (seed, wanted) in CASES {
            sim.reset(seed).unwrap();
            let mut rng = Rng::new(seed);
            let mut steps = 0;
            while steps < wanted {
                let action = sim.action_space().sample(&mut rng);
                let transition = sim.step(&action).expect("a sampled action is valid");
                steps += 1;
                if transition.is_done() {
                    break;
                }
            }
            cases.push(Case {
                sim_id: info.id(),
                seed,
                steps,
                observation: sim.observation().to_f64_vec(),
                drawing: info
                    .draw(sim.observation())
                    .expect("every bundled sim draws"),
            });
        }
    }
    cases
}

fn render() -> String {
    // One case per line: small, and a diff shows which cases changed.
    let mut text = String::from("{\"about\":");
    text += &serde_json::to_string(ABOUT).unwrap();
    text += ",\"cases\":[\n";
    let lines: Vec<String> = cases()
        .iter()
        .map(|c| serde_json::to_string(c).unwrap())
        .collect();
    text += &lines.join(",\n");
    text += "\n]}\n";
    text
}

/// Where two lines first differ, with a little of each around that place.
fn first_difference(expected: &str, found: &str) -> String {
    let at = expected
        .chars()
        .zip(found.chars())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| expected.chars().count().min(found.chars().count()));
    let around = |s: &str| -> String { s.chars().skip(at.saturating_sub(80)).take(160).collect() };
    format!(
        "from character {at}\n  expected: ...{}...\n  in file:  ...{}...",
        around(expected),
        around(found)
    )
}

#[test]
fn python_drawing_fixture_is_up_to_date() {
    let path = fixture_path();
    let fresh = render();
    // The text is valid JSON that reads back to the same cases.
    let parsed: serde_json::Value = serde_json::from_str(&fresh).unwrap();
    assert_eq!(
        parsed["cases"].as_array().unwrap().len(),
        ale_sims::catalog().iter().count() * CASES.len()
    );
    assert!(
        fresh.len() < MAX_BYTES,
        "the fixture would be {} bytes, over {MAX_BYTES}: draw fewer cases",
        fresh.len()
    );
    if std::env::var_os("ALE_UPDATE_FIXTURES").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &fresh).unwrap();
        eprintln!("wrote {} ({} bytes)", path.display(), fresh.len());
        return;
    }
    let rerun = "rerun with ALE_UPDATE_FIXTURES=1 \
                 (`ALE_UPDATE_FIXTURES=1 cargo test -p ale-sims --test drawing_fixture`) to \
                 rewrite it, and port the drawing change to client/python/src/ale_client/render.py";
    let stored = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}; {rerun}", path.display()));
    if stored == fresh {
        return;
    }
    let stored_lines: Vec<&str> = stored.lines().collect();
    let detail = fresh
        .lines()
        .zip(stored_lines.iter().copied().chain(std::iter::repeat("")))
        .enumerate()
        .find(|(_, (a, b))| a != b)
        .map_or_else(
            || "the file has extra lines at its end".to_string(),
            |(i, (a, b))| format!("line {}: {}", i + 1, first_difference(a, b)),
        );
    panic!(
        "{} differs from the sims' drawings; {rerun}.\n{detail}",
        path.display()
    );
}
