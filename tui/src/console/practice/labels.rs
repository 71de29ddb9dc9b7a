//! The names the practice view gives an observation's values: the space's own labels, or, for
//! a row-structured observation (one row per robot), the row and the column's field as the
//! sim's documented layout names it (`ale_client::policy::layout`, `docs/sims.md`), else the
//! row and column numbers.

use ale_client::Space;
use ale_client::policy::layout::swarm2d;

/// One label per value of an observation of `space` from the sim `sim`, `len` values long.
pub fn observation_labels(sim: &str, space: &Space, len: usize) -> Vec<String> {
    let Space::Box(b) = space else {
        return indexed(len);
    };
    if b.labels.len() == len {
        return b.labels.clone();
    }
    match b.shape[..] {
        [rows, columns] if rows * columns == len => {
            let (row_name, fields) = match row_layout(sim, columns) {
                Some((row_name, fields)) => (row_name, Some(fields)),
                None => ("row", None),
            };
            (0..rows)
                .flat_map(|r| {
                    let fields = fields.as_ref();
                    (0..columns).map(move |c| match fields {
                        Some(f) => format!("{row_name} {r} {}", f[c]),
                        None => format!("{row_name} {r} [{c}]"),
                    })
                })
                .collect()
        }
        _ => indexed(len),
    }
}

/// One label per value of an action of `space` for the sim `sim`: a 1-D Box's own labels,
/// a swarm's rows as each robot's velocity, else `a[i]`.
pub fn action_labels(sim: &str, space: &Space, len: usize) -> Vec<String> {
    if let Space::Box(b) = space {
        if b.labels.len() == len {
            return b.labels.clone();
        }
        if sim == swarm2d::ID && b.shape[..] == [len / 2, 2] {
            return (0..len / 2)
                .flat_map(|r| [format!("robot {r} vx"), format!("robot {r} vy")])
                .collect();
        }
    }
    (0..len).map(|i| format!("a[{i}]")).collect()
}

fn indexed(len: usize) -> Vec<String> {
    (0..len).map(|i| format!("[{i}]")).collect()
}

/// What a row is and its columns' names, for the sims whose rows have a documented layout of
/// `columns` fields.
fn row_layout(sim: &str, columns: usize) -> Option<(&'static str, Vec<String>)> {
    if sim == swarm2d::ID && columns == swarm2d::FEATURES {
        return Some(("robot", swarm_fields()));
    }
    None
}

/// swarm2d's row: own position, goal offset, velocity, wall clearances, then each neighbour's
/// offset and relative velocity, nearest first.
fn swarm_fields() -> Vec<String> {
    let mut fields: Vec<String> = ["x", "y", "goal dx", "goal dy", "vx", "vy"]
        .map(String::from)
        .to_vec();
    debug_assert_eq!(fields.len(), swarm2d::WALLS);
    debug_assert_eq!(fields[swarm2d::GOAL_OFFSET], "goal dx");
    fields.extend(["wall left", "wall right", "wall bottom", "wall top"].map(String::from));
    debug_assert_eq!(fields.len(), swarm2d::NEIGHBOUR);
    for n in 1..=swarm2d::NEIGHBOURS {
        fields.extend(["dx", "dy", "dvx", "dvy"].map(|f| format!("n{n} {f}")));
    }
    debug_assert_eq!(fields.len(), swarm2d::FEATURES);
    fields
}

#[cfg(test)]
mod tests {
    use super::*;
    use ale_sim::{DType, space::BoxSpace};

    fn boxed(shape: Vec<usize>, labels: Vec<String>) -> Space {
        let n = shape.iter().product();
        Space::Box(BoxSpace {
            shape,
            dtype: DType::F32,
            low: vec![-1.0; n],
            high: vec![1.0; n],
            labels,
        })
    }

    #[test]
    fn a_swarms_rows_are_named_by_robot_and_documented_field() {
        let space = boxed(vec![16, 26], Vec::new());
        let labels = observation_labels("swarm2d", &space, 16 * 26);
        assert_eq!(labels.len(), 416);
        assert_eq!(labels[0], "robot 0 x");
        assert_eq!(labels[2], "robot 0 goal dx");
        assert_eq!(labels[8], "robot 0 wall bottom");
        assert_eq!(labels[10], "robot 0 n1 dx");
        assert_eq!(labels[25], "robot 0 n4 dvy");
        assert_eq!(labels[26 * 15 + 5], "robot 15 vy");
        // Another sim's rows: row and column numbers.
        let other = observation_labels("other", &boxed(vec![2, 3], Vec::new()), 6);
        assert_eq!(
            other,
            [
                "row 0 [0]",
                "row 0 [1]",
                "row 0 [2]",
                "row 1 [0]",
                "row 1 [1]",
                "row 1 [2]"
            ]
        );
        // A 1-D box keeps its own labels.
        let named = boxed(vec![2], vec!["a".into(), "b".into()]);
        assert_eq!(observation_labels("x", &named, 2), ["a", "b"]);
        assert_eq!(
            observation_labels("x", &boxed(vec![2], Vec::new()), 2),
            ["[0]", "[1]"]
        );
        // The swarm's action: each robot's velocity.
        let action = action_labels("swarm2d", &boxed(vec![16, 2], Vec::new()), 32);
        assert_eq!(action[0], "robot 0 vx");
        assert_eq!(action[31], "robot 15 vy");
        assert_eq!(
            action_labels("x", &boxed(vec![2], Vec::new()), 2),
            ["a[0]", "a[1]"]
        );
    }
}
