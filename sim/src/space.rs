//! Gymnasium-style spaces: what an observation or action may be, checked and sampled.

use std::fmt;

use crate::echo::Echo;
use crate::rng::Rng;
use crate::tensor::{DType, Tensor, TensorData};

/// A bounded box of real or integer values; bounds may be infinite.
#[derive(Debug, Clone, PartialEq)]
pub struct BoxSpace {
    pub shape: Vec<usize>,
    pub dtype: DType,
    /// One bound per element, row-major.
    pub low: Vec<f64>,
    pub high: Vec<f64>,
    /// Names of the elements of a 1-D box, or empty.
    pub labels: Vec<String>,
}

/// The integers `start .. start + n`.
#[derive(Debug, Clone, PartialEq)]
pub struct DiscreteSpace {
    pub n: u64,
    pub start: i64,
    /// Names of the `n` choices, or empty.
    pub labels: Vec<String>,
}

/// Independent discrete choices; element `i` ranges over `start[i] .. start[i] + nvec[i]`.
#[derive(Debug, Clone, PartialEq)]
pub struct MultiDiscreteSpace {
    pub nvec: Vec<u64>,
    pub start: Vec<i64>,
}

/// A Gymnasium-style space.
///
/// A value of a `Dict` space travels flattened: one 1-D float64 tensor holding each entry's
/// elements in entry order (a Discrete entry is its integer value, not a one-hot vector).
#[derive(Debug, Clone, PartialEq)]
pub enum Space {
    Box(BoxSpace),
    Discrete(DiscreteSpace),
    MultiDiscrete(MultiDiscreteSpace),
    /// 0/1 values of this shape, as uint8 (or bool) tensors.
    MultiBinary(Vec<usize>),
    Dict(Vec<(String, Space)>),
}

/// A value that does not belong to a space. The message names the space, what was expected
/// and what was got.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("does not fit {space}: {problem}")]
pub struct SpaceError {
    /// The space, as `Display` renders it.
    pub space: String,
    pub problem: String,
}

/// A malformed space description (bounds of the wrong length, low above high, n = 0, ...).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid space: {0}")]
pub struct InvalidSpace(pub String);

impl BoxSpace {
    /// A box with the same bounds for every element.
    pub fn uniform(shape: Vec<usize>, dtype: DType, low: f64, high: f64) -> Self {
        let n = shape.iter().product();
        BoxSpace {
            shape,
            dtype,
            low: vec![low; n],
            high: vec![high; n],
            labels: Vec::new(),
        }
    }

    /// A 1-D box with per-element bounds.
    pub fn vector(dtype: DType, low: Vec<f64>, high: Vec<f64>) -> Self {
        BoxSpace {
            shape: vec![low.len()],
            dtype,
            low,
            high,
            labels: Vec::new(),
        }
    }

    pub fn with_labels(mut self, labels: &[&str]) -> Self {
        self.labels = labels.iter().map(|s| s.to_string()).collect();
        self
    }

    /// The elements of a value; for a space that passed [`Space::validate`], whose shape's
    /// product fits a `usize`.
    fn element_count(&self) -> usize {
        self.shape.iter().product()
    }
}

/// The elements a value of `shape` holds, unless counting them overflows: a shape from a peer
/// may claim more than any machine holds.
fn checked_elements(shape: &[usize]) -> Option<usize> {
    shape.iter().try_fold(1usize, |n, d| n.checked_mul(*d))
}

/// The largest integer magnitude a float64 holds exactly, with every integer below it.
const EXACT_IN_F64: i128 = 1 << 53;

/// Checks that the integers `start .. start + n` all lie within ±2^53: discrete values are
/// checked, and travel in Dict values, as float64, which is exact only there (nor can
/// `start + n` then overflow an i64).
fn exact_integers(start: i64, n: u64) -> Result<(), String> {
    let last = i128::from(start) + i128::from(n) - 1;
    if i128::from(start) < -EXACT_IN_F64 || last > EXACT_IN_F64 {
        return Err(format!(
            "of {n} values from {start} reaches beyond ±2^53, where float64 (how values are \
             checked and travel in a Dict) no longer holds every integer"
        ));
    }
    Ok(())
}

