//! Test support for the Python client's ports of the drawings: the fixtures that keep each
//! port in step with the Rust drawing it mirrors.
//!
//! For every sim of a catalog, [`cases`] resets it on a few seeds, steps it with actions
//! sampled from its action space by a generator seeded the same, and draws the observation it
//! reaches: one case per seed (sim id, observation widened to f64, drawing). [`check`] compares
//! them with the checked-in fixture the Python tests replay, or rewrites it when
//! `ALE_UPDATE_FIXTURES` is set (after a deliberate change to a drawing; commit it with the
//! matching change to the port). This module reads and writes files: tests only.

use std::path::Path;

use serde::Serialize;

use crate::{Drawing, Rng, SimCatalog};

/// One drawn observation.
#[derive(Debug, Serialize)]
pub struct Case {
    pub sim_id: &'static str,
    pub seed: u64,
    pub steps: usize,
    pub observation: Vec<f64>,
    pub drawing: Drawing,
}

/// For each sim of `catalog` and each `(seed, steps)`: reset on the seed, that many sampled
/// actions (fewer if the episode ends first), then the drawing. Panics if a sim cannot be
/// built, stepped or drawn: the fixtures cover sims that can.
pub fn cases(catalog: &SimCatalog, plan: &[(u64, usize)]) -> Vec<Case> {
    let mut cases = Vec::new();
    for entry in catalog.iter() {
        let id = entry.id();
        let mut sim = entry
            .build_plain(entry.default_max_steps())
            .unwrap_or_else(|e| panic!("{id}: {e}"));
        for &(seed, wanted) in plan {
            sim.reset(seed).unwrap_or_else(|e| panic!("{id}: {e}"));
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
                sim_id: id,
                seed,
                steps,
                observation: sim.observation().to_f64_vec(),
                drawing: entry
                    .draw(sim.observation())
                    .unwrap_or_else(|| panic!("{id} draws no picture")),
            });
        }
    }
    cases
}

/// The fixture's text: `about` (who writes it, who replays it), then a case per line.
pub fn render(about: &str, cases: &[Case]) -> String {
    let lines: Vec<String> = cases
        .iter()
        .map(|c| serde_json::to_string(c).expect("a case serialises"))
        .collect();
    format!(
        "{{\"about\":{},\"cases\":[\n{}\n]}}\n",
        serde_json::to_string(about).expect("a string serialises"),
        lines.join(",\n")
    )
}

/// Panics unless the file at `path` holds `fresh`, naming the first line that differs and how
/// to rewrite it (`rerun`); with `ALE_UPDATE_FIXTURES` set, writes `fresh` there instead.
pub fn check(path: &Path, fresh: &str, rerun: &str) {
    if std::env::var_os("ALE_UPDATE_FIXTURES").is_some() {
        if let Some(folder) = path.parent() {
            std::fs::create_dir_all(folder).expect("the fixture's folder can be made");
        }
        std::fs::write(path, fresh).expect("the fixture can be written");
        eprintln!("wrote {} ({} bytes)", path.display(), fresh.len());
        return;
    }
    let stored = std::fs::read_to_string(path)
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
