//! Parity fixtures: episodes recorded from Gymnasium, replayed against our sims.
//!
//! A fixture is one JSON object (format in `docs/sims.md`): the Gymnasium env id, the exact
//! state set right after `reset`, the actions, and per action the observation, reward and
//! flags Gymnasium produced. Observations and rewards must agree within 1e-6 relative (1e-9
//! absolute near zero); flags exactly.

use serde::Deserialize;
use serde_json::Value;

use crate::catalog::SimCatalog;
use crate::tensor::Tensor;

/// Relative tolerance on observations and rewards.
pub const RELATIVE_TOLERANCE: f64 = 1e-6;
/// Absolute tolerance, for values near zero.
pub const ABSOLUTE_TOLERANCE: f64 = 1e-9;

#[derive(Debug, Clone, Deserialize)]
pub struct Fixture {
    pub env: String,
    pub initial_state: Vec<f64>,
    /// An integer per step for Discrete actions, a list of numbers for Box actions.
    pub actions: Vec<Value>,
    pub observations: Vec<Vec<f64>>,
    pub rewards: Vec<f64>,
    pub terminated: Vec<bool>,
    pub truncated: Vec<bool>,
}

/// Why a fixture failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("not a fixture: {0}")]
    Format(String),
    #[error("no simulator in the catalog mirrors Gymnasium's {0:?}")]
    UnknownEnv(String),
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
        let fixture: Fixture =
            serde_json::from_str(text).map_err(|e| ReplayError::Format(e.to_string()))?;
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

    /// Replays the fixture against the sim of `catalog` that mirrors its env; `Ok` holds the
    /// number of steps checked.
    pub fn replay(&self, catalog: &SimCatalog) -> Result<usize, ReplayError> {
        let entry = catalog
            .find(&self.env)
            .filter(|e| e.has_gymnasium_parity())
            .ok_or_else(|| ReplayError::UnknownEnv(self.env.clone()))?;
        let mut sim = entry
            .build_plain(entry.default_max_steps())
            .map_err(|e| ReplayError::Format(format!("{} cannot be built: {e}", self.env)))?;
        sim.reset(0)
            .map_err(|e| ReplayError::Format(format!("{} cannot reset: {e}", self.env)))?;
        let mismatch = |step, what| ReplayError::Mismatch { step, what };
        sim.reset_to_state(&self.initial_state)
            .map_err(|e| mismatch(0, format!("initial state rejected: {e}")))?;
        for step in 0..self.actions.len() {
            let action = self.action(step)?;
            let t = sim
                .step(&action)
                .map_err(|e| mismatch(step, format!("the sim refused the action: {e}")))?;
            let got = sim.observation().to_f64_vec();
            let want = &self.observations[step];
            if got.len() != want.len() {
                return Err(mismatch(
                    step,
                    format!(
                        "observation has {} elements, expected {}",
                        got.len(),
                        want.len()
                    ),
                ));
            }
            if let Some(i) = (0..got.len()).find(|&i| !close(got[i], want[i])) {
                return Err(mismatch(
                    step,
                    format!(
                        "observation[{i}] is {:e}, Gymnasium gave {:e}",
                        got[i], want[i]
                    ),
                ));
            }
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
        Ok(self.actions.len())
    }
}
