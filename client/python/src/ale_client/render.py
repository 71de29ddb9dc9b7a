"""Pictures of the ALE sims, drawn from an observation alone, in pure Python and NumPy.

This module is a port of the Rust drawings in ``sims/src/*.rs`` (each sim's ``draw``) and a
small rasterizer for them, so a Gymnasium environment can offer ``render_mode="rgb_array"``
without asking the evaluator for anything but the observation it already sent.

* :func:`draw` turns a sim id and an observation into a :class:`Drawing`: a viewport in world
  coordinates and a list of shapes, each tagged with a role (``"ground"``, ``"body"``, ...).
  Shapes, their order and their numbers are the Rust ones; the cross-language test
  ``client/python/tests/test_render.py`` replays a fixture that the Rust test
  ``sims/tests/drawing_fixture.rs`` writes, so the two cannot drift apart unnoticed.
* :func:`rasterize` paints a drawing into an ``(height, width, 3)`` ``uint8`` image with the
  console's default theme colours.
* :func:`rgb_array` does both.

Like the Rust ``draw.rs`` helper ``obs``, an element missing from the observation reads as 0,
so drawing never fails on a short or empty observation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple, Union

import numpy as np

Point = Tuple[float, float]

ROLES = ("ground", "body", "limb", "joint", "goal", "hazard", "sensor")


# --------------------------------------------------------------------------------------------
# Drawing types (mirroring sims/src/draw.rs)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Viewport:
    """The world rectangle to show."""

    x_min: float
    x_max: float
    y_min: float
    y_max: float


@dataclass(frozen=True)
class Line:
    """A straight line from ``start`` to ``end`` (the Rust ``from`` and ``to``)."""

    start: Point
    end: Point
    role: str


@dataclass(frozen=True)
class Circle:
    """A circle of ``radius`` around ``center``."""

    center: Point
    radius: float
    role: str


@dataclass(frozen=True)
class Polygon:
    """A closed polygon through ``points`` (the last point joins the first)."""

    points: Tuple[Point, ...]
    role: str


@dataclass(frozen=True)
class Label:
    """A short text at a point."""

    at: Point
    text: str
    role: str


Shape = Union[Line, Circle, Polygon, Label]


@dataclass
class Drawing:
    """Shapes in world coordinates, painted in order, inside ``viewport``."""

    viewport: Viewport
    shapes: List[Shape] = field(default_factory=list)

    def line(self, start: Point, end: Point, role: str) -> None:
        """Appends a line."""
        self.shapes.append(Line(_point(start), _point(end), role))

    def circle(self, center: Point, radius: float, role: str) -> None:
        """Appends a circle."""
        self.shapes.append(Circle(_point(center), float(radius), role))

    def polygon(self, points: List[Point], role: str) -> None:
        """Appends a closed polygon."""
        self.shapes.append(Polygon(tuple(_point(p) for p in points), role))

    def rect(self, center: Point, half: Point, role: str) -> None:
        """Appends an axis-aligned rectangle centred on ``center`` with half-sizes ``half``."""
        x, y = center
        w, h = half
        self.polygon([(x - w, y - h), (x + w, y - h), (x + w, y + h), (x - w, y + h)], role)


def _point(p: Point) -> Point:
    return (float(p[0]), float(p[1]))


class _Obs:
    """An observation flattened in row-major order and widened to float, 0 past its end."""

    def __init__(self, observation) -> None:
        flat = np.asarray(observation).ravel()
        if flat.dtype == np.bool_:
            flat = flat.astype(np.uint8)
        self._values = flat

    def __call__(self, i: int) -> float:
        if 0 <= i < self._values.size:
            return float(self._values[i])
        return 0.0


def _f32(x: float) -> float:
    """``f64::from(x as f32)``: the constants the Rust sims keep in f32, widened."""
    return float(np.float32(x))


# --------------------------------------------------------------------------------------------
# The sims' drawings: one function per sim, a line-for-line port of its Rust `draw`.
# --------------------------------------------------------------------------------------------

# sims/src/cartpole.rs
_CARTPOLE_X_THRESHOLD = 2.4
_CARTPOLE_LENGTH = 0.5  # half the pole's length


def _draw_cartpole(o: _Obs) -> Drawing:
    x, theta = o(0), o(2)
    xt, length = _CARTPOLE_X_THRESHOLD, _CARTPOLE_LENGTH
    d = Drawing(Viewport(-xt - 0.4, xt + 0.4, -0.6, 1.6))
    d.line((-xt - 0.4, 0.0), (xt + 0.4, 0.0), "ground")
    d.line((-xt, -0.2), (-xt, 0.2), "hazard")
    d.line((xt, -0.2), (xt, 0.2), "hazard")
    d.rect((x, 0.1), (0.25, 0.1), "body")
    pivot = (x, 0.2)
    tip = (x + 2.0 * length * math.sin(theta), 0.2 + 2.0 * length * math.cos(theta))
    d.line(pivot, tip, "limb")
    d.circle(pivot, 0.03, "joint")
    return d


# sims/src/pendulum.rs
_PENDULUM_L = 1.0


def _draw_pendulum(o: _Obs) -> Drawing:
    c, s = o(0), o(1)
    d = Drawing(Viewport(-1.3, 1.3, -1.3, 1.3))
    d.circle((0.0, 1.0), 0.04, "goal")
    # theta is measured from upright, counter-clockwise positive.
    d.line((0.0, 0.0), (-_PENDULUM_L * s, _PENDULUM_L * c), "limb")
    d.circle((0.0, 0.0), 0.05, "joint")
    return d


# sims/src/mountain_car.rs (MountainCarContinuous-v0 draws the same hill with its own goal)
_MOUNTAIN_CAR_MIN_POSITION = -1.2
_MOUNTAIN_CAR_MAX_POSITION = 0.6
_MOUNTAIN_CAR_GOAL = 0.5
_MOUNTAIN_CAR_CONTINUOUS_GOAL = 0.45


def _hill_height(x: float) -> float:
    return math.sin(3.0 * x) * 0.45 + 0.55


def _draw_hill(o: _Obs, goal: float) -> Drawing:
    lo, hi = _MOUNTAIN_CAR_MIN_POSITION, _MOUNTAIN_CAR_MAX_POSITION
    d = Drawing(Viewport(lo, hi, 0.0, 1.2))
    n = 60
    xs = [lo + (hi - lo) * float(i) / float(n) for i in range(n + 1)]
    for a, b in zip(xs, xs[1:]):
        d.line((a, _hill_height(a)), (b, _hill_height(b)), "ground")
    h = _hill_height(goal)
    d.line((goal, h), (goal, h + 0.12), "goal")
    d.polygon([(goal, h + 0.12), (goal + 0.06, h + 0.1), (goal, h + 0.08)], "goal")
    x = o(0)
    d.circle((x, _hill_height(x) + 0.04), 0.04, "body")
    return d


def _draw_mountain_car(o: _Obs) -> Drawing:
    return _draw_hill(o, _MOUNTAIN_CAR_GOAL)


def _draw_mountain_car_continuous(o: _Obs) -> Drawing:
    return _draw_hill(o, _MOUNTAIN_CAR_CONTINUOUS_GOAL)


# sims/src/acrobot.rs
_ACROBOT_LINK_LENGTH_1 = 1.0


def _draw_acrobot(o: _Obs) -> Drawing:
    c1, s1, c2, s2 = o(0), o(1), o(2), o(3)
    d = Drawing(Viewport(-2.2, 2.2, -2.2, 2.2))
    d.line((-2.2, 1.0), (2.2, 1.0), "goal")
    # theta1 = 0 hangs straight down; angles counter-clockwise.
    p1 = (_ACROBOT_LINK_LENGTH_1 * s1, -_ACROBOT_LINK_LENGTH_1 * c1)
    # cos/sin of theta1 + theta2 from the observed pairs.
    c12, s12 = c1 * c2 - s1 * s2, s1 * c2 + c1 * s2
    p2 = (p1[0] + s12, p1[1] - c12)
    d.line((0.0, 0.0), p1, "limb")
    d.line(p1, p2, "limb")
    d.circle((0.0, 0.0), 0.06, "joint")
    d.circle(p1, 0.06, "joint")
    d.circle(p2, 0.04, "body")
    return d


# sims/src/reacher2d.rs (constants are f32 there)
_REACHER_LINK_LENGTH = _f32(1.0)
_REACHER_SUCCESS_RADIUS = _f32(0.1)


def _draw_reacher2d(o: _Obs) -> Drawing:
    # `f64::from(2.0 * LINK_LENGTH)`: the product is taken in f32 and is exact.
    reach = _f32(2.0 * _REACHER_LINK_LENGTH) + 0.2
    d = Drawing(Viewport(-reach, reach, -reach, reach))
    ln = _REACHER_LINK_LENGTH
    c1, s1, c2, s2 = o(0), o(1), o(2), o(3)
    elbow = (ln * c1, ln * s1)
    c12, s12 = c1 * c2 - s1 * s2, s1 * c2 + c1 * s2
    tip = (elbow[0] + ln * c12, elbow[1] + ln * s12)
    target = (o(6), o(7))
    d.circle((0.0, 0.0), 2.0 * ln, "ground")
    d.circle(target, _REACHER_SUCCESS_RADIUS, "goal")
    d.line((0.0, 0.0), elbow, "limb")
    d.line(elbow, tip, "limb")
    d.circle((0.0, 0.0), 0.08, "joint")
    d.circle(elbow, 0.06, "joint")
    d.circle(tip, 0.04, "body")
    return d


# sims/src/nav2d.rs (constants are f32 there)
_NAV_BEAMS = 32
_NAV_LIDAR_RANGE = _f32(5.0)
_NAV_ROBOT_RADIUS = _f32(0.2)
_NAV_GOAL_RADIUS = _f32(0.4)
_NAV_GOAL_DISTANCE = _NAV_BEAMS
_NAV_GOAL_BEARING = _NAV_BEAMS + 1
# `beam_angle(i) = TAU * i as f32 / BEAMS as f32`, computed in f32 as the Rust code does.
_NAV_BEAM_ANGLES = tuple(
    float(a)
    for a in (
        np.float32(2.0 * math.pi) * np.arange(_NAV_BEAMS, dtype=np.float32)
    ) / np.float32(_NAV_BEAMS)
)


def _draw_nav2d(o: _Obs) -> Drawing:
    r = _NAV_LIDAR_RANGE
    d = Drawing(Viewport(-r, r, -r, r))

    # Heading points up: a beam at angle a (counter-clockwise from heading) goes to
    # (-sin a, cos a).
    def direction(a: float) -> Point:
        return (-math.sin(a), math.cos(a))

    for i in range(_NAV_BEAMS):
        rng = o(i)
        dx, dy = direction(_NAV_BEAM_ANGLES[i])
        end = (dx * rng, dy * rng)
        d.line((0.0, 0.0), end, "sensor")
        if rng < r - 1e-3:
            d.circle(end, 0.06, "hazard")
    gd, gb = o(_NAV_GOAL_DISTANCE), o(_NAV_GOAL_BEARING)
    gx, gy = direction(gb)
    shown = _rust_min(gd, r - 0.3)
    d.circle((gx * shown, gy * shown), _NAV_GOAL_RADIUS, "goal")
    d.circle((0.0, 0.0), _NAV_ROBOT_RADIUS, "body")
    d.line((0.0, 0.0), (0.0, _NAV_ROBOT_RADIUS * 1.8), "limb")
    return d


def _rust_min(a: float, b: float) -> float:
    """``f64::min``: the other value when one is NaN."""
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return a if a < b else b


# sims/src/swarm2d.rs (constants are f32 there; the observation is [ROBOTS, FEATURES],
# read flattened row by row)
_SWARM_ROBOTS = 16
_SWARM_NEIGHBOURS = 4
_SWARM_NEIGHBOUR_FEATURES = 4
_SWARM_NEIGHBOUR = 10
_SWARM_FEATURES = _SWARM_NEIGHBOUR + _SWARM_NEIGHBOURS * _SWARM_NEIGHBOUR_FEATURES
_SWARM_POSITION = 0
_SWARM_GOAL_OFFSET = 2
_SWARM_VELOCITY = 4
_SWARM_ARENA = _f32(10.0)
_SWARM_ROBOT_RADIUS = _f32(0.25)
_SWARM_GOAL_RADIUS = _f32(0.2)
_SWARM_MAX_SPEED = _f32(1.0)


def _draw_swarm2d(o: _Obs) -> Drawing:
    arena = _SWARM_ARENA
    d = Drawing(Viewport(-0.5, arena + 0.5, -0.5, arena + 0.5))
    d.rect((arena / 2.0, arena / 2.0), (arena / 2.0, arena / 2.0), "ground")
    for i in range(_SWARM_ROBOTS):

        def f(k: int, i: int = i) -> float:
            return o(i * _SWARM_FEATURES + k)

        p = (f(_SWARM_POSITION), f(_SWARM_POSITION + 1))
        goal = (p[0] + f(_SWARM_GOAL_OFFSET), p[1] + f(_SWARM_GOAL_OFFSET + 1))
        d.circle(goal, _SWARM_GOAL_RADIUS, "goal")
        d.line(p, goal, "sensor")
        d.circle(p, _SWARM_ROBOT_RADIUS, "body")
        scale = _SWARM_ROBOT_RADIUS * 2.0 / _SWARM_MAX_SPEED
        d.line(
            p,
            (p[0] + f(_SWARM_VELOCITY) * scale, p[1] + f(_SWARM_VELOCITY + 1) * scale),
            "limb",
        )
    return d


_DRAWERS: Dict[str, Callable[[_Obs], Drawing]] = {
    "CartPole-v1": _draw_cartpole,
    "Pendulum-v1": _draw_pendulum,
    "MountainCar-v0": _draw_mountain_car,
    "MountainCarContinuous-v0": _draw_mountain_car_continuous,
    "Acrobot-v1": _draw_acrobot,
    "reacher2d": _draw_reacher2d,
    "nav2d": _draw_nav2d,
    "swarm2d": _draw_swarm2d,
}

SIM_IDS = tuple(_DRAWERS)
"""The sims :func:`draw` knows, in the order of the Rust registry's ``SIMS``."""


