//! What every bundled sim promises, checked on all of them.

use ale_sim::{Shape, SimError, Space, Tensor, TensorData};

fn bad_actions(space: &Space) -> Vec<(&'static str, Tensor)> {
    let n = space.flat_len();
    let mut bad = vec![
        (
            "wrong dtype",
            Tensor::new(vec![n], TensorData::F64(vec![0.0; n])).unwrap(),
        ),
        (
            "wrong shape",
            Tensor::new(vec![n + 1], TensorData::F32(vec![0.0; n + 1])).unwrap(),
        ),
    ];
    match space {
        Space::Box(b) => {
            let filled =
                |v: f32| Tensor::new(b.shape.clone(), TensorData::F32(vec![v; n])).unwrap();
            bad.push(("NaN", filled(f32::NAN)));
            bad.push(("infinite", filled(f32::INFINITY)));
            if b.shape.len() > 1 {
                bad.push(("flattened", Tensor::vector_f32(vec![0.0; n])));
            }
        }
        Space::Discrete(d) => {
            bad.push(("out of range", Tensor::scalar_i64(d.start + d.n as i64)));
            bad.push(("below range", Tensor::scalar_i64(d.start - 1)));
            bad.push(("float", Tensor::vector_f32(vec![0.0])));
        }
        _ => {}
    }
    bad
}

#[test]
fn bad_actions_are_rejected_naming_the_space_and_change_nothing() {
    for info in ale_sims::catalog().iter() {
        let mut sim = info.build_plain(info.default_max_steps()).unwrap();
        sim.reset(5).unwrap();
        let before = sim.observation().clone();
        let space = sim.action_space().to_string();
        for (what, action) in bad_actions(sim.action_space()) {
            match sim.step(&action) {
                Err(SimError::Action(e)) => {
                    assert_eq!(e.space, space, "{}: {what}", info.id());
                    assert!(e.to_string().contains(&space), "{}: {what}: {e}", info.id());
                }
                other => panic!("{}: {what} gave {other:?}", info.id()),
            }
        }
        assert_eq!(sim.observation(), &before, "{}", info.id());
        assert_eq!(sim.episode_steps(), 0, "{}", info.id());
    }
}

#[test]
fn observations_belong_to_the_observation_space_and_spaces_are_sound() {
    for info in ale_sims::catalog().iter() {
        let mut sim = info.build_plain(info.default_max_steps()).unwrap();
        sim.observation_space().validate().unwrap();
        sim.action_space().validate().unwrap();
        for seed in 0..5 {
            sim.reset(seed).unwrap();
            let mut rng = ale_sim::Rng::new(seed);
            for _ in 0..100 {
                sim.observation_space()
                    .check(sim.observation())
                    .unwrap_or_else(|e| panic!("{}: observation {e}", info.id()));
                let action = sim.action_space().sample(&mut rng);
                if sim.step(&action).unwrap().is_done() {
                    break;
                }
            }
        }
    }
}

#[test]
fn every_sim_draws_its_observation_in_its_viewport() {
    for info in ale_sims::catalog().iter() {
        let mut sim = info.build_plain(info.default_max_steps()).unwrap();
        sim.reset(9).unwrap();
        let drawing = info
            .draw(sim.observation())
            .expect("every bundled sim draws");
        let v = drawing.viewport;
        assert!(v.x_min < v.x_max && v.y_min < v.y_max, "{}", info.id());
        assert!(drawing.shapes.len() >= 3, "{}", info.id());
        for shape in &drawing.shapes {
            let points: Vec<(f64, f64)> = match shape {
                Shape::Line { from, to, .. } => vec![*from, *to],
                Shape::Circle { center, .. } => vec![*center],
                Shape::Polygon { points, .. } => points.clone(),
                Shape::Label { at, .. } => vec![*at],
            };
            for (x, y) in points {
                assert!(x.is_finite() && y.is_finite(), "{}: {shape:?}", info.id());
                let slack = 0.5 * (v.x_max - v.x_min);
                assert!(
                    x >= v.x_min - slack && x <= v.x_max + slack,
                    "{}: {shape:?}",
                    info.id()
                );
            }
        }
    }
}
