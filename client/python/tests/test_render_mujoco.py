"""The Python drawings of the MuJoCo sims equal the Rust ones.

``fixtures/mujoco_drawings.json`` is written by the Rust test
``sims/gymnasium-mujoco/tests/drawing.rs`` (``ALE_UPDATE_FIXTURES=1 cargo test -p
ale-sims-mujoco --features mujoco --test drawing``), ``fixtures/go1_drawings.json`` by
``sims/go1/tests/drawing.rs`` (the same, ``-p ale-sims-go1``): for every MuJoCo sim a few
observations the real sims produced, each with the drawing the Rust side made of it. The
Python side places the same pose with the ``mujoco`` package on Gymnasium's model files, and
on MuJoCo Menagerie's Go1 (``ALE_GO1_ASSETS``, which conftest points at the evaluator's copy).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ale_client import mujoco_view, render

from test_render import as_rust_drawing, case_id, differences

FIXTURES = Path(__file__).resolve().parent / "fixtures"
CASES = [
    case
    for name in ("mujoco_drawings.json", "go1_drawings.json")
    for case in json.loads((FIXTURES / name).read_text())["cases"]
]


def test_the_fixture_covers_every_mujoco_sim():
    assert {c["sim_id"] for c in CASES} == set(mujoco_view.SIM_IDS)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_python_drawing_equals_rust_drawing(case):
    found = as_rust_drawing(render.draw(case["sim_id"], np.array(case["observation"])))
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


def test_the_go1_without_its_model_says_where_to_get_it(monkeypatch):
    monkeypatch.setenv(mujoco_view.GO1_ASSETS_ENV, "/nonexistent")
    # Named, ALE_GO1_ASSETS is the only place looked at, as the evaluator does.
    monkeypatch.setattr(mujoco_view, "_GO1_SCRATCH", [])
    why = render.why_not_drawn(mujoco_view.GO1_SIM_ID)
    assert why is not None and "ale-client[go1]" in why and "ALE_GO1_ASSETS" in why
    with pytest.raises(FileNotFoundError, match="ALE_GO1_ASSETS"):
        render.draw(mujoco_view.GO1_SIM_ID, np.zeros(45))
    assert render.why_not_drawn("Hopper-v5") is None


def test_the_go1_model_is_read_as_the_evaluator_reads_it():
    # scene.rs's physics_only: the visual meshes dropped, a file it might misread refused.
    go1 = """<mujoco model="go1">
  <asset><mesh class="go1" file="trunk.stl"/><material name="dark"/></asset>
  <worldbody><body name="trunk"><inertial mass="1"/><geom
    class="visual" mesh="trunk"/><geom class="collision" type="box"/></body></worldbody>
</mujoco>"""
    body = mujoco_view._physics_only(go1)
    assert "<mesh" not in body and 'mesh="trunk"' not in body and "<material" in body
    assert '<geom class="collision" type="box"/>' in body
    for bad in (
        "<mujoco><!-- a > b --></mujoco>",
        "<robot/>",
        go1.replace('<inertial mass="1"/>', ""),
        go1.replace('class="visual" mesh', "mesh"),
    ):
        with pytest.raises(ValueError, match="not the Go1 model expected"):
            mujoco_view._physics_only(bad)


def test_an_orientation_from_a_bad_gravity_is_upright():
    for bad in ([np.nan, 0, -1], [0, np.inf, -1], [0, 0, 0]):
        assert mujoco_view._orientation_from_gravity(bad) == (1.0, 0.0, 0.0, 0.0)