def draw(sim_id: str, observation) -> Drawing:
    """The picture of sim ``sim_id``'s scene as far as ``observation`` shows it.

    ``observation`` is anything :func:`numpy.asarray` accepts, of any numeric or boolean dtype
    and any shape; it is read flattened in row-major order, as the Rust sims index their
    tensors, and an element past its end reads as 0. The MuJoCo sims are drawn by
    :mod:`ale_client.mujoco_view`, which needs the ``mujoco`` package. Raises
    :class:`ValueError` for a sim id this module does not know.
    """
    from . import mujoco_view

    if sim_id in mujoco_view.SIM_IDS:
        return mujoco_view.draw(sim_id, observation)
    try:
        drawer = _DRAWERS[sim_id]
    except (KeyError, TypeError):
        raise ValueError(
            f"no drawing for sim {sim_id!r}; the known sims are: "
            f"{', '.join(SIM_IDS + mujoco_view.SIM_IDS)}"
        ) from None
    return drawer(_Obs(observation))


def why_not_drawn(sim_id: str) -> Optional[str]:
    """``None`` if :func:`draw` can draw sim ``sim_id`` here, else why not."""
    from . import mujoco_view

    if sim_id in _DRAWERS:
        return None
    if sim_id in mujoco_view.SIM_IDS:
        return mujoco_view.why_not_drawn(sim_id)
    return f"{sim_id} has no drawing"


