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

use ale_sim::draw_fixture;

/// (seed, steps): each sim is reset on the seed, stepped that many times (fewer if the
/// episode ends first), and its observation drawn. One case per seed keeps the file small.
const CASES: [(u64, usize); 3] = [(0, 0), (1, 1), (2, 5)];
/// The fixture must stay smaller than this many bytes.
const MAX_BYTES: usize = 150_000;

const ABOUT: &str = "Made by sims/tests/drawing_fixture.rs (ALE_UPDATE_FIXTURES=1 rewrites it); \
                     replayed by client/python/tests/test_render.py.";

fn fixture_path() -> PathBuf {
    let sims = Path::new(env!("CARGO_MANIFEST_DIR"));
    sims.parent()
        .unwrap_or(sims)
        .join("client/python/tests/fixtures/drawings.json")
}

#[test]
fn python_drawing_fixture_is_up_to_date() {
    let cases = draw_fixture::cases(&ale_sims::catalog(), &CASES);
    assert_eq!(
        cases.len(),
        ale_sims::catalog().iter().count() * CASES.len()
    );
    let fresh = draw_fixture::render(ABOUT, &cases);
    assert!(
        fresh.len() < MAX_BYTES,
        "the fixture would be {} bytes, over {MAX_BYTES}: draw fewer cases",
        fresh.len()
    );
    draw_fixture::check(
        &fixture_path(),
        &fresh,
        "rerun with ALE_UPDATE_FIXTURES=1 \
         (`ALE_UPDATE_FIXTURES=1 cargo test -p ale-sims --test drawing_fixture`) to rewrite it, \
         and port the drawing change to client/python/src/ale_client/render.py",
    );
}
