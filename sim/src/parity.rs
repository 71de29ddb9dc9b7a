//! Parity fixtures: episodes recorded from Gymnasium, replayed against our sims.
//!
//! A fixture is one JSON object (format in `docs/sims.md`): the Gymnasium env id, how the
//! episode starts (an exact state set right after `reset`, or a seed given to `reset` and the
//! observation it returned), the actions, and per action the observation, reward and flags
//! Gymnasium produced. Observations and rewards must agree within 1e-6 relative (1e-9
//! absolute near zero); flags exactly.

use serde::Deserialize;
use serde_json::Value;

use crate::catalog::SimCatalog;
use crate::tensor::Tensor;

/// Relative tolerance on observations and rewards.
pub const RELATIVE_TOLERANCE: f64 = 1e-6;
/// Absolute tolerance, for values near zero.
pub const ABSOLUTE_TOLERANCE: f64 = 1e-9;

#[derive(Debug, Clone, PartialEq)]
pub struct Fixture {
    pub env: String,
    pub start: Start,
    /// An integer per step for Discrete actions, a list of numbers for Box actions.
    pub actions: Vec<Value>,
    pub observations: Vec<Vec<f64>>,
    pub rewards: Vec<f64>,
    pub terminated: Vec<bool>,
    pub truncated: Vec<bool>,
}

/// How a fixture's episode begins.
#[derive(Debug, Clone, PartialEq)]
pub enum Start {
    /// `initial_state`: Gymnasium's `env.unwrapped.state`, set right after a reset; the sim
    /// begins with `reset_to_state`.
    State(Vec<f64>),
    /// `seed` and `initial_observation`: Gymnasium's `env.reset(seed=seed)` and the
    /// observation it returned; the sim begins with `reset(seed)` and must return the same.
    Seed { seed: u64, observation: Vec<f64> },
}

/// A fixture as written, before the start is checked.
#[derive(Deserialize)]
struct FixtureFile {
    env: String,
    initial_state: Option<Vec<f64>>,
    seed: Option<Value>,
    initial_observation: Option<Vec<f64>>,
    actions: Vec<Value>,
    observations: Vec<Vec<f64>>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

/// What a replay checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Replayed {
    /// Steps checked.
    pub steps: usize,
    /// For a seeded fixture, whether the sim's first observation was Gymnasium's bit for bit
    /// (within tolerance it must be); `None` for a fixture that starts from a state.
    pub initial_observation_exact: Option<bool>,
}

/// Why a fixture failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("not a fixture: {0}")]
    Format(String),
    #[error("no simulator in the catalog mirrors Gymnasium's {0:?}")]
    UnknownEnv(String),
    /// The seeded reset failed or did not return Gymnasium's first observation.
    #[error("reset(seed={seed}): {what}")]
    Reset { seed: u64, what: String },
    #[error("step {step}: {what}")]
    Mismatch { step: usize, what: String },
}

/// Whether `got` is within tolerance of `want`.
pub fn close(got: f64, want: f64) -> bool {
    let diff = (got - want).abs();
    diff <= ABSOLUTE_TOLERANCE || diff <= RELATIVE_TOLERANCE * want.abs()
}

impl Fixture {
    pub fn parse(text: &str) -> Result<Fixture, ReplayError> {
        let file: FixtureFile =
            serde_json::from_str(text).map_err(|e| ReplayError::Format(e.to_string()))?;
        let start = match (file.initial_state, file.seed, file.initial_observation) {
            (Some(state), None, None) => Start::State(state),
            (None, Some(seed), Some(observation)) => {
                let seed = seed.as_u64().ok_or_else(|| {
                    ReplayError::Format(format!(
                        "seed must be an integer from 0 to {} (a sim's seed is a u64), got {seed}",
                        u64::MAX
                    ))
                })?;
                Start::Seed { seed, observation }
            }
            (None, Some(_), None) => {
                return Err(ReplayError::Format(
                    "a fixture with a seed needs the initial_observation reset returned".into(),
                ));
            }
            (Some(_), Some(_), _) | (None, None, _) => {
                return Err(ReplayError::Format(
                    "a fixture needs exactly one of initial_state or seed".into(),
                ));
            }
            (Some(_), None, Some(_)) => {
                return Err(ReplayError::Format(
                    "initial_observation belongs with a seed, not with initial_state".into(),
                ));
            }
        };
        let fixture = Fixture {
            env: file.env,
            start,
            actions: file.actions,
            observations: file.observations,
            rewards: file.rewards,
            terminated: file.terminated,
            truncated: file.truncated,
        };
        let n = fixture.actions.len();
        let lengths = [
            fixture.observations.len(),
            fixture.rewards.len(),
            fixture.terminated.len(),
            fixture.truncated.len(),
        ];
        if n == 0 || lengths.iter().any(|&l| l != n) {
            return Err(ReplayError::Format(format!(
                "{n} actions but {lengths:?} observations/rewards/terminated/truncated"
            )));
        }
        Ok(fixture)
    }

    fn action(&self, step: usize) -> Result<Tensor, ReplayError> {
        let bad = || {
            ReplayError::Format(format!(
                "action {step} is neither an integer nor a list of numbers"
            ))
        };
        match &self.actions[step] {
            Value::Number(n) => n.as_i64().map(Tensor::scalar_i64).ok_or_else(bad),
            Value::Array(items) => items
                .iter()
                .map(|v| v.as_f64().map(|x| x as f32))
                .collect::<Option<Vec<f32>>>()
                .map(Tensor::vector_f32)
                .ok_or_else(bad),
            _ => Err(bad()),
        }
    }