# --------------------------------------------------------------------------------------------
# Rasterizer
# --------------------------------------------------------------------------------------------

# The console's default theme, tui/themes/dark.toml (`background` and the `sim_*` colours).
BACKGROUND = (0x15, 0x17, 0x1C)
ROLE_COLOURS: Dict[str, Tuple[int, int, int]] = {
    "ground": (0x7B, 0x84, 0x96),
    "body": (0x88, 0xC0, 0xD0),
    "limb": (0xEB, 0xCB, 0x8B),
    "joint": (0xD8, 0xDE, 0xE9),
    "goal": (0xA3, 0xBE, 0x8C),
    "hazard": (0xBF, 0x61, 0x6A),
    "sensor": (0x4C, 0x56, 0x6A),
}
OTHER_COLOUR = (0xD8, 0xDE, 0xE9)
"""The colour of a shape whose role is not in :data:`ROLE_COLOURS`: the theme's ``text``."""

LINE_WIDTH = 2.0
"""Thickness of painted lines, in pixels."""

# Shapes are painted as palette indices into a 2-D map (cheap to mask) that becomes RGB once,
# at the end: index 0 is the background, then the roles in ROLES order, then OTHER_COLOUR.
_PALETTE = np.array(
    [BACKGROUND] + [ROLE_COLOURS[r] for r in ROLES] + [OTHER_COLOUR], dtype=np.uint8
)
_INDEX = {role: i + 1 for i, role in enumerate(ROLES)}
_OTHER_INDEX = len(ROLES) + 1
# Long slanted lines are painted in pieces spanning at most this many pixels on their shorter
# axis, each within its own small bounding box, so a diagonal line costs about its length
# rather than its bounding box's area.
_LINE_PIECE = 32.0


