//! Conversions between the wire messages and the `ale-sim` domain types. Everything that
//! arrives from a peer goes through `TryFrom` here once, at the boundary.

use ale_sim::{
    BoxSpace, DType, DiscreteSpace, Echo, MultiDiscreteSpace, ShapeMismatch, Space, Tensor,
    TensorData,
};

use crate::pb;

/// A message that cannot become a domain value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum WireError {
    #[error(
        "tensor dtype is unset or unknown ({0}); set one of float32, float64, int64, int32, uint8, bool"
    )]
    UnknownDType(i32),
    #[error("tensor shape {} has a negative dimension", Echo(.0.as_slice()))]
    NegativeDimension(Vec<i64>),
    #[error(
        "a {dtype} tensor must carry its data in the `{expected}` field only, but `{got}` is filled"
    )]
    WrongDataField {
        dtype: DType,
        expected: &'static str,
        got: &'static str,
    },
    #[error(
        "a {dtype} tensor's `raw` field holds {got} bytes, not a whole number of {width}-byte elements"
    )]
    RawLength {
        dtype: DType,
        width: usize,
        got: usize,
    },
    #[error("a bool tensor's `raw` field holds byte {0} at element {1}; only 0 and 1 are booleans")]
    RawBool(u8, usize),
    #[error(transparent)]
    Shape(#[from] ShapeMismatch),
    #[error("missing field `{0}`")]
    Missing(&'static str),
    #[error("space is empty (no kind set)")]
    EmptySpace,
    #[error("{0}")]
    InvalidSpace(#[from] ale_sim::InvalidSpace),
    #[error(transparent)]
    UnknownEnum(#[from] crate::eval::UnknownEnum),
}

pub fn dtype_to_pb(dtype: DType) -> pb::DType {
    match dtype {
        DType::F32 => pb::DType::DtypeFloat32,
        DType::F64 => pb::DType::DtypeFloat64,
        DType::I64 => pb::DType::DtypeInt64,
        DType::I32 => pb::DType::DtypeInt32,
        DType::U8 => pb::DType::DtypeUint8,
        DType::Bool => pb::DType::DtypeBool,
    }
}

pub fn dtype_from_pb(raw: i32) -> Result<DType, WireError> {
    match pb::DType::try_from(raw) {
        Ok(pb::DType::DtypeFloat32) => Ok(DType::F32),
        Ok(pb::DType::DtypeFloat64) => Ok(DType::F64),
        Ok(pb::DType::DtypeInt64) => Ok(DType::I64),
        Ok(pb::DType::DtypeInt32) => Ok(DType::I32),
        Ok(pb::DType::DtypeUint8) => Ok(DType::U8),
        Ok(pb::DType::DtypeBool) => Ok(DType::Bool),
        Ok(pb::DType::DtypeUnspecified) | Err(_) => Err(WireError::UnknownDType(raw)),
    }
}

fn dims_from_pb(shape: &[i64]) -> Result<Vec<usize>, WireError> {
    shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| WireError::NegativeDimension(shape.to_vec())))
        .collect()
}

fn dims_to_pb(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

/// Encodes a tensor, reusing nothing; see [`tensor_to_pb_ref`] for the borrowed form.
impl From<Tensor> for pb::Tensor {
    fn from(t: Tensor) -> Self {
        let mut out = pb::Tensor {
            dtype: dtype_to_pb(t.dtype()) as i32,
            shape: dims_to_pb(t.shape()),
            ..Default::default()
        };
        match t.into_data() {
            TensorData::F32(v) => out.f32 = v,
            TensorData::F64(v) => out.f64 = v,
            TensorData::I64(v) => out.i64 = v,
            TensorData::I32(v) => out.i32 = v,
            TensorData::U8(v) => out.u8 = v,
            TensorData::Bool(v) => out.bool = v,
        }
        out
    }
}

/// Encodes a borrowed tensor (copies the data once).
pub fn tensor_to_pb_ref(t: &Tensor) -> pb::Tensor {
    pb::Tensor::from(t.clone())
}

/// The bytes one element of `dtype` takes in a tensor's `raw` field.
pub fn raw_width(dtype: DType) -> usize {
    match dtype {
        DType::F64 | DType::I64 => 8,
        DType::F32 | DType::I32 => 4,
        DType::U8 | DType::Bool => 1,
    }
}

/// A number type whose elements travel in `raw`: plain data, every bit pattern a value.
trait Word: Copy + Default {
    #[cfg_attr(target_endian = "little", allow(dead_code))]
    const WIDTH: usize;
    #[cfg_attr(target_endian = "little", allow(dead_code))]
    fn to_le(self, out: &mut Vec<u8>);
    #[cfg_attr(target_endian = "little", allow(dead_code))]
    fn from_le(bytes: &[u8]) -> Self;
}

macro_rules! word {
    ($($t:ty),*) => {$(
        impl Word for $t {
            const WIDTH: usize = std::mem::size_of::<$t>();
            fn to_le(self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            fn from_le(bytes: &[u8]) -> Self {
                <$t>::from_le_bytes(bytes.try_into().expect("chunks of the type's width"))
            }
        }
    )*};
}
word!(f32, f64, i64, i32);

/// `values` packed little-endian onto `out`: one copy of their memory on a little-endian
/// machine, element by element elsewhere.
fn pack<T: Word>(values: &[T], out: &mut Vec<u8>) {
    #[cfg(target_endian = "little")]
    {
        // SAFETY: `T` is one of f32, f64, i64, i32 (the `Word` impls): no padding, so the
        // slice's memory is `size_of_val(values)` initialised bytes, which on a little-endian
        // machine are its little-endian encoding.
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        };
        out.extend_from_slice(bytes);
    }
    #[cfg(not(target_endian = "little"))]
    values.iter().for_each(|x| x.to_le(out));
}

/// The elements packed in `raw`, a whole number of `T`s (checked by the caller).
fn unpack<T: Word>(raw: &[u8]) -> Vec<T> {
    #[cfg(target_endian = "little")]
    {
        let mut out = vec![T::default(); raw.len() / std::mem::size_of::<T>()];
        // SAFETY: `out` owns `raw.len()` bytes (a whole number of `T`s), every bit pattern of
        // which is a `T` (f32, f64, i64 or i32); the two do not overlap; on a little-endian
        // machine the bytes are the values.
        unsafe {
            std::ptr::copy_nonoverlapping(raw.as_ptr(), out.as_mut_ptr().cast::<u8>(), raw.len());
        }
        out
    }
    #[cfg(not(target_endian = "little"))]
    raw.chunks_exact(T::WIDTH).map(T::from_le).collect()
}

/// Encodes `data` (of `shape`) packed in the `raw` field: what a vector env answers, readable
/// without a copy by the client.
pub fn tensor_to_pb_raw(shape: &[usize], data: &TensorData) -> pb::Tensor {
    let mut raw = Vec::with_capacity(data.len() * raw_width(data.dtype()));
    match data {
        TensorData::F32(v) => pack(v, &mut raw),
        TensorData::F64(v) => pack(v, &mut raw),
        TensorData::I64(v) => pack(v, &mut raw),
        TensorData::I32(v) => pack(v, &mut raw),
        TensorData::U8(v) => raw.extend_from_slice(v),
        TensorData::Bool(v) => raw.extend(v.iter().map(|&b| u8::from(b))),
    }
    pb::Tensor {
        dtype: dtype_to_pb(data.dtype()) as i32,
        shape: dims_to_pb(shape),
        raw,
        ..Default::default()
    }
}

/// The elements of a tensor's `raw` field.
fn data_from_raw(dtype: DType, raw: &[u8]) -> Result<TensorData, WireError> {
    let width = raw_width(dtype);
    if !raw.len().is_multiple_of(width) {
        return Err(WireError::RawLength {
            dtype,
            width,
            got: raw.len(),
        });
    }
    Ok(match dtype {
        DType::F32 => TensorData::F32(unpack(raw)),
        DType::F64 => TensorData::F64(unpack(raw)),
        DType::I64 => TensorData::I64(unpack(raw)),
        DType::I32 => TensorData::I32(unpack(raw)),
        DType::U8 => TensorData::U8(raw.to_vec()),
        DType::Bool => TensorData::Bool(
            raw.iter()
                .enumerate()
                .map(|(i, &b)| match b {
                    0 => Ok(false),
                    1 => Ok(true),
                    other => Err(WireError::RawBool(other, i)),
                })
                .collect::<Result<_, _>>()?,
        ),
    })
}

impl TryFrom<pb::Tensor> for Tensor {
    type Error = WireError;

    fn try_from(t: pb::Tensor) -> Result<Self, WireError> {
        let dtype = dtype_from_pb(t.dtype)?;
        let shape = dims_from_pb(&t.shape)?;
        let filled: [(&'static str, bool); 7] = [
            ("f32", !t.f32.is_empty()),
            ("f64", !t.f64.is_empty()),
            ("i64", !t.i64.is_empty()),
            ("i32", !t.i32.is_empty()),
            ("u8", !t.u8.is_empty()),
            ("bool", !t.bool.is_empty()),
            ("raw", !t.raw.is_empty()),
        ];
        let expected = match dtype {
            DType::F32 => "f32",
            DType::F64 => "f64",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::U8 => "u8",
            DType::Bool => "bool",
        };
        let expected = if t.raw.is_empty() { expected } else { "raw" };
        if let Some((got, _)) = filled.iter().find(|(name, set)| *set && *name != expected) {
            return Err(WireError::WrongDataField {
                dtype,
                expected,
                got,
            });
        }
        if !t.raw.is_empty() {
            return Ok(Tensor::new(shape, data_from_raw(dtype, &t.raw)?)?);
        }
        let data = match dtype {
            DType::F32 => TensorData::F32(t.f32),
            DType::F64 => TensorData::F64(t.f64),
            DType::I64 => TensorData::I64(t.i64),
            DType::I32 => TensorData::I32(t.i32),
            DType::U8 => TensorData::U8(t.u8),
            DType::Bool => TensorData::Bool(t.bool),
        };
        Ok(Tensor::new(shape, data)?)
    }
}

impl From<&Space> for pb::Space {
    fn from(space: &Space) -> Self {
        use pb::space::Kind;
        let kind = match space {
            Space::Box(b) => Kind::Box(pb::BoxSpace {
                shape: dims_to_pb(&b.shape),
                dtype: dtype_to_pb(b.dtype) as i32,
                low: b.low.clone(),
                high: b.high.clone(),
                labels: b.labels.clone(),
            }),
            Space::Discrete(d) => Kind::Discrete(pb::DiscreteSpace {
                n: d.n as i64,
                start: d.start,
                labels: d.labels.clone(),
            }),
            Space::MultiDiscrete(m) => Kind::MultiDiscrete(pb::MultiDiscreteSpace {
                nvec: m.nvec.iter().map(|&n| n as i64).collect(),
                start: m.start.clone(),
            }),
            Space::MultiBinary(shape) => Kind::MultiBinary(pb::MultiBinarySpace {
                shape: dims_to_pb(shape),
            }),
            Space::Dict(entries) => Kind::Dict(pb::DictSpace {
                entries: entries
                    .iter()
                    .map(|(name, s)| pb::NamedSpace {
                        name: name.clone(),
                        space: Some(s.into()),
                    })
                    .collect(),
            }),
        };
        pb::Space { kind: Some(kind) }
    }
}

impl TryFrom<pb::Space> for Space {
    type Error = WireError;

    /// Decodes and validates a space (bounds per element, n > 0, ...).
    fn try_from(space: pb::Space) -> Result<Self, WireError> {
        use pb::space::Kind;
        let count = |n: i64| u64::try_from(n).map_err(|_| WireError::NegativeDimension(vec![n]));
        let decoded = match space.kind.ok_or(WireError::EmptySpace)? {
            Kind::Box(b) => Space::Box(BoxSpace {
                shape: dims_from_pb(&b.shape)?,
                dtype: dtype_from_pb(b.dtype)?,
                low: b.low,
                high: b.high,
                labels: b.labels,
            }),
            Kind::Discrete(d) => Space::Discrete(DiscreteSpace {
                n: count(d.n)?,
                start: d.start,
                labels: d.labels,
            }),
            Kind::MultiDiscrete(m) => Space::MultiDiscrete(MultiDiscreteSpace {
                nvec: m.nvec.into_iter().map(count).collect::<Result<_, _>>()?,
                start: m.start,
            }),
            Kind::MultiBinary(m) => Space::MultiBinary(dims_from_pb(&m.shape)?),
            Kind::Dict(d) => Space::Dict(
                d.entries
                    .into_iter()
                    .map(|e| {
                        let s = e.space.ok_or(WireError::Missing("NamedSpace.space"))?;
                        Ok((e.name, Space::try_from(s)?))
                    })
                    .collect::<Result<_, WireError>>()?,
            ),
        };
        decoded.validate()?;
        Ok(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tensors_round_trip() {
        let tensors = [
            Tensor::scalar_i64(-3),
            Tensor::vector_f32(vec![1.5, -2.0]),
            Tensor::new(vec![2, 2], TensorData::U8(vec![0, 1, 1, 0])).unwrap(),
            Tensor::new(vec![0], TensorData::F64(vec![])).unwrap(),
        ];
        for t in tensors {
            assert_eq!(Tensor::try_from(pb::Tensor::from(t.clone())).unwrap(), t);
        }
    }

    #[test]
    fn raw_tensors_round_trip_in_every_dtype() {
        let tensors = [
            Tensor::new(vec![2, 2], TensorData::F32(vec![1.5, -2.0, f32::MAX, 0.0])).unwrap(),
            Tensor::new(vec![3], TensorData::F64(vec![1e300, -0.5, f64::MIN])).unwrap(),
            Tensor::new(vec![2], TensorData::I64(vec![i64::MIN, 7])).unwrap(),
            Tensor::new(vec![2], TensorData::I32(vec![-1, i32::MAX])).unwrap(),
            Tensor::new(vec![2, 1], TensorData::U8(vec![0, 255])).unwrap(),
            Tensor::new(vec![3], TensorData::Bool(vec![true, false, true])).unwrap(),
            Tensor::scalar_i64(-3),
        ];
        for t in tensors {
            let wire = tensor_to_pb_raw(t.shape(), t.data());
            assert_eq!(wire.raw.len(), t.len() * raw_width(t.dtype()));
            assert_eq!(Tensor::try_from(wire).unwrap(), t);
        }
        // Little-endian, as NumPy's `<f4` reads it.
        let wire = tensor_to_pb_raw(&[1], &TensorData::F32(vec![1.0]));
        assert_eq!(wire.raw, [0, 0, 0x80, 0x3f]);
    }

    #[test]
    fn malformed_raw_tensors_are_rejected_with_reasons() {
        let ragged = pb::Tensor {
            dtype: pb::DType::DtypeFloat64 as i32,
            shape: vec![1],
            raw: vec![0; 7],
            ..Default::default()
        };
        assert_eq!(
            Tensor::try_from(ragged).unwrap_err().to_string(),
            "a float64 tensor's `raw` field holds 7 bytes, not a whole number of 8-byte elements"
        );
        let both = pb::Tensor {
            dtype: pb::DType::DtypeFloat32 as i32,
            shape: vec![1],
            f32: vec![1.0],
            raw: vec![0; 4],
            ..Default::default()
        };
        assert_eq!(
            Tensor::try_from(both).unwrap_err().to_string(),
            "a float32 tensor must carry its data in the `raw` field only, but `f32` is filled"
        );
        let short = pb::Tensor {
            dtype: pb::DType::DtypeFloat32 as i32,
            shape: vec![2],
            raw: vec![0; 4],
            ..Default::default()
        };
        assert!(matches!(Tensor::try_from(short), Err(WireError::Shape(_))));
        let not_bool = pb::Tensor {
            dtype: pb::DType::DtypeBool as i32,
            shape: vec![2],
            raw: vec![1, 2],
            ..Default::default()
        };
        assert_eq!(Tensor::try_from(not_bool), Err(WireError::RawBool(2, 1)));
    }

    #[test]
    fn malformed_tensors_are_rejected_with_reasons() {
        let unset = pb::Tensor::default();
        assert_eq!(Tensor::try_from(unset), Err(WireError::UnknownDType(0)));
        let mixed = pb::Tensor {
            dtype: pb::DType::DtypeFloat32 as i32,
            shape: vec![1],
            i64: vec![1],
            ..Default::default()
        };
        let err = Tensor::try_from(mixed).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a float32 tensor must carry its data in the `f32` field only, but `i64` is filled"
        );
        let short = pb::Tensor {
            dtype: pb::DType::DtypeFloat32 as i32,
            shape: vec![3],
            f32: vec![1.0],
            ..Default::default()
        };
        assert!(matches!(Tensor::try_from(short), Err(WireError::Shape(_))));
        let negative = pb::Tensor {
            dtype: pb::DType::DtypeFloat32 as i32,
            shape: vec![-1],
            ..Default::default()
        };
        assert!(matches!(
            Tensor::try_from(negative),
            Err(WireError::NegativeDimension(_))
        ));
    }

    #[test]
    fn spaces_round_trip() {
        let spaces = [
            Space::Box(BoxSpace::uniform(
                vec![2, 3],
                DType::F32,
                -1.0,
                f64::INFINITY,
            )),
            Space::Discrete(DiscreteSpace::new(4).with_labels(&["a", "b", "c", "d"])),
            Space::MultiBinary(vec![5]),
            Space::Dict(vec![("d".into(), Space::Discrete(DiscreteSpace::new(2)))]),
        ];
        for s in spaces {
            assert_eq!(Space::try_from(pb::Space::from(&s)).unwrap(), s);
        }
    }
}
