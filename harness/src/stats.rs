//! The statistics every report and comparison gives beside the mean: the standard deviation,
//! the interquartile mean (IQM) and 95% confidence intervals from a stratified percentile
//! bootstrap, as Agarwal et al. (2021), "Deep Reinforcement Learning at the Edge of the
//! Statistical Precipice", recommend (their `rliable` library does the same). See
//! docs/harness.md, "Statistics".
//!
//! Every interval is reproducible: its resamples are drawn from a generator seeded with a
//! hash of the run's id (of both ids, for a comparison), so a report rebuilt from its records
//! by `verify` carries the very same numbers.
//!
//! ```
//! use ale_harness::stats::{Summary, seed_for};
//! let metrics = [1.0, 2.0, 3.0, 4.0, 100.0];
//! let s = Summary::of(&metrics, seed_for(&["run-1"]));
//! assert_eq!(s.mean, 22.0);
//! assert_eq!(s.iqm, 3.0); // the top and bottom rollouts are trimmed
//! assert!(s.mean_ci.low <= s.mean && s.mean <= s.mean_ci.high);
//! ```

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How many resamples each interval is estimated from.
pub const RESAMPLES: u32 = 2000;

/// The intervals' confidence level.
pub const CONFIDENCE: f64 = 0.95;

/// A two-sided interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// The interval between two values, whichever is larger.
    pub fn between(a: f64, b: f64) -> Interval {
        if a <= b {
            Interval { low: a, high: b }
        } else {
            Interval { low: b, high: a }
        }
    }

    /// Half its width: the `±` a table shows beside a point estimate.
    pub fn half_width(&self) -> f64 {
        (self.high - self.low) / 2.0
    }

    pub fn contains(&self, x: f64) -> bool {
        self.low <= x && x <= self.high
    }
}

/// How the intervals were estimated, so that a reader can reproduce them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Method {
    /// `stratified percentile bootstrap`.
    pub bootstrap: String,
    pub resamples: u32,
    pub confidence: f64,
    /// The resampling generator's key (what it is seeded with), in hex: the first 8 bytes of
    /// SHA-256 over the run ids. Not a rollout's seed: those stay hidden.
    pub resampling_key: String,
}

impl Method {
    fn new(seed: u64) -> Method {
        Method {
            bootstrap: "stratified percentile bootstrap".into(),
            resamples: RESAMPLES,
            confidence: CONFIDENCE,
            resampling_key: format!("{seed:016x}"),
        }
    }
}

/// One run's per-rollout metric, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// How many rollouts it summarises.
    pub n: usize,
    pub mean: f64,
    /// The sample standard deviation (n − 1 in the denominator; 0 for a single rollout).
    pub std: f64,
    /// The 95% interval of the mean.
    pub mean_ci: Interval,
    /// The interquartile mean: the mean of the middle half (25% trimmed from each end).
    pub iqm: f64,
    pub iqm_ci: Interval,
    pub method: Method,
}

impl Summary {
    /// Summarises `values` (one stratum: one run of one task), resampling with a generator
    /// seeded by `seed`. An empty run summarises to zeros.
    pub fn of(values: &[f64], seed: u64) -> Summary {
        Summary::of_strata(&[values], seed)
    }

    /// Summarises several strata (one per task) together: each resample draws within each
    /// stratum as many values as it holds, so every stratum keeps its weight.
    pub fn of_strata(strata: &[&[f64]], seed: u64) -> Summary {
        let all: Vec<f64> = strata.iter().flat_map(|s| s.iter().copied()).collect();
        let mut rng = Rng::new(seed);
        let mut means = Vec::with_capacity(RESAMPLES as usize);
        let mut iqms = Vec::with_capacity(RESAMPLES as usize);
        let mut sample = Vec::with_capacity(all.len());
        if !all.is_empty() {
            for _ in 0..RESAMPLES {
                sample.clear();
                for stratum in strata {
                    for _ in 0..stratum.len() {
                        sample.push(stratum[rng.below(stratum.len())]);
                    }
                }
                means.push(mean(&sample));
                iqms.push(iqm(&mut sample));
            }
        }
        Summary {
            n: all.len(),
            mean: mean(&all),
            std: std(&all),
            mean_ci: percentile_interval(&mut means),
            iqm: iqm(&mut all.clone()),
            iqm_ci: percentile_interval(&mut iqms),
            method: Method::new(seed),
        }
    }
}

