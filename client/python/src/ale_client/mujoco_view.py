"""Pictures of the MuJoCo sims, drawn from an observation alone, as the console draws them.

A port of ``sims/mujoco/src/draw.rs`` (the projection of a model's geoms) and
``sims/gymnasium-mujoco/src/view.rs`` with each env's ``View`` (its camera, and how its pose is
read back from an observation). The pose is the positions the observation shows, the
coordinates it leaves out (a walker's x) at the model's default, placed by MuJoCo's own
forward kinematics (``mj_kinematics``) on the model file Gymnasium ships, which is the file the
evaluator embeds. So it needs the ``mujoco`` package (``pip install ale-client[mujoco]``, at
the version the evaluator pins); without it these sims render in no mode.

``client/python/tests/test_render_mujoco.py`` replays the drawings that the Rust test
``sims/gymnasium-mujoco/tests/drawing.rs`` writes, so the two cannot drift apart unnoticed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

from .render import Drawing, Viewport

Vec3 = Tuple[float, float, float]
Point = Tuple[float, float]

# sims/mujoco/src/draw.rs
_RIM_POINTS = 16
_LAST_VISIBLE_GROUP = 2
_SIN20, _COS20 = 0.3420201433256687, 0.9396926207859084

# mjtGeom
_PLANE, _HFIELD, _SPHERE, _CAPSULE, _ELLIPSOID, _CYLINDER, _BOX, _MESH = range(8)


@dataclass(frozen=True)
class Camera:
    """An orthographic camera (``draw.rs``'s ``Camera``): the picture's x (``right``) and y
    (``up``) axes in world coordinates, the tracked body, half the width, and the height:
    ``("fixed", low, high)`` or ``("tracked", half)``."""

    right: Vec3
    up: Vec3
    track: int
    half_width: float
    height: Tuple


def _side(track: int, half_width: float, height: Tuple) -> Camera:
    return Camera((1.0, 0.0, 0.0), (0.0, 0.0, 1.0), track, half_width, height)


def _top(track: int, half_width: float, height: Tuple) -> Camera:
    return Camera((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), track, half_width, height)


def _elevated(track: int, half_width: float, height: Tuple) -> Camera:
    return Camera((1.0, 0.0, 0.0), (0.0, _SIN20, _COS20), track, half_width, height)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _cross(a: Vec3, b: Vec3) -> Vec3:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _project(camera: Camera, p: Sequence[float]) -> Point:
    return (_dot(p, camera.right), _dot(p, camera.up))


def _at(c: Sequence[float], axes, k: Sequence[float]) -> List[float]:
    p = [float(c[0]), float(c[1]), float(c[2])]
    for axis, kk in zip(axes, k):
        for i in range(3):
            p[i] += kk * axis[i]
    return p


def _rim():
    for j in range(_RIM_POINTS):
        t = math.tau * j / _RIM_POINTS
        yield math.cos(t), math.sin(t)


def _outline(camera: Camera, shape: int, size, aabb, c, axes) -> List[Point]:
    s0, s1, s2 = (float(v) for v in size)

    def project(local):
        return _project(camera, _at(c, axes, local))

    def corners(centre, half):
        return [
            project(
                [centre[0] + sx * half[0], centre[1] + sy * half[1], centre[2] + sz * half[2]]
            )
            for sx in (-1.0, 1.0)
            for sy in (-1.0, 1.0)
            for sz in (-1.0, 1.0)
        ]

    if shape == _CAPSULE:
        points = []
        for end in (-s1, s1):
            x, y = project([0.0, 0.0, end])
            points.extend((x + s0 * cos, y + s0 * sin) for cos, sin in _rim())
        return points
    if shape == _CYLINDER:
        return [project([s0 * cos, s0 * sin, end]) for end in (-s1, s1) for cos, sin in _rim()]
    if shape == _ELLIPSOID:
        points = []
        for cos, sin in _rim():
            points.append(project([s0 * cos, s1 * sin, 0.0]))
            points.append(project([s0 * cos, 0.0, s2 * sin]))
            points.append(project([0.0, s1 * cos, s2 * sin]))
        return points
    if shape == _BOX:
        return corners([0.0, 0.0, 0.0], [s0, s1, s2])
    if shape == _PLANE:
        return corners([0.0, 0.0, 0.0], [s0, s1, 0.0])
    a = [float(v) for v in aabb]
    return corners(a[:3], a[3:])


def _convex_hull(points: List[Point]) -> List[Point]:
    """Andrew's monotone chain, as ``draw.rs``'s ``convex_hull``."""
    points = sorted(points)
    unique: List[Point] = []
    for p in points:
        if unique and abs(p[0] - unique[-1][0]) < 1e-9 and abs(p[1] - unique[-1][1]) < 1e-9:
            continue
        unique.append(p)
    if len(unique) < 3:
        return unique

    def turn(o, a, b):
        return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])

    hull: List[Point] = []
    for ordered in (unique, unique[::-1]):
        start = len(hull)
        for p in ordered:
            while len(hull) >= start + 2 and turn(hull[-2], hull[-1], p) <= 1e-12:
                hull.pop()
            hull.append(p)
        hull.pop()
    return hull


def _sees_edge_on(camera: Camera, normal) -> bool:
    return abs(_dot(normal, camera.up)) >= 0.5


def _plane_line(camera: Camera, viewport: Viewport, position, normal, track):
    offset = [track[i] - position[i] for i in range(3)]
    t = -_dot(normal, offset) / _dot(normal, camera.up)
    y = _dot(track, camera.up) + t
    return (viewport.x_min, y), (viewport.x_max, y)


def _default_role(model, geom: int, track: int) -> Optional[str]:
    if model.geom_group[geom] > _LAST_VISIBLE_GROUP or model.geom_rgba[geom][3] == 0.0:
        return None
    name = model.geom(geom).name or ""
    shape = int(model.geom_type[geom])
    if shape in (_PLANE, _HFIELD):
        return "ground"
    if "target" in name or "goal" in name:
        return "goal"
    if int(model.geom_bodyid[geom]) == track and track != 0:
        return "body"
    return "limb"


def _role(model, geom: int, track: int) -> Optional[str]:
    """``view.rs``'s ``role``: the default role, but a geom on a body named for a goal or a
    target is the goal."""
    role = _default_role(model, geom, track)
    if role is None or role == "ground":
        return role
    body = model.body(int(model.geom_bodyid[geom])).name or ""
    return "goal" if "goal" in body or "target" in body else role


def _draw_scene(mujoco, model, data, camera: Camera) -> Drawing:
    """``Scene::draw``: the picture of ``data``'s placed pose."""
    track = [float(v) for v in data.xpos[camera.track]]
    centre = _project(camera, track)
    if camera.height[0] == "fixed":
        y_min, y_max = camera.height[1], camera.height[2]
    else:
        y_min, y_max = centre[1] - camera.height[1], centre[1] + camera.height[1]
    viewport = Viewport(
        centre[0] - camera.half_width, centre[0] + camera.half_width, float(y_min), float(y_max)
    )
    depth = _cross(camera.right, camera.up)
    order = []
    for geom in range(model.ngeom):
        role = _role(model, geom, camera.track)
        if role is not None:
            order.append((_dot(data.geom_xpos[geom], depth), geom, role))
    # Farthest first; a stable sort keeps geoms at one depth in id order.
    order.sort(key=lambda entry: entry[0])
    drawing = Drawing(viewport)
    for _, geom, role in order:
        position = [float(v) for v in data.geom_xpos[geom]]
        m = [float(v) for v in data.geom_xmat[geom]]
        axes = ((m[0], m[3], m[6]), (m[1], m[4], m[7]), (m[2], m[5], m[8]))
        shape = int(model.geom_type[geom])
        size = model.geom_size[geom]
        if shape == _SPHERE:
            drawing.circle(_project(camera, position), float(size[0]), role)
        elif shape == _PLANE and _sees_edge_on(camera, axes[2]):
            start, end = _plane_line(camera, viewport, position, axes[2], track)
            drawing.line(start, end, role)
        elif shape == _PLANE and (size[0] <= 0.0 or size[1] <= 0.0):
            pass
        else:
            hull = _convex_hull(_outline(camera, shape, size, model.geom_aabb[geom], position, axes))
            if len(hull) >= 2:
                drawing.polygon(hull, role)
    return drawing


# --------------------------------------------------------------------------------------------
# The envs' views: sims/gymnasium-mujoco/src/envs/*.rs, each SPEC's `view`.
# --------------------------------------------------------------------------------------------


def _positions_after(skip: int) -> Callable[[np.ndarray, np.ndarray], None]:
    def pose(o: np.ndarray, qpos: np.ndarray) -> None:
        shown = max(len(qpos) - skip, 0)
        qpos[skip:] = o[:shown]

    return pose


def _reacher_pose(o: np.ndarray, qpos: np.ndarray) -> None:
    qpos[0] = math.atan2(o[2], o[0])
    qpos[1] = math.atan2(o[3], o[1])
    qpos[2] = o[4]
    qpos[3] = o[5]


def _double_pendulum_pose(o: np.ndarray, qpos: np.ndarray) -> None:
    qpos[0] = o[0]
    qpos[1] = math.atan2(o[1], o[3])
    qpos[2] = math.atan2(o[2], o[4])


# Where pusher_v5.xml puts the cylinder's and the goal's bodies (x, y), which their slides
# move from (pusher.rs).
_PUSHER_CYLINDER_AT_REST = (0.45, -0.05)
_PUSHER_GOAL_AT_REST = (0.45, -0.05)


def _pusher_pose(o: np.ndarray, qpos: np.ndarray) -> None:
    qpos[:7] = o[:7]
    qpos[7] = o[18] - _PUSHER_CYLINDER_AT_REST[1]
    qpos[8] = o[17] - _PUSHER_CYLINDER_AT_REST[0]
    qpos[9] = o[21] - _PUSHER_GOAL_AT_REST[1]
    qpos[10] = o[20] - _PUSHER_GOAL_AT_REST[0]


@dataclass(frozen=True)
class _View:
    xml: str
    observation_len: int
    camera: Camera
    pose: Callable[[np.ndarray, np.ndarray], None]


VIEWS: Dict[str, _View] = {
    "InvertedPendulum-v5": _View(
        "inverted_pendulum.xml", 4, _side(0, 1.2, ("fixed", -0.4, 0.9)), _positions_after(0)
    ),
    "InvertedDoublePendulum-v5": _View(
        "inverted_double_pendulum.xml",
        9,
        _side(0, 1.2, ("fixed", -0.3, 1.5)),
        _double_pendulum_pose,
    ),
    "Reacher-v5": _View("reacher.xml", 10, _top(0, 0.25, ("fixed", -0.25, 0.25)), _reacher_pose),
    "HalfCheetah-v5": _View(
        "half_cheetah.xml", 17, _side(1, 2.5, ("fixed", -0.4, 1.6)), _positions_after(1)
    ),
    "Hopper-v5": _View("hopper.xml", 11, _side(1, 2.0, ("fixed", -0.3, 1.9)), _positions_after(1)),
    "Walker2d-v5": _View(
        "walker2d_v5.xml", 17, _side(1, 2.0, ("fixed", -0.3, 1.9)), _positions_after(1)
    ),
    "Swimmer-v5": _View("swimmer.xml", 8, _top(1, 2.5, ("tracked", 1.5)), _positions_after(2)),
    "Ant-v5": _View("ant.xml", 105, _elevated(1, 2.5, ("tracked", 1.5)), _positions_after(2)),
    "Humanoid-v5": _View(
        "humanoid.xml", 348, _side(1, 2.0, ("fixed", -0.3, 2.1)), _positions_after(2)
    ),
    "HumanoidStandup-v5": _View(
        "humanoidstandup.xml", 348, _side(1, 2.0, ("fixed", -0.3, 2.1)), _positions_after(2)
    ),
    "Pusher-v5": _View("pusher_v5.xml", 23, _top(0, 1.0, ("fixed", -1.1, 0.5)), _pusher_pose),
}
"""The MuJoCo sims this module draws, by sim id."""

SIM_IDS = tuple(VIEWS)


def available() -> bool:
    """Whether the ``mujoco`` package is installed, which drawing these sims needs."""
    try:
        import mujoco  # noqa: F401
    except ImportError:
        return False
    return True


_SCRATCH: Dict[str, tuple] = {}


def _scratch(sim_id: str):
    import gymnasium
    import mujoco

    if sim_id not in _SCRATCH:
        view = VIEWS[sim_id]
        # The file itself: importing gymnasium.envs.mujoco would pull its renderer's imports.
        path = Path(gymnasium.__file__).resolve().parent / "envs" / "mujoco" / "assets" / view.xml
        model = mujoco.MjModel.from_xml_path(str(path))
        _SCRATCH[sim_id] = (mujoco, model, mujoco.MjData(model))
    return _SCRATCH[sim_id]


def draw(sim_id: str, observation) -> Drawing:
    """The picture of MuJoCo sim ``sim_id`` in the pose ``observation`` shows. An element
    missing from it or not finite reads as 0. Raises :class:`ValueError` for a sim id this
    module does not know, and :class:`ImportError` without the ``mujoco`` package."""
    if sim_id not in VIEWS:
        raise ValueError(f"no MuJoCo drawing for sim {sim_id!r}; the known sims are: {', '.join(SIM_IDS)}")
    view = VIEWS[sim_id]
    mujoco, model, data = _scratch(sim_id)
    flat = np.asarray(observation, dtype=np.float64).ravel()
    o = np.zeros(view.observation_len)
    n = min(flat.size, view.observation_len)
    o[:n] = flat[:n]
    o[~np.isfinite(o)] = 0.0
    qpos = model.qpos0.copy()
    view.pose(o, qpos)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    return _draw_scene(mujoco, model, data, view.camera)


__all__ = ["Camera", "VIEWS", "SIM_IDS", "available", "draw"]
