//! The policy a batch run plays, as the pipeline needs it: rows of float32 observations in,
//! one action tensor per row out, one call per block step.

use ale_sims::{Space, Tensor};

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

/// The evaluator's policy reader.
pub fn load(
    format: &str,
    _bytes: &[u8],
    _obs: &Space,
    _act: &Space,
) -> Result<Box<dyn Policy>, String> {
    Err(format!(
        "policy format {format:?} cannot be read by this evaluator build"
    ))
}