/// Two runs of one task compared: `left − right`, with its interval, and the probability that
/// the left run's rollout improves on the right run's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    /// Whether rollout i of one was played on the same seed as rollout i of the other (both
    /// runs used one named seed set): then the differences are taken rollout by rollout.
    pub paired: bool,
    /// How many rollouts each side contributes (the pairs, when paired).
    pub n_left: usize,
    pub n_right: usize,
    /// Mean of left minus mean of right (the mean of the per-rollout differences, if paired).
    pub mean_difference: f64,
    pub ci: Interval,
    /// P(a left rollout is better than a right one), ties counting half; "better" follows the
    /// task's direction. Paired: over the pairs; unpaired: over every left–right couple
    /// (the Mann–Whitney estimate, as rliable's probability of improvement).
    pub probability_of_improvement: f64,
    pub method: Method,
}

impl Difference {
    /// Compares `left` with `right`. `paired` takes rollout i with rollout i (over the
    /// shorter of the two); otherwise each side is resampled on its own (two strata).
    /// `higher_is_better` orients the probability of improvement.
    pub fn of(
        left: &[f64],
        right: &[f64],
        paired: bool,
        higher_is_better: bool,
        seed: u64,
    ) -> Difference {
        let mut rng = Rng::new(seed);
        let mut diffs = Vec::with_capacity(RESAMPLES as usize);
        let better = |a: f64, b: f64| -> f64 {
            let (a, b) = if higher_is_better { (a, b) } else { (b, a) };
            if a > b {
                1.0
            } else if a == b {
                0.5
            } else {
                0.0
            }
        };
        let (mean_difference, probability, n_left, n_right) = if paired {
            let n = left.len().min(right.len());
            let d: Vec<f64> = (0..n).map(|i| left[i] - right[i]).collect();
            if n > 0 {
                for _ in 0..RESAMPLES {
                    let mut sum = 0.0;
                    for _ in 0..n {
                        sum += d[rng.below(n)];
                    }
                    diffs.push(sum / n as f64);
                }
            }
            let p = if n == 0 {
                0.5
            } else {
                (0..n).map(|i| better(left[i], right[i])).sum::<f64>() / n as f64
            };
            (mean(&d), p, n, n)
        } else {
            if !left.is_empty() && !right.is_empty() {
                for _ in 0..RESAMPLES {
                    let l: f64 = (0..left.len()).map(|_| left[rng.below(left.len())]).sum();
                    let r: f64 = (0..right.len())
                        .map(|_| right[rng.below(right.len())])
                        .sum();
                    diffs.push(l / left.len() as f64 - r / right.len() as f64);
                }
            }
            (
                mean(left) - mean(right),
                probability_of_improvement(left, right, higher_is_better),
                left.len(),
                right.len(),
            )
        };
        Difference {
            paired,
            n_left,
            n_right,
            mean_difference,
            ci: percentile_interval(&mut diffs),
            probability_of_improvement: probability,
            method: Method::new(seed),
        }
    }
}

/// P(X > Y) for X drawn from `left` and Y from `right`, ties counting half, in
/// O((n + m) log(n + m)); "greater" is "better" in the task's direction. 0.5 if either is empty.
pub fn probability_of_improvement(left: &[f64], right: &[f64], higher_is_better: bool) -> f64 {
    if left.is_empty() || right.is_empty() {
        return 0.5;
    }
    let sign = if higher_is_better { 1.0 } else { -1.0 };
    let mut r: Vec<f64> = right.iter().map(|v| v * sign).collect();
    r.sort_by(f64::total_cmp);
    let mut wins = 0.0;
    for v in left.iter().map(|v| v * sign) {
        let below = r.partition_point(|x| x.total_cmp(&v).is_lt());
        let not_above = r.partition_point(|x| x.total_cmp(&v).is_le());
        wins += below as f64 + (not_above - below) as f64 / 2.0;
    }
    wins / (left.len() as f64 * r.len() as f64)
}

