//! Turning a policy's output row into an action of the task's action space.

use ale_sim::{DType, Space, Tensor};

use crate::PolicyError;

/// Maps one output row of a policy to an action, written into a preallocated tensor.
///
/// * `Discrete(n, start)`: `n` outputs; the action is `start + argmax` (the first maximum on
///   ties), an int64 scalar.
/// * `Box` of float32 or float64: one output per element, clipped to the box's bounds.
/// * `MultiDiscrete(nvec)`: `sum(nvec)` outputs, the logits of each element concatenated;
///   element `i` is `start[i] + argmax` of its slice.
/// * `MultiBinary(shape)`: one output per element; 1 where the output is above 0.
/// * integer `Box` and `Dict`: refused.
///
/// A NaN or infinite output is an error naming the row, never an action.
#[derive(Debug, Clone)]
pub struct ActionMap {
    space: Space,
    kind: Kind,
    output_dim: usize,
}

#[derive(Debug, Clone)]
enum Kind {
    Discrete {
        start: i64,
    },
    /// Bounds rounded inward to float32, so a clipped value never lies outside the f64 bounds.
    BoxF32 {
        low: Vec<f32>,
        high: Vec<f32>,
    },
    BoxF64 {
        low: Vec<f64>,
        high: Vec<f64>,
    },
    MultiDiscrete {
        nvec: Vec<usize>,
        start: Vec<i64>,
    },
    MultiBinary,
}

impl ActionMap {
    /// A map onto `space`; refuses spaces a policy output cannot express.
    pub fn new(space: &Space) -> Result<Self, PolicyError> {
        let unsupported = |why| PolicyError::UnsupportedActSpace {
            space: space.to_string(),
            why,
        };
        space
            .validate()
            .map_err(|_| unsupported("the space description is invalid"))?;
        let too_wide = || unsupported("it needs more than MAX_WIDTH outputs");
        let fits = |n: u64| {
            usize::try_from(n)
                .ok()
                .filter(|n| *n <= crate::limits::MAX_WIDTH)
        };
        let (kind, output_dim) = match space {
            Space::Discrete(d) => (
                Kind::Discrete { start: d.start },
                fits(d.n).ok_or_else(too_wide)?,
            ),
            Space::Box(b) => {
                let n = b.low.len();
                if n > crate::limits::MAX_WIDTH {
                    return Err(too_wide());
                }
                let kind = match b.dtype {
                    DType::F32 => {
                        let low: Vec<f32> = b.low.iter().map(|v| f32_at_least(*v)).collect();
                        let high: Vec<f32> = b.high.iter().map(|v| f32_at_most(*v)).collect();
                        // Bounds such as [0.1, 0.1] hold no float32: clipping would leave them.
                        if low.iter().zip(&high).any(|(lo, hi)| lo > hi) {
                            return Err(unsupported(
                                "an element's bounds hold no float32 value; use a float64 Box",
                            ));
                        }
                        Kind::BoxF32 { low, high }
                    }
                    DType::F64 => Kind::BoxF64 {
                        low: b.low.clone(),
                        high: b.high.clone(),
                    },
                    _ => {
                        return Err(unsupported(
                            "integer Box actions have no agreed rounding; use a float Box or Discrete",
                        ));
                    }
                };
                (kind, n)
            }
            Space::MultiDiscrete(m) => {
                let nvec = m
                    .nvec
                    .iter()
                    .map(|n| fits(*n))
                    .collect::<Option<Vec<usize>>>()
                    .ok_or_else(too_wide)?;
                let total = nvec.iter().sum::<usize>();
                if total > crate::limits::MAX_WIDTH {
                    return Err(too_wide());
                }
                let start = m.start.clone();
                (Kind::MultiDiscrete { nvec, start }, total)
            }
            Space::MultiBinary(_) => {
                let n = fits(space.flat_len() as u64).ok_or_else(too_wide)?;
                (Kind::MultiBinary, n)
            }
            Space::Dict(_) => {
                return Err(unsupported(
                    "Dict actions have no agreed layout; use a Box or Discrete action",
                ));
            }
        };
        if output_dim == 0 {
            return Err(unsupported("it has no elements"));
        }
        // `start + argmax` must not overflow: the largest action of each element fits in i64.
        let last_fits = |start: i64, n: usize| start.checked_add(n as i64 - 1).is_some();
        let fits_i64 = match &kind {
            Kind::Discrete { start } => last_fits(*start, output_dim),
            Kind::MultiDiscrete { nvec, start } => {
                nvec.iter().zip(start).all(|(n, s)| last_fits(*s, *n))
            }
            _ => true,
        };
        if !fits_i64 {
            return Err(unsupported("start + n - 1 overflows int64"));
        }
        Ok(ActionMap {
            space: space.clone(),
            kind,
            output_dim,
        })
    }

    /// Outputs a policy must give per row.
    pub fn output_dim(&self) -> usize {
        self.output_dim
    }

    /// The action space.
    pub fn space(&self) -> &Space {
        &self.space
    }

