//! Delay computation: the backoff ceiling for each retry and the jitter drawn
//! under it.
//!
//! Pure: no clock, no I/O, no global RNG. The caller passes the RNG, so a seed
//! reproduces a whole schedule, and real runs, `--dry-run` and simulations all
//! draw delays from this one place.

use std::time::Duration;

use rand::Rng;

/// How the ceiling v_k grows with the retry number k (k = 1 for the first retry).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Growth {
    /// v_k = min(cap, base * multiplier^(k-1))
    Exponential { multiplier: f64 },
    /// v_k = min(cap, base * k)
    Linear,
    /// v_k = min(cap, base)
    Fixed,
}

/// How the actual delay is drawn from the ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// d = v_k
    None,
    /// d = U(0, v_k)
    Full,
    /// d = v_k/2 + U(0, v_k/2)
    Equal,
    /// d_k = U(base, min(cap, 3 * d_{k-1})), d_0 = base; ignores the growth kind.
    ///
    /// The cap bounds the range, not the draw: clamping the draw instead
    /// (min(cap, U(base, 3d))) sends every client whose draw passed the cap
    /// to exactly the cap, in step with the others.
    Decorrelated,
    /// d = min(v_k, cap - max) + U(0, max); U(0, cap) when max >= cap.
    ///
    /// The random window slides below the cap rather than being clipped by
    /// it, so clients that have all reached the cap still spread out.
    Additive { max: Duration },
}

impl Jitter {
    /// The name used in flags and log lines.
    pub fn name(self) -> &'static str {
        match self {
            Jitter::None => "none",
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::Additive { .. } => "additive",
        }
    }
}

/// The validated delay policy. `base <= cap` is guaranteed by `policy`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DelayPolicy {
    pub growth: Growth,
    pub jitter: Jitter,
    pub base: Duration,
    pub cap: Duration,
}

/// One planned wait: the ceiling it was drawn under, the range the delay was
/// drawn from, and the delay itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Retry number since the last reset, 1-based.
    pub retry: u32,
    pub ceiling: Duration,
    /// The delay was drawn uniformly from [low, high] (low == high: no
    /// randomness). `wait` draws it again below a deadline from this range.
    pub low: Duration,
    pub high: Duration,
    pub delay: Duration,
}

impl Step {
    /// The same draw with its range scaled to end at `window`: the jitter's
    /// shape spread over a window of the user's choosing instead of the
    /// backoff's ceiling (`--retry-after-spread`). It draws nothing: a
    /// seed's schedule is the same with or without it.
    pub fn over(self, window: Duration) -> Step {
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let (high, w) = (nanos(self.high), nanos(window));
        let scale = |d: Duration| {
            let v = u128::from(nanos(d)) * u128::from(w) / u128::from(high.max(1));
            Duration::from_nanos(u64::try_from(v).unwrap_or(u64::MAX))
        };
        if high == 0 {
            // A zero step has no shape to keep: it stays zero, within the window.
            return Step {
                ceiling: window,
                high: window,
                ..self
            };
        }
        Step {
            retry: self.retry,
            ceiling: window,
            low: scale(self.low),
            high: window,
            delay: scale(self.delay),
        }
    }
}

impl DelayPolicy {
    /// The growth ceiling v_k for retry k (k >= 1), before jitter.
    pub fn ceiling(&self, k: u32) -> Duration {
        let k = k.max(1);
        match self.growth {
            Growth::Fixed => self.base.min(self.cap),
            Growth::Linear => self.base.saturating_mul(k).min(self.cap),
            Growth::Exponential { multiplier } => {
                let exp = i32::try_from(k - 1).unwrap_or(i32::MAX);
                let nanos = self.base.as_nanos() as f64 * multiplier.powi(exp);
                // Anything at or past the cap (including an overflow to inf) is the cap.
                if !nanos.is_finite() || nanos >= self.cap.as_nanos() as f64 {
                    self.cap
                } else {
                    Duration::from_nanos(nanos.round() as u64)
                }
            }
        }
    }