/// The refusal of a shape whose elements cannot be counted.
fn uncountable(kind: &str, shape: &[usize]) -> InvalidSpace {
    InvalidSpace(format!(
        "{kind} of shape {} has more elements than can be counted",
        Echo(shape)
    ))
}

impl DiscreteSpace {
    pub fn new(n: u64) -> Self {
        DiscreteSpace {
            n,
            start: 0,
            labels: Vec::new(),
        }
    }

    pub fn with_labels(mut self, labels: &[&str]) -> Self {
        self.labels = labels.iter().map(|s| s.to_string()).collect();
        self
    }

    pub fn contains(&self, value: i64) -> bool {
        // `value` may come from a peer: no overflowing arithmetic on it.
        value
            .checked_sub(self.start)
            .is_some_and(|offset| offset >= 0 && (offset as u64) < self.n)
    }
}

/// The value of `dtype` nearest to `v` (itself in `[lo, hi]`) that lies in `[lo, hi]`, as
/// f64; `None` if the interval holds no value of `dtype`. A float64 holds every value.
fn member_within(dtype: DType, v: f64, lo: f64, hi: f64) -> Option<f64> {
    let inside = |x: f64| (lo..=hi).contains(&x);
    match dtype {
        DType::F64 => Some(v),
        DType::F32 => {
            let mut x = v as f32;
            if f64::from(x) < lo {
                x = f32_step(x, true);
            } else if f64::from(x) > hi {
                x = f32_step(x, false);
            }
            Some(f64::from(x)).filter(|x| inside(*x))
        }
        DType::I64 | DType::I32 | DType::U8 | DType::Bool => {
            let (min, max) = match dtype {
                DType::I32 => (f64::from(i32::MIN), f64::from(i32::MAX)),
                DType::U8 => (0.0, 255.0),
                DType::Bool => (0.0, 1.0),
                _ => (i64::MIN as f64, i64::MAX as f64),
            };
            // The integers the bounds hold; `v` moved to the nearest of them.
            let (first, last) = (lo.ceil().max(min), hi.floor().min(max));
            if first > last {
                return None;
            }
            Some(v.ceil().clamp(first, last)).filter(|x| inside(*x) && x.fract() == 0.0)
        }
    }
}

/// The next float32 above (`up`) or below `x`, for a finite or infinite `x`.
fn f32_step(x: f32, up: bool) -> f32 {
    if x.is_nan() || (up && x == f32::INFINITY) || (!up && x == f32::NEG_INFINITY) {
        return x;
    }
    if x == 0.0 {
        let tiny = f32::from_bits(1);
        return if up { tiny } else { -tiny };
    }
    let bits = x.to_bits();
    let away_from_zero = (x > 0.0) == up;
    f32::from_bits(if away_from_zero { bits + 1 } else { bits - 1 })
}

