//! A picture of a MuJoCo model in a pose: every visible geom projected by an orthographic
//! camera into an [`ale_sim::Drawing`], as the console and the Python client show a sim.
//!
//! Each geom becomes the outline of its projection: a circle for a sphere, else the convex hull
//! of projected points (the circles about a capsule's two projected ends, a cylinder's two
//! rims, a box's eight corners, an ellipsoid's three principal rims, a mesh's bounding box). Geoms are painted from
//! the farthest to the nearest. A plane the camera sees from the side or at a slant (a floor in
//! a side view) becomes the line where it meets the vertical through the tracked body; one
//! seen from above, its rectangle if it is finite.
//!
//! The Python client ports this module (`client/python/src/ale_client/mujoco_view.py`); the
//! fixtures written by `sims/gymnasium-mujoco/tests/drawing.rs` and `sims/go1/tests/drawing.rs`
//! keep the two in step, so change both.

use ale_sim::{Drawing, Role, Shape, Tensor, Viewport};

use crate::{Data, Geom, GeomShape, Model};

/// Points on each circle or rim of a geom's outline.
const RIM_POINTS: usize = 16;
/// Geom groups above this one are hidden, as MuJoCo's viewer hides them by default.
const LAST_VISIBLE_GROUP: i32 = 2;

/// What the picture's vertical range follows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Height {
    /// A fixed range of heights (world coordinates along `up`), e.g. to keep the floor in view.
    Fixed(f64, f64),
    /// Centred on the tracked body, this many metres either side.
    Tracked(f64),
}

/// An orthographic camera: the world directions of the picture's x (`right`) and y (`up`)
/// axes, orthonormal; the viewer looks along `-(right × up)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Camera {
    pub right: [f64; 3],
    pub up: [f64; 3],
    /// The body whose frame the picture centres on (along `right` always, along `up` with
    /// [`Height::Tracked`]); the world (body 0) for a still camera.
    pub track: usize,
    /// Half the picture's width, in metres.
    pub half_width: f64,
    pub height: Height,
}

impl Camera {
    /// A side view: x to the right, z up, looking along +y.
    pub const fn side(track: usize, half_width: f64, height: Height) -> Camera {
        Camera {
            right: [1.0, 0.0, 0.0],
            up: [0.0, 0.0, 1.0],
            track,
            half_width,
            height,
        }
    }

    /// A view from above: x to the right, y up.
    pub const fn top(track: usize, half_width: f64, height: Height) -> Camera {
        Camera {
            right: [1.0, 0.0, 0.0],
            up: [0.0, 1.0, 0.0],
            track,
            half_width,
            height,
        }
    }

    /// A side view from 20° above the ground: x to the right, looking along +y and down,
    /// so that a robot's far legs show above its near ones.
    pub const fn elevated(track: usize, half_width: f64, height: Height) -> Camera {
        // sin and cos of 20°.
        let (s, c) = (0.342_020_143_325_668_7, 0.939_692_620_785_908_4);
        Camera {
            right: [1.0, 0.0, 0.0],
            up: [0.0, s, c],
            track,
            half_width,
            height,
        }
    }

    /// Whether a plane of this normal is seen from the side or at a slant (its normal within
    /// 60° of `up`), so that it shows as a line, rather than from above.
    fn sees_edge_on(&self, normal: [f64; 3]) -> bool {
        dot(normal, self.up).abs() >= 0.5
    }

    fn depth(&self) -> [f64; 3] {
        cross(self.right, self.up)
    }

    fn project(&self, p: [f64; 3]) -> (f64, f64) {
        (dot(p, self.right), dot(p, self.up))
    }
}

/// A model's geoms as a camera pictures them, with each one's role (`None`: hidden).
#[derive(Debug, Clone)]
pub struct Scene {
    geoms: Vec<(Geom, Option<Role>)>,
    camera: Camera,
}

impl Scene {
    /// The scene of `model` through `camera`, each geom in the role [`default_role`] gives it.
    pub fn new(model: &Model, camera: Camera) -> Scene {
        Scene::with_roles(model, camera, |geom| default_role(geom, camera.track))
    }

    /// The scene of `model` through `camera`, each geom in the role `role` gives it.
    pub fn with_roles(
        model: &Model,
        camera: Camera,
        role: impl Fn(&Geom) -> Option<Role>,
    ) -> Scene {
        let geoms = model
            .geoms()
            .into_iter()
            .map(|geom| {
                let role = role(&geom);
                (geom, role)
            })
            .collect();
        Scene { geoms, camera }
    }