/// The generator seed for intervals over the runs `ids`: the first 8 bytes of
/// SHA-256 over the ids, each followed by a newline.
pub fn seed_for(ids: &[&str]) -> u64 {
    let mut h = Sha256::new();
    for id in ids {
        h.update(id.as_bytes());
        h.update(b"\n");
    }
    let digest = h.finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first)
}

pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// The sample standard deviation; 0 for fewer than two values.
pub fn std(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    let ss: f64 = values.iter().map(|v| (v - m) * (v - m)).sum();
    (ss / (values.len() - 1) as f64).sqrt()
}

/// The running mean after each of `values`, with the [`CONFIDENCE`] interval of each prefix's
/// mean by normal theory: `mean_k ± t·s_k/√k`, `t` Student's quantile with `k − 1` degrees of
/// freedom and `s_k` the prefix's sample standard deviation. One pass (Welford's update), so a
/// plot of thousands of rollouts gets its band in O(n), where a bootstrap per prefix would
/// cost O(n² · resamples). The first prefix has no interval (one value has no spread).
///
/// ```
/// use ale_harness::stats::running_interval;
/// let band = running_interval(&[1.0, 3.0, 2.0]);
/// assert_eq!(band[1].mean, 2.0);
/// assert!(band[0].interval.is_none());
/// let i = band[2].interval.unwrap();
/// assert!(i.low < 2.0 && 2.0 < i.high);
/// ```
pub fn running_interval(values: &[f64]) -> Vec<RunningMean> {
    let (mut mean, mut m2) = (0.0, 0.0);
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let k = (i + 1) as f64;
            let delta = v - mean;
            mean += delta / k;
            m2 += delta * (v - mean);
            let interval = (i > 0).then(|| {
                let half = t_quantile(i as u32) * (m2 / (k - 1.0)).sqrt() / k.sqrt();
                Interval {
                    low: mean - half,
                    high: mean + half,
                }
            });
            RunningMean { mean, interval }
        })
        .collect()
}

/// One point of [`running_interval`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunningMean {
    pub mean: f64,
    /// `None` for the first value.
    pub interval: Option<Interval>,
}

/// The two-sided [`CONFIDENCE`] quantile of Student's t with `df` (≥ 1) degrees of freedom:
/// tabled to 30, then the Cornish–Fisher expansion about the normal's 1.96 (within 0.001).
pub fn t_quantile(df: u32) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df as usize - 1],
        _ => {
            let (z, n): (f64, f64) = (1.959_963_984_540_054, f64::from(df));
            z + (z.powi(3) + z) / (4.0 * n)
                + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
        }
    }
}

/// The interquartile mean, as `scipy.stats.trim_mean(values, 0.25)`: ⌊n/4⌋ values cut from
/// each end, the mean of the rest. Reorders `values`.
pub fn iqm(values: &mut [f64]) -> f64 {
    let n = values.len();
    let cut = n / 4;
    if cut == 0 {
        return mean(values);
    }
    // Everything below index `cut` is among the lowest, everything from `n - cut` among the
    // highest: two selections, no full sort.
    values.select_nth_unstable_by(cut, f64::total_cmp);
    let rest = &mut values[cut..];
    let keep = n - 2 * cut;
    rest.select_nth_unstable_by(keep - 1, f64::total_cmp);
    mean(&rest[..keep])
}

/// The central [`CONFIDENCE`] interval of `estimates` (percentiles by linear interpolation,
/// as NumPy's default). Reorders `estimates`; an empty set gives `[0, 0]`.
fn percentile_interval(estimates: &mut [f64]) -> Interval {
    if estimates.is_empty() {
        return Interval {
            low: 0.0,
            high: 0.0,
        };
    }
    estimates.sort_by(f64::total_cmp);
    let tail = (1.0 - CONFIDENCE) / 2.0;
    Interval {
        low: percentile(estimates, tail),
        high: percentile(estimates, 1.0 - tail),
    }
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    let at = q * (sorted.len() - 1) as f64;
    let below = at.floor() as usize;
    let above = (below + 1).min(sorted.len() - 1);
    let frac = at - below as f64;
    sorted[below] + (sorted[above] - sorted[below]) * frac
}

