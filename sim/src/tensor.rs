//! Dense row-major tensors: what observations and actions are made of.

use std::fmt;

use crate::echo::Echo;

/// Element type of a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    F32,
    F64,
    I64,
    I32,
    U8,
    Bool,
}

impl DType {
    /// The name users know it by (NumPy's).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::I64 => "int64",
            DType::I32 => "int32",
            DType::U8 => "uint8",
            DType::Bool => "bool",
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F64)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The elements of a tensor, typed.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorData {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
}

impl TensorData {
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F32(_) => DType::F32,
            TensorData::F64(_) => DType::F64,
            TensorData::I64(_) => DType::I64,
            TensorData::I32(_) => DType::I32,
            TensorData::U8(_) => DType::U8,
            TensorData::Bool(_) => DType::Bool,
        }
    }

    pub fn len(&self) -> usize {
        match self {
            TensorData::F32(v) => v.len(),
            TensorData::F64(v) => v.len(),
            TensorData::I64(v) => v.len(),
            TensorData::I32(v) => v.len(),
            TensorData::U8(v) => v.len(),
            TensorData::Bool(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Element `i` widened to f64 (booleans as 0/1).
    pub fn get_f64(&self, i: usize) -> Option<f64> {
        Some(match self {
            TensorData::F32(v) => f64::from(*v.get(i)?),
            TensorData::F64(v) => *v.get(i)?,
            TensorData::I64(v) => *v.get(i)? as f64,
            TensorData::I32(v) => f64::from(*v.get(i)?),
            TensorData::U8(v) => f64::from(*v.get(i)?),
            TensorData::Bool(v) => f64::from(u8::from(*v.get(i)?)),
        })
    }
}

/// A tensor whose shape and data length always agree.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    data: TensorData,
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", self.describe())]
pub struct ShapeMismatch {
    pub shape: Vec<usize>,
    /// The element count the shape implies; `None` when it overflows `usize`.
    pub expected: Option<usize>,
    pub got: usize,
}

impl ShapeMismatch {
    fn describe(&self) -> String {
        match self.expected {
            Some(n) => format!(
                "a tensor of shape {} holds {n} elements, but {} were given",
                Echo(self.shape.as_slice()),
                self.got
            ),
            None => format!(
                "a tensor of shape {} would hold more elements than can be addressed",
                Echo(self.shape.as_slice())
            ),
        }
    }
}

impl Tensor {
    /// A tensor of `shape` holding `data`; fails if the element count disagrees with the shape.
    ///
    /// ```
    /// use ale_sim::{Tensor, TensorData};
    /// let t = Tensor::new(vec![2], TensorData::F32(vec![0.5, -1.0])).unwrap();
    /// assert_eq!(t.len(), 2);
    /// assert!(Tensor::new(vec![3], TensorData::F32(vec![0.5])).is_err());
    /// ```
    pub fn new(shape: Vec<usize>, data: TensorData) -> Result<Self, ShapeMismatch> {
        // The shape may come from a peer: count without overflowing.
        let expected = shape.iter().try_fold(1usize, |n, d| n.checked_mul(*d));
        if expected != Some(data.len()) {
            return Err(ShapeMismatch {
                shape,
                expected,
                got: data.len(),
            });
        }
        Ok(Tensor { shape, data })
    }

    /// A scalar (shape `[]`) int64 tensor: how a Discrete action travels.
    pub fn scalar_i64(value: i64) -> Self {
        Tensor {
            shape: Vec::new(),
            data: TensorData::I64(vec![value]),
        }
    }

    /// A 1-D float32 tensor.
    pub fn vector_f32(values: Vec<f32>) -> Self {
        Tensor {
            shape: vec![values.len()],
            data: TensorData::F32(values),
        }
    }

    /// A zero-filled tensor.
    pub fn zeros(shape: Vec<usize>, dtype: DType) -> Self {
        let n: usize = shape.iter().product();
        let data = match dtype {
            DType::F32 => TensorData::F32(vec![0.0; n]),
            DType::F64 => TensorData::F64(vec![0.0; n]),
            DType::I64 => TensorData::I64(vec![0; n]),
            DType::I32 => TensorData::I32(vec![0; n]),
            DType::U8 => TensorData::U8(vec![0; n]),
            DType::Bool => TensorData::Bool(vec![false; n]),
        };
        Tensor { shape, data }
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }

    pub fn data(&self) -> &TensorData {
        &self.data
    }

    pub fn into_data(self) -> TensorData {
        self.data
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn as_f32(&self) -> Option<&[f32]> {
        match &self.data {
            TensorData::F32(v) => Some(v),
            _ => None,
        }
    }

    /// Mutable float32 elements, for sims that write their observation in place.
    pub fn as_f32_mut(&mut self) -> Option<&mut [f32]> {
        match &mut self.data {
            TensorData::F32(v) => Some(v),
            _ => None,
        }
    }

    /// Mutable float64 elements, for code that writes a value in place without allocating.
    pub fn as_f64_mut(&mut self) -> Option<&mut [f64]> {
        match &mut self.data {
            TensorData::F64(v) => Some(v),
            _ => None,
        }
    }

    /// Mutable int64 elements (how Discrete and MultiDiscrete values travel), written in place.
    pub fn as_i64_mut(&mut self) -> Option<&mut [i64]> {
        match &mut self.data {
            TensorData::I64(v) => Some(v),
            _ => None,
        }
    }

    /// Mutable uint8 elements (how MultiBinary values travel), written in place.
    pub fn as_u8_mut(&mut self) -> Option<&mut [u8]> {
        match &mut self.data {
            TensorData::U8(v) => Some(v),
            _ => None,
        }
    }

    /// Mutable int32 elements, written in place.
    pub fn as_i32_mut(&mut self) -> Option<&mut [i32]> {
        match &mut self.data {
            TensorData::I32(v) => Some(v),
            _ => None,
        }
    }

    /// Mutable bool elements, written in place.
    pub fn as_bool_mut(&mut self) -> Option<&mut [bool]> {
        match &mut self.data {
            TensorData::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// Every element widened to f64, in order.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        (0..self.len())
            .filter_map(|i| self.data.get_f64(i))
            .collect()
    }
}
