//! Canonical JSON, the form every chained line is written and hashed in, and an event's data
//! serialised in it ahead of sealing ([`PreparedData`]).

use serde::Serialize;
use serde_json::Value;

/// An event's data serialised canonically, ready to be sealed: the costly part of an append,
/// which a writer of many events (a batch run's rollouts) does before it takes any lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedData(pub(super) Vec<u8>);

impl PreparedData {
    pub fn new(data: &impl Serialize) -> Result<PreparedData, serde_json::Error> {
        Ok(PreparedData::of_value(&serde_json::to_value(data)?))
    }

    /// [`PreparedData::new`] for a record that serde_json writes canonically as it is: no
    /// `serde_json::Value` is built.
    pub fn of_sorted(
        data: &impl crate::event_data::SortedFields,
    ) -> Result<PreparedData, serde_json::Error> {
        serde_json::to_vec(data).map(PreparedData)
    }

    pub(super) fn of_value(value: &Value) -> PreparedData {
        let mut bytes = Vec::with_capacity(192);
        write_canonical(value, &mut bytes);
        PreparedData(bytes)
    }
}

/// Serializes a JSON value canonically: object keys sorted by their UTF-8 bytes, no
/// whitespace, strings escaped as serde_json escapes them, numbers as serde_json prints them.
///
/// ```
/// let v = serde_json::json!({"b": 1, "a": [true, null, 2.5]});
/// assert_eq!(ale_records::trajectory::canonical_json(&v), r#"{"a":[true,null,2.5],"b":1}"#);
/// ```
pub fn canonical_json(value: &Value) -> String {
    let mut out = Vec::new();
    write_canonical(value, &mut out);
    // Only valid UTF-8 is ever written: serde_json's own output and ASCII punctuation.
    String::from_utf8(out).unwrap_or_default()
}

fn write_canonical(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push(b'{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_scalar(key, out);
                out.push(b':');
                write_canonical(item, out);
            }
            out.push(b'}');
        }
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_canonical(item, out);
            }
            out.push(b']');
        }
        scalar => write_scalar(scalar, out),
    }
}

/// A string or scalar exactly as serde_json prints it, straight into `out`.
pub(super) fn write_scalar(value: &(impl Serialize + ?Sized), out: &mut Vec<u8>) {
    // Writing a string, number, bool or null into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, value);
}

#[cfg(test)]
mod tests {
    #[test]
    fn sorted_records_serialise_exactly_as_the_canonical_writer_does() {
        use super::PreparedData;
        use crate::event_data::*;
        use ale_proto::eval::*;
        use ale_proto::{RunId, SessionId};
        let episode = |index: u32, metric: f64| EpisodeRecord {
            index,
            outcome: Outcome::Aborted,
            metric,
            steps: 17,
            episode_return: -0.125,
            seed_commitment: "ab\u{e9}\"\\".into(),
            safety: [
                ("zeta".to_string(), 1.5),
                ("alpha".to_string(), f64::NAN),
                ("é".into(), 0.0),
            ]
            .into_iter()
            .collect(),
        };
        let result = EvalResultRecord {
            session_id: SessionId::from_wire("sess-1"),
            run_id: RunId::from_wire("run-1"),
            task_id: "t".into(),
            metric_name: "mean_return".into(),
            value: 1e300,
            direction: Direction::LowerIsBetter,
            status: EvalStatus::BudgetExceeded,
            status_message: "line\nbreak".into(),
            episodes: vec![episode(0, 1.0), episode(1, f64::INFINITY)],
            seed_commitments: vec!["c0".into(), "c1".into()],
            trajectory_head: "00".into(),
            total_steps: u64::MAX,
            safety: [("b".to_string(), 2.0), ("a".to_string(), 3.0)]
                .into_iter()
                .collect(),
        };
        let started = SessionStarted {
            session_id: SessionId::from_wire("sess-1"),
            seed_commitments: vec!["x".into(); 3],
        };
        let rollout = RolloutStarted {
            index: 4,
            seed_commitment: "y".into(),
        };
        fn same(data: &impl SortedFields) {
            let direct = PreparedData::of_sorted(data).unwrap();
            let canonical = PreparedData::new(data).unwrap();
            assert_eq!(
                String::from_utf8_lossy(&direct.0),
                String::from_utf8_lossy(&canonical.0)
            );
        }
        same(&episode(3, 2.5));
        same(&result);
        same(&started);
        same(&rollout);
    }
}
