//! NumPy's float32 `np.sin` and `np.cos`, bit for bit.
//!
//! On a CPU with fused multiply-add (x86-64 with FMA3, AArch64), NumPy 2 computes float32 sine
//! and cosine with its own vectorised routine (`loops_trigonometric.dispatch.cpp`): the
//! quadrant from x·2/π, Cody-Waite reduction by π/2 in three fused steps, then a short minimax
//! polynomial. Its results are within 1.5 ULP but not always correctly rounded:
//! `(x as f64).cos() as f32` differs from NumPy about once in two thousand draws in
//! [-0.1, 0.1]. Gymnasium's Acrobot computes its first observation this way (its reset state
//! is float32), so a sim that starts where Gymnasium starts needs the same routine.
//!
//! The port follows NumPy 2.4's wheels, whose compiler also fuses the quadrant's
//! `x * 2/π + 1.5·2^23` into one FMA; checked against `np.sin`/`np.cos` of NumPy 2.4.6 on
//! 2.4 million float32 values (every one equal, NaN and infinities included) on an AVX-512
//! machine. Beyond Cody-Waite's range NumPy calls the C library's `sinf`/`cosf`, and so does
//! this. (A NumPy on a CPU without FMA calls them for every value; this port does not follow
//! that one.)

/// 2/π, and -π/2 split in three for the reduction.
const TWO_OVER_PI: f32 = f32::from_bits(0x3f22_f983);
const PIO2_HIGH: f32 = f32::from_bits(0xbfc9_0fd8);
const PIO2_MED: f32 = f32::from_bits(0xb4a8_885a);
const PIO2_LOW: f32 = f32::from_bits(0xa7c2_34c4);
/// 1.5 · 2^23: adding and subtracting it rounds to the nearest integer.
const RINT_MAGIC: f32 = 12_582_912.0;
/// Beyond these (117435.9921875 and 71476.0625 as f32), NumPy hands the argument to the C
/// library.
const MAX_CODY_SIN: f32 = 117_435.99;
const MAX_CODY_COS: f32 = 71_476.06;

/// `np.sin(np.float32(x))`.
///
/// ```
/// use ale_sim::numpy_trig::sin_f32;
/// assert_eq!(sin_f32(0.0), 0.0);
/// assert_eq!(sin_f32(-0.0).to_bits(), (-0.0f32).to_bits());
/// ```
pub fn sin_f32(x: f32) -> f32 {
    sincos(x, Op::Sin)
}

/// `np.cos(np.float32(x))`.
///
/// ```
/// use ale_sim::numpy_trig::cos_f32;
/// assert_eq!(cos_f32(0.0), 1.0);
/// // np.cos(np.float32(0.08205318)) is 0.99663556, one ULP above the correctly rounded value.
/// let x = 0.082_053_18_f32;
/// assert_eq!(cos_f32(x), 0.996_635_56);
/// assert_eq!((x as f64).cos() as f32, 0.996_635_5);
/// ```
pub fn cos_f32(x: f32) -> f32 {
    sincos(x, Op::Cos)
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Sin,
    Cos,
}

fn sincos(x: f32, op: Op) -> f32 {
    if x.is_nan() {
        return f32::NAN;
    }
    let max_cody = match op {
        Op::Sin => MAX_CODY_SIN,
        Op::Cos => MAX_CODY_COS,
    };
    if x.abs() > max_cody {
        return match op {
            Op::Sin => x.sin(),
            Op::Cos => x.cos(),
        };
    }
    // Round to the nearest integer by adding and subtracting 1.5·2^23, the add fused.
    let quadrant = x.mul_add(TWO_OVER_PI, RINT_MAGIC) - RINT_MAGIC;
    let mut r = quadrant.mul_add(PIO2_HIGH, x);
    r = quadrant.mul_add(PIO2_MED, r);
    r = quadrant.mul_add(PIO2_LOW, r);
    let r2 = r * r;
    let cos = cosine_poly(r2);
    let sin = sine_poly(r, r2);
    // |quadrant| <= 2^17 here, so the conversion is exact.
    let mut k = quadrant as i32;
    if op == Op::Cos {
        k += 1;
    }
    let value = if k & 1 == 0 { sin } else { cos };
    if k & 2 == 2 { 0.0 - value } else { value }
}