impl Space {
    /// Checks that the description itself is sound; spaces that arrive over the wire go
    /// through this before use.
    pub fn validate(&self) -> Result<(), InvalidSpace> {
        match self {
            Space::Box(b) => {
                let n = checked_elements(&b.shape).ok_or_else(|| uncountable("Box", &b.shape))?;
                if b.dtype == DType::Bool {
                    return Err(InvalidSpace(
                        "a Box cannot hold bool; use MultiBinary".into(),
                    ));
                }
                if b.low.len() != n || b.high.len() != n {
                    return Err(InvalidSpace(format!(
                        "Box of shape {} needs {n} bounds each, got {} low and {} high",
                        Echo(b.shape.as_slice()),
                        b.low.len(),
                        b.high.len()
                    )));
                }
                if !b.labels.is_empty() && b.labels.len() != n {
                    return Err(InvalidSpace(format!(
                        "Box has {n} elements but {} labels",
                        b.labels.len()
                    )));
                }
                for (i, (lo, hi)) in b.low.iter().zip(&b.high).enumerate() {
                    if lo.is_nan() || hi.is_nan() || lo > hi {
                        return Err(InvalidSpace(format!(
                            "Box element {i} has bounds [{lo}, {hi}]"
                        )));
                    }
                    if member_within(b.dtype, *lo, *lo, *hi).is_none() {
                        return Err(InvalidSpace(format!(
                            "Box element {i} has bounds [{lo}, {hi}], which hold no {} value",
                            b.dtype
                        )));
                    }
                }
                Ok(())
            }
            Space::Discrete(d) => {
                if d.n == 0 {
                    return Err(InvalidSpace("Discrete needs n > 0".into()));
                }
                if !d.labels.is_empty() && d.labels.len() as u64 != d.n {
                    return Err(InvalidSpace(format!(
                        "Discrete({}) has {} labels",
                        d.n,
                        d.labels.len()
                    )));
                }
                exact_integers(d.start, d.n).map_err(|e| InvalidSpace(format!("Discrete {e}")))
            }
            Space::MultiDiscrete(m) => {
                if m.nvec.len() != m.start.len() || m.nvec.contains(&0) {
                    return Err(InvalidSpace(format!(
                        "MultiDiscrete needs one start per entry and every n > 0, got nvec {} start {}",
                        Echo(m.nvec.as_slice()),
                        Echo(m.start.as_slice())
                    )));
                }
                for (i, (n, start)) in m.nvec.iter().zip(&m.start).enumerate() {
                    exact_integers(*start, *n)
                        .map_err(|e| InvalidSpace(format!("MultiDiscrete entry {i} {e}")))?;
                }
                Ok(())
            }
            Space::MultiBinary(shape) => checked_elements(shape)
                .map(|_| ())
                .ok_or_else(|| uncountable("MultiBinary", shape)),
            Space::Dict(entries) => {
                for (name, space) in entries {
                    if matches!(space, Space::Dict(_)) {
                        return Err(InvalidSpace(format!(
                            "Dict entry {} is itself a Dict; nesting is not supported",
                            Echo(name.as_str())
                        )));
                    }
                    space.validate().map_err(|e| {
                        InvalidSpace(format!("Dict entry {}: {}", Echo(name.as_str()), e.0))
                    })?;
                }
                // Each entry's count fits; their sum must too.
                entries
                    .iter()
                    .try_fold(0usize, |n, (_, space)| n.checked_add(space.flat_len()))
                    .map(|_| ())
                    .ok_or_else(|| {
                        InvalidSpace("Dict has more elements than can be counted".into())
                    })
            }
        }
    }

    /// The shape of a value of this space as it travels.
    pub fn shape(&self) -> Vec<usize> {
        match self {
            Space::Box(b) => b.shape.clone(),
            Space::Discrete(_) => Vec::new(),
            Space::MultiDiscrete(m) => vec![m.nvec.len()],
            Space::MultiBinary(shape) => shape.clone(),
            Space::Dict(_) => vec![self.flat_len()],
        }
    }

    /// Whether a value of `shape` has this space's shape (without allocating).
    fn shape_is(&self, shape: &[usize]) -> bool {
        match self {
            Space::Box(b) => b.shape == shape,
            Space::Discrete(_) => shape.is_empty(),
            Space::MultiDiscrete(m) => shape == [m.nvec.len()],
            Space::MultiBinary(s) => s == shape,
            Space::Dict(_) => shape == [self.flat_len()],
        }
    }

    /// Number of scalars in a value of this space.
    pub fn flat_len(&self) -> usize {
        match self {
            Space::Box(b) => b.element_count(),
            Space::Discrete(_) => 1,
            Space::MultiDiscrete(m) => m.nvec.len(),
            Space::MultiBinary(shape) => shape.iter().product(),
            Space::Dict(entries) => entries.iter().map(|(_, s)| s.flat_len()).sum(),
        }
    }

    /// The dtype a value of this space travels as.
    pub fn dtype(&self) -> DType {
        match self {
            Space::Box(b) => b.dtype,
            Space::Discrete(_) | Space::MultiDiscrete(_) => DType::I64,
            Space::MultiBinary(_) => DType::U8,
            Space::Dict(_) => DType::F64,
        }
    }

    fn error(&self, problem: String) -> SpaceError {
        SpaceError {
            space: self.to_string(),
            problem,
        }
    }