    /// How the outputs are read, for error messages.
    pub(crate) fn describe(&self) -> &'static str {
        match self.kind {
            Kind::Discrete { .. } => "one logit per choice, argmax taken",
            Kind::BoxF32 { .. } | Kind::BoxF64 { .. } => "one value per element, clipped",
            Kind::MultiDiscrete { .. } => "the logits of every element concatenated",
            Kind::MultiBinary => "one value per element, 1 where above 0",
        }
    }

    /// `n` action tensors of the space's dtype and shape, for [`write`](Self::write) and
    /// [`BatchPolicy::act`](crate::BatchPolicy::act) to fill in place.
    pub fn blank_actions(&self, n: usize) -> Vec<Tensor> {
        let (shape, dtype) = (self.space.shape(), self.space.dtype());
        (0..n)
            .map(|_| Tensor::zeros(shape.clone(), dtype))
            .collect()
    }

    /// Writes the action for output row `row` (number `index` in its block, for errors) into
    /// `action`, a tensor from [`blank_actions`](Self::blank_actions). Allocates nothing.
    pub fn write(&self, index: usize, row: &[f32], action: &mut Tensor) -> Result<(), PolicyError> {
        crate::check_len("output row", row.len(), self.output_dim)?;
        if let Some((column, value)) = row.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(PolicyError::NonFiniteOutput {
                row: index,
                column,
                value: *value,
            });
        }
        let got = action.len();
        let wrong_tensor = || PolicyError::BatchShape {
            what: "action tensor (not made by blank_actions)",
            expected: self.space.flat_len(),
            got,
        };
        match &self.kind {
            Kind::Discrete { start } => {
                let out = action.as_i64_mut().ok_or_else(wrong_tensor)?;
                let [slot] = out else {
                    return Err(wrong_tensor());
                };
                *slot = start + argmax(row) as i64;
            }
            Kind::BoxF32 { low, high } => {
                let out = action.as_f32_mut().ok_or_else(wrong_tensor)?;
                if out.len() != row.len() {
                    return Err(wrong_tensor());
                }
                for (((o, v), lo), hi) in out.iter_mut().zip(row).zip(low).zip(high) {
                    *o = v.max(*lo).min(*hi);
                }
            }
            Kind::BoxF64 { low, high } => {
                let out = action.as_f64_mut().ok_or_else(wrong_tensor)?;
                if out.len() != row.len() {
                    return Err(wrong_tensor());
                }
                for (((o, v), lo), hi) in out.iter_mut().zip(row).zip(low).zip(high) {
                    *o = f64::from(*v).max(*lo).min(*hi);
                }
            }
            Kind::MultiDiscrete { nvec, start } => {
                let out = action.as_i64_mut().ok_or_else(wrong_tensor)?;
                if out.len() != nvec.len() {
                    return Err(wrong_tensor());
                }
                let mut offset = 0;
                for ((o, n), s) in out.iter_mut().zip(nvec).zip(start) {
                    *o = s + argmax(&row[offset..offset + n]) as i64;
                    offset += n;
                }
            }
            Kind::MultiBinary => {
                let out = action.as_u8_mut().ok_or_else(wrong_tensor)?;
                if out.len() != row.len() {
                    return Err(wrong_tensor());
                }
                for (o, v) in out.iter_mut().zip(row) {
                    *o = u8::from(*v > 0.0);
                }
            }
        }
        Ok(())
    }

    /// Writes the actions for `n` output rows (`outputs` is `n × output_dim`) into
    /// `actions[..n]`.
    pub fn write_batch(
        &self,
        outputs: &[f32],
        n: usize,
        actions: &mut [Tensor],
    ) -> Result<(), PolicyError> {
        let expected = n.saturating_mul(self.output_dim);
        crate::check_len("output block", outputs.len(), expected)?;
        if actions.len() < n {
            return Err(PolicyError::BatchShape {
                what: "actions",
                expected: n,
                got: actions.len(),
            });
        }
        for (i, (row, action)) in outputs
            .chunks_exact(self.output_dim)
            .zip(actions.iter_mut())
            .enumerate()
        {
            self.write(i, row, action)?;
        }
        Ok(())
    }
}

/// Index of the first largest value (rows are checked finite before).
fn argmax(row: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in row.iter().enumerate() {
        if *v > row[best] {
            best = i;
        }
    }
    best
}

/// The smallest float32 not below `v` (rounding a lower bound inward).
fn f32_at_least(v: f64) -> f32 {
    let f = v as f32;
    if f64::from(f) < v { next_up(f) } else { f }
}

/// The largest float32 not above `v` (rounding an upper bound inward).
fn f32_at_most(v: f64) -> f32 {
    let f = v as f32;
    if f64::from(f) > v { -next_up(-f) } else { f }
}

/// The next float32 towards +∞ (`f32::next_up` needs a newer Rust than the workspace's).
fn next_up(f: f32) -> f32 {
    if f.is_nan() || f == f32::INFINITY {
        return f;
    }
    if f == 0.0 {
        return f32::from_bits(1);
    }
    let bits = f.to_bits();
    f32::from_bits(if f > 0.0 { bits + 1 } else { bits - 1 })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float32_bounds_round_inward() {
        assert!(f64::from(f32_at_most(0.1)) <= 0.1);
        assert!(f64::from(f32_at_least(-0.1)) >= -0.1);
        assert!(f64::from(f32_at_least(0.1)) >= 0.1);
        assert_eq!(f32_at_most(1e300), f32::MAX);
        assert_eq!(f32_at_most(f64::INFINITY), f32::INFINITY);
        assert_eq!(f32_at_least(f64::NEG_INFINITY), f32::NEG_INFINITY);
        assert_eq!(f32_at_most(2.0), 2.0);
    }

    #[test]
    fn argmax_takes_the_first_maximum() {
        assert_eq!(argmax(&[1.0, 3.0, 3.0, -1.0]), 1);
        assert_eq!(argmax(&[5.0]), 0);
    }
}