class _Canvas:
    """A map of palette indices and the map from world coordinates to its pixels: square
    pixels, y up, the viewport centred."""

    def __init__(self, viewport: Viewport, width: int, height: int) -> None:
        if width < 1 or height < 1:
            raise ValueError(f"image size must be at least 1x1, got {width}x{height}")
        self.width, self.height = width, height
        self.index = np.zeros((height, width), dtype=np.uint8)
        x0, x1, y0, y1 = viewport.x_min, viewport.x_max, viewport.y_min, viewport.y_max
        world_w, world_h = x1 - x0, y1 - y0
        if not (world_w > 0 and world_h > 0 and math.isfinite(world_w * world_h)):
            raise ValueError(f"viewport must have a positive finite size, got {viewport}")
        # Grow the shorter side of the world rectangle about its centre until it has the
        # image's proportions, as the console's draw_scene does.
        screen = width / height
        if world_w / world_h < screen:
            grow = (world_h * screen - world_w) / 2.0
            x0, x1 = x0 - grow, x1 + grow
        else:
            grow = (world_w / screen - world_h) / 2.0
            y0, y1 = y0 - grow, y1 + grow
        self.scale = width / (x1 - x0)  # pixels per world unit, the same on both axes
        self.x0, self.y1 = x0, y1

    def to_pixels(self, x: float, y: float) -> Tuple[float, float]:
        """A world point in continuous pixel coordinates (column, row); pixel (c, r) covers
        [c, c + 1) x [r, r + 1)."""
        return ((x - self.x0) * self.scale, (self.y1 - y) * self.scale)

    def box(self, c_min: float, c_max: float, r_min: float, r_max: float):
        """The pixels whose centres may lie in the given continuous box, clipped to the image,
        as ``(c0, c1, r0, r1)`` half-open ranges; ``None`` when there are none."""
        if not all(map(math.isfinite, (c_min, c_max, r_min, r_max))):
            return None
        c0 = max(0, int(math.floor(c_min - 0.5)))
        c1 = min(self.width, int(math.ceil(c_max + 0.5)))
        r0 = max(0, int(math.floor(r_min - 0.5)))
        r1 = min(self.height, int(math.ceil(r_max + 0.5)))
        if c0 >= c1 or r0 >= r1:
            return None
        return c0, c1, r0, r1

    def paint(self, box, mask: np.ndarray, index: int) -> None:
        c0, c1, r0, r1 = box
        self.index[r0:r1, c0:c1][mask] = index

    def rgb(self) -> np.ndarray:
        return np.take(_PALETTE, self.index, axis=0)