    /// Checks that `value` is a member of this space: dtype, shape, no NaN, within bounds.
    ///
    /// ```
    /// use ale_sim::{DiscreteSpace, Space, Tensor};
    /// let space = Space::Discrete(DiscreteSpace::new(2));
    /// assert!(space.check(&Tensor::scalar_i64(1)).is_ok());
    /// let err = space.check(&Tensor::scalar_i64(2)).unwrap_err();
    /// assert!(err.to_string().contains("Discrete(2)"));
    /// ```
    pub fn check(&self, value: &Tensor) -> Result<(), SpaceError> {
        let want_dtype = self.dtype();
        let dtype_ok = match self {
            Space::MultiBinary(_) => matches!(value.dtype(), DType::U8 | DType::Bool),
            _ => value.dtype() == want_dtype,
        };
        if !dtype_ok {
            return Err(self.error(format!(
                "expected dtype {want_dtype}, got {}",
                value.dtype()
            )));
        }
        if !self.shape_is(value.shape()) {
            return Err(self.error(format!(
                "expected shape {:?}, got {}",
                self.shape(),
                Echo(value.shape())
            )));
        }
        self.check_elements(value.data(), 0)
    }

    /// Checks the elements of `data` starting at `offset` (flattened Dict values recurse).
    fn check_elements(&self, data: &TensorData, offset: usize) -> Result<(), SpaceError> {
        let at = |i: usize| data.get_f64(offset + i).unwrap_or(f64::NAN);
        match self {
            Space::Box(b) => {
                for i in 0..b.element_count() {
                    let v = at(i);
                    if v.is_nan() {
                        return Err(self.error(format!("element {i} is NaN")));
                    }
                    if v < b.low[i] || v > b.high[i] {
                        return Err(self.error(format!(
                            "element {i} is {}, outside [{}, {}]",
                            fmt_bound(v),
                            fmt_bound(b.low[i]),
                            fmt_bound(b.high[i])
                        )));
                    }
                }
                Ok(())
            }
            Space::Discrete(d) => {
                let v = at(0);
                if v.fract() != 0.0 || !d.contains(v as i64) {
                    return Err(self.error(format!(
                        "expected an integer in {}..={}, got {v}",
                        d.start,
                        d.start + d.n as i64 - 1
                    )));
                }
                Ok(())
            }
            Space::MultiDiscrete(m) => {
                for (i, (n, start)) in m.nvec.iter().zip(&m.start).enumerate() {
                    let v = at(i);
                    let ok =
                        v.fract() == 0.0 && v >= *start as f64 && v < (*start as f64 + *n as f64);
                    if !ok {
                        return Err(self.error(format!(
                            "element {i} is {v}, expected an integer in {start}..={}",
                            start + *n as i64 - 1
                        )));
                    }
                }
                Ok(())
            }
            Space::MultiBinary(shape) => {
                let n: usize = shape.iter().product();
                for i in 0..n {
                    let v = at(i);
                    if v != 0.0 && v != 1.0 {
                        return Err(self.error(format!("element {i} is {v}, expected 0 or 1")));
                    }
                }
                Ok(())
            }
            Space::Dict(entries) => {
                let mut off = offset;
                for (name, space) in entries {
                    space
                        .check_elements(data, off)
                        .map_err(|e| self.error(format!("entry {name:?} {e}")))?;
                    off += space.flat_len();
                }
                Ok(())
            }
        }
    }

    /// A random member of the space, like Gymnasium's `sample()`: uniform on bounded box
    /// dimensions, normal on unbounded ones, shifted exponential on half-bounded ones.
    pub fn sample(&self, rng: &mut Rng) -> Tensor {
        let mut flat = Vec::with_capacity(self.flat_len());
        self.sample_into(rng, &mut flat);
        let shape = self.shape();
        let data = match self.dtype() {
            DType::F32 => TensorData::F32(flat.iter().map(|&v| v as f32).collect()),
            DType::F64 => TensorData::F64(flat),
            DType::I64 => TensorData::I64(flat.iter().map(|&v| v as i64).collect()),
            DType::I32 => TensorData::I32(flat.iter().map(|&v| v as i32).collect()),
            DType::U8 => TensorData::U8(flat.iter().map(|&v| v as u8).collect()),
            DType::Bool => TensorData::Bool(flat.iter().map(|&v| v != 0.0).collect()),
        };
        // The shape always matches flat_len by construction.
        Tensor::new(shape, data).unwrap_or_else(|_| Tensor::zeros(self.shape(), self.dtype()))
    }