    /// The picture of `data`'s pose, whose geoms must be placed ([`Data::kinematics`]).
    pub fn draw(&self, data: &Data) -> Drawing {
        let camera = &self.camera;
        let centre = camera.project(data.body_xpos(camera.track));
        let (y_min, y_max) = match camera.height {
            Height::Fixed(low, high) => (low, high),
            Height::Tracked(half) => (centre.1 - half, centre.1 + half),
        };
        let viewport = Viewport {
            x_min: centre.0 - camera.half_width,
            x_max: centre.0 + camera.half_width,
            y_min,
            y_max,
        };
        let depth = camera.depth();
        let mut order: Vec<(f64, usize)> = self
            .geoms
            .iter()
            .enumerate()
            .filter(|(_, (_, role))| role.is_some())
            .map(|(i, _)| (dot(data.geom_xpos(i), depth), i))
            .collect();
        // Farthest first: the largest distance along the viewing direction, the smallest
        // `depth` coordinate. A stable sort keeps geoms at one depth in id order.
        order.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut drawing = Drawing::new(viewport);
        let track = data.body_xpos(camera.track);
        for (_, i) in order {
            let (geom, role) = &self.geoms[i];
            let Some(role) = *role else { continue };
            let position = data.geom_xpos(i);
            let axes = axes(data.geom_xmat(i));
            match geom.shape {
                GeomShape::Sphere => {
                    drawing.circle(camera.project(position), geom.size[0], role);
                }
                // A floor seen from the side or from above at a slant: its line. Seen from
                // above, a finite one is its rectangle (below), an infinite one nothing.
                GeomShape::Plane if camera.sees_edge_on(axes[2]) => {
                    let (from, to) = plane_line(camera, &viewport, position, axes[2], track);
                    drawing.line(from, to, role);
                }
                GeomShape::Plane if geom.size[0] <= 0.0 || geom.size[1] <= 0.0 => {}
                _ => {
                    let hull = convex_hull(outline(camera, geom, position, axes));
                    if hull.len() >= 2 {
                        drawing.polygon(hull, role);
                    }
                }
            }
        }
        drawing
    }
}

/// Fills `out` with the first elements of `observation` as f64, for a pose to be read from:
/// one missing or not finite reads as 0, so that a drawing never fails on what a client sent.
pub fn read_finite(observation: &Tensor, out: &mut [f64]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = observation
            .data()
            .get_f64(i)
            .filter(|v| v.is_finite())
            .unwrap_or(0.0);
    }
}

/// The picture of a sim that cannot be drawn (no MuJoCo, no model): a label saying why.
pub fn unavailable(why: &str) -> Drawing {
    let mut drawing = Drawing::new(Viewport {
        x_min: -1.0,
        x_max: 1.0,
        y_min: -1.0,
        y_max: 1.0,
    });
    drawing.shapes.push(Shape::Label {
        at: (-0.9, 0.0),
        text: why.to_owned(),
        role: Role::Hazard,
    });
    drawing
}

/// The role a geom plays unless a sim says otherwise: hidden if MuJoCo's viewer hides it
/// (group above 2) or it is fully transparent; a plane or height field is the ground; a geom
/// named for a target or a goal is the goal; the tracked body's geoms are the body; the rest
/// limbs.
pub fn default_role(geom: &Geom, track: usize) -> Option<Role> {
    if geom.group > LAST_VISIBLE_GROUP || geom.rgba[3] == 0.0 {
        return None;
    }
    let named = |word: &str| geom.name.as_deref().is_some_and(|n| n.contains(word));
    Some(match geom.shape {
        GeomShape::Plane | GeomShape::HeightField => Role::Ground,
        _ if named("target") || named("goal") => Role::Goal,
        _ if geom.body == track && track != 0 => Role::Body,
        _ => Role::Limb,
    })
}

/// The geom's local axes as world vectors: the columns of the row-major `xmat`.
fn axes(xmat: [f64; 9]) -> [[f64; 3]; 3] {
    [
        [xmat[0], xmat[3], xmat[6]],
        [xmat[1], xmat[4], xmat[7]],
        [xmat[2], xmat[5], xmat[8]],
    ]
}

/// `c + Σ k_i · axis_i`.
fn at(c: [f64; 3], axes: [[f64; 3]; 3], k: [f64; 3]) -> [f64; 3] {
    let mut p = c;
    for (axis, k) in axes.iter().zip(k) {
        for (p, a) in p.iter_mut().zip(axis) {
            *p += k * a;
        }
    }
    p
}

/// The angles of a rim's points: `2π j / RIM_POINTS`.
fn rim() -> impl Iterator<Item = (f64, f64)> {
    (0..RIM_POINTS).map(|j| {
        let t = std::f64::consts::TAU * j as f64 / RIM_POINTS as f64;
        (t.cos(), t.sin())
    })
}

