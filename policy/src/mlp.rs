//! A validated multilayer perceptron, evaluated a block of rows at a time.

use ale_sim::{Space, Tensor};

use crate::{ActionMap, BatchPolicy, ObsEncoder, PolicyError, check_len};

/// The nonlinearity between hidden layers (never after the last layer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    Tanh,
    Relu,
    Identity,
}

impl Activation {
    /// Every accepted name, as written in a file's metadata.
    pub const NAMES: [&'static str; 3] = ["tanh", "relu", "identity"];

    /// The activation named `name` (exactly one of [`NAMES`](Self::NAMES)).
    pub fn from_name(name: &str) -> Result<Self, PolicyError> {
        match name {
            "tanh" => Ok(Activation::Tanh),
            "relu" => Ok(Activation::Relu),
            "identity" => Ok(Activation::Identity),
            other => Err(PolicyError::UnknownActivation {
                got: other.to_string(),
                accepted: Self::NAMES.to_vec(),
            }),
        }
    }

    fn apply(self, values: &mut [f32]) {
        match self {
            Activation::Tanh => values.iter_mut().for_each(|v| *v = tanh(*v)),
            Activation::Relu => values.iter_mut().for_each(|v| *v = v.max(0.0)),
            Activation::Identity => {}
        }
    }
}

/// tanh as a rational function (Eigen's `generic_fast_tanh_float`): within a few float32 ulps
/// of the true value, and it vectorises, where `f32::tanh` is a libm call per element that
/// would cost more than the matrix products of a 64-wide MLP.
#[inline]
pub(crate) fn tanh(x: f32) -> f32 {
    // Beyond this, tanh rounds to ±1 in float32. A NaN stays NaN.
    const BOUND: f32 = 7.905_311;
    const A1: f32 = 4.893_524_6e-3;
    const A3: f32 = 6.372_619_3e-4;
    const A5: f32 = 1.485_722_4e-5;
    const A7: f32 = 5.122_297e-8;
    const A9: f32 = -8.604_672e-11;
    const A11: f32 = 2.000_188e-13;
    const A13: f32 = -2.760_768_5e-16;
    const B0: f32 = 4.893_525e-3;
    const B2: f32 = 2.268_434_6e-3;
    const B4: f32 = 1.185_347_1e-4;
    const B6: f32 = 1.198_258_4e-6;
    // Plain multiply-adds: `mul_add` is a slow library call on CPUs built without FMA.
    let x = x.clamp(-BOUND, BOUND);
    let x2 = x * x;
    let mut p = x2 * A13 + A11;
    p = x2 * p + A9;
    p = x2 * p + A7;
    p = x2 * p + A5;
    p = x2 * p + A3;
    p = x2 * p + A1;
    p *= x;
    let mut q = x2 * B6 + B4;
    q = x2 * q + B2;
    q = x2 * q + B0;
    p / q
}

/// One linear layer: `y = W x + b`, `W` stored `[out, in]` row-major as PyTorch stores it.
#[derive(Debug, Clone)]
pub(crate) struct Layer {
    pub inputs: usize,
    pub outputs: usize,
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

/// Observation normalisation: `(obs - mean) / max(std, eps)`, stored as mean and `1 / max(std,
/// eps)`.
#[derive(Debug, Clone)]
pub(crate) struct Normalizer {
    pub mean: Vec<f32>,
    pub inv_std: Vec<f32>,
}

/// The floor under `obs_std`, so a constant observation element does not divide by zero.
pub const OBS_STD_EPS: f32 = 1e-6;

/// A multilayer perceptron whose shapes have been checked against a task's spaces.
///
/// Built by [`Mlp::from_safetensors`]; evaluated with [`forward_batch`](Mlp::forward_batch).
#[derive(Debug, Clone)]
pub struct Mlp {
    pub(crate) layers: Vec<Layer>,
    pub(crate) activation: Activation,
    pub(crate) normalizer: Option<Normalizer>,
}

/// Reusable buffers for [`Mlp::forward_batch`]: they grow to the largest block seen and are
/// reused after, so steady-state evaluation allocates nothing.
#[derive(Debug, Default, Clone)]
pub struct Scratch {
    normalized: Vec<f32>,
    a: Vec<f32>,
    b: Vec<f32>,
}

impl Scratch {
    pub fn new() -> Self {
        Scratch::default()
    }
}

fn grow(buf: &mut Vec<f32>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0.0);
    }
}