def _centres(box) -> Tuple[np.ndarray, np.ndarray]:
    """The centres of the box's pixels: a row of columns and a column of rows."""
    c0, c1, r0, r1 = box
    cols = np.arange(c0, c1, dtype=np.float64) + 0.5
    rows = np.arange(r0, r1, dtype=np.float64)[:, None] + 0.5
    return cols, rows


def _paint_segment(canvas: _Canvas, a: Point, b: Point, index: int) -> None:
    """Every pixel whose centre is within half a line width of the segment from ``a`` to
    ``b`` (both in pixel coordinates): a capsule, two or three pixels thick in any
    direction."""
    (ax, ay), (bx, by) = a, b
    half = LINE_WIDTH / 2.0
    box = canvas.box(min(ax, bx) - half, max(ax, bx) + half, min(ay, by) - half, max(ay, by) + half)
    if box is None:
        return
    cols, rows = _centres(box)
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    px, py = cols - ax, rows - ay
    if length2 > 0.0:
        t = np.clip((px * dx + py * dy) / length2, 0.0, 1.0)
        ex, ey = px - t * dx, py - t * dy
    else:
        ex, ey = px, py
    canvas.paint(box, ex * ex + ey * ey <= half * half, index)


def _paint_line(canvas: _Canvas, start: Point, end: Point, index: int) -> None:
    ax, ay = canvas.to_pixels(*start)
    bx, by = canvas.to_pixels(*end)
    if not all(map(math.isfinite, (ax, ay, bx, by))):
        return
    # Clip to the image (with a margin) first, so a line reaching far outside the viewport
    # costs no more than one inside it.
    clipped = _clip(ax, ay, bx, by, -2.0, canvas.width + 2.0, -2.0, canvas.height + 2.0)
    if clipped is None:
        return
    ax, ay, bx, by = clipped
    # A line's bounding box wastes about its shorter side squared: only slanted lines need
    # cutting up.
    pieces = max(1, int(math.ceil(min(abs(bx - ax), abs(by - ay)) / _LINE_PIECE)))
    for k in range(pieces):
        t0, t1 = k / pieces, (k + 1) / pieces
        _paint_segment(
            canvas,
            (ax + (bx - ax) * t0, ay + (by - ay) * t0),
            (ax + (bx - ax) * t1, ay + (by - ay) * t1),
            index,
        )