    /// The largest delay retry k can ever get under this policy.
    pub fn worst_case(&self, k: u32) -> Duration {
        match self.jitter {
            Jitter::None | Jitter::Full | Jitter::Equal => self.ceiling(k),
            // min(v, cap - J) + J, and the cap itself when J >= cap.
            Jitter::Additive { max } => self.ceiling(k).saturating_add(max).min(self.cap),
            Jitter::Decorrelated => {
                // The upper bound grows as base * 3^k until it meets the cap.
                let exp = i32::try_from(k).unwrap_or(i32::MAX);
                let nanos = self.base.as_nanos() as f64 * 3f64.powi(exp);
                if !nanos.is_finite() || nanos >= self.cap.as_nanos() as f64 {
                    self.cap
                } else {
                    Duration::from_nanos(nanos.round() as u64)
                }
            }
        }
    }
}

/// The per-run state of a delay sequence: the retry number and, for
/// decorrelated jitter, the previous delay.
#[derive(Debug, Clone)]
pub struct Backoff {
    policy: DelayPolicy,
    progress: Progress,
}

impl Backoff {
    pub fn new(policy: DelayPolicy) -> Self {
        Backoff {
            policy,
            progress: Progress::new(&policy),
        }
    }

    /// Start over from the first step (used by `--reset-after`).
    pub fn reset(&mut self) {
        self.progress.reset(&self.policy);
    }

    /// Draw the delay before the next retry.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Step {
        self.progress.next(&self.policy, rng)
    }
}

/// A [`Backoff`] without its policy, which each call passes in: what a
/// simulation of a million clients under one policy keeps per client, in
/// 16 bytes (the previous delay's seconds and nanoseconds kept apart, as a
/// `Duration` beside a `u32` would take 24).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    previous_secs: u64,
    previous_nanos: u32,
    retry: u32,
}

impl Progress {
    pub fn new(policy: &DelayPolicy) -> Self {
        let mut p = Progress {
            previous_secs: 0,
            previous_nanos: 0,
            retry: 0,
        };
        p.set_previous(policy.base);
        p
    }

    fn previous(&self) -> Duration {
        Duration::new(self.previous_secs, self.previous_nanos)
    }

    fn set_previous(&mut self, d: Duration) {
        self.previous_secs = d.as_secs();
        self.previous_nanos = d.subsec_nanos();
    }

    /// Start over from the first step.
    pub fn reset(&mut self, policy: &DelayPolicy) {
        *self = Progress::new(policy);
    }

    /// Draw the delay before the next retry under `p`, the policy this
    /// progress was made for.
    pub fn next<R: Rng + ?Sized>(&mut self, p: &DelayPolicy, rng: &mut R) -> Step {
        self.retry = self.retry.saturating_add(1);
        // Every kind draws uniformly from one range (none: a range of one
        // point, which draws nothing).
        let (ceiling, low, high) = match p.jitter {
            Jitter::None => {
                let v = p.ceiling(self.retry);
                (v, v, v)
            }
            Jitter::Full => {
                let v = p.ceiling(self.retry);
                (v, Duration::ZERO, v)
            }
            Jitter::Equal => {
                let v = p.ceiling(self.retry);
                (v, v / 2, v)
            }
            Jitter::Additive { max } => {
                let v = p.ceiling(self.retry);
                let window = max.min(p.cap);
                let floor = v.min(p.cap - window);
                (v, floor, floor + window)
            }
            Jitter::Decorrelated => {
                let upper = self.previous().saturating_mul(3).min(p.cap);
                // upper >= base because previous >= base and cap >= base.
                (upper, p.base, upper)
            }
        };
        let delay = uniform(rng, low, high);
        self.set_previous(delay);
        Step {
            retry: self.retry,
            ceiling,
            low,
            high,
            delay,
        }
    }
}