impl Mlp {
    /// Reads an MLP from the bytes of a safetensors file (see `docs/batch.md` for the accepted
    /// keys, metadata and dtypes) and checks it against the task's spaces: the first layer
    /// takes the flattened observation, the last gives what the action space needs, layers
    /// chain, every value is finite.
    pub fn from_safetensors(bytes: &[u8], obs: &Space, act: &Space) -> Result<Mlp, PolicyError> {
        let encoder = ObsEncoder::new(obs)?;
        let actions = ActionMap::new(act)?;
        crate::mlp_file::read(bytes, &encoder, &actions, 1)
    }

    /// Length of an input row.
    pub fn input_dim(&self) -> usize {
        self.layers[0].inputs
    }

    /// Length of an output row.
    pub fn output_dim(&self) -> usize {
        self.layers[self.layers.len() - 1].outputs
    }

    /// The sizes from input to output, e.g. `[4, 64, 64, 2]`.
    pub fn sizes(&self) -> Vec<usize> {
        std::iter::once(self.input_dim())
            .chain(self.layers.iter().map(|l| l.outputs))
            .collect()
    }

    pub fn activation(&self) -> Activation {
        self.activation
    }

    /// Evaluates `n` rows: `obs` is `n × input_dim` row-major, `out` receives
    /// `n × output_dim`. One matrix product per layer for the whole block; allocates only when
    /// `scratch` has not yet seen a block this large.
    pub fn forward_batch(
        &self,
        obs: &[f32],
        n: usize,
        scratch: &mut Scratch,
        out: &mut [f32],
    ) -> Result<(), PolicyError> {
        let rows = |dim: usize| n.saturating_mul(dim);
        check_len("observation block", obs.len(), rows(self.input_dim()))?;
        check_len("output block", out.len(), rows(self.output_dim()))?;
        if n == 0 {
            return Ok(());
        }
        let Scratch { normalized, a, b } = scratch;
        let input: &[f32] = match &self.normalizer {
            Some(norm) => {
                grow(normalized, obs.len());
                let dst = &mut normalized[..obs.len()];
                for (dst_row, src_row) in dst
                    .chunks_exact_mut(norm.mean.len())
                    .zip(obs.chunks_exact(norm.mean.len()))
                {
                    for (((d, s), m), k) in dst_row
                        .iter_mut()
                        .zip(src_row)
                        .zip(&norm.mean)
                        .zip(&norm.inv_std)
                    {
                        *d = (s - m) * k;
                    }
                }
                dst
            }
            None => obs,
        };
        let last = self.layers.len() - 1;
        for (i, layer) in self.layers.iter().enumerate() {
            let src: &[f32] = if i == 0 {
                input
            } else {
                &a[..n * layer.inputs]
            };
            if i == last {
                layer.forward(src, n, out);
            } else {
                grow(b, n * layer.outputs);
                let dst = &mut b[..n * layer.outputs];
                layer.forward(src, n, dst);
                self.activation.apply(dst);
                std::mem::swap(a, b);
            }
        }
        Ok(())
    }
}

impl Layer {
    /// `dst (n × out) = src (n × in) · Wᵀ + b`; lengths are checked by the caller.
    fn forward(&self, src: &[f32], n: usize, dst: &mut [f32]) {
        debug_assert_eq!(src.len(), n * self.inputs);
        debug_assert_eq!(dst.len(), n * self.outputs);
        // A hidden layer of width 0 is a valid file (its output is empty); `chunks_exact_mut(0)`
        // would panic.
        if self.outputs == 0 {
            return;
        }
        for row in dst.chunks_exact_mut(self.outputs) {
            row.copy_from_slice(&self.bias);
        }
        if self.inputs == 0 {
            return;
        }
        // SAFETY: `src` holds n × inputs elements (row stride `inputs`), `weight` holds
        // outputs × inputs elements read as its transpose (row stride 1, column stride
        // `inputs`), and `dst` holds n × outputs elements (row stride `outputs`); every index
        // sgemm forms is inside these slices, and `dst` does not alias the inputs.
        unsafe {
            matrixmultiply::sgemm(
                n,
                self.inputs,
                self.outputs,
                1.0,
                src.as_ptr(),
                self.inputs as isize,
                1,
                self.weight.as_ptr(),
                1,
                self.inputs as isize,
                1.0,
                dst.as_mut_ptr(),
                self.outputs as isize,
                1,
            );
        }
    }
}