def _clip(ax, ay, bx, by, x_min, x_max, y_min, y_max):
    """The part of segment a-b inside the rectangle (Liang-Barsky), or ``None``."""
    t0, t1 = 0.0, 1.0
    dx, dy = bx - ax, by - ay
    for p, q in ((-dx, ax - x_min), (dx, x_max - ax), (-dy, ay - y_min), (dy, y_max - ay)):
        if p == 0.0:
            if q < 0.0:
                return None
        else:
            r = q / p
            if p < 0.0:
                t0 = max(t0, r)
            else:
                t1 = min(t1, r)
            if t0 > t1:
                return None
    return (ax + t0 * dx, ay + t0 * dy, ax + t1 * dx, ay + t1 * dy)


def _paint_circle(canvas: _Canvas, shape: Circle, index: int) -> None:
    cx, cy = canvas.to_pixels(*shape.center)
    # At least a pixel and a half across, so a small circle never vanishes.
    r = max(shape.radius * canvas.scale, 0.75)
    box = canvas.box(cx - r, cx + r, cy - r, cy + r)
    if box is None:
        return
    cols, rows = _centres(box)
    canvas.paint(box, (cols - cx) ** 2 + (rows - cy) ** 2 <= r * r, index)


def _paint_polygon(canvas: _Canvas, shape: Polygon, index: int) -> None:
    if len(shape.points) == 0:
        return
    pts = [canvas.to_pixels(x, y) for x, y in shape.points]
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    box = canvas.box(min(xs), max(xs), min(ys), max(ys))
    if box is not None:
        cols, rows = _centres(box)
        # Even-odd rule: a pixel is inside when a ray from its centre to the right crosses an
        # odd number of edges. Each edge toggles the pixels left of where it crosses a row.
        inside = np.zeros((rows.shape[0], cols.shape[0]), dtype=bool)
        for (x0, y0), (x1, y1) in zip(pts, pts[1:] + pts[:1]):
            if y0 == y1:
                continue  # a horizontal edge crosses no row centre's ray
            spans = (y0 <= rows) != (y1 <= rows)  # (rows, 1)
            x_cross = x0 + (rows - y0) * ((x1 - x0) / (y1 - y0))  # (rows, 1)
            inside ^= spans & (cols < x_cross)
        canvas.paint(box, inside, index)
    # The outline too, so a polygon thinner than a pixel still shows.
    for a, b in zip(shape.points, shape.points[1:] + shape.points[:1]):
        _paint_line(canvas, a, b, index)


