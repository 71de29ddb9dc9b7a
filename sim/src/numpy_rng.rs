//! NumPy's `np.random.default_rng(seed)`, bit for bit: [`SeedSequence`] feeding [`Pcg64`]
//! feeding [`Generator`].
//!
//! Gymnasium seeds `env.np_random` with exactly this generator on `reset(seed=s)`, so a sim that
//! draws its initial state through it starts where the Gymnasium env starts, seed for seed. The
//! draws covered are NumPy's `random`, `uniform`, `standard_normal`, `normal` and int64
//! `integers`; scripts/numpy_rng_fixtures.py records NumPy's own answers and
//! tests/numpy_rng.rs checks them.
//!
//! The integer and bit arithmetic is exact everywhere. `standard_normal` also calls `exp` and
//! `ln_1p` on rare paths (under 1 draw in 100); those come from the platform's libm, as NumPy's
//! do, so bit equality with NumPy holds where both use the same libm (glibc on Linux).

mod ziggurat;

/// NumPy's `SeedSequence` with its default pool of four 32-bit words and no spawn key: the
/// entropy hashed into a pool, and the pool hashed out into as many seed words as asked.
///
/// ```
/// use ale_sim::numpy_rng::SeedSequence;
/// // np.random.SeedSequence(0).pool
/// assert_eq!(SeedSequence::new(0u64).pool(), [4265667335, 1328953910, 1320288413, 3365567143]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedSequence {
    pool: [u32; POOL_SIZE],
}

const POOL_SIZE: usize = 4;
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const XSHIFT: u32 = 16;

/// One word through the entropy hash; `hash_const` advances on every call.
fn hashmix(value: u32, hash_const: &mut u32) -> u32 {
    let mut value = value ^ *hash_const;
    *hash_const = hash_const.wrapping_mul(MULT_A);
    value = value.wrapping_mul(*hash_const);
    value ^ (value >> XSHIFT)
}

fn mix(x: u32, y: u32) -> u32 {
    let result = MIX_MULT_L
        .wrapping_mul(x)
        .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    result ^ (result >> XSHIFT)
}

impl SeedSequence {
    /// `SeedSequence(entropy)` for a non-negative integer that fits in 128 bits.
    pub fn new(entropy: impl Into<u128>) -> Self {
        let mut entropy: u128 = entropy.into();
        // NumPy splits the integer into 32-bit words, lowest first; zero is one word.
        let mut words = [0u32; 4];
        let mut len = 0;
        loop {
            words[len] = entropy as u32;
            len += 1;
            entropy >>= 32;
            if entropy == 0 {
                break;
            }
        }
        Self::from_words(&words[..len])
    }

    /// `SeedSequence(entropy)` for an integer of any size, given as its 32-bit words, lowest
    /// first, with no zero words on top (zero itself is `[0]`): what NumPy's
    /// `_coerce_to_uint32_array` makes of a Python int.
    pub fn from_words(entropy: &[u32]) -> Self {
        let mut pool = [0u32; POOL_SIZE];
        let mut hash_const = INIT_A;
        for (i, word) in pool.iter_mut().enumerate() {
            *word = hashmix(entropy.get(i).copied().unwrap_or(0), &mut hash_const);
        }
        for src in 0..POOL_SIZE {
            for dst in 0..POOL_SIZE {
                if src != dst {
                    pool[dst] = mix(pool[dst], hashmix(pool[src], &mut hash_const));
                }
            }
        }
        for &word in entropy.iter().skip(POOL_SIZE) {
            for dst in pool.iter_mut() {
                *dst = mix(*dst, hashmix(word, &mut hash_const));
            }
        }
        SeedSequence { pool }
    }

    /// The mixed entropy pool (`SeedSequence.pool`).
    pub fn pool(&self) -> [u32; POOL_SIZE] {
        self.pool
    }

    /// `generate_state(N, dtype=np.uint32)`.
    pub fn generate_state_u32<const N: usize>(&self) -> [u32; N] {
        let mut hash_const = INIT_B;
        std::array::from_fn(|i| {
            let mut value = self.pool[i % POOL_SIZE] ^ hash_const;
            hash_const = hash_const.wrapping_mul(MULT_B);
            value = value.wrapping_mul(hash_const);
            value ^ (value >> XSHIFT)
        })
    }

