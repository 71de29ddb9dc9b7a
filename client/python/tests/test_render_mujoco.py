"""The Python drawings of the MuJoCo sims equal the Rust ones.

``fixtures/mujoco_drawings.json`` is written by the Rust test
``sims/gymnasium-mujoco/tests/drawing.rs`` (``ALE_UPDATE_FIXTURES=1 cargo test -p
ale-sims-mujoco --features mujoco --test drawing``): for every MuJoCo sim a few observations
the real sims produced, each with the drawing the Rust side made of it. The Python side
places the same pose with the ``mujoco`` package on Gymnasium's model files.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ale_client import mujoco_view, render

from test_render import as_rust, case_id, differences

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "mujoco_drawings.json"
CASES = json.loads(FIXTURE.read_text())["cases"]


def test_the_fixture_covers_every_mujoco_sim():
    assert {c["sim_id"] for c in CASES} == set(mujoco_view.SIM_IDS)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_python_drawing_equals_rust_drawing(case):
    drawing = render.draw(case["sim_id"], np.array(case["observation"]))
    found = {
        "viewport": {
            "x_min": drawing.viewport.x_min,
            "x_max": drawing.viewport.x_max,
            "y_min": drawing.viewport.y_min,
            "y_max": drawing.viewport.y_max,
        },
        "shapes": [as_rust(s) for s in drawing.shapes],
    }
    problems = differences(case["drawing"], found)
    assert not problems, "\n".join(problems[:10])


@pytest.mark.parametrize("sim_id", mujoco_view.SIM_IDS)
def test_every_mujoco_sim_rasterizes_and_survives_a_bad_observation(sim_id):
    case = next(c for c in CASES if c["sim_id"] == sim_id)
    image = render.rgb_array(sim_id, np.array(case["observation"]), 120, 80)
    assert image.shape == (80, 120, 3) and image.dtype == np.uint8
    assert (image != np.array(render.BACKGROUND, dtype=np.uint8)).any()
    for bad in ([], [np.nan, np.inf], np.full(300, 1e300)):
        assert render.draw(sim_id, np.array(bad, dtype=np.float64)).shapes


def test_an_unknown_sim_still_names_the_known_ones_mujoco_included():
    with pytest.raises(ValueError) as error:
        render.draw("Hopper-v4", np.zeros(11))
    assert "Hopper-v5" in str(error.value) and "CartPole-v1" in str(error.value)
