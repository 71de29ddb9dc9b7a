//! ONNX graphs run by tract: one input `[batch, obs_dim]` float32, one output
//! `[batch, output_dim]` float32, the batch dimension symbolic or fixed.

use std::panic::{AssertUnwindSafe, catch_unwind};

use ale_sim::{Space, Tensor};
use tract_onnx::prelude::{
    DatumType, Framework, InferenceModelExt, IntoTensor, TDim, TValue, TVec, TypedFact, TypedModel,
    TypedSimpleState, tvec,
};
use tract_onnx::tract_core::model::IntoRunnable;

use crate::limits::MAX_FILE_BYTES;
use crate::{ActionMap, BatchPolicy, ObsEncoder, PolicyError, check_len};

/// Whether the graph takes any number of rows or exactly this many.
#[derive(Debug, Clone, Copy)]
enum Batch {
    Symbolic,
    Fixed(usize),
}

/// An ONNX graph checked against the task's spaces: the [`BatchPolicy`] of the `onnx` format.
///
/// A graph with a symbolic batch dimension runs once per block; one with a fixed batch `B`
/// runs once per `B` rows, the last run padded with zeros.
pub struct OnnxPolicy {
    state: TypedSimpleState,
    batch: Batch,
    encoder: ObsEncoder,
    actions: ActionMap,
    /// Rows of a fixed-batch graph, padded.
    padded: Vec<f32>,
}

impl std::fmt::Debug for OnnxPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OnnxPolicy")
            .field("batch", &self.batch)
            .field("obs_dim", &self.encoder.dim())
            .field("output_dim", &self.actions.output_dim())
            .finish_non_exhaustive()
    }
}

fn model_error(e: impl std::fmt::Display) -> PolicyError {
    PolicyError::OnnxModel(e.to_string())
}

/// Runs `f`, turning a panic inside tract (hostile bytes reach its parser) into an error.
fn guarded<T>(
    f: impl FnOnce() -> Result<T, PolicyError>,
    wrap: fn(String) -> PolicyError,
) -> Result<T, PolicyError> {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown cause".into());
        Err(wrap(format!("tract panicked: {why}")))
    })
}

fn describe(fact: &TypedFact) -> String {
    format!("{:?} of shape {:?}", fact.datum_type, fact.shape.dims())
}

impl OnnxPolicy {
    /// Reads an ONNX graph and checks its input and output against the task's spaces before
    /// anything runs. An operator tract does not implement is an [`PolicyError::OnnxModel`]
    /// naming it.
    pub fn from_bytes(bytes: &[u8], obs: &Space, act: &Space) -> Result<Self, PolicyError> {
        let encoder = ObsEncoder::new(obs)?;
        let actions = ActionMap::new(act)?;
        if bytes.len() as u64 > MAX_FILE_BYTES {
            return Err(PolicyError::OverCap {
                what: "the file".into(),
                declared: bytes.len() as u64,
                max: MAX_FILE_BYTES,
            });
        }
        let model = guarded(
            || {
                let mut reader = bytes;
                let model = tract_onnx::onnx()
                    .model_for_read(&mut reader)
                    .map_err(|e| model_error(format!("{e:#}")))?;
                model
                    .into_typed()
                    .map_err(|e| model_error(format!("{e:#}")))
            },
            PolicyError::OnnxModel,
        )?;
        let batch = check_io(&model, &encoder, &actions)?;
        let state = guarded(
            || {
                let plan = model
                    .into_optimized()
                    .and_then(|m| m.into_runnable())
                    .map_err(|e| model_error(format!("{e:#}")))?;
                plan.spawn().map_err(|e| model_error(format!("{e:#}")))
            },
            PolicyError::OnnxModel,
        )?;
        Ok(OnnxPolicy {
            state,
            batch,
            encoder,
            actions,
            padded: Vec::new(),
        })
    }