    /// `generate_state(N, dtype=np.uint64)`: twice as many u32 words, paired little-endian.
    pub fn generate_state_u64<const N: usize>(&self) -> [u64; N] {
        // N u64 words are 2N u32 words; const generics cannot say 2 * N, so draw them in turn.
        let mut hash_const = INIT_B;
        let mut next = 0;
        let mut word = || {
            let mut value = self.pool[next % POOL_SIZE] ^ hash_const;
            next += 1;
            hash_const = hash_const.wrapping_mul(MULT_B);
            value = value.wrapping_mul(hash_const);
            value ^ (value >> XSHIFT)
        };
        std::array::from_fn(|_| {
            let low = u64::from(word());
            low | (u64::from(word()) << 32)
        })
    }
}

/// NumPy's `PCG64` bit generator: a 128-bit LCG with the XSL-RR output, plus the spare upper
/// half of a 64-bit draw that NumPy keeps for the next 32-bit draw.
///
/// ```
/// use ale_sim::numpy_rng::{Pcg64, SeedSequence};
/// let mut bits = Pcg64::new(&SeedSequence::new(0u64));
/// // np.random.default_rng(0).bit_generator.random_raw()
/// assert_eq!(bits.next_u64(), 0xa30f_ebcf_d9c2_825f);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pcg64 {
    state: u128,
    inc: u128,
    /// The upper half of the last 64-bit draw made for a 32-bit one, not handed out yet.
    spare_u32: Option<u32>,
}

const PCG_MULTIPLIER: u128 = 0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645;

impl Pcg64 {
    /// `PCG64(seed_sequence)`: seeded from `generate_state(4, np.uint64)`, the first two words
    /// (high, low) the initial state, the last two the stream.
    pub fn new(seed: &SeedSequence) -> Self {
        let [s_hi, s_lo, i_hi, i_lo] = seed.generate_state_u64::<4>();
        let join = |hi: u64, lo: u64| (u128::from(hi) << 64) | u128::from(lo);
        Self::from_seed(join(s_hi, s_lo), join(i_hi, i_lo))
    }

    /// PCG's `srandom_r`: the increment from `initseq` (made odd), then a step, the initial
    /// state added, and another step, as NumPy's `pcg64_set_seed` does.
    pub fn from_seed(initstate: u128, initseq: u128) -> Self {
        let mut pcg = Pcg64 {
            state: 0,
            inc: (initseq << 1) | 1,
            spare_u32: None,
        };
        pcg.step();
        pcg.state = pcg.state.wrapping_add(initstate);
        pcg.step();
        pcg
    }

    fn step(&mut self) {
        self.state = self
            .state
            .wrapping_mul(PCG_MULTIPLIER)
            .wrapping_add(self.inc);
    }

    /// The LCG's state and increment, as `bit_generator.state["state"]` gives them.
    pub fn state(&self) -> (u128, u128) {
        (self.state, self.inc)
    }

    /// One 64-bit draw (`random_raw()`): step, then XSL-RR on the new state.
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let folded = ((self.state >> 64) as u64) ^ (self.state as u64);
        folded.rotate_right((self.state >> 122) as u32)
    }

    /// One 32-bit draw: the lower half of a fresh 64-bit draw, whose upper half is kept and
    /// handed out by the next call.
    pub fn next_u32(&mut self) -> u32 {
        if let Some(spare) = self.spare_u32.take() {
            return spare;
        }
        let next = self.next_u64();
        self.spare_u32 = Some((next >> 32) as u32);
        next as u32
    }

    /// Uniform in [0, 1): the top 53 bits of a 64-bit draw.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }
}

/// NumPy's `Generator` over [`Pcg64`]: what `np.random.default_rng(seed)` returns.
///
/// ```
/// use ale_sim::numpy_rng::default_rng;
/// let mut rng = default_rng(0u64);
/// // np.random.default_rng(0).random()
/// assert_eq!(rng.random(), 0.6369616873214543);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Generator {
    bits: Pcg64,
}

/// `np.random.default_rng(seed)`, which is also Gymnasium's `env.np_random` after
/// `reset(seed=seed)`.
pub fn default_rng(seed: impl Into<u128>) -> Generator {
    Generator::new(Pcg64::new(&SeedSequence::new(seed)))
}