def rasterize(drawing: Drawing, width: int = 600, height: int = 400) -> np.ndarray:
    """Paints ``drawing`` into a new ``(height, width, 3)`` ``uint8`` RGB image.

    The background and each role's colour are the console's default theme's
    (``tui/themes/dark.toml``; see :data:`BACKGROUND` and :data:`ROLE_COLOURS`). The viewport is
    centred in the image and its shorter side grown so that a world unit is as many pixels
    along x as along y (square pixels), as the console's ``draw_scene`` does for its
    character cells. Shapes are painted in order, later ones over earlier ones, without
    antialiasing: lines as capsules :data:`LINE_WIDTH` pixels thick, circles filled (at least
    a pixel and a half across), polygons filled by the even-odd rule and outlined with a line.
    Labels are skipped: no sim draws one today and this module carries no font.

    Raises :class:`ValueError` for an image smaller than 1x1 or a viewport without a positive
    finite width and height.
    """
    canvas = _Canvas(drawing.viewport, int(width), int(height))
    for shape in drawing.shapes:
        index = _INDEX.get(shape.role, _OTHER_INDEX)
        if isinstance(shape, Line):
            _paint_line(canvas, shape.start, shape.end, index)
        elif isinstance(shape, Circle):
            _paint_circle(canvas, shape, index)
        elif isinstance(shape, Polygon):
            _paint_polygon(canvas, shape, index)
    return canvas.rgb()


def rgb_array(sim_id: str, observation, width: int = 600, height: int = 400) -> np.ndarray:
    """``rasterize(draw(sim_id, observation), width, height)``: the frame Gymnasium's
    ``render()`` returns in ``rgb_array`` mode."""
    return rasterize(draw(sim_id, observation), width, height)


__all__ = [
    "Viewport",
    "Line",
    "Circle",
    "Polygon",
    "Label",
    "Shape",
    "Drawing",
    "SIM_IDS",
    "ROLES",
    "BACKGROUND",
    "ROLE_COLOURS",
    "OTHER_COLOUR",
    "LINE_WIDTH",
    "draw",
    "why_not_drawn",
    "rasterize",
    "rgb_array",
]