    /// Replays the fixture against the sim of `catalog` that mirrors its env.
    pub fn replay(&self, catalog: &SimCatalog) -> Result<Replayed, ReplayError> {
        let entry = catalog
            .find(&self.env)
            .filter(|e| e.has_gymnasium_parity())
            .ok_or_else(|| ReplayError::UnknownEnv(self.env.clone()))?;
        let mut sim = entry
            .build_plain(entry.default_max_steps())
            .map_err(|e| ReplayError::Format(format!("{} cannot be built: {e}", self.env)))?;
        let mismatch = |step, what| ReplayError::Mismatch { step, what };
        let initial_observation_exact = match &self.start {
            Start::State(state) => {
                sim.reset(0)
                    .map_err(|e| ReplayError::Format(format!("{} cannot reset: {e}", self.env)))?;
                sim.reset_to_state(state)
                    .map_err(|e| mismatch(0, format!("initial state rejected: {e}")))?;
                None
            }
            &Start::Seed {
                seed,
                ref observation,
            } => {
                let failed = |what| ReplayError::Reset { seed, what };
                sim.reset(seed)
                    .map_err(|e| failed(format!("{} cannot reset: {e}", self.env)))?;
                let got = sim.observation().to_f64_vec();
                compare_observation(&got, observation).map_err(failed)?;
                Some(
                    got.iter()
                        .zip(observation)
                        .all(|(g, w)| g.to_bits() == w.to_bits()),
                )
            }
        };
        for step in 0..self.actions.len() {
            let action = self.action(step)?;
            let t = sim
                .step(&action)
                .map_err(|e| mismatch(step, format!("the sim refused the action: {e}")))?;
            let got = sim.observation().to_f64_vec();
            compare_observation(&got, &self.observations[step]).map_err(|e| mismatch(step, e))?;
            if !close(t.reward, self.rewards[step]) {
                return Err(mismatch(
                    step,
                    format!(
                        "reward is {:e}, Gymnasium gave {:e}",
                        t.reward, self.rewards[step]
                    ),
                ));
            }
            let flags = (t.terminated, t.truncated);
            let want_flags = (self.terminated[step], self.truncated[step]);
            if flags != want_flags {
                return Err(mismatch(
                    step,
                    format!("(terminated, truncated) is {flags:?}, Gymnasium gave {want_flags:?}"),
                ));
            }
        }
        Ok(Replayed {
            steps: self.actions.len(),
            initial_observation_exact,
        })
    }
}

/// Whether an observation is within tolerance of Gymnasium's; if not, where not.
fn compare_observation(got: &[f64], want: &[f64]) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!(
            "observation has {} elements, expected {}",
            got.len(),
            want.len()
        ));
    }
    match (0..got.len()).find(|&i| !close(got[i], want[i])) {
        Some(i) => Err(format!(
            "observation[{i}] is {:e}, Gymnasium gave {:e}",
            got[i], want[i]
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEPS: &str = r#""actions": [1], "observations": [[0.0, 0.0, 0.0, 0.0]],
        "rewards": [1.0], "terminated": [false], "truncated": [false]"#;

    fn parse(start: &str) -> Result<Fixture, ReplayError> {
        Fixture::parse(&format!(r#"{{"env": "CartPole-v1", {start} {STEPS}}}"#))
    }

    #[test]
    fn a_fixture_starts_from_a_state_or_from_a_seed() {
        let state = parse(r#""initial_state": [0.01, 0.0, 0.0, 0.0],"#).unwrap();
        assert_eq!(state.start, Start::State(vec![0.01, 0.0, 0.0, 0.0]));
        let seeded =
            parse(r#""seed": 18446744073709551615, "initial_observation": [0.5, 0.0, 0.0, 0.0],"#)
                .unwrap();
        assert_eq!(
            seeded.start,
            Start::Seed {
                seed: u64::MAX,
                observation: vec![0.5, 0.0, 0.0, 0.0]
            }
        );
    }

    #[test]
    fn a_fixture_names_exactly_one_start() {
        let observation = r#""initial_observation": [0.0, 0.0, 0.0, 0.0],"#;
        for (start, expected) in [
            (
                format!(r#""initial_state": [0, 0, 0, 0], "seed": 1, {observation}"#),
                "exactly one of initial_state or seed",
            ),
            (String::new(), "exactly one of initial_state or seed"),
            (
                observation.to_string(),
                "exactly one of initial_state or seed",
            ),
            (r#""seed": 1,"#.to_string(), "needs the initial_observation"),
            (
                format!(r#""initial_state": [0, 0, 0, 0], {observation}"#),
                "initial_observation belongs with a seed",
            ),
            (
                format!(r#""seed": 18446744073709551616, {observation}"#),
                "seed must be an integer from 0 to 18446744073709551615",
            ),
            (
                format!(r#""seed": -1, {observation}"#),
                "seed must be an integer",
            ),
            (
                format!(r#""seed": 1.5, {observation}"#),
                "seed must be an integer",
            ),
        ] {
            let err = parse(&start).unwrap_err();
            assert!(
                matches!(&err, ReplayError::Format(m) if m.contains(expected)),
                "{start}: {err}"
            );
        }
    }
}
