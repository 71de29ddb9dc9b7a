//! How the Go1 is seen: its pose read back from an observation, and a camera that tracks its
//! trunk. The console's practice view and the Python client's `render()` draw from the
//! observation alone (see [`ale_sim::draw`]), through [`ale_mujoco::draw`] on a scratch
//! `MjData` of the scene's model placed by forward kinematics.
//!
//! The observation shows the joint angles (offsets from [`DEFAULT_POSE`]) and gravity's
//! direction in the trunk's frame, and not where the trunk is nor which way it faces. So the
//! trunk stands at the origin facing +x, tilted as gravity says (pitch `asin(g_x)`, roll
//! `atan2(−g_y, −g_z)`), and is raised or lowered until its lowest geom touches the floor.
//!
//! The robot is drawn with its collision geoms (group 3: boxes, cylinders, capsules and the
//! feet's spheres), which MuJoCo's viewer hides and which outline the robot more closely than
//! the bounding boxes of its visual meshes would; the meshes are not drawn.
//!
//! The Python client ports this module (`client/python/src/ale_client/mujoco_view.py`); a
//! fixture written by `tests/drawing.rs` keeps the two in step, so change both.

use std::cell::RefCell;

use ale_mujoco::Data;
use ale_mujoco::draw::{Camera, Height, Scene as Picture, read_finite, unavailable};
use ale_mujoco::{Geom, GeomShape};
use ale_sim::{Drawing, Role, Tensor};

use crate::layout::{DEFAULT_HEIGHT, DEFAULT_POSE, GRAVITY, JOINT_ANGLES, JOINTS, OBSERVATION_LEN};
use crate::scene::scene;

/// The trunk's body id (the first body after the world), which the camera tracks.
pub const TRUNK: usize = 1;

/// The collision geoms' group in Menagerie's model.
const COLLISION_GROUP: i32 = 3;

/// From 20° above the ground, looking along +y, 1.4 m wide and 0.9 m high about the trunk.
pub const CAMERA: Camera = Camera::elevated(TRUNK, 0.7, Height::Tracked(0.45));

/// What a geom is in the picture: the floor is the ground, the trunk's collision geoms the
/// body, the legs' limbs; the visual meshes and anything else are not drawn.
fn role(geom: &Geom) -> Option<Role> {
    match geom.shape {
        GeomShape::Plane => Some(Role::Ground),
        GeomShape::Mesh => None,
        _ if geom.group != COLLISION_GROUP => None,
        _ if geom.body == TRUNK => Some(Role::Body),
        _ => Some(Role::Limb),
    }
}

/// The trunk's orientation quaternion (w, x, y, z) facing +x, from gravity's direction in the
/// trunk's frame: with yaw 0, `R = Ry(pitch) Rx(roll)` and `Rᵀ (0, 0, −1) = (sin p,
/// −cos p sin r, −cos p cos r)`. A zero or non-finite vector reads as upright.
pub fn orientation_from_gravity(g: [f64; 3]) -> [f64; 4] {
    // Scaled by its largest element first, so that huge elements do not overflow the norm.
    let largest = g.iter().fold(0.0_f64, |m, v| m.max(v.abs()));
    if largest == 0.0 || g.iter().any(|v| !v.is_finite()) {
        return [1.0, 0.0, 0.0, 0.0];
    }
    let g = g.map(|v| v / largest);
    let norm = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
    let [x, y, z] = g.map(|v| v / norm);
    let pitch = x.clamp(-1.0, 1.0).asin();
    let roll = (-y).atan2(-z);
    let (sp, cp) = (pitch / 2.0).sin_cos();
    let (sr, cr) = (roll / 2.0).sin_cos();
    [cp * cr, cp * sr, sp * cr, -sp * sr]
}

/// Writes the pose `observation` shows into `qpos` (19: trunk position, quaternion, joints),
/// the trunk at the origin at the default height.
pub fn pose(observation: &[f64], qpos: &mut [f64]) {
    debug_assert_eq!(qpos.len(), 7 + JOINTS);
    qpos[..3].copy_from_slice(&[0.0, 0.0, DEFAULT_HEIGHT]);
    let g = [
        observation[GRAVITY],
        observation[GRAVITY + 1],
        observation[GRAVITY + 2],
    ];
    qpos[3..7].copy_from_slice(&orientation_from_gravity(g));
    for (j, default) in DEFAULT_POSE.iter().enumerate() {
        qpos[7 + j] = default + observation[JOINT_ANGLES + j];
    }
}