/// cos on [-π/4, π/4], from r².
fn cosine_poly(r2: f32) -> f32 {
    let c8 = f32::from_bits(0x37cc_730b);
    let c6 = f32::from_bits(0xbab6_036e);
    let c4 = f32::from_bits(0x3d2a_aa9e);
    let p = c8.mul_add(r2, c6);
    let p = p.mul_add(r2, c4);
    let p = p.mul_add(r2, -0.5);
    p.mul_add(r2, 1.0)
}

/// sin on [-π/4, π/4], from r and r².
fn sine_poly(r: f32, r2: f32) -> f32 {
    let s9 = f32::from_bits(0x363e_9dde);
    let s7 = f32::from_bits(0xb950_35dd);
    let s5 = f32::from_bits(0x3c08_88cd);
    let s3 = f32::from_bits(0xbe2a_aaab);
    let p = s9.mul_add(r2, s7);
    let p = p.mul_add(r2, s5);
    let p = p.mul_add(r2, s3);
    let p = p.mul_add(r2, 0.0);
    p.mul_add(r, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (x, np.sin(x), np.cos(x)) as bits, from NumPy 2.4.6: small angles where NumPy is one
    /// ULP off the correctly rounded value, large ones still reduced by Cody-Waite, and ones
    /// beyond its range.
    const NUMPY: [(u32, Option<u32>, Option<u32>); 12] = [
        (0xbdaf_f3ba, Some(0xbdaf_bc55), None),
        (0xbd9a_98f6, Some(0xbd9a_7362), None),
        (0x3d8c_a708, Some(0x3d8c_8abb), None),
        (0xc68c_9d2b, Some(0x3ec7_3a3d), None),
        (0x4644_96a4, Some(0x3ed0_08fc), None),
        (0x3da8_0b7f, None, Some(0x3f7f_2382)),
        (0xbd94_7bd3, None, Some(0x3f7f_53d4)),
        (0xbdba_80b5, None, Some(0x3f7e_f071)),
        (0x475a_7162, None, Some(0x3f03_01e5)),
        (0xc69f_61b6, None, Some(0x3f4c_3a10)),
        (0x4842_dad6, Some(0x3f16_ea69), Some(0xbf4e_c939)),
        // 80000: inside sine's range, beyond cosine's.
        (0x479c_4000, Some(0x3f1c_55c4), Some(0xbf4a_b84c)),
    ];

    #[test]
    fn agrees_with_numpy_where_correct_rounding_does_not() {
        for (x, sin, cos) in NUMPY {
            let x = f32::from_bits(x);
            if let Some(want) = sin {
                assert_eq!(sin_f32(x).to_bits(), want, "sin({x:e})");
            }
            if let Some(want) = cos {
                assert_eq!(cos_f32(x).to_bits(), want, "cos({x:e})");
            }
        }
        let small = f32::from_bits(0xbdaf_f3ba);
        assert_ne!(((small as f64).sin() as f32).to_bits(), 0xbdaf_bc55);
    }

    #[test]
    fn the_ranges_are_numpys() {
        assert_eq!(f64::from(MAX_CODY_SIN), 117_435.992_187_5);
        assert_eq!(f64::from(MAX_CODY_COS), 71_476.062_5);
    }

    #[test]
    fn zeros_infinities_and_nan() {
        assert_eq!(sin_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cos_f32(-0.0), 1.0);
        for x in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            assert!(sin_f32(x).is_nan() && cos_f32(x).is_nan(), "{x}");
        }
    }
}