/// A duration drawn uniformly from [lo, hi], at nanosecond resolution,
/// by our own sampler (see `rng`), so a seed's schedule never changes.
fn uniform<R: Rng + ?Sized>(rng: &mut R, lo: Duration, hi: Duration) -> Duration {
    if hi <= lo {
        return lo;
    }
    // Spans beyond u64 nanoseconds (584 years) are drawn at that width.
    let span = u64::try_from((hi - lo).as_nanos()).unwrap_or(u64::MAX);
    lo + Duration::from_nanos(crate::rng::up_to(rng, span))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rng::seeded;
    use proptest::prelude::*;
    use statrs::distribution::{ContinuousCDF, Uniform};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_step_over_a_window_keeps_its_shape_and_its_draw() {
        // Equal jitter under 8s drew 6s, halfway up [4s, 8s]: over a 1s
        // window it lies halfway up [0.5s, 1s].
        let step = Step {
            retry: 4,
            ceiling: ms(8000),
            low: ms(4000),
            high: ms(8000),
            delay: ms(6000),
        };
        let over = step.over(ms(1000));
        assert_eq!(
            (over.low, over.delay, over.high, over.ceiling),
            (ms(500), ms(750), ms(1000), ms(1000))
        );
        assert_eq!(over.retry, 4);
        // No jitter: the window itself; a zero window: no wait.
        let fixed = Step {
            low: ms(8000),
            delay: ms(8000),
            ..step
        };
        assert_eq!(fixed.over(ms(300)).delay, ms(300));
        assert_eq!(step.over(Duration::ZERO).delay, Duration::ZERO);
        // A zero step stays zero.
        let zero = Step {
            retry: 1,
            ceiling: Duration::ZERO,
            low: Duration::ZERO,
            high: Duration::ZERO,
            delay: Duration::ZERO,
        };
        assert_eq!(zero.over(ms(500)).delay, Duration::ZERO);
    }

    fn policy(growth: Growth, jitter: Jitter, base: Duration, cap: Duration) -> DelayPolicy {
        DelayPolicy {
            growth,
            jitter,
            base,
            cap,
        }
    }

    fn exp2() -> Growth {
        Growth::Exponential { multiplier: 2.0 }
    }

    fn delays(p: DelayPolicy, n: usize, seed: u64) -> Vec<Step> {
        let mut rng = seeded(seed);
        let mut b = Backoff::new(p);
        (0..n).map(|_| b.next(&mut rng)).collect()
    }

    #[test]
    fn exponential_without_jitter_is_exact_and_capped() {
        let p = policy(exp2(), Jitter::None, ms(1000), ms(30_000));
        let got: Vec<u64> = delays(p, 7, 1)
            .iter()
            .map(|s| s.delay.as_millis() as u64)
            .collect();
        assert_eq!(got, vec![1000, 2000, 4000, 8000, 16000, 30000, 30000]);
    }

    #[test]
    fn fractional_multiplier_and_sub_second_base() {
        let p = policy(
            Growth::Exponential { multiplier: 1.5 },
            Jitter::None,
            ms(250),
            ms(1000),
        );
        let got: Vec<Duration> = delays(p, 5, 1).iter().map(|s| s.delay).collect();
        assert_eq!(
            got,
            vec![
                ms(250),
                ms(375),
                Duration::from_micros(562_500),
                Duration::from_micros(843_750),
                ms(1000)
            ]
        );
    }

    #[test]
    fn linear_and_fixed_without_jitter() {
        let lin = policy(Growth::Linear, Jitter::None, ms(300), ms(1000));
        let got: Vec<Duration> = delays(lin, 5, 1).iter().map(|s| s.delay).collect();
        assert_eq!(got, vec![ms(300), ms(600), ms(900), ms(1000), ms(1000)]);
        let fixed = policy(Growth::Fixed, Jitter::None, ms(300), ms(1000));
        assert!(delays(fixed, 5, 1).iter().all(|s| s.delay == ms(300)));
    }

    #[test]
    fn huge_retry_numbers_saturate_at_the_cap() {
        let p = policy(exp2(), Jitter::None, ms(1), ms(5000));
        assert_eq!(p.ceiling(u32::MAX), ms(5000));
        assert_eq!(p.ceiling(2000), ms(5000));
        let lin = policy(Growth::Linear, Jitter::None, Duration::MAX, Duration::MAX);
        assert_eq!(lin.ceiling(u32::MAX), Duration::MAX);
    }

    #[test]
    fn full_and_equal_stay_within_their_bounds() {
        for (jitter, lower_half) in [(Jitter::Full, false), (Jitter::Equal, true)] {
            let p = policy(exp2(), jitter, ms(100), ms(3000));
            for s in delays(p, 2000, 42) {
                assert_eq!(s.ceiling, p.ceiling(s.retry));
                assert!(s.delay <= s.ceiling);
                if lower_half {
                    assert!(s.delay >= s.ceiling / 2);
                }
            }
        }
    }

    #[test]
    fn additive_adds_at_most_jitter_max_below_the_cap() {
        let p = policy(
            exp2(),
            Jitter::Additive { max: ms(1000) },
            ms(100),
            ms(2000),
        );
        for s in delays(p, 500, 3) {
            let floor = s.ceiling.min(ms(1000));
            assert!(s.delay >= floor, "{s:?}");
            assert!(s.delay <= floor + ms(1000), "{s:?}");
        }
    }

    #[test]
    fn additive_at_the_cap_still_spreads() {
        // Every retry here is at the cap: the window slides below it.
        let p = policy(
            Growth::Fixed,
            Jitter::Additive { max: ms(1000) },
            ms(5000),
            ms(5000),
        );
        let draws: Vec<f64> = delays(p, 5000, 11)
            .iter()
            .map(|s| s.delay.as_secs_f64())
            .collect();
        assert!(draws.iter().all(|&d| (4.0..=5.0).contains(&d)));
        let d = ks_statistic(draws, &Uniform::new(4.0, 5.0).expect("valid bounds"));
        assert!(d < ks_critical(5000), "KS statistic {d}");
        // A window wider than the cap covers [0, cap].
        let wide = policy(
            Growth::Fixed,
            Jitter::Additive { max: ms(9000) },
            ms(2000),
            ms(2000),
        );
        let draws: Vec<f64> = delays(wide, 5000, 12)
            .iter()
            .map(|s| s.delay.as_secs_f64())
            .collect();
        let d = ks_statistic(draws, &Uniform::new(0.0, 2.0).expect("valid bounds"));
        assert!(d < ks_critical(5000), "KS statistic {d}");
    }

    /// Exact delays, in nanoseconds, for a few seeds and every jitter kind.
    /// A change here changes what `--seed` means: never update these values.
    #[test]
    fn seeded_schedules_are_pinned() {
        let kinds = [
            Jitter::None,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::Additive { max: ms(1000) },
        ];
        let mut got = Vec::new();
        for seed in [0, 1, 42, crate::rng::MAX_SEED] {
            for jitter in kinds {
                let p = policy(exp2(), jitter, ms(1000), ms(30_000));
                let nanos: Vec<u64> = delays(p, 6, seed)
                    .iter()
                    .map(|s| s.delay.as_nanos() as u64)
                    .collect();
                got.push(nanos);
            }
        }
        let want: &[[u64; 6]] = &GOLDEN;
        assert_eq!(got, want, "{got:?}");
    }

    // Rows: seeds 0, 1, 42 and 2^53 - 1, each with none, full, equal,
    // decorrelated and additive (1s) jitter; exponential x2 from 1s to 30s.
    #[rustfmt::skip]
    const GOLDEN: [[u64; 6]; 20] = [
        [1000000000, 2000000000, 4000000000, 8000000000, 16000000000, 30000000000], // seed 0, none
        [969282758, 1181792383, 2292552618, 1523012883, 12506075047, 9973488867], // seed 0, full
        [984641379, 1590896192, 3146276309, 4761506441, 14253037524, 19986744433], // seed 0, equal
        [2938565515, 5618265323, 10086988502, 6520921701, 15509208341, 10641039238], // seed 0, decorrelated
        [1969282758, 2590896192, 4573138155, 8190376610, 16781629691, 29332449629], // seed 0, additive
        [1000000000, 2000000000, 4000000000, 8000000000, 16000000000, 30000000000], // seed 1, none
        [854517128, 963291682, 1020134848, 5549590169, 5278678217, 8145958499], // seed 1, full
        [927258564, 1481645841, 2510067424, 6774795084, 10639339108, 19072979249], // seed 1, equal
        [2709034256, 4432739407, 4136460243, 8914673391, 9493399906, 8461752215], // seed 1, decorrelated
        [1854517128, 2481645841, 4255033712, 8693698771, 16329917388, 29271531950], // seed 1, additive
        [1000000000, 2000000000, 4000000000, 8000000000, 16000000000, 30000000000], // seed 42, none
        [372427004, 1714091366, 3925088899, 4495601870, 14196430288, 27037800116], // seed 42, full
        [686213502, 1857045683, 3962544450, 6247800935, 15098215144, 28518900058], // seed 42, equal
        [1744854007, 4629213099, 13646282485, 17296556777, 26731029897, 27136540112], // seed 42, decorrelated
        [1372427004, 2857045683, 4981272225, 8561950234, 16887276893, 29901260004], // seed 42, additive
        [1000000000, 2000000000, 4000000000, 8000000000, 16000000000, 30000000000], // seed 2^53 - 1, none
        [462419863, 1864072331, 2145271472, 5457595190, 4096735352, 26951297564], // seed 2^53 - 1, full
        [731209931, 1932036166, 3072635736, 6728797595, 10048367676, 28475648782], // seed 2^53 - 1, equal
        [1924839726, 5450024547, 9232518767, 19213056855, 8425332826, 22808988622], // seed 2^53 - 1, decorrelated
        [1462419863, 2932036166, 4536317868, 8682199399, 16256045959, 29898376586], // seed 2^53 - 1, additive
    ];

    #[test]
    fn decorrelated_stays_between_base_and_three_times_previous() {
        let p = policy(exp2(), Jitter::Decorrelated, ms(100), ms(10_000));
        let mut rng = seeded(9);
        let mut b = Backoff::new(p);
        let mut prev = p.base;
        for _ in 0..5000 {
            let s = b.next(&mut rng);
            assert!(s.delay >= p.base, "{s:?}");
            assert!(s.delay <= (prev * 3).min(p.cap), "{s:?} prev {prev:?}");
            assert_eq!(s.ceiling, (prev * 3).min(p.cap));
            prev = s.delay;
        }
    }

    #[test]
    fn reset_returns_to_the_first_step() {
        let p = policy(exp2(), Jitter::None, ms(100), ms(10_000));
        let mut rng = seeded(1);
        let mut b = Backoff::new(p);
        b.next(&mut rng);
        b.next(&mut rng);
        b.reset();
        assert_eq!(b.next(&mut rng).delay, ms(100));
    }

    #[test]
    fn the_same_seed_gives_the_same_schedule() {
        let p = policy(exp2(), Jitter::Decorrelated, ms(100), ms(10_000));
        assert_eq!(delays(p, 50, 77), delays(p, 50, 77));
        assert_ne!(delays(p, 50, 77), delays(p, 50, 78));
    }

    #[test]
    fn worst_case_bounds_every_draw() {
        for jitter in [
            Jitter::None,
            Jitter::Full,
            Jitter::Equal,
            Jitter::Decorrelated,
            Jitter::Additive { max: ms(700) },
        ] {
            let p = policy(exp2(), jitter, ms(50), ms(4000));
            for seed in 0..20 {
                for s in delays(p, 12, seed) {
                    assert!(s.delay <= p.worst_case(s.retry), "{jitter:?} {s:?}");
                }
            }
        }
    }

    /// One-sample Kolmogorov-Smirnov statistic against a uniform distribution.
    pub(crate) fn ks_statistic(mut xs: Vec<f64>, dist: &Uniform) -> f64 {
        xs.sort_by(f64::total_cmp);
        let n = xs.len() as f64;
        xs.iter()
            .enumerate()
            .map(|(i, &x)| {
                let f = dist.cdf(x);
                (f - i as f64 / n).abs().max((f - (i + 1) as f64 / n).abs())
            })
            .fold(0.0, f64::max)
    }

    /// Critical value of the KS statistic at alpha = 0.001 for large n.
    pub(crate) fn ks_critical(n: usize) -> f64 {
        1.95 / (n as f64).sqrt()
    }

    fn fixed_ceiling_draws(jitter: Jitter, n: usize, seed: u64) -> Vec<f64> {
        let p = policy(Growth::Fixed, jitter, ms(2000), ms(2000));
        delays(p, n, seed)
            .iter()
            .map(|s| s.delay.as_secs_f64())
            .collect()
    }

    #[test]
    fn full_jitter_is_uniform_on_zero_to_ceiling() {
        let n = 5000;
        let d = ks_statistic(
            fixed_ceiling_draws(Jitter::Full, n, 2024),
            &Uniform::new(0.0, 2.0).expect("valid bounds"),
        );
        assert!(d < ks_critical(n), "KS statistic {d}");
        // The test has power: the same draws are not uniform on a wrong range.
        let wrong = ks_statistic(
            fixed_ceiling_draws(Jitter::Full, n, 2024),
            &Uniform::new(1.0, 2.0).expect("valid bounds"),
        );
        assert!(wrong > ks_critical(n));
    }

    #[test]
    fn equal_jitter_is_uniform_on_upper_half() {
        let n = 5000;
        let d = ks_statistic(
            fixed_ceiling_draws(Jitter::Equal, n, 31337),
            &Uniform::new(1.0, 2.0).expect("valid bounds"),
        );
        assert!(d < ks_critical(n), "KS statistic {d}");
        let wrong = ks_statistic(
            fixed_ceiling_draws(Jitter::Equal, n, 31337),
            &Uniform::new(0.0, 2.0).expect("valid bounds"),
        );
        assert!(wrong > ks_critical(n));
    }

    fn any_policy() -> impl Strategy<Value = DelayPolicy> {
        let growth = prop_oneof![
            (1.0f64..10.0).prop_map(|m| Growth::Exponential { multiplier: m }),
            Just(Growth::Linear),
            Just(Growth::Fixed),
        ];
        let jitter = prop_oneof![
            Just(Jitter::None),
            Just(Jitter::Full),
            Just(Jitter::Equal),
            Just(Jitter::Decorrelated),
            (0u64..5_000).prop_map(|j| Jitter::Additive { max: ms(j) }),
        ];
        (growth, jitter, 0u64..10_000, 0u64..100_000).prop_map(|(growth, jitter, base, extra)| {
            policy(growth, jitter, ms(base), ms(base + extra))
        })
    }

    proptest! {
        #[test]
        fn delays_never_exceed_the_cap(p in any_policy(), seed in any::<u64>()) {
            for s in delays(p, 40, seed) {
                prop_assert!(s.delay <= p.cap);
                prop_assert!(s.ceiling <= p.cap);
                prop_assert!(s.low <= s.delay && s.delay <= s.high, "{:?}", s);
                prop_assert!(s.high <= p.cap);
            }
        }

        #[test]
        fn ceilings_never_decrease(p in any_policy()) {
            let mut last = Duration::ZERO;
            for k in 1..60 {
                let c = p.ceiling(k);
                prop_assert!(c >= last, "k={} {:?} < {:?}", k, c, last);
                last = c;
            }
        }
    }
}