    fn sample_into(&self, rng: &mut Rng, out: &mut Vec<f64>) {
        match self {
            Space::Box(b) => {
                for (&lo, &hi) in b.low.iter().zip(&b.high) {
                    let v = match (lo.is_finite(), hi.is_finite()) {
                        (true, true) => {
                            if b.dtype.is_float() {
                                rng.uniform(lo, hi)
                            } else {
                                lo + rng.below(((hi - lo) as u64).saturating_add(1)) as f64
                            }
                        }
                        (false, false) => rng.normal(),
                        (true, false) => lo - (1.0 - rng.next_f64()).ln(),
                        (false, true) => hi + (1.0 - rng.next_f64()).ln(),
                    };
                    let v = if b.dtype.is_float() { v } else { v.floor() };
                    // f32 rounding can land just outside a bound; keep the sample a member.
                    let v = if b.dtype == DType::F32 {
                        f64::from(v as f32).clamp(lo, hi)
                    } else {
                        v.clamp(lo, hi)
                    };
                    // A bound the dtype cannot hold (a fractional bound of an integer Box, an
                    // f32 Box bound between two f32 values): step inside, to a value it holds.
                    let v = member_within(b.dtype, v, lo, hi).unwrap_or(v);
                    out.push(v);
                }
            }
            Space::Discrete(d) => out.push((d.start + rng.below(d.n) as i64) as f64),
            Space::MultiDiscrete(m) => {
                for (n, start) in m.nvec.iter().zip(&m.start) {
                    out.push((start + rng.below(*n) as i64) as f64);
                }
            }
            Space::MultiBinary(shape) => {
                for _ in 0..shape.iter().product::<usize>() {
                    out.push(rng.below(2) as f64);
                }
            }
            Space::Dict(entries) => {
                for (_, space) in entries {
                    space.sample_into(rng, out);
                }
            }
        }
    }
}

fn fmt_bound(v: f64) -> String {
    if v == f64::INFINITY {
        "inf".into()
    } else if v == f64::NEG_INFINITY {
        "-inf".into()
    } else if v != 0.0 && !(1e-6..1e16).contains(&v.abs()) {
        // Exponent notation where plain digits would run to hundreds (5e-324, not 0.000…005).
        if f64::from(v as f32) == v {
            format!("{:e}", v as f32)
        } else {
            format!("{v:e}")
        }
    } else if f64::from(v as f32) == v {
        // A float32 bound widened to f64: print it as the float32 it is (4.8, not 4.800000190734863).
        format!("{}", v as f32)
    } else {
        format!("{v}")
    }
}