    /// Runs the graph on `rows` rows (`input` is `rows × obs_dim`) into `out`.
    fn run(&mut self, input: &[f32], rows: usize, out: &mut [f32]) -> Result<(), PolicyError> {
        let obs_dim = self.encoder.dim();
        let state = &mut self.state;
        guarded(
            || {
                let run_error =
                    |e: tract_onnx::prelude::TractError| PolicyError::OnnxRun(format!("{e:#}"));
                let tensor = tract_onnx::prelude::Tensor::from_shape(&[rows, obs_dim], input)
                    .map_err(run_error)?;
                let inputs: TVec<TValue> = tvec!(tensor.into_tensor().into());
                let outputs = state.run(inputs).map_err(run_error)?;
                let output = outputs
                    .first()
                    .ok_or_else(|| PolicyError::OnnxRun("the graph gave no output".into()))?;
                let view = output.try_as_plain_ram().map_err(run_error)?;
                let values = view.as_slice::<f32>().map_err(run_error)?;
                check_len("ONNX output", values.len(), out.len())?;
                out.copy_from_slice(values);
                Ok(())
            },
            PolicyError::OnnxRun,
        )
    }
}

/// Checks the graph has one float32 input `[batch, obs_dim]` and one float32 output
/// `[batch, output_dim]`, and tells whether the batch is symbolic or fixed.
fn check_io(
    model: &TypedModel,
    encoder: &ObsEncoder,
    actions: &ActionMap,
) -> Result<Batch, PolicyError> {
    let (inputs, outputs) = (model.inputs.len(), model.outputs.len());
    if inputs != 1 || outputs != 1 {
        return Err(PolicyError::OnnxShape {
            which: "signature",
            expected: "1 input and 1 output".into(),
            got: format!("{inputs} inputs and {outputs} outputs"),
        });
    }
    let input = model.input_fact(0).map_err(model_error)?;
    let output = model.output_fact(0).map_err(model_error)?;
    let input_wanted = format!("float32 [batch, {}]", encoder.dim());
    let output_wanted = format!(
        "float32 [batch, {}] ({})",
        actions.output_dim(),
        actions.describe()
    );
    let batch = match input.shape.dims() {
        [batch, width]
            if input.datum_type == DatumType::F32 && *width == TDim::Val(encoder.dim() as i64) =>
        {
            match batch {
                TDim::Val(b) if *b > 0 => Batch::Fixed(*b as usize),
                TDim::Val(_) => {
                    return Err(PolicyError::OnnxShape {
                        which: "input",
                        expected: input_wanted,
                        got: describe(input),
                    });
                }
                _ => Batch::Symbolic,
            }
        }
        _ => {
            return Err(PolicyError::OnnxShape {
                which: "input",
                expected: input_wanted,
                got: describe(input),
            });
        }
    };
    match output.shape.dims() {
        [out_batch, width]
            if output.datum_type == DatumType::F32
                && *width == TDim::Val(actions.output_dim() as i64)
                && *out_batch == input.shape.dims()[0] => {}
        _ => {
            return Err(PolicyError::OnnxShape {
                which: "output",
                expected: output_wanted,
                got: describe(output),
            });
        }
    }
    Ok(batch)
}

impl BatchPolicy for OnnxPolicy {
    fn obs_encoder(&self) -> &ObsEncoder {
        &self.encoder
    }

    fn action_map(&self) -> &ActionMap {
        &self.actions
    }

    fn act(&mut self, obs: &[f32], n: usize, actions: &mut [Tensor]) -> Result<(), PolicyError> {
        let (obs_dim, out_dim) = (self.encoder.dim(), self.actions.output_dim());
        check_len("observation block", obs.len(), n.saturating_mul(obs_dim))?;
        if n == 0 {
            return Ok(());
        }
        let mut outputs = vec![0.0f32; n * out_dim];
        match self.batch {
            Batch::Symbolic => self.run(obs, n, &mut outputs)?,
            Batch::Fixed(b) => {
                let mut block_out = vec![0.0f32; b * out_dim];
                let mut padded = std::mem::take(&mut self.padded);
                padded.resize(b * obs_dim, 0.0);
                for (chunk, dst) in obs.chunks(b * obs_dim).zip(outputs.chunks_mut(b * out_dim)) {
                    padded[..chunk.len()].copy_from_slice(chunk);
                    padded[chunk.len()..].fill(0.0);
                    let result = self.run(&padded, b, &mut block_out);
                    if let Err(e) = result {
                        self.padded = padded;
                        return Err(e);
                    }
                    dst.copy_from_slice(&block_out[..dst.len()]);
                }
                self.padded = padded;
            }
        }
        self.actions.write_batch(&outputs, n, actions)
    }
}

// The pipeline moves policies between threads.
const _: fn() = || {
    fn is_send<T: Send>() {}
    is_send::<OnnxPolicy>();
};
