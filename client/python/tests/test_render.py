"""The Python drawings equal the Rust ones, and the rasterizer paints them.

``fixtures/drawings.json`` is written by the Rust test ``sims/tests/drawing_fixture.rs``
(``ALE_UPDATE_FIXTURES=1 cargo test -p ale-sims --test drawing_fixture``): for every sim a
few observations the real sims produced, each with the drawing the Rust ``draw`` made of it.
Run with ``PYTHONPATH=client/python/src``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from ale_client import render

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "drawings.json"
CASES = json.loads(FIXTURE.read_text())["cases"]
TOLERANCE = 1e-9


def case_id(case):
    return f"{case['sim_id']}-seed{case['seed']}-steps{case['steps']}"


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)


def as_rust(shape) -> dict:
    """A Python shape in the fixture's JSON form."""
    if isinstance(shape, render.Line):
        return {
            "kind": "line",
            "from": list(shape.start),
            "to": list(shape.end),
            "role": shape.role,
        }
    if isinstance(shape, render.Circle):
        return {
            "kind": "circle",
            "center": list(shape.center),
            "radius": shape.radius,
            "role": shape.role,
        }
    if isinstance(shape, render.Polygon):
        return {"kind": "polygon", "points": [list(p) for p in shape.points], "role": shape.role}
    if isinstance(shape, render.Label):
        return {"kind": "label", "at": list(shape.at), "text": shape.text, "role": shape.role}
    raise AssertionError(f"not a shape: {shape!r}")


def as_rust_drawing(drawing) -> dict:
    """A Python drawing as the Rust fixture serialises one: its viewport and its shapes."""
    v = drawing.viewport
    return {
        "viewport": {"x_min": v.x_min, "x_max": v.x_max, "y_min": v.y_min, "y_max": v.y_max},
        "shapes": [as_rust(s) for s in drawing.shapes],
    }


def differences(expected, found, where: str = ""):
    """Every place where two JSON-like values differ beyond the tolerance."""
    if isinstance(expected, dict):
        if not isinstance(found, dict) or set(expected) != set(found):
            return [f"{where}: expected keys {sorted(expected)}, found {found!r}"]
        return [d for k in expected for d in differences(expected[k], found[k], f"{where}.{k}")]
    if isinstance(expected, list):
        if not isinstance(found, list) or len(expected) != len(found):
            return [f"{where}: expected {len(expected)} items, found {found!r}"]
        return [
            d
            for i, (e, f) in enumerate(zip(expected, found))
            for d in differences(e, f, f"{where}[{i}]")
        ]
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        if isinstance(found, (int, float)) and close(float(expected), float(found)):
            return []
        return [f"{where}: expected {expected!r}, found {found!r}"]
    return [] if expected == found else [f"{where}: expected {expected!r}, found {found!r}"]


def test_the_fixture_covers_every_sim():
    assert {c["sim_id"] for c in CASES} == set(render.SIM_IDS)


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_python_drawing_equals_rust_drawing(case, dtype):
    # The observations are f32 values widened to f64, so both dtypes hold them exactly.
    observation = np.array(case["observation"], dtype=dtype)
    found = as_rust_drawing(render.draw(case["sim_id"], observation))
    problems = differences(case["drawing"], found, "drawing")
    summary = f"{case_id(case)}: {len(problems)} differences:\n"
    assert not problems, summary + "\n".join(problems[:20])


def test_swarm_observation_is_read_row_by_row_whatever_its_shape():
    case = next(c for c in CASES if c["sim_id"] == "swarm2d")
    flat = np.array(case["observation"], dtype=np.float32)
    assert render.draw("swarm2d", flat.reshape(16, -1)) == render.draw("swarm2d", flat)


def test_missing_elements_read_as_zero():
    assert render.draw("CartPole-v1", []) == render.draw("CartPole-v1", np.zeros(4))
    assert render.draw("Acrobot-v1", [1.0]) == render.draw("Acrobot-v1", [1.0, 0, 0, 0, 0, 0])
    assert render.draw("nav2d", np.array([3], dtype=np.int64)) == render.draw("nav2d", [3.0])


def test_unknown_sim_raises_value_error_naming_the_known_ones():
    with pytest.raises(ValueError) as error:
        render.draw("CartPole-v0", np.zeros(4))
    for sim_id in render.SIM_IDS:
        assert sim_id in str(error.value)
    with pytest.raises(ValueError):
        render.rgb_array("no-such-sim", np.zeros(4))


