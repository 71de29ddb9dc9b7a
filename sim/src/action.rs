//! Decoding actions into the plain values a sim's dynamics take, without allocating.
//!
//! A sim accepts exactly what Gymnasium's env accepts: Discrete actions in range; Box actions of
//! the right dtype and shape with finite elements. Finite Box values beyond the bounds are
//! passed through, for the sim to clip as Gymnasium does; the evaluator's protocol layer is
//! stricter and refuses them before they reach a sim.

use crate::space::{Space, SpaceError};
use crate::tensor::{Tensor, TensorData};

fn reject(space: &Space, problem: String) -> SpaceError {
    SpaceError {
        space: space.to_string(),
        problem,
    }
}

/// A scalar int64 action in `0..n` of a `Discrete(n)` space.
pub fn discrete(space: &Space, action: &Tensor) -> Result<i64, SpaceError> {
    if let ([], TensorData::I64(v)) = (action.shape(), action.data())
        && let Space::Discrete(d) = space
        && d.contains(v[0])
    {
        return Ok(v[0]);
    }
    Err(space
        .check(action)
        .err()
        .unwrap_or_else(|| reject(space, "not a Discrete space".into())))
}

/// The `N` float32 elements of a 1-D Box action, finite but not clipped.
pub fn box_f32<const N: usize>(space: &Space, action: &Tensor) -> Result<[f32; N], SpaceError> {
    let mut out = [0.0f32; N];
    out.copy_from_slice(box_f32_slice(space, action, N)?);
    Ok(out)
}

/// The `n` float32 elements of a 1-D Box action where they lie, finite but not clipped: for a
/// sim whose action length is its model's.
pub fn box_f32_slice<'a>(
    space: &Space,
    action: &'a Tensor,
    n: usize,
) -> Result<&'a [f32], SpaceError> {
    let values = match (action.shape(), action.data()) {
        ([len], TensorData::F32(v)) if *len == n => v.as_slice(),
        _ => {
            return Err(reject(
                space,
                format!(
                    "expected dtype float32 and shape [{n}], got {} of shape {:?}",
                    action.dtype(),
                    action.shape()
                ),
            ));
        }
    };
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(reject(
            space,
            format!("element {i} is {}, not a finite number", values[i]),
        ));
    }
    Ok(values)
}

/// The `R × C` float32 elements of a 2-D Box action of shape `[R, C]` (one row per agent of a
/// multi-agent sim), finite but not clipped.
pub fn box_f32_rows<const R: usize, const C: usize>(
    space: &Space,
    action: &Tensor,
) -> Result<[[f32; C]; R], SpaceError> {
    let values = match (action.shape(), action.data()) {
        ([r, c], TensorData::F32(v)) if *r == R && *c == C => v,
        _ => {
            return Err(reject(
                space,
                format!(
                    "expected dtype float32 and shape [{R}, {C}], got {} of shape {:?}",
                    action.dtype(),
                    action.shape()
                ),
            ));
        }
    };
    let mut out = [[0.0f32; C]; R];
    for (i, (o, v)) in out.iter_mut().flatten().zip(values).enumerate() {
        if !v.is_finite() {
            return Err(reject(
                space,
                format!("element [{}, {}] is {v}, not a finite number", i / C, i % C),
            ));
        }
        *o = *v;
    }
    Ok(out)
}