/// splitmix64 feeding xoshiro256**: small, fast and fixed here, so an interval never changes
/// with a dependency's version.
struct Rng([u64; 4]);

impl Rng {
    fn new(seed: u64) -> Rng {
        let mut s = seed;
        let mut next = || {
            s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = s;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in `0..n` (Lemire's multiply-shift; its bias, under 2⁻⁴⁰ for any run's size,
    /// is far below the bootstrap's own error).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iqm_matches_scipy_trim_mean() {
        // scipy.stats.trim_mean(x, 0.25) for these (computed by hand: cut ⌊n/4⌋ each end).
        assert_eq!(iqm(&mut [5.0, 1.0, 3.0]), 3.0);
        assert_eq!(iqm(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        let mut ten: Vec<f64> = (0..10).map(f64::from).rev().collect();
        // cut 2 each end: 2..=7
        assert_eq!(iqm(&mut ten), 4.5);
        let mut twenty: Vec<f64> = (1..=20).map(|i| f64::from(i * i)).collect();
        // cut 5 each end: 6²..15²
        let expected = (6..=15).map(|i| f64::from(i * i)).sum::<f64>() / 10.0;
        assert_eq!(iqm(&mut twenty), expected);
        assert_eq!(iqm(&mut []), 0.0);
    }

    #[test]
    fn the_running_interval_matches_each_prefix_computed_alone() {
        let values: Vec<f64> = (0..60)
            .map(|i| (f64::from(i) * 0.7).sin() * 10.0 + 3.0)
            .collect();
        let band = running_interval(&values);
        assert_eq!(band.len(), values.len());
        assert_eq!(
            band[0],
            RunningMean {
                mean: values[0],
                interval: None
            }
        );
        for k in 2..=values.len() {
            let prefix = &values[..k];
            let half = t_quantile(k as u32 - 1) * std(prefix) / (k as f64).sqrt();
            let got = band[k - 1];
            assert!((got.mean - mean(prefix)).abs() < 1e-9, "k {k}");
            let i = got.interval.unwrap();
            assert!((i.low - (mean(prefix) - half)).abs() < 1e-9, "k {k}");
            assert!((i.high - (mean(prefix) + half)).abs() < 1e-9, "k {k}");
        }
        // A constant run has a point band.
        let flat = running_interval(&[2.5; 4]);
        assert_eq!(
            flat[3].interval,
            Some(Interval {
                low: 2.5,
                high: 2.5
            })
        );
    }

    #[test]
    fn t_quantiles_match_the_tables_and_approach_the_normal() {
        assert_eq!(t_quantile(1), 12.706);
        assert_eq!(t_quantile(10), 2.228);
        // Beyond the table the expansion continues it: 2.021 at 40, 2.000 at 60, 1.980 at 120.
        for (df, table) in [(31, 2.040), (40, 2.021), (60, 2.000), (120, 1.980)] {
            assert!(
                (t_quantile(df) - table).abs() < 1e-3,
                "df {df}: {}",
                t_quantile(df)
            );
        }
        assert!((t_quantile(1_000_000) - 1.96).abs() < 1e-3);
    }

    #[test]
    fn std_is_the_sample_deviation() {
        assert_eq!(
            std(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]),
            (32.0f64 / 7.0).sqrt()
        );
        assert_eq!(std(&[3.0]), 0.0);
    }

    #[test]
    fn intervals_are_reproducible_and_depend_on_the_seed() {
        let values: Vec<f64> = (0..50).map(|i| (f64::from(i) * 0.37).sin()).collect();
        let a = Summary::of(&values, seed_for(&["run-a"]));
        assert_eq!(a, Summary::of(&values, seed_for(&["run-a"])));
        let b = Summary::of(&values, seed_for(&["run-b"]));
        assert_ne!(a.mean_ci, b.mean_ci);
        assert_eq!(a.mean, b.mean);
    }

    #[test]
    fn the_mean_interval_covers_the_mean_about_as_often_as_it_says() {
        // Rollouts from a known distribution (uniform on [0, 1), mean 0.5): over many runs,
        // the 95% interval of 40 rollouts holds 0.5 in about 95% of them (a percentile
        // bootstrap runs a little narrow at this size: 90–97% is the honest band).
        let mut source = Rng::new(7);
        let runs = 400;
        let mut covered = 0;
        for run in 0..runs {
            let values: Vec<f64> = (0..40)
                .map(|_| (source.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
                .collect();
            let s = Summary::of(&values, run);
            assert!(s.mean_ci.contains(s.mean));
            assert!(s.iqm_ci.low <= s.iqm_ci.high);
            if s.mean_ci.contains(0.5) {
                covered += 1;
            }
        }
        let rate = f64::from(covered) / runs as f64;
        assert!((0.90..=0.97).contains(&rate), "coverage {rate}");
    }

    #[test]
    fn a_constant_run_has_a_point_interval() {
        let s = Summary::of(&[1.5; 20], 1);
        assert_eq!(s.std, 0.0);
        assert_eq!(
            s.mean_ci,
            Interval {
                low: 1.5,
                high: 1.5
            }
        );
        assert_eq!(
            s.iqm_ci,
            Interval {
                low: 1.5,
                high: 1.5
            }
        );
    }

    #[test]
    fn strata_keep_their_weight() {
        // Two tasks, one always 0, one always 1: every resample keeps 10 of each, so the
        // interval is the point 0.5 (an unstratified bootstrap would spread it).
        let s = Summary::of_strata(&[&[0.0; 10], &[1.0; 10]], 3);
        assert_eq!(
            s.mean_ci,
            Interval {
                low: 0.5,
                high: 0.5
            }
        );
        let unstratified = Summary::of(&[[0.0; 10], [1.0; 10]].concat(), 3);
        assert!(unstratified.mean_ci.half_width() > 0.05);
    }

    #[test]
    fn probability_of_improvement_counts_ties_half_and_follows_the_direction() {
        assert_eq!(probability_of_improvement(&[2.0], &[1.0], true), 1.0);
        assert_eq!(probability_of_improvement(&[2.0], &[1.0], false), 0.0);
        assert_eq!(
            probability_of_improvement(&[1.0, 2.0], &[1.0, 2.0], true),
            0.5
        );
        // Brute force on a mixed case.
        let (l, r) = ([3.0, 1.0, 2.0, 2.0], [2.0, 0.5, 4.0]);
        let brute: f64 = l
            .iter()
            .flat_map(|a| r.iter().map(move |b| (a, b)))
            .map(|(a, b)| {
                if a > b {
                    1.0
                } else if a == b {
                    0.5
                } else {
                    0.0
                }
            })
            .sum::<f64>()
            / 12.0;
        assert_eq!(probability_of_improvement(&l, &r, true), brute);
    }

    #[test]
    fn pairing_removes_the_shared_seed_variance() {
        // Two agents on the same 30 seeds: the seed moves both by a lot, the agents differ by
        // 0.1. Paired, the interval is tight around 0.1; unpaired, the seed spread swamps it.
        let mut source = Rng::new(11);
        let seed_effect: Vec<f64> = (0..30).map(|_| source.below(100) as f64).collect();
        let left: Vec<f64> = seed_effect.iter().map(|s| s + 0.1).collect();
        let right = seed_effect.clone();
        let paired = Difference::of(&left, &right, true, true, 5);
        assert!((paired.mean_difference - 0.1).abs() < 1e-9);
        assert!(paired.ci.contains(0.1) && paired.ci.half_width() < 1e-9);
        assert_eq!(paired.probability_of_improvement, 1.0);
        let unpaired = Difference::of(&left, &right, false, true, 5);
        assert!(unpaired.ci.half_width() > 5.0, "{unpaired:?}");
        assert!(unpaired.ci.contains(0.0));
        // Lower is better flips it.
        assert_eq!(
            Difference::of(&left, &right, true, false, 5).probability_of_improvement,
            0.0
        );
    }
}