impl fmt::Display for Space {
    /// Gymnasium's notation: `Discrete(2)`, `Box(-2.0, 2.0, (1,), float32)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Space::Box(b) => {
                let shape = match b.shape.as_slice() {
                    [n] => format!("({n},)"),
                    s => format!(
                        "({})",
                        s.iter()
                            .map(|d| d.to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                let same = |v: &[f64]| v.windows(2).all(|w| w[0] == w[1]);
                let bound = |v: &[f64]| match v {
                    [first, ..] if same(v) => fmt_bound(*first),
                    _ => format!(
                        "[{}]",
                        v.iter()
                            .map(|x| fmt_bound(*x))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                write!(
                    f,
                    "Box({}, {}, {shape}, {})",
                    bound(&b.low),
                    bound(&b.high),
                    b.dtype
                )
            }
            Space::Discrete(d) if d.start == 0 => write!(f, "Discrete({})", d.n),
            Space::Discrete(d) => write!(f, "Discrete({}, start={})", d.n, d.start),
            Space::MultiDiscrete(m) => write!(f, "MultiDiscrete({:?})", m.nvec),
            Space::MultiBinary(shape) => write!(f, "MultiBinary({shape:?})"),
            Space::Dict(entries) => {
                f.write_str("Dict(")?;
                for (i, (name, space)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{name}: {space}")?;
                }
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pendulum_action() -> Space {
        Space::Box(BoxSpace::uniform(vec![1], DType::F32, -2.0, 2.0))
    }

    #[test]
    fn box_rejects_wrong_dtype_shape_nan_and_bounds_naming_the_space() {
        let space = pendulum_action();
        let cases = [
            (
                Tensor::vector_f32(vec![0.5, 0.5]),
                "expected shape [1], got [2]",
            ),
            (Tensor::scalar_i64(1), "expected dtype float32, got int64"),
            (Tensor::vector_f32(vec![f32::NAN]), "element 0 is NaN"),
            (
                Tensor::vector_f32(vec![2.5]),
                "element 0 is 2.5, outside [-2, 2]",
            ),
        ];
        for (value, problem) in cases {
            let err = space.check(&value).unwrap_err();
            assert_eq!(err.space, "Box(-2, 2, (1,), float32)");
            assert_eq!(err.problem, problem);
        }
        assert!(space.check(&Tensor::vector_f32(vec![-2.0])).is_ok());
    }

    /// Found through the `space` fuzz target's messages: a bound of 5e-324 printed as 324
    /// digits.
    #[test]
    fn tiny_and_huge_numbers_print_in_exponent_notation() {
        let space = Space::Box(BoxSpace::vector(
            DType::F64,
            vec![-5e-324, 0.0, -1e300],
            vec![1.4582244039112795e-303, 4.8, 1e16],
        ));
        assert_eq!(
            space.to_string(),
            "Box([-5e-324, 0, -1e300], [1.4582244039112795e-303, 4.8, 1e16], (3,), float64)"
        );
        let err = space
            .check(&Tensor::new(vec![3], TensorData::F64(vec![0.0, 0.0, 1e300])).unwrap())
            .unwrap_err();
        assert_eq!(err.problem, "element 2 is 1e300, outside [-1e300, 1e16]");
    }

    #[test]
    fn discrete_with_start_checks_range() {
        let space = Space::Discrete(DiscreteSpace {
            n: 3,
            start: -1,
            labels: Vec::new(),
        });
        assert!(space.check(&Tensor::scalar_i64(-1)).is_ok());
        assert!(space.check(&Tensor::scalar_i64(1)).is_ok());
        let err = space.check(&Tensor::scalar_i64(2)).unwrap_err();
        assert_eq!(err.problem, "expected an integer in -1..=1, got 2");
        // Extreme values are refused, not overflowed.
        let d = DiscreteSpace {
            n: 3,
            start: -1,
            labels: Vec::new(),
        };
        assert!(!d.contains(i64::MAX) && !d.contains(i64::MIN));
    }

    /// Regression (fuzz target `space`): a Box whose bounds hold no value of its dtype was
    /// valid, and its samples were not members.
    #[test]
    fn a_box_whose_bounds_hold_no_value_of_its_dtype_is_invalid() {
        for (dtype, lo, hi) in [
            (DType::F32, 9.44e-322, 9.5e-322),
            (DType::F32, 0.1, 0.1),
            (DType::I32, 0.5, 0.7),
            (DType::U8, 300.0, 400.0),
        ] {
            let e = Space::Box(BoxSpace::uniform(vec![1], dtype, lo, hi))
                .validate()
                .unwrap_err();
            assert!(e.0.contains("hold no"), "{e:?}");
        }
        for (dtype, lo, hi) in [
            (DType::F32, 0.1, 0.2),
            (DType::F32, 1e-40, 1e-38),
            (DType::I32, 0.5, 1.7),
            (DType::U8, -3.0, 0.5),
            (DType::I64, f64::NEG_INFINITY, f64::INFINITY),
            // Regression: a span wider than u64 overflowed the sampler's count.
            (DType::U8, -1.2676506002282294e30, 1.0),
            // Regression: -1 is the only integer, but the span rounds to 1 in float64, so the
            // sampler drew 0, clamped it to the upper bound and stepped out of the Box.
            (DType::I64, -1.0, -1.4582244039112795e-303),
        ] {
            let space = Space::Box(BoxSpace::uniform(vec![3], dtype, lo, hi));
            space.validate().unwrap();
            let mut rng = Rng::new(5);
            for _ in 0..50 {
                let sample = space.sample(&mut rng);
                space.check(&sample).unwrap();
            }
        }
    }

    /// Regression (found by the `space` fuzz target): a shape whose product overflows
    /// panicked in debug builds, and in release wrapped to a small count that let a Box with
    /// no bounds pass as a space of 2^64 elements.
    #[test]
    fn a_shape_whose_elements_cannot_be_counted_is_invalid() {
        let huge = vec![1 << 32, 1 << 32];
        let boxed = Space::Box(BoxSpace {
            shape: huge.clone(),
            dtype: DType::F32,
            low: Vec::new(),
            high: Vec::new(),
            labels: Vec::new(),
        });
        let e = boxed.validate().unwrap_err();
        assert_eq!(
            e.0,
            "Box of shape [4294967296, 4294967296] has more elements than can be counted"
        );
        let e = Space::MultiBinary(huge).validate().unwrap_err();
        assert!(e.0.starts_with("MultiBinary of shape"), "{e:?}");
        let half = Space::MultiBinary(vec![usize::MAX / 2 + 1]);
        half.validate().unwrap();
        let e = Space::Dict(vec![("a".into(), half.clone()), ("b".into(), half)])
            .validate()
            .unwrap_err();
        assert_eq!(e.0, "Dict has more elements than can be counted");
    }

    /// Regression (found by the `space` fuzz target): a MultiDiscrete starting near 2^60
    /// sampled integers its own check, in float64, could not tell apart, and `start + n`
    /// could overflow.
    #[test]
    fn discrete_values_must_be_exact_in_float64() {
        let far = Space::MultiDiscrete(MultiDiscreteSpace {
            nvec: vec![8, 8],
            start: vec![1_215_900_976_561_256_432, 16],
        });
        let e = far.validate().unwrap_err();
        assert!(
            e.0.starts_with("MultiDiscrete entry 0 of 8 values from"),
            "{e:?}"
        );
        for (start, n) in [(i64::MAX, 2), (0, u64::MAX), (i64::MIN, 1), (1 << 53, 2)] {
            let space = Space::Discrete(DiscreteSpace {
                n,
                start,
                labels: Vec::new(),
            });
            assert!(space.validate().is_err(), "{space}");
        }
        for (start, n) in [(-(1 << 53), 1), ((1 << 53) - 1, 2), (-5, 1 << 40)] {
            let space = Space::Discrete(DiscreteSpace {
                n,
                start,
                labels: Vec::new(),
            });
            space.validate().unwrap();
            let mut rng = Rng::new(3);
            for _ in 0..20 {
                space.check(&space.sample(&mut rng)).unwrap();
            }
        }
    }

    #[test]
    fn samples_are_members() {
        let spaces = [
            pendulum_action(),
            Space::Discrete(DiscreteSpace::new(5)),
            Space::Box(BoxSpace::vector(
                DType::F64,
                vec![f64::NEG_INFINITY, 0.0, f64::NEG_INFINITY],
                vec![f64::INFINITY, f64::INFINITY, 1.0],
            )),
            Space::MultiDiscrete(MultiDiscreteSpace {
                nvec: vec![2, 3],
                start: vec![0, 10],
            }),
            Space::MultiBinary(vec![2, 2]),
            Space::Dict(vec![
                ("a".into(), Space::Discrete(DiscreteSpace::new(4))),
                ("b".into(), pendulum_action()),
            ]),
        ];
        let mut rng = Rng::new(1);
        for space in &spaces {
            space.validate().unwrap();
            for _ in 0..1000 {
                let v = space.sample(&mut rng);
                assert!(space.check(&v).is_ok(), "{space}: {v:?}");
            }
        }
    }

    #[test]
    fn validate_rejects_malformed_descriptions() {
        let mut b = BoxSpace::uniform(vec![2], DType::F32, -1.0, 1.0);
        b.low.pop();
        assert!(Space::Box(b).validate().is_err());
        assert!(Space::Discrete(DiscreteSpace::new(0)).validate().is_err());
        let inverted = BoxSpace::vector(DType::F32, vec![1.0], vec![0.0]);
        assert!(Space::Box(inverted).validate().is_err());
    }
}
