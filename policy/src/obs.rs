//! Flattening an observation into the float32 row a policy reads.

use ale_sim::{Space, Tensor, TensorData};

use crate::PolicyError;

/// Turns observations of one space into rows of float32, the input of a policy.
///
/// * `Box`: its elements in row-major order, as float32 (whatever the box's dtype).
/// * `Discrete(n, start)`: a one-hot vector of length `n`, 1 at `value - start` (as
///   Gymnasium's `flatten` and Stable-Baselines3 encode it).
/// * `MultiDiscrete(nvec)`: the one-hot vectors of each element, concatenated
///   (length `sum(nvec)`).
/// * `MultiBinary(shape)`: its 0/1 elements as float32.
/// * `Dict`: refused.
///
/// ```
/// use ale_policy::ObsEncoder;
/// use ale_sim::{DiscreteSpace, Space, Tensor};
/// let enc = ObsEncoder::new(&Space::Discrete(DiscreteSpace::new(3)))?;
/// let mut row = [0.0f32; 3];
/// enc.encode(&Tensor::scalar_i64(2), &mut row)?;
/// assert_eq!(row, [0.0, 0.0, 1.0]);
/// # Ok::<(), ale_policy::PolicyError>(())
/// ```
#[derive(Debug, Clone)]
pub struct ObsEncoder {
    space: Space,
    dim: usize,
}

impl ObsEncoder {
    /// An encoder for observations of `space`; refuses spaces a row cannot hold.
    pub fn new(space: &Space) -> Result<Self, PolicyError> {
        let unsupported = |why| PolicyError::UnsupportedObsSpace {
            space: space.to_string(),
            why,
        };
        space
            .validate()
            .map_err(|_| unsupported("the space description is invalid"))?;
        let dim = match space {
            Space::Box(b) => b
                .shape
                .iter()
                .try_fold(1usize, |n, d| n.checked_mul(*d))
                .ok_or_else(|| unsupported("its shape overflows"))?,
            Space::Discrete(d) => {
                usize::try_from(d.n).map_err(|_| unsupported("n does not fit in memory"))?
            }
            Space::MultiDiscrete(m) => m
                .nvec
                .iter()
                .try_fold(0usize, |s, n| {
                    usize::try_from(*n).ok().and_then(|n| s.checked_add(n))
                })
                .ok_or_else(|| unsupported("sum(nvec) does not fit in memory"))?,
            Space::MultiBinary(shape) => shape
                .iter()
                .try_fold(1usize, |n, d| n.checked_mul(*d))
                .ok_or_else(|| unsupported("its shape overflows"))?,
            Space::Dict(_) => {
                return Err(unsupported(
                    "Dict observations have no agreed flattening; use a Box observation",
                ));
            }
        };
        // An empty row would leave the block size unbounded by the observations given.
        if dim == 0 {
            return Err(unsupported("it has no elements"));
        }
        if dim > crate::limits::MAX_WIDTH {
            return Err(unsupported("it flattens to more than MAX_WIDTH elements"));
        }
        Ok(ObsEncoder {
            space: space.clone(),
            dim,
        })
    }

    /// Length of one row.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// The space this encoder flattens.
    pub fn space(&self) -> &Space {
        &self.space
    }

    /// Writes `obs` flattened into `row` (length [`dim`](Self::dim)); allocates nothing.
    pub fn encode(&self, obs: &Tensor, row: &mut [f32]) -> Result<(), PolicyError> {
        crate::check_len("observation row", row.len(), self.dim)?;
        let bad = |problem: String| PolicyError::BadObservation {
            space: self.space.to_string(),
            problem,
        };
        match &self.space {
            Space::Box(_) | Space::MultiBinary(_) => {
                if obs.len() != self.dim {
                    return Err(bad(format!(
                        "expected {} elements, got {}",
                        self.dim,
                        obs.len()
                    )));
                }
                match obs.data() {
                    TensorData::F32(v) => row.copy_from_slice(v),
                    data => {
                        for (i, r) in row.iter_mut().enumerate() {
                            *r = data.get_f64(i).unwrap_or(f64::NAN) as f32;
                        }
                    }
                }
            }
            Space::Discrete(d) => {
                let value = integer(obs, 0).ok_or_else(|| bad("expected one integer".into()))?;
                row.fill(0.0);
                let hot = one_hot_index(value, d.start, d.n)
                    .ok_or_else(|| bad(format!("value {value} is outside the space")))?;
                row[hot] = 1.0;
            }
            Space::MultiDiscrete(m) => {
                if obs.len() != m.nvec.len() {
                    return Err(bad(format!(
                        "expected {} elements, got {}",
                        m.nvec.len(),
                        obs.len()
                    )));
                }
                row.fill(0.0);
                let mut offset = 0usize;
                for (i, (n, start)) in m.nvec.iter().zip(&m.start).enumerate() {
                    let value =
                        integer(obs, i).ok_or_else(|| bad(format!("element {i} is no integer")))?;
                    let hot = one_hot_index(value, *start, *n)
                        .ok_or_else(|| bad(format!("element {i} is {value}, outside the space")))?;
                    row[offset + hot] = 1.0;
                    offset += *n as usize;
                }
            }
            // `new` refuses Dict spaces.
            Space::Dict(_) => return Err(bad("Dict observations are not supported".into())),
        }
        Ok(())
    }
}

/// Element `i` of an integer-valued tensor.
fn integer(obs: &Tensor, i: usize) -> Option<i64> {
    match obs.data() {
        TensorData::I64(v) => v.get(i).copied(),
        TensorData::I32(v) => v.get(i).map(|x| i64::from(*x)),
        TensorData::U8(v) => v.get(i).map(|x| i64::from(*x)),
        data => {
            let x = data.get_f64(i)?;
            (x.fract() == 0.0 && x.abs() < 9.0e15).then_some(x as i64)
        }
    }
}

/// Position of `value` in `start .. start + n`, if it is inside.
fn one_hot_index(value: i64, start: i64, n: u64) -> Option<usize> {
    let offset = value.checked_sub(start)?;
    (offset >= 0 && (offset as u64) < n).then_some(offset as usize)
}