impl Generator {
    pub fn new(bits: Pcg64) -> Self {
        Generator { bits }
    }

    /// The bit generator underneath (`Generator.bit_generator`).
    pub fn bit_generator(&mut self) -> &mut Pcg64 {
        &mut self.bits
    }

    /// `random()`: uniform in [0, 1).
    pub fn random(&mut self) -> f64 {
        self.bits.next_f64()
    }

    /// `uniform(low, high)`: `low + (high - low) * random()`.
    ///
    /// Panics where NumPy raises: `high - low` NaN, infinite or negative (-0.0 included).
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        let range = uniform_range(low, high);
        low + range * self.random()
    }

    /// `uniform(low, high, size=out.len())`: the same draws as that many `uniform` calls.
    pub fn fill_uniform(&mut self, low: f64, high: f64, out: &mut [f64]) {
        let range = uniform_range(low, high);
        for x in out {
            *x = low + range * self.random();
        }
    }

    /// `standard_normal()`: NumPy's 256-layer ziggurat, with Marsaglia's tail beyond the last
    /// layer.
    pub fn standard_normal(&mut self) -> f64 {
        use ziggurat::{FI, KI, NOR_INV_R, NOR_R, WI};
        loop {
            // 8 bits of layer, 1 of sign, 52 of magnitude; the top 3 bits go unused.
            let r = self.bits.next_u64();
            let idx = (r & 0xff) as usize;
            let r = r >> 8;
            let rabs = (r >> 1) & 0x000f_ffff_ffff_ffff;
            let mut x = rabs as f64 * WI[idx];
            if r & 1 == 1 {
                x = -x;
            }
            if rabs < KI[idx] {
                return x;
            }
            if idx == 0 {
                loop {
                    // ln_1p(-u) rather than ln(u): u may be 0, 1 - u never is.
                    let xx = -NOR_INV_R * (-self.random()).ln_1p();
                    let yy = -(-self.random()).ln_1p();
                    if yy + yy > xx * xx {
                        // The tail's sign is bit 8 of the magnitude, not the sign bit above.
                        return if (rabs >> 8) & 1 == 1 {
                            -(NOR_R + xx)
                        } else {
                            NOR_R + xx
                        };
                    }
                }
            }
            if (FI[idx - 1] - FI[idx]) * self.random() + FI[idx] < (-0.5 * x * x).exp() {
                return x;
            }
        }
    }

    /// `normal(loc, scale)`: `loc + scale * standard_normal()`.
    ///
    /// Panics where NumPy raises: `scale` negative (-0.0 included).
    pub fn normal(&mut self, loc: f64, scale: f64) -> f64 {
        assert!(scale.is_nan() || scale.is_sign_positive(), "scale < 0");
        loc + scale * self.standard_normal()
    }

    /// `integers(low, high)` with NumPy's default int64 dtype: uniform in [low, high), by
    /// Lemire's rejection method on 32-bit draws when the span fits in 32 bits, on 64-bit
    /// draws otherwise. A span of one value draws nothing.
    ///
    /// Panics where NumPy raises: `low >= high`.
    pub fn integers(&mut self, low: i64, high: i64) -> i64 {
        assert!(low < high, "low >= high");
        self.integers_closed(low, high - 1)
    }

    /// `integers(low, high, endpoint=True)`: uniform in [low, high], the same draws as
    /// `integers(low, high + 1)`; it reaches `i64::MAX`, which `integers` cannot.
    ///
    /// Panics where NumPy raises: `low > high`.
    pub fn integers_closed(&mut self, low: i64, high: i64) -> i64 {
        assert!(low <= high, "low > high");
        // The span minus one, which fits in u64 for any pair.
        let max = high.wrapping_sub(low) as u64;
        low.wrapping_add(self.bounded_u64(max) as i64)
    }

    /// Uniform in [0, max], as NumPy's `random_bounded_uint64_fill` draws one value.
    fn bounded_u64(&mut self, max: u64) -> u64 {
        if max == 0 {
            0
        } else if max < u64::from(u32::MAX) {
            u64::from(self.lemire_u32(max as u32))
        } else if max == u64::from(u32::MAX) {
            u64::from(self.bits.next_u32())
        } else if max == u64::MAX {
            self.bits.next_u64()
        } else {
            self.lemire_u64(max)
        }
    }

    fn lemire_u32(&mut self, max: u32) -> u32 {
        let span = max + 1;
        let mut m = u64::from(self.bits.next_u32()) * u64::from(span);
        if (m as u32) < span {
            let threshold = (u32::MAX - max) % span;
            while (m as u32) < threshold {
                m = u64::from(self.bits.next_u32()) * u64::from(span);
            }
        }
        (m >> 32) as u32
    }

    fn lemire_u64(&mut self, max: u64) -> u64 {
        let span = max + 1;
        let mut m = u128::from(self.bits.next_u64()) * u128::from(span);
        if (m as u64) < span {
            let threshold = (u64::MAX - max) % span;
            while (m as u64) < threshold {
                m = u128::from(self.bits.next_u64()) * u128::from(span);
            }
        }
        (m >> 64) as u64
    }
}

