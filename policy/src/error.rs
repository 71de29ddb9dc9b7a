//! Why a policy file was refused, or a batch could not be evaluated.

/// Everything that can go wrong reading a policy file or running it.
///
/// Each message says what was expected, what the file holds, and what to change. The variants
/// are distinct so the batch pipeline (and the tests) can tell the cases apart.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PolicyError {
    /// The contract names a format this evaluator does not read.
    #[error("unknown policy format {got:?}; known formats: {}", known.join(", "))]
    UnknownFormat {
        got: String,
        known: Vec<&'static str>,
    },

    /// A format that exists but was left out of this build.
    #[error(
        "policy format {format:?} is not built into this evaluator (cargo feature {feature:?})"
    )]
    FormatNotBuilt {
        format: &'static str,
        feature: &'static str,
    },

    /// The file (or a size its header declares) is above what a policy may take.
    #[error(
        "{what} is {declared} bytes, over the cap of {max} bytes; \
         a policy file is small (is this the right file?)"
    )]
    OverCap {
        what: String,
        declared: u64,
        max: u64,
    },

    /// The header promises more bytes than the file has.
    #[error("the file is truncated: {what} needs {expected} bytes, the file has {got}")]
    Truncated {
        what: String,
        expected: u64,
        got: u64,
    },

    /// The header is not a safetensors header (not UTF-8, not JSON, wrong fields, bad offsets).
    #[error("not a valid safetensors file: {0}")]
    BadHeader(String),

    /// A tensor whose element type cannot be read as float32.
    #[error(
        "tensor {tensor:?} has dtype {dtype}; accepted dtypes: F32, F64, F16, BF16 \
         (convert with `.float()` before saving)"
    )]
    UnsupportedDtype { tensor: String, dtype: String },

    /// A tensor whose name fits none of the accepted key patterns.
    #[error(
        "tensor {name:?} is not part of an MLP policy; expected `<prefix><index>.weight`, \
         `<prefix><index>.bias`, `obs_mean` or `obs_std` (e.g. `0.weight`, `layers.1.bias`)"
    )]
    UnknownTensor { name: String },

    /// Layer keys under two different prefixes: which one is the policy cannot be told.
    #[error(
        "layer tensors use two prefixes, {first:?} and {second:?}; save only the policy \
         network (one prefix, e.g. `0.weight` or `actor.0.weight`)"
    )]
    AmbiguousPrefix { first: String, second: String },

    /// The file holds no `.weight` tensor at all.
    #[error("the file holds no layers; expected tensors named like `0.weight` and `0.bias`")]
    NoLayers,

    /// A gap in the layer numbering that is not the step of an `nn.Sequential` or a list.
    #[error(
        "missing layer: expected tensor {key:?}; layers are numbered from 0 with a step of 1 \
         (`layers.{{i}}`) or 2 (`nn.Sequential` with an activation between Linear layers)"
    )]
    MissingLayer { key: String },

    /// A tensor that another one needs is absent (a bias without its weight, `obs_std`
    /// without `obs_mean`).
    #[error("missing tensor {name:?}: {why}")]
    MissingTensor { name: String, why: String },

    /// A tensor of the wrong rank or length.
    #[error("tensor {tensor:?} has shape {got:?}, expected {expected}")]
    BadTensorShape {
        tensor: String,
        expected: String,
        got: Vec<usize>,
    },

    /// Consecutive layers do not chain: a layer's input size is not the previous output size.
    #[error(
        "tensor {tensor:?} takes {got} inputs, but the layer before it gives {expected} outputs"
    )]
    LayerChain {
        tensor: String,
        expected: usize,
        got: usize,
    },

    /// The first layer does not take the task's flattened observation.
    #[error(
        "tensor {tensor:?} takes {got} inputs, but the task's observation space {space} \
         flattens to {expected}"
    )]
    ObsMismatch {
        tensor: String,
        space: String,
        expected: usize,
        got: usize,
    },

    /// The last layer does not give what the task's action space needs.
    #[error(
        "tensor {tensor:?} gives {got} outputs, but the task's action space {space} needs \
         {expected} ({how})"
    )]
    ActMismatch {
        tensor: String,
        space: String,
        expected: usize,
        got: usize,
        how: &'static str,
    },

    /// A weight, bias or normalisation value that is NaN or infinite (after conversion to
    /// float32).
    #[error("tensor {tensor:?} element {index} is {value}; every value must be finite")]
    NonFinite {
        tensor: String,
        index: usize,
        value: f32,
    },

    /// A value outside its domain (a negative `obs_std`).
    #[error("tensor {tensor:?} element {index} is {value}: {why}")]
    BadValue {
        tensor: String,
        index: usize,
        value: f32,
        why: &'static str,
    },

    /// An activation this evaluator does not implement.
    #[error("unknown activation {got:?}; accepted: {}", accepted.join(", "))]
    UnknownActivation {
        got: String,
        accepted: Vec<&'static str>,
    },

    /// An MLP with hidden layers whose activation is not stated.
    #[error(
        "the MLP has {layers} layers but the file's metadata names no activation; save it \
         with metadata {{\"activation\": \"tanh\"}} (or relu, identity)"
    )]
    MissingActivation { layers: usize },

    /// A shape above the caps (layers, width, parameter count).
    #[error("{what} is {got}, over the cap of {max}")]
    TooLarge {
        what: &'static str,
        got: usize,
        max: usize,
    },

    /// The task's observation space cannot be fed to a policy of this kind.
    #[error("observation space {space} is not supported by policy files: {why}")]
    UnsupportedObsSpace { space: String, why: &'static str },

    /// The task's action space cannot be produced by a policy of this kind.
    #[error("action space {space} is not supported by policy files: {why}")]
    UnsupportedActSpace { space: String, why: &'static str },

    /// An observation that does not fit the space the encoder was built for.
    #[error("observation does not fit {space}: {problem}")]
    BadObservation { space: String, problem: String },

    /// The caller's buffers do not match the batch size (a bug in the caller, not the file).
    #[error("batch buffers do not fit: {what} has {got} elements, expected {expected}")]
    BatchShape {
        what: &'static str,
        expected: usize,
        got: usize,
    },

    /// The policy produced NaN or an infinity for a row: no action can be taken from it.
    #[error("the policy's output for row {row} has {value} at position {column}")]
    NonFiniteOutput {
        row: usize,
        column: usize,
        value: f32,
    },

    /// tract could not read or prepare the ONNX graph (malformed file, unsupported operator).
    #[error("ONNX graph refused: {0}")]
    OnnxModel(String),

    /// The ONNX graph's input or output shape does not fit the task.
    #[error("ONNX graph {which} is {got}, expected {expected}")]
    OnnxShape {
        which: &'static str,
        expected: String,
        got: String,
    },

    /// Running the ONNX graph failed.
    #[error("ONNX graph failed to run: {0}")]
    OnnxRun(String),
}
