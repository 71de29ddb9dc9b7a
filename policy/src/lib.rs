//! Policy files of batch mode: read a submitted policy and evaluate it on blocks of
//! observations.
//!
//! A batch task's submission contract names a format; [`load`] reads the file's bytes in that
//! format, checks it against the task's observation and action spaces before anything runs, and
//! returns a [`BatchPolicy`] that turns a block of `n` flattened observations into `n` actions
//! with one matrix product per layer. Every byte is treated as hostile: a malformed file is a
//! [`PolicyError`], never a panic, and nothing is allocated from a size the file declares before
//! that size is checked against the bytes actually given and against the caps in [`limits`].
//!
//! Formats (see `docs/batch.md`):
//! * [`MLP_SAFETENSORS`]: an MLP in a safetensors file, as PyTorch's
//!   `safetensors.torch.save_file(model.state_dict(), path, metadata={"activation": "tanh"})`
//!   writes it ([`Mlp`]).
//! * [`ONNX`]: a graph exported by `torch.onnx.export`, run by tract (cargo feature `onnx`).
//!
//! ```
//! use ale_policy::{BatchPolicy, load};
//! use ale_sim::{BoxSpace, DType, DiscreteSpace, Space};
//! # fn file() -> Vec<u8> {
//! #     let w: Vec<u8> = [1.0f32, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0]
//! #         .iter().flat_map(|v| v.to_le_bytes()).collect();
//! #     let view = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![2, 4], &w).unwrap();
//! #     safetensors::serialize([("0.weight", view)], None).unwrap()
//! # }
//! let obs = Space::Box(BoxSpace::uniform(vec![4], DType::F32, -10.0, 10.0));
//! let act = Space::Discrete(DiscreteSpace::new(2));
//! let mut policy = load("mlp-safetensors", &file(), &obs, &act)?;
//! let mut actions = policy.action_map().blank_actions(2);
//! // Two rows: x = 1 prefers output 0, x = -1 prefers output 1.
//! policy.act(&[1.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0], 2, &mut actions)?;
//! assert_eq!(actions[0], ale_sim::Tensor::scalar_i64(0));
//! assert_eq!(actions[1], ale_sim::Tensor::scalar_i64(1));
//! # Ok::<(), ale_policy::PolicyError>(())
//! ```

mod action;
mod error;
mod mlp;
mod mlp_file;
mod obs;
#[cfg(feature = "onnx")]
mod onnx;

use ale_sim::{Space, Tensor};

pub use action::ActionMap;
pub use error::PolicyError;
pub use mlp::{Activation, Mlp, MlpPolicy, Scratch};
pub use obs::ObsEncoder;
#[cfg(feature = "onnx")]
pub use onnx::OnnxPolicy;

/// The contract's format string for an MLP in a safetensors file.
pub const MLP_SAFETENSORS: &str = "mlp-safetensors";
/// The contract's format string for an ONNX graph.
pub const ONNX: &str = "onnx";
/// Every format string [`load`] knows, whether or not it is built in.
pub const FORMATS: [&str; 2] = [MLP_SAFETENSORS, ONNX];

/// Caps on what a policy file may declare; anything above is refused before it is allocated.
pub mod limits {
    /// Largest policy file accepted, in bytes.
    pub const MAX_FILE_BYTES: u64 = 256 << 20;
    /// Largest safetensors JSON header accepted, in bytes.
    pub const MAX_HEADER_BYTES: u64 = 1 << 20;
    /// Most linear layers in an MLP.
    pub const MAX_LAYERS: usize = 32;
    /// Widest layer input or output of an MLP.
    pub const MAX_WIDTH: usize = 8192;
    /// Most weights and biases in an MLP, all layers together.
    pub const MAX_PARAMETERS: usize = 16 << 20;
}

/// A policy evaluated on blocks of observations, as the batch pipeline runs it.
///
/// The pipeline flattens each env's observation into one row with [`ObsEncoder::encode`],
/// calls [`act`](BatchPolicy::act) once per step for the whole block, and passes each action
/// tensor to its env. After the first call at a given block size, `act` of the safetensors MLP
/// allocates nothing of its own (matrixmultiply still allocates one packing buffer per layer
/// and call; `tests/no_alloc.rs` pins that).
pub trait BatchPolicy {
    /// How observations are flattened into rows for this policy.
    fn obs_encoder(&self) -> &ObsEncoder;

    /// How output rows become actions; also makes the action tensors `act` writes into.
    fn action_map(&self) -> &ActionMap;

    /// Length of one observation row.
    fn obs_dim(&self) -> usize {
        self.obs_encoder().dim()
    }

    /// Computes the actions for `n` observation rows (`obs` is `n × obs_dim`, row-major) into
    /// `actions[..n]`, tensors made by [`ActionMap::blank_actions`].
    fn act(&mut self, obs: &[f32], n: usize, actions: &mut [Tensor]) -> Result<(), PolicyError>;
}

/// Reads a policy file in the contract's `format` and checks it against the task's spaces.
///
/// An unknown format names the known ones; a known format left out of this build says which
/// cargo feature brings it.
pub fn load(
    format: &str,
    bytes: &[u8],
    obs: &Space,
    act: &Space,
) -> Result<Box<dyn BatchPolicy + Send>, PolicyError> {
    match format {
        MLP_SAFETENSORS => Ok(Box::new(MlpPolicy::from_safetensors(bytes, obs, act)?)),
        #[cfg(feature = "onnx")]
        ONNX => Ok(Box::new(OnnxPolicy::from_bytes(bytes, obs, act)?)),
        #[cfg(not(feature = "onnx"))]
        ONNX => Err(PolicyError::FormatNotBuilt {
            format: ONNX,
            feature: "onnx",
        }),
        other => Err(PolicyError::UnknownFormat {
            got: other.to_string(),
            known: FORMATS.to_vec(),
        }),
    }
}

/// Checks a caller's buffer length; the batch entry points share it.
pub(crate) fn check_len(
    what: &'static str,
    got: usize,
    expected: usize,
) -> Result<(), PolicyError> {
    if got == expected {
        Ok(())
    } else {
        Err(PolicyError::BatchShape {
            what,
            expected,
            got,
        })
    }
}
