//! Every env draws the pose its observation shows and labels its values with the model's
//! names; the Python client's port of the drawing (`client/python/src/ale_client/render.py`)
//! replays `client/python/tests/fixtures/mujoco_drawings.json`, which this test keeps current
//! (`ALE_UPDATE_FIXTURES=1` rewrites it after a deliberate change to a drawing; commit it with
//! the matching change to the port).
#![cfg(feature = "mujoco")]

use std::path::{Path, PathBuf};

use ale_sim::{Drawing, Rng, Role, Shape, Space, Tensor, TensorData, draw_fixture};

/// (seed, steps) per env: reset on the seed, then that many sampled actions.
const CASES: [(u64, usize); 2] = [(0, 0), (1, 8)];

fn points(drawing: &Drawing) -> Vec<(f64, f64)> {
    drawing
        .shapes
        .iter()
        .flat_map(|shape| match shape {
            Shape::Line { from, to, .. } => vec![*from, *to],
            Shape::Circle { center, .. } => vec![*center],
            Shape::Polygon { points, .. } => points.clone(),
            Shape::Label { at, .. } => vec![*at],
        })
        .collect()
}

fn roles(drawing: &Drawing) -> Vec<Role> {
    drawing
        .shapes
        .iter()
        .map(|shape| match shape {
            Shape::Line { role, .. }
            | Shape::Circle { role, .. }
            | Shape::Polygon { role, .. }
            | Shape::Label { role, .. } => *role,
        })
        .collect()
}

#[test]
fn every_env_draws_its_robot_in_view_and_the_pose_moves_it() {
    let catalog = ale_sims_mujoco::catalog();
    for entry in catalog.iter() {
        let id = entry.id();
        let mut sim = entry.build_plain(entry.default_max_steps()).unwrap();
        sim.reset(3).unwrap();
        let first = entry.draw(sim.observation()).expect("every env draws");
        let v = first.viewport;
        assert!(v.x_min < v.x_max && v.y_min < v.y_max, "{id}: {v:?}");
        let roles = roles(&first);
        assert!(roles.contains(&Role::Limb), "{id}: {roles:?}");
        assert!(
            points(&first)
                .iter()
                .all(|(x, y)| x.is_finite() && y.is_finite()),
            "{id}"
        );
        // Somewhere in view: a limb's point inside the viewport.
        assert!(
            points(&first)
                .iter()
                .any(|&(x, y)| v.x_min <= x && x <= v.x_max && v.y_min <= y && y <= v.y_max),
            "{id}: nothing in view"
        );
        let mut rng = Rng::new(3);
        for _ in 0..10 {
            let action = sim.action_space().sample(&mut rng);
            if sim.step(&action).unwrap().is_done() {
                break;
            }
        }
        let later = entry.draw(sim.observation()).unwrap();
        assert_ne!(first, later, "{id}: the drawing follows the pose");
        // Drawing again from the same observation gives the same picture.
        assert_eq!(later, entry.draw(sim.observation()).unwrap(), "{id}");
    }
}

#[test]
fn a_short_empty_or_non_finite_observation_still_draws() {
    let catalog = ale_sims_mujoco::catalog();
    for entry in catalog.iter() {
        let id = entry.id();
        for observation in [
            Tensor::zeros(vec![0], ale_sim::DType::F64),
            Tensor::new(vec![2], TensorData::F64(vec![f64::NAN, f64::INFINITY])).unwrap(),
            Tensor::new(vec![200], TensorData::F64(vec![1e300; 200])).unwrap(),
        ] {
            let drawing = entry.draw(&observation).expect("every env draws");
            assert!(!drawing.shapes.is_empty(), "{id}");
        }
    }
}