/// Points of a geom's projection (other than a sphere's or an infinite plane's) whose convex
/// hull is the outline of that projection, up to the sampling of its curves.
fn outline(camera: &Camera, geom: &Geom, c: [f64; 3], axes: [[f64; 3]; 3]) -> Vec<(f64, f64)> {
    let [s0, s1, s2] = geom.size;
    let project = |local: [f64; 3]| camera.project(at(c, axes, local));
    let corners = |centre: [f64; 3], half: [f64; 3]| -> Vec<(f64, f64)> {
        let mut points = Vec::with_capacity(8);
        for sx in [-1.0, 1.0] {
            for sy in [-1.0, 1.0] {
                for sz in [-1.0, 1.0] {
                    points.push(project([
                        centre[0] + sx * half[0],
                        centre[1] + sy * half[1],
                        centre[2] + sz * half[2],
                    ]));
                }
            }
        }
        points
    };
    match geom.shape {
        // A sphere of radius s0 at each end of the axis: each projects to a circle about its
        // projected centre.
        GeomShape::Capsule => {
            let mut points = Vec::with_capacity(2 * RIM_POINTS);
            for end in [-s1, s1] {
                let (x, y) = project([0.0, 0.0, end]);
                points.extend(rim().map(|(cos, sin)| (x + s0 * cos, y + s0 * sin)));
            }
            points
        }
        GeomShape::Cylinder => {
            let mut points = Vec::with_capacity(2 * RIM_POINTS);
            for end in [-s1, s1] {
                points.extend(rim().map(|(cos, sin)| project([s0 * cos, s0 * sin, end])));
            }
            points
        }
        GeomShape::Ellipsoid => {
            let mut points = Vec::with_capacity(3 * RIM_POINTS);
            for (cos, sin) in rim() {
                points.push(project([s0 * cos, s1 * sin, 0.0]));
                points.push(project([s0 * cos, 0.0, s2 * sin]));
                points.push(project([0.0, s1 * cos, s2 * sin]));
            }
            points
        }
        GeomShape::Box => corners([0.0; 3], geom.size),
        // A finite plane: its rectangle, size[0] by size[1] half-extents.
        GeomShape::Plane => corners([0.0; 3], [s0, s1, 0.0]),
        GeomShape::Sphere | GeomShape::HeightField | GeomShape::Mesh | GeomShape::Other => {
            let a = geom.aabb;
            corners([a[0], a[1], a[2]], [a[3], a[4], a[5]])
        }
    }
}

/// Where a plane meets the picture: the line across the viewport at the height where it
/// crosses the vertical (along `up`) through the tracked body. The camera must see the plane
/// edge-on enough ([`Camera::sees_edge_on`]).
fn plane_line(
    camera: &Camera,
    viewport: &Viewport,
    position: [f64; 3],
    normal: [f64; 3],
    track: [f64; 3],
) -> ((f64, f64), (f64, f64)) {
    // The point track + t·up on the plane: normal · (track + t·up − position) = 0.
    let offset = [
        track[0] - position[0],
        track[1] - position[1],
        track[2] - position[2],
    ];
    let t = -dot(normal, offset) / dot(normal, camera.up);
    let y = dot(track, camera.up) + t;
    ((viewport.x_min, y), (viewport.x_max, y))
}

/// The convex hull of `points`, counter-clockwise from the lowest-leftmost, without repeated
/// or collinear points (Andrew's monotone chain).
fn convex_hull(mut points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    points.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
    points.dedup_by(|a, b| (a.0 - b.0).abs() < 1e-9 && (a.1 - b.1).abs() < 1e-9);
    if points.len() < 3 {
        return points;
    }
    let turn = |o: (f64, f64), a: (f64, f64), b: (f64, f64)| {
        (a.0 - o.0) * (b.1 - o.1) - (a.1 - o.1) * (b.0 - o.0)
    };
    let mut hull: Vec<(f64, f64)> = Vec::with_capacity(points.len() + 1);
    for pass in [false, true] {
        let start = hull.len();
        let ordered: Box<dyn Iterator<Item = &(f64, f64)>> = if pass {
            Box::new(points.iter().rev())
        } else {
            Box::new(points.iter())
        };
        for &p in ordered {
            while hull.len() >= start + 2
                && turn(hull[hull.len() - 2], hull[hull.len() - 1], p) <= 1e-12
            {
                hull.pop();
            }
            hull.push(p);
        }
        // Each chain's last point starts the other.
        hull.pop();
    }
    hull
}

fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}

fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [
        a[1] * b[2] - a[2] * b[1],
        a[2] * b[0] - a[0] * b[2],
        a[0] * b[1] - a[1] * b[0],
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hull_of_a_square_and_its_inner_points_is_the_square_counter_clockwise() {
        let hull = convex_hull(vec![
            (1.0, 1.0),
            (0.0, 0.0),
            (0.5, 0.5),
            (1.0, 0.0),
            (0.0, 1.0),
            (0.5, 0.0),
            (0.0, 0.0),
        ]);
        assert_eq!(hull, vec![(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]);
    }

    #[test]
    fn a_hull_of_one_or_two_points_is_those_points() {
        assert_eq!(convex_hull(vec![(1.0, 2.0), (1.0, 2.0)]), vec![(1.0, 2.0)]);
        assert_eq!(
            convex_hull(vec![(3.0, 0.0), (1.0, 0.0), (2.0, 0.0)]),
            vec![(1.0, 0.0), (3.0, 0.0)]
        );
    }

    #[test]
    fn the_elevated_camera_is_orthonormal() {
        let camera = Camera::elevated(1, 2.0, Height::Tracked(1.0));
        assert!(dot(camera.right, camera.up).abs() < 1e-15);
        assert!((dot(camera.up, camera.up) - 1.0).abs() < 1e-15);
        let depth = camera.depth();
        assert!((dot(depth, depth) - 1.0).abs() < 1e-15);
    }
}