/// The height of the lowest point of the drawn geoms (a sphere's bottom; for other shapes, the
/// bottom of the world box around their local bounding box), in `data`'s placed pose.
fn lowest_point(geoms: &[(usize, Geom)], data: &Data) -> Option<f64> {
    geoms
        .iter()
        .map(|(i, geom)| {
            let p = data.geom_xpos(*i);
            let m = data.geom_xmat(*i);
            if geom.shape == GeomShape::Sphere {
                return p[2] - geom.size[0];
            }
            let a = geom.aabb;
            // The world z of the box's centre, less its half-extent along z.
            let centre = p[2] + m[6] * a[0] + m[7] * a[1] + m[8] * a[2];
            centre - (m[6].abs() * a[3] + m[7].abs() * a[4] + m[8].abs() * a[5])
        })
        .min_by(f64::total_cmp)
}

struct Scratch {
    picture: Picture,
    /// The robot's drawn geoms (not the floor), with their ids.
    robot: Vec<(usize, Geom)>,
    data: Data,
    observation: Vec<f64>,
}

thread_local! {
    static SCRATCH: RefCell<Option<Scratch>> = const { RefCell::new(None) };
}

/// The picture of the Go1 in the pose `observation` shows. An element missing from it or not
/// finite reads as 0, so drawing never fails; without MuJoCo or the model the picture says so.
pub(crate) fn draw(observation: &Tensor) -> Drawing {
    let scene = match scene() {
        Ok(scene) => scene,
        Err(e) => return unavailable(&e.to_string()),
    };
    let model = &scene.model;
    SCRATCH.with_borrow_mut(|scratch| {
        let s = scratch.get_or_insert_with(|| Scratch {
            picture: Picture::with_roles(model, CAMERA, role),
            robot: model
                .geoms()
                .into_iter()
                .enumerate()
                .filter(|(_, g)| g.shape != GeomShape::Plane && role(g).is_some())
                .collect(),
            data: Data::new(model),
            observation: vec![0.0; OBSERVATION_LEN],
        });
        read_finite(observation, &mut s.observation);
        pose(&s.observation, s.data.qpos_mut());
        s.data.kinematics();
        // Stand on the floor: shift the trunk so that the lowest geom touches z = 0.
        if let Some(low) = lowest_point(&s.robot, &s.data) {
            s.data.qpos_mut()[2] -= low;
            s.data.kinematics();
        }
        s.picture.draw(&s.data)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gravity_of(q: [f64; 4]) -> [f64; 3] {
        // Rᵀ (0, 0, −1): minus the third row of R.
        let [w, x, y, z] = q;
        [
            -(2.0 * (x * z - w * y)),
            -(2.0 * (y * z + w * x)),
            -(1.0 - 2.0 * (x * x + y * y)),
        ]
    }

    #[test]
    fn the_orientation_gives_back_the_gravity_it_was_read_from() {
        for g in [
            [0.0_f64, 0.0, -1.0],
            [0.3, 0.0, -0.95],
            [0.0, -0.4, -0.9],
            [0.2, 0.5, -0.6],
            [0.1, 0.2, 0.97],
            [-1.0, 0.0, 0.0],
        ] {
            let norm = (g[0] * g[0] + g[1] * g[1] + g[2] * g[2]).sqrt();
            let back = gravity_of(orientation_from_gravity(g));
            for k in 0..3 {
                assert!((back[k] - g[k] / norm).abs() < 1e-12, "{g:?} -> {back:?}");
            }
        }
        assert_eq!(orientation_from_gravity([0.0; 3]), [1.0, 0.0, 0.0, 0.0]);
        let huge = orientation_from_gravity([0.0, 0.0, -1e300]);
        assert_eq!(huge, [1.0, 0.0, 0.0, 0.0]);
        for bad in [[f64::NAN, 0.0, -1.0], [0.0, f64::INFINITY, -1.0]] {
            assert_eq!(
                orientation_from_gravity(bad),
                [1.0, 0.0, 0.0, 0.0],
                "{bad:?}"
            );
        }
    }
}