#[test]
fn observations_and_actions_are_labelled_with_the_models_names() {
    let catalog = ale_sims_mujoco::catalog();
    for entry in catalog.iter() {
        let id = entry.id();
        let sim = entry.build_plain(10).unwrap();
        let (Space::Box(observation), Space::Box(action)) =
            (sim.observation_space(), sim.action_space())
        else {
            panic!("{id}: Box spaces");
        };
        assert_eq!(observation.labels.len(), observation.low.len(), "{id}");
        assert_eq!(action.labels.len(), action.low.len(), "{id}");
        assert!(
            observation
                .labels
                .iter()
                .chain(&action.labels)
                .all(|l| !l.is_empty()),
            "{id}: {:?}",
            observation.labels
        );
    }
    let hopper = catalog.find("Hopper-v5").unwrap().build_plain(10).unwrap();
    let Space::Box(observation) = hopper.observation_space() else {
        unreachable!()
    };
    assert_eq!(observation.labels[..2], ["rootz", "rooty"]);
    assert_eq!(observation.labels[5], "vel rootx");
    let ant = catalog.find("Ant-v5").unwrap().build_plain(10).unwrap();
    let (Space::Box(observation), Space::Box(action)) =
        (ant.observation_space(), ant.action_space())
    else {
        unreachable!()
    };
    assert_eq!(observation.labels[..2], ["root.z", "root.qw"]);
    assert_eq!(observation.labels[27], "cfrc torso.tx");
    assert_eq!(action.labels[0], "hip_4");
    let humanoid = catalog
        .find("Humanoid-v5")
        .unwrap()
        .build_plain(10)
        .unwrap();
    let Space::Box(observation) = humanoid.observation_space() else {
        unreachable!()
    };
    // 22 positions and 23 velocities, then 13 bodies' cinert (10 each) and cvel (6 each),
    // then the 17 hinges' actuator forces and the 13 bodies' cfrc_ext.
    let labels = &observation.labels;
    assert_eq!(labels[..2], ["root.z", "root.qw"]);
    assert_eq!(labels[45..47], ["cinert torso.ixx", "cinert torso.iyy"]);
    assert_eq!(labels[45 + 9], "cinert torso.m");
    assert_eq!(labels[175], "cvel torso.wx");
    assert!(
        labels[253].starts_with("actuator force abdomen"),
        "{}",
        labels[253]
    );
    assert_eq!(labels[270], "cfrc torso.tx");
    let pusher = catalog.find("Pusher-v5").unwrap().build_plain(10).unwrap();
    let Space::Box(observation) = pusher.observation_space() else {
        unreachable!()
    };
    assert_eq!(observation.labels[0], "r_shoulder_pan_joint");
    assert_eq!(observation.labels[14..16], ["tips_arm.x", "tips_arm.y"]);
    assert_eq!(observation.labels[22], "goal.z");
}

#[test]
fn a_geom_on_a_body_named_for_a_goal_is_drawn_as_the_goal() {
    // Pusher's goal is an unnamed geom on its `goal` body.
    let entry = ale_sims_mujoco::catalog()
        .find("Pusher-v5")
        .unwrap()
        .clone();
    let mut sim = entry.build_plain(10).unwrap();
    sim.reset(1).unwrap();
    let drawing = entry.draw(sim.observation()).unwrap();
    let goals = roles(&drawing)
        .into_iter()
        .filter(|r| *r == Role::Goal)
        .count();
    assert_eq!(goals, 1, "{:?}", roles(&drawing));
}

fn fixture_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../client/python/tests/fixtures/mujoco_drawings.json")
}

#[test]
fn python_drawing_fixture_is_up_to_date() {
    let cases = draw_fixture::cases(&ale_sims_mujoco::catalog(), &CASES);
    let fresh = draw_fixture::render(
        "Made by sims/gymnasium-mujoco/tests/drawing.rs (ALE_UPDATE_FIXTURES=1 rewrites it); \
         replayed by client/python/tests/test_render_mujoco.py.",
        &cases,
    );
    draw_fixture::check(
        &fixture_path(),
        &fresh,
        "rerun with ALE_UPDATE_FIXTURES=1 (`ALE_UPDATE_FIXTURES=1 cargo test -p \
         ale-sims-mujoco --features mujoco --test drawing`), and port the change to \
         client/python/src/ale_client/mujoco_view.py",
    );
}
