//! NumPy's arithmetic as Gymnasium's rewards use it: sums in NumPy's pairwise order, norms as
//! OpenBLAS computes them, and the control cost, `weight * np.sum(np.square(action))`, in the
//! dtype NumPy 2 computes it in for a float32 action: every operation is a float32 one (the
//! Python float weight is a "weak" scalar that takes the array's dtype), and the sum is
//! NumPy's pairwise summation. The caller widens the result to float64 where Gymnasium
//! subtracts it from a float64 reward.

/// `weight * np.sum(np.square(action))` on a float32 `action`, as a float32.
pub(crate) fn control_cost(weight: f64, action: &[f32]) -> f32 {
    (weight as f32) * pairwise_sum(action, |x: f32| x * x)
}

/// NumPy's pairwise summation (`FLOAT_pairwise_sum`, `DOUBLE_pairwise_sum`) of `f(a[i])`,
/// which `np.add.reduce` adds to its identity, 0: a plain loop below 8 elements, 8 interleaved
/// accumulators up to 128, halves (at a multiple of 8) above. Each addition rounds to `T`.
pub(crate) fn pairwise_sum<T, U>(a: &[U], f: impl Fn(U) -> T + Copy) -> T
where
    T: Copy + Default + std::ops::Add<Output = T>,
    U: Copy,
{
    const BLOCK: usize = 128;
    let n = a.len();
    if n < 8 {
        let mut res = T::default();
        for &x in a {
            res = res + f(x);
        }
        res
    } else if n <= BLOCK {
        let mut r = [T::default(); 8];
        for (r, &x) in r.iter_mut().zip(&a[..8]) {
            *r = f(x);
        }
        let whole = n - n % 8;
        for chunk in a[8..whole].chunks_exact(8) {
            for (r, &x) in r.iter_mut().zip(chunk) {
                *r = *r + f(x);
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[whole..] {
            res = res + f(x);
        }
        res
    } else {
        let mut half = n / 2;
        half -= half % 8;
        pairwise_sum(&a[..half], f) + pairwise_sum(&a[half..], f)
    }
}

/// `np.linalg.norm(v)` of a short float64 vector: the square root of `v.dot(v)`, which NumPy
/// hands to OpenBLAS's `ddot`. Below 16 elements that is the loop `dot += y[i] * x[i]`, which
/// OpenBLAS's kernels for FMA-capable x86-64 CPUs run as fused multiply-adds (the fixtures,
/// recorded on such a CPU, agree to the bit), so each term is one `mul_add`, rounded once.
pub(crate) fn norm(v: &[f64]) -> f64 {
    debug_assert!(
        v.len() < 16,
        "OpenBLAS's ddot sums 16 and more in SIMD blocks"
    );
    v.iter().fold(0.0, |dot, x| x.mul_add(*x, dot)).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIG: f32 = 16_777_216.0; // 2^24: float32 steps by 2 from here, so a lone 1 is lost.

    #[test]
    fn short_sums_run_left_to_right_from_zero() {
        // Each 1 is lost against 2^24 in turn; 1 + 1 first would have made 2^24 + 2.
        assert_eq!(pairwise_sum(&[BIG, 1.0, 1.0], |x: f32| x), BIG);
    }

    #[test]
    fn eight_to_128_elements_use_eight_accumulators_then_the_rest() {
        // Accumulators [2^24, 1, ..., 1] combine as ((2^24 + 1) + 2) + (2 + 2) = 2^24 + 6;
        // the two 1s left over then round up to 2^24 + 8 and stay there. Left to right,
        // every 1 would be lost.
        let mut a = [1.0f32; 10];
        a[0] = BIG;
        assert_eq!(pairwise_sum(&a, |x: f32| x), BIG + 8.0);
        assert_eq!(a.iter().fold(0.0f32, |s, x| s + x), BIG);
    }

    #[test]
    fn above_128_elements_the_halves_split_at_a_multiple_of_8() {
        // 2^53 then 199 ones in float64, where a lone 1 beside 2^53 is lost. 200 splits at 96
        // (100 less 100 % 8): the first half's accumulators hold 2^53 and seven 12s, 2^53 + 84;
        // the second half sums exactly to 104. Split at 100, the first half's 4 leftover ones
        // would be lost one by one against 2^53 + 84, for 2^53 + 184 in all.
        let big = 9_007_199_254_740_992.0f64;
        let mut a = vec![1.0f64; 200];
        a[0] = big;
        assert_eq!(pairwise_sum(&a, |x: f64| x), big + 188.0);
    }

    #[test]
    fn the_cost_is_a_float32_product_of_float32_squares() {
        let a = [0.3f32, -0.7];
        let cost = control_cost(0.1, &a);
        assert_eq!(cost, 0.1f32 * (a[0] * a[0] + a[1] * a[1]));
        let in_float64 = 0.1 * (f64::from(a[0]).powi(2) + f64::from(a[1]).powi(2));
        assert_ne!(f64::from(cost), in_float64);
        assert_eq!(control_cost(1.0, &[3.0e20]), f32::INFINITY);
    }
}