@pytest.mark.parametrize("sim_id", render.SIM_IDS)
def test_rasterize_paints_every_sim(sim_id):
    case = next(c for c in CASES if c["sim_id"] == sim_id)
    image = render.rgb_array(sim_id, np.array(case["observation"]))
    assert image.shape == (400, 600, 3)
    assert image.dtype == np.uint8
    background = np.all(image == render.BACKGROUND, axis=-1)
    assert not background.all()
    # Every role the drawing uses shows somewhere: nothing is painted over entirely.
    roles = {s["role"] for s in case["drawing"]["shapes"]}
    for role in roles:
        painted = np.all(image == render.ROLE_COLOURS[role], axis=-1)
        assert painted.any(), f"no pixel in the {role} colour"
    if sim_id != "Pendulum-v1":  # the pendulum is all limb and joint
        assert "body" in roles


def test_cartpole_cart_centre_is_body_coloured_and_pole_limb_coloured():
    x, theta = 0.7, 0.3
    width, height = 600, 400
    image = render.rgb_array("CartPole-v1", np.array([x, 0.0, theta, 0.0]), width, height)
    # The viewport is 5.6 x 2.2 world units, wider than the 3:2 image, so its height grows to
    # 5.6 / 1.5 units about its centre, y = 0.5.
    scale = width / 5.6
    y_top = 0.5 + 5.6 / 1.5 / 2.0

    def pixel(wx, wy):
        return image[int((y_top - wy) * scale), int((wx + 2.8) * scale)]

    assert tuple(pixel(x, 0.1)) == render.ROLE_COLOURS["body"]
    near_tip = (x + 0.9 * math.sin(theta), 0.2 + 0.9 * math.cos(theta))
    assert tuple(pixel(*near_tip)) == render.ROLE_COLOURS["limb"]
    assert tuple(pixel(-2.7, 1.5)) == render.BACKGROUND
    assert tuple(pixel(-2.6, 0.0)) == render.ROLE_COLOURS["ground"]


def test_rasterize_keeps_proportions_and_sizes():
    # A circle stays round however the image is shaped.
    drawing = render.Drawing(render.Viewport(-1.0, 1.0, -1.0, 1.0))
    drawing.circle((0.0, 0.0), 1.0, "goal")
    for width, height in [(300, 100), (100, 300), (64, 64)]:
        image = render.rasterize(drawing, width, height)
        assert image.shape == (height, width, 3)
        goal = np.all(image == render.ROLE_COLOURS["goal"], axis=-1)
        rows, cols = np.nonzero(goal)
        extent_w, extent_h = cols.max() - cols.min() + 1, rows.max() - rows.min() + 1
        assert abs(extent_w - extent_h) <= 1
        assert abs(extent_w - min(width, height)) <= 2


def test_polygons_are_filled():
    drawing = render.Drawing(render.Viewport(0.0, 10.0, 0.0, 10.0))
    drawing.polygon([(1.0, 1.0), (9.0, 1.0), (5.0, 9.0)], "hazard")
    image = render.rasterize(drawing, 100, 100)
    assert tuple(image[50, 50]) == render.ROLE_COLOURS["hazard"]
    assert tuple(image[20, 10]) == render.BACKGROUND
    # The triangle's area is 3200 pixels; its outline, a line two pixels wide, adds a band
    # about one pixel wide outside its 259-pixel perimeter.
    hazard = np.all(image == render.ROLE_COLOURS["hazard"], axis=-1).sum()
    assert 3200 <= hazard <= 3200 + 1.2 * 259


def test_shapes_outside_the_viewport_and_degenerate_ones_are_harmless():
    drawing = render.Drawing(render.Viewport(0.0, 1.0, 0.0, 1.0))
    drawing.line((5.0, 5.0), (6.0, 6.0), "limb")
    drawing.line((0.5, 0.5), (0.5, 0.5), "limb")
    drawing.circle((float("nan"), 0.5), 0.1, "body")
    drawing.polygon([], "ground")
    drawing.polygon([(0.2, 0.2)], "ground")
    drawing.shapes.append(render.Label((0.5, 0.5), "hi", "goal"))
    image = render.rasterize(drawing, 50, 50)
    assert image.shape == (50, 50, 3)
    with pytest.raises(ValueError):
        render.rasterize(render.Drawing(render.Viewport(0.0, 0.0, 0.0, 1.0)))
