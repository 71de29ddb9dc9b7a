//! The Go1 draws the pose its observation shows, standing on the floor; the Python client's
//! port of the drawing (`client/python/src/ale_client/mujoco_view.py`) replays
//! `client/python/tests/fixtures/go1_drawings.json`, which this test keeps current
//! (`ALE_UPDATE_FIXTURES=1` rewrites it after a deliberate change to the drawing; commit it
//! with the matching change to the port).
#![cfg(feature = "mujoco")]

use std::path::Path;

use ale_sim::{DType, Drawing, Role, Shape, Tensor, TensorData, draw_fixture};
use ale_sims_go1::layout::{GRAVITY, ID, JOINT_ANGLES, OBSERVATION_LEN};

/// (seed, steps): reset on the seed, then that many sampled actions.
const CASES: [(u64, usize); 2] = [(0, 0), (1, 12)];

fn draw(observation: &[f64]) -> Drawing {
    let catalog = ale_sims_go1::catalog();
    let tensor = Tensor::new(
        vec![observation.len()],
        TensorData::F64(observation.to_vec()),
    )
    .unwrap();
    catalog
        .find(ID)
        .unwrap()
        .draw(&tensor)
        .expect("the Go1 draws")
}

/// A drawn part of the robot: its role and its outline's points.
type Outline = (Role, Vec<(f64, f64)>);

/// The floor's line, then the robot's outlines with their roles.
fn parts(drawing: &Drawing) -> (f64, Vec<Outline>) {
    let mut floor = None;
    let mut robot = Vec::new();
    for shape in &drawing.shapes {
        match shape {
            Shape::Line {
                from,
                to,
                role: Role::Ground,
            } => {
                assert!((from.1 - to.1).abs() < 1e-9, "a level floor");
                floor = Some(from.1);
            }
            Shape::Polygon { points, role } => robot.push((*role, points.clone())),
            Shape::Circle {
                center,
                radius,
                role,
            } => robot.push((
                *role,
                vec![(center.0, center.1 - radius), (center.0, center.1 + radius)],
            )),
            other => panic!("unexpected {other:?}"),
        }
    }
    (floor.expect("the floor is drawn"), robot)
}

fn standing() -> Vec<f64> {
    let mut observation = vec![0.0; OBSERVATION_LEN];
    observation[GRAVITY + 2] = -1.0;
    observation
}

#[test]
fn the_go1_stands_on_the_floor_in_view_its_legs_below_its_trunk() {
    let drawing = draw(&standing());
    let v = drawing.viewport;
    let (floor, robot) = parts(&drawing);
    assert!(v.y_min < floor && floor < v.y_max, "floor {floor} in {v:?}");
    let body: Vec<_> = robot.iter().filter(|(r, _)| *r == Role::Body).collect();
    let limbs: Vec<_> = robot.iter().filter(|(r, _)| *r == Role::Limb).collect();
    assert!(
        !body.is_empty() && limbs.len() >= 12,
        "{} body, {} limbs",
        body.len(),
        limbs.len()
    );
    let lowest = |parts: &[&Outline]| {
        parts
            .iter()
            .flat_map(|(_, p)| p.iter().map(|q| q.1))
            .fold(f64::INFINITY, f64::min)
    };
    // Seen from 20° above, the nearest foot's bottom lies a little below the floor's line
    // (drawn through the trunk), the farthest a little above it: within a few cm.
    assert!(
        (lowest(&limbs) - floor).abs() < 0.06,
        "feet at {}, floor at {floor}",
        lowest(&limbs)
    );
    assert!(
        lowest(&body) > floor + 0.15,
        "the trunk stands above the floor"
    );
    for (_, points) in &robot {
        for &(x, y) in points {
            assert!(
                v.x_min <= x && x <= v.x_max && v.y_min <= y && y <= v.y_max,
                "({x}, {y}) out of {v:?}"
            );
        }
    }
}

#[test]
fn the_pose_follows_the_joint_angles_and_gravity() {
    let upright = draw(&standing());
    let mut bent = standing();
    bent[JOINT_ANGLES + 2] = 0.8; // the front right knee, straighter
    assert_ne!(draw(&bent), upright);
    // Gravity along the trunk's +z: upside down, the trunk below its legs.
    let mut flipped = vec![0.0; OBSERVATION_LEN];
    flipped[GRAVITY + 2] = 1.0;
    let (floor, robot) = parts(&draw(&flipped));
    let top = |role: Role| {
        robot
            .iter()
            .filter(|(r, _)| *r == role)
            .flat_map(|(_, p)| p.iter().map(|q| q.1))
            .fold(f64::NEG_INFINITY, f64::max)
    };
    assert!(top(Role::Limb) > top(Role::Body), "the legs point up");
    assert!(
        top(Role::Body) > floor,
        "the trunk lies on the floor, not under it"
    );
    // Drawing again from the same observation gives the same picture.
    assert_eq!(draw(&bent), draw(&bent));
}

#[test]
fn a_short_empty_or_non_finite_observation_still_draws() {
    for observation in [
        Tensor::zeros(vec![0], DType::F64),
        Tensor::new(vec![2], TensorData::F64(vec![f64::NAN, f64::INFINITY])).unwrap(),
        Tensor::new(vec![200], TensorData::F64(vec![1e300; 200])).unwrap(),
    ] {
        let drawing = ale_sims_go1::catalog()
            .find(ID)
            .unwrap()
            .draw(&observation)
            .unwrap();
        assert!(!drawing.shapes.is_empty());
        for shape in &drawing.shapes {
            if let Shape::Polygon { points, .. } = shape {
                assert!(points.iter().all(|(x, y)| x.is_finite() && y.is_finite()));
            }
        }
    }
}

#[test]
fn python_drawing_fixture_is_up_to_date() {
    let cases = draw_fixture::cases(&ale_sims_go1::catalog(), &CASES);
    let fresh = draw_fixture::render(
        "Made by sims/go1/tests/drawing.rs (ALE_UPDATE_FIXTURES=1 rewrites it); replayed by \
         client/python/tests/test_render_mujoco.py.",
        &cases,
    );
    draw_fixture::check(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../client/python/tests/fixtures/go1_drawings.json"),
        &fresh,
        "rerun with ALE_UPDATE_FIXTURES=1 (`ALE_UPDATE_FIXTURES=1 cargo test -p ale-sims-go1 \
         --features mujoco --test drawing`), and port the change to \
         client/python/src/ale_client/mujoco_view.py",
    );
}
