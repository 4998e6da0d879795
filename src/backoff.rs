//! Delay computation: the backoff ceiling for each retry and the jitter drawn
//! under it.
//!
//! Pure: no clock, no I/O, no global RNG. The caller passes the RNG, so a seed
//! reproduces a whole schedule, and real runs, `--dry-run` and simulations all
//! draw delays from this one place.

use std::time::Duration;

use rand::{Rng, RngExt};

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
    /// d_k = min(cap, U(base, 3 * d_{k-1})), d_0 = base; ignores the growth kind.
    Decorrelated,
    /// d = min(cap, v_k + U(0, max))
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

/// One planned wait: the ceiling it was drawn under and the delay itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Step {
    /// Retry number since the last reset, 1-based.
    pub retry: u32,
    pub ceiling: Duration,
    pub delay: Duration,
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
    retry: u32,
    previous: Duration,
}

impl Backoff {
    pub fn new(policy: DelayPolicy) -> Self {
        Backoff {
            policy,
            retry: 0,
            previous: policy.base,
        }
    }

    /// Start over from the first step (used by `--reset-after`).
    pub fn reset(&mut self) {
        self.retry = 0;
        self.previous = self.policy.base;
    }

    /// Draw the delay before the next retry.
    pub fn next<R: Rng + ?Sized>(&mut self, rng: &mut R) -> Step {
        self.retry = self.retry.saturating_add(1);
        let p = &self.policy;
        let (ceiling, delay) = match p.jitter {
            Jitter::None => {
                let v = p.ceiling(self.retry);
                (v, v)
            }
            Jitter::Full => {
                let v = p.ceiling(self.retry);
                (v, uniform(rng, Duration::ZERO, v))
            }
            Jitter::Equal => {
                let v = p.ceiling(self.retry);
                let half = v / 2;
                (v, half + uniform(rng, Duration::ZERO, v - half))
            }
            Jitter::Additive { max } => {
                let v = p.ceiling(self.retry);
                let d = v
                    .saturating_add(uniform(rng, Duration::ZERO, max))
                    .min(p.cap);
                (v, d)
            }
            Jitter::Decorrelated => {
                let upper = self.previous.saturating_mul(3).min(p.cap);
                // upper >= base because previous >= base and cap >= base.
                let d = uniform(rng, p.base, upper);
                (upper, d)
            }
        };
        self.previous = delay;
        Step {
            retry: self.retry,
            ceiling,
            delay,
        }
    }
}

/// A duration drawn uniformly from [lo, hi], at nanosecond resolution.
fn uniform<R: Rng + ?Sized>(rng: &mut R, lo: Duration, hi: Duration) -> Duration {
    if hi <= lo {
        return lo;
    }
    let span = u64::try_from((hi - lo).as_nanos()).unwrap_or(u64::MAX);
    lo + Duration::from_nanos(rng.random_range(0..=span))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use statrs::distribution::{ContinuousCDF, Uniform};

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
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
        let mut rng = StdRng::seed_from_u64(seed);
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
    fn additive_adds_at_most_jitter_max_and_respects_cap() {
        let p = policy(
            exp2(),
            Jitter::Additive { max: ms(1000) },
            ms(100),
            ms(2000),
        );
        for s in delays(p, 500, 3) {
            assert!(s.delay >= s.ceiling);
            assert!(s.delay <= (s.ceiling + ms(1000)).min(ms(2000)));
        }
    }

    #[test]
    fn decorrelated_stays_between_base_and_three_times_previous() {
        let p = policy(exp2(), Jitter::Decorrelated, ms(100), ms(10_000));
        let mut rng = StdRng::seed_from_u64(9);
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
        let mut rng = StdRng::seed_from_u64(1);
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
    fn ks_statistic(mut xs: Vec<f64>, dist: &Uniform) -> f64 {
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
    fn ks_critical(n: usize) -> f64 {
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