/// An [`Mlp`] with its observation encoder, action map and buffers: the [`BatchPolicy`] of the
/// `mlp-safetensors` format.
///
/// The MLP either reads the whole flattened observation, or, for a task whose observation is a
/// `[R, F]` Box and whose action a `[R, A]` Box (one row per robot of a swarm), it may read one
/// row: `F` inputs, `A` outputs, the same weights applied to each of the `R` rows. Which of the
/// two a file is follows from its first layer's width.
#[derive(Debug, Clone)]
pub struct MlpPolicy {
    mlp: Mlp,
    encoder: ObsEncoder,
    actions: ActionMap,
    /// MLP rows per observation: 1, or R for a shared per-row policy.
    rows: usize,
    scratch: Scratch,
    outputs: Vec<f32>,
}

/// R, when `obs` is a `[R, F]` Box and `act` a `[R, A]` Box with R > 1.
fn shared_rows(obs: &Space, act: &Space) -> Option<usize> {
    match (obs, act) {
        (Space::Box(o), Space::Box(a))
            if o.shape.len() == 2 && a.shape.len() == 2 && o.shape[0] == a.shape[0] =>
        {
            (o.shape[0] > 1).then_some(o.shape[0])
        }
        _ => None,
    }
}

impl MlpPolicy {
    /// Reads and checks the file as [`Mlp::from_safetensors`] does, or as a per-row policy
    /// (see the type's docs).
    pub fn from_safetensors(bytes: &[u8], obs: &Space, act: &Space) -> Result<Self, PolicyError> {
        let encoder = ObsEncoder::new(obs)?;
        let actions = ActionMap::new(act)?;
        let (mlp, rows) = match crate::mlp_file::read(bytes, &encoder, &actions, 1) {
            Ok(mlp) => (mlp, 1),
            Err(whole @ PolicyError::ObsMismatch { got, .. }) => match shared_rows(obs, act) {
                Some(rows) if got == encoder.dim() / rows => (
                    crate::mlp_file::read(bytes, &encoder, &actions, rows)?,
                    rows,
                ),
                _ => return Err(whole),
            },
            Err(e) => return Err(e),
        };
        Ok(MlpPolicy {
            mlp,
            encoder,
            actions,
            rows,
            scratch: Scratch::new(),
            outputs: Vec::new(),
        })
    }

    pub fn mlp(&self) -> &Mlp {
        &self.mlp
    }

    /// MLP rows per observation: 1 for a whole-observation policy, R for a per-row one.
    pub fn rows_per_observation(&self) -> usize {
        self.rows
    }
}

impl BatchPolicy for MlpPolicy {
    fn obs_encoder(&self) -> &ObsEncoder {
        &self.encoder
    }

    fn action_map(&self) -> &ActionMap {
        &self.actions
    }

    fn act(&mut self, obs: &[f32], n: usize, actions: &mut [Tensor]) -> Result<(), PolicyError> {
        let rows = n.saturating_mul(self.rows);
        let len = rows.saturating_mul(self.mlp.output_dim());
        // The expected observation length is checked by forward_batch before this could
        // matter; a block too large to address fails there too.
        check_len(
            "observation block",
            obs.len(),
            rows.saturating_mul(self.mlp.input_dim()),
        )?;
        grow(&mut self.outputs, len);
        let outputs = &mut self.outputs[..len];
        self.mlp
            .forward_batch(obs, rows, &mut self.scratch, outputs)?;
        self.actions.write_batch(outputs, n, actions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_tanh_matches_the_true_tanh() {
        let mut worst = 0.0f64;
        for i in -20_000..=20_000 {
            let x = i as f32 * 1e-3;
            let err = (f64::from(tanh(x)) - f64::from(x).tanh()).abs();
            worst = worst.max(err);
        }
        assert!(worst < 1e-6, "worst error {worst}");
        assert_eq!(tanh(100.0), 1.0);
        assert_eq!(tanh(-100.0), -1.0);
        assert!(tanh(f32::NAN).is_nan());
    }
}