fn uniform_range(low: f64, high: f64) -> f64 {
    let range = high - low;
    assert!(range.is_finite(), "high - low range exceeds valid bounds");
    assert!(range.is_sign_positive(), "high - low < 0");
    range
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_entropy_is_padded_with_hashed_zeros() {
        // Entropy 0 is the single word [0], not an empty one; both pad the pool the same way,
        // so they agree, and a seed of 2^32 (words [0, 1]) does not.
        assert_eq!(SeedSequence::new(0u64), SeedSequence::from_words(&[0]));
        assert_eq!(SeedSequence::new(0u64), SeedSequence::from_words(&[]));
        assert_eq!(
            SeedSequence::new(1u128 << 32),
            SeedSequence::from_words(&[0, 1])
        );
        assert_ne!(SeedSequence::new(1u128 << 32), SeedSequence::new(0u64));
    }

    #[test]
    fn u64_state_pairs_the_u32_state_little_endian() {
        let seq = SeedSequence::new(12345u64);
        let narrow = seq.generate_state_u32::<8>();
        let wide = seq.generate_state_u64::<4>();
        for (i, w) in wide.iter().enumerate() {
            assert_eq!(*w as u32, narrow[2 * i]);
            assert_eq!((*w >> 32) as u32, narrow[2 * i + 1]);
        }
    }

    #[test]
    fn the_increment_is_odd_and_seeding_steps_twice() {
        let pcg = Pcg64::from_seed(0, 0);
        // state 0, inc 1: one step gives 1, plus 0, another step gives MULT + 1.
        assert_eq!(pcg.state(), (PCG_MULTIPLIER.wrapping_add(1), 1));
    }

    #[test]
    fn u32_draws_split_one_u64_draw_low_half_first() {
        let mut a = default_rng(7u64);
        let mut b = a.clone();
        let wide = a.bit_generator().next_u64();
        assert_eq!(b.bit_generator().next_u32(), wide as u32);
        assert_eq!(b.bit_generator().next_u32(), (wide >> 32) as u32);
        assert_eq!(a.bit_generator().next_u64(), b.bit_generator().next_u64());
    }

    #[test]
    fn uniform_keeps_to_its_bounds_and_one_value_ranges_draw_nothing() {
        let mut rng = default_rng(3u64);
        for _ in 0..1000 {
            let x = rng.uniform(-0.05, 0.05);
            assert!((-0.05..0.05).contains(&x));
            let k = rng.integers(-3, 4);
            assert!((-3..4).contains(&k));
        }
        let before = rng.clone();
        assert_eq!(rng.integers(5, 6), 5);
        assert_eq!(rng, before);
        assert_eq!(rng.integers(i64::MIN, i64::MIN + 1), i64::MIN);
        assert_eq!(rng.integers_closed(i64::MAX, i64::MAX), i64::MAX);
        assert_eq!(rng, before);
    }

    #[test]
    fn normals_have_mean_zero_and_variance_one() {
        let mut rng = default_rng(11u64);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| rng.standard_normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((var - 1.0).abs() < 0.01, "{var}");
        let tail = xs.iter().filter(|x| x.abs() > ziggurat::NOR_R).count();
        // P(|x| > 3.654) is about 2.6e-4: some 52 of 200000.
        assert!((20..100).contains(&tail), "{tail}");
    }

    #[test]
    #[should_panic(expected = "high - low < 0")]
    fn uniform_refuses_reversed_bounds() {
        default_rng(0u64).uniform(1.0, 0.0);
    }
}
