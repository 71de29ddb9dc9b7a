//! The policy a batch run plays, as the pipeline needs it: rows of float32 observations in,
//! one action tensor per row out, one call per block step.

use ale_sim::{Space, Tensor};

/// A submitted policy, read and checked against the task's spaces.
pub trait Policy: Send {
    /// Length of one observation row.
    fn obs_dim(&self) -> usize;
    /// Flattens `obs` into `row` (length [`obs_dim`](Policy::obs_dim)).
    fn encode(&self, obs: &Tensor, row: &mut [f32]) -> Result<(), String>;
    /// `n` action tensors for [`act`](Policy::act) to write into.
    fn blank_actions(&self, n: usize) -> Vec<Tensor>;
    /// The actions for `n` rows of `obs` (`n × obs_dim`, row-major) into `actions[..n]`.
    fn act(&mut self, obs: &[f32], n: usize, actions: &mut [Tensor]) -> Result<(), String>;
}

/// Reads a policy file in the contract's `format`, checked against the task's spaces; the
/// error is the message a FAILED run reports.
pub type Loader = fn(&str, &[u8], &Space, &Space) -> Result<Box<dyn Policy>, String>;

/// The evaluator's policy reader: `ale_policy::load` for the contract's format. Its
/// `PolicyError` message is what a FAILED run reports.
pub fn load(
    format: &str,
    bytes: &[u8],
    obs: &Space,
    act: &Space,
) -> Result<Box<dyn Policy>, String> {
    let policy = ale_policy::load(format, bytes, obs, act).map_err(|e| e.to_string())?;
    Ok(Box::new(Loaded(policy)))
}

/// A policy `ale-policy` read.
struct Loaded(Box<dyn ale_policy::BatchPolicy + Send>);

impl Policy for Loaded {
    fn obs_dim(&self) -> usize {
        self.0.obs_dim()
    }

    fn encode(&self, obs: &Tensor, row: &mut [f32]) -> Result<(), String> {
        self.0
            .obs_encoder()
            .encode(obs, row)
            .map_err(|e| e.to_string())
    }

    fn blank_actions(&self, n: usize) -> Vec<Tensor> {
        self.0.action_map().blank_actions(n)
    }

    fn act(&mut self, obs: &[f32], n: usize, actions: &mut [Tensor]) -> Result<(), String> {
        self.0.act(obs, n, actions).map_err(|e| e.to_string())
    }
}
