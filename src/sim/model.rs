//! Server models for the simulator: what a virtual server answers to each
//! request, in virtual time.
//!
//! Pure: the only randomness (network latency in the OCC model) comes from
//! the RNG the caller passes.

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;

/// The server the simulated clients call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Model {
    /// Every request fails (the dry run's model).
    AlwaysFail,
    /// Every request before `until` fails, every later one succeeds.
    Outage { until: Duration },
    /// A token bucket refilled at `rate` per second holding `burst` tokens
    /// (None: one 100 ms window's worth, at least one): a request finding no
    /// token fails. With `outage`, every request before it fails and the
    /// bucket starts full when the outage ends. A burst of 1 is nginx's
    /// `limit_req` without `burst`: requests at least 1/rate apart, the rest
    /// rejected, nothing banked while the server is idle.
    Capacity {
        rate: f64,
        burst: Option<u32>,
        outage: Option<Duration>,
    },
    /// A fixed-window rate limiter: `limit` requests in each window of
    /// `every` (counted from the start), the rest refused with the time
    /// left until the next window, as a server's reset field says it.
    Window { limit: u32, every: Duration },
    /// Optimistic concurrency on one row: each attempt reads the version,
    /// then writes it back; the write succeeds only if no other write landed
    /// in between. Every one-way message takes |Normal(10 ms, 2 ms)|; only
    /// writes count as requests.
    Occ,
}

impl Model {
    /// When the server is healthy again, if it ever was down.
    pub fn recovery(&self) -> Option<Duration> {
        match *self {
            Model::Outage { until } => Some(until),
            Model::Capacity { outage, .. } => outage,
            Model::AlwaysFail | Model::Occ | Model::Window { .. } => None,
        }
    }

    /// The capacity model's bucket depth, in requests (0 for other models).
    pub fn burst(&self) -> f64 {
        match *self {
            Model::Capacity { burst: Some(b), .. } => f64::from(b),
            Model::Capacity { rate, .. } => (rate * 0.1).max(1.0),
            _ => 0.0,
        }
    }

    /// The model's name in reports.
    pub fn describe(&self) -> String {
        use crate::human::human;
        match *self {
            Model::AlwaysFail => "a server that always fails".to_string(),
            Model::Outage { until } => format!("an outage of {}", human(until)),
            Model::Capacity {
                rate,
                burst,
                outage,
            } => {
                let mut s = format!("capacity {rate}/s");
                if let Some(b) = burst {
                    s.push_str(&format!(" (burst {b})"));
                }
                if let Some(o) = outage {
                    s.push_str(&format!(" after an outage of {}", human(o)));
                }
                s
            }
            Model::Occ => "optimistic concurrency (read, then conditional write)".to_string(),
            Model::Window { limit, every } => format!(
                "a fixed window of {limit} requests per {}, refusing the rest until its reset",
                human(every)
            ),
        }
    }
}

/// The server side of the stateless models (everything but OCC).
#[derive(Debug, Clone)]
pub struct Stateless {
    model: Model,
    tokens: f64,
    burst: f64,
    refilled: Duration,
    /// The window model: the current window's number, the requests it
    /// has admitted, and its arrivals of the last 100 ms.
    window: u64,
    admitted: u32,
    recent: VecDeque<Duration>,
    /// The most requests in any 100 ms of a window after the first (the
    /// first's are the fleet's first attempts, not a reset's wave).
    busiest_at_reset: u64,
}

/// The span the wave after a reset is counted over.
const AT_RESET: Duration = Duration::from_millis(100);

impl Stateless {
    pub fn new(model: Model) -> Stateless {
        let (burst, start) = match model {
            Model::Capacity { .. } => (model.burst(), model.recovery().unwrap_or_default()),
            _ => (0.0, Duration::ZERO),
        };
        Stateless {
            model,
            tokens: burst,
            burst,
            refilled: start,
            window: 0,
            admitted: 0,
            recent: VecDeque::new(),
            busiest_at_reset: 0,
        }
    }

    /// The window model: how long after `at` its window resets, which a
    /// refused request is told (None for the other models).
    pub fn reset_in(&self, at: Duration) -> Option<Duration> {
        match self.model {
            Model::Window { every, .. } => {
                let next = every.saturating_mul(u32::try_from(self.window + 1).unwrap_or(u32::MAX));
                Some(next.saturating_sub(at))
            }
            _ => None,
        }
    }

    /// The window model: the most requests in any 100 ms between one of
    /// its resets and the next (None for the other models).
    pub fn busiest_at_reset(&self) -> Option<u64> {
        matches!(self.model, Model::Window { .. }).then_some(self.busiest_at_reset)
    }

    /// The window model's answer at `at`.
    fn window(&mut self, at: Duration, limit: u32, every: Duration) -> bool {
        let every_ns = every.as_nanos().max(1);
        let k = u64::try_from(at.as_nanos() / every_ns).unwrap_or(u64::MAX);
        if k != self.window {
            self.window = k;
            self.admitted = 0;
            self.recent.clear();
        }
        if k > 0 {
            while self.recent.front().is_some_and(|t| at - *t >= AT_RESET) {
                self.recent.pop_front();
            }
            self.recent.push_back(at);
            let n = self.recent.len() as u64;
            self.busiest_at_reset = self.busiest_at_reset.max(n);
        }
        if self.admitted < limit {
            self.admitted += 1;
            true
        } else {
            false
        }
    }

    /// Whether a request arriving at `at` succeeds. Calls must come in time order.
    pub fn request(&mut self, at: Duration) -> bool {
        match self.model {
            Model::AlwaysFail => false,
            Model::Outage { until } => at >= until,
            Model::Capacity { rate, outage, .. } => {
                if outage.is_some_and(|o| at < o) {
                    return false;
                }
                if at > self.refilled {
                    let gained = (at - self.refilled).as_secs_f64() * rate;
                    self.tokens = (self.tokens + gained).min(self.burst);
                    self.refilled = at;
                }
                if self.tokens >= 1.0 {
                    self.tokens -= 1.0;
                    true
                } else {
                    false
                }
            }
            Model::Window { limit, every } => self.window(at, limit, every),
            // OCC has its own server state; see `Occ`.
            Model::Occ => false,
        }
    }
}

/// The OCC server's one row. Its version counts successful writes, one
/// per client at most.
#[derive(Debug, Clone, Default)]
pub struct Occ {
    version: u32,
}

impl Occ {
    pub fn read(&self) -> u32 {
        self.version
    }

    /// A write carrying the version its client read: succeeds only if the
    /// row has not changed since.
    pub fn write(&mut self, read: u32) -> bool {
        if read == self.version {
            self.version = self.version.wrapping_add(1);
            true
        } else {
            false
        }
    }
}

/// One-way network latency of the OCC model: |Normal(10 ms, 2 ms)|.
pub fn latency<R: Rng + ?Sized>(rng: &mut R) -> Duration {
    let ms = (10.0 + 2.0 * standard_normal(rng)).abs();
    Duration::from_secs_f64(ms / 1000.0)
}

/// A standard normal draw by the Box–Muller transform. Written out rather
/// than taken from a distributions crate so that a seeded simulation depends
/// only on the generator's stream, never on a library's choice of algorithm.
fn standard_normal<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    // u1 in (0, 1]: ln(0) must not happen.
    let u1 = 1.0 - unit(rng);
    let u2 = unit(rng);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// A uniform draw from [0, 1) with 53 bits of precision.
fn unit<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn outage_fails_until_it_ends() {
        let mut s = Stateless::new(Model::Outage { until: ms(500) });
        assert!(!s.request(ms(0)));
        assert!(!s.request(ms(499)));
        assert!(s.request(ms(500)));
    }

    #[test]
    fn capacity_admits_one_window_then_the_refill_rate() {
        // 100/s: a burst of 10, then one every 10 ms.
        let mut s = Stateless::new(Model::Capacity {
            rate: 100.0,
            burst: None,
            outage: None,
        });
        let admitted = (0..50).filter(|_| s.request(ms(0))).count();
        assert_eq!(admitted, 10);
        assert!(!s.request(ms(5)));
        assert!(s.request(ms(10)));
        assert!(!s.request(ms(10)));
    }

    #[test]
    fn capacity_after_an_outage_starts_full() {
        let mut s = Stateless::new(Model::Capacity {
            rate: 20.0,
            burst: None,
            outage: Some(ms(1000)),
        });
        assert!(!s.request(ms(999)));
        let admitted = (0..10).filter(|_| s.request(ms(2000))).count();
        // Burst is 2 tokens (20/s over 100 ms).
        assert_eq!(admitted, 2);
    }

    #[test]
    fn a_burst_of_one_spaces_requests_exactly() {
        // nginx's limit_req at 20 r/s without burst: one request per 50 ms
        // since the last one admitted; an idle second banks nothing.
        let mut s = Stateless::new(Model::Capacity {
            rate: 20.0,
            burst: Some(1),
            outage: None,
        });
        assert!(s.request(ms(0)));
        assert!(!s.request(ms(0)));
        assert!(!s.request(ms(49)));
        assert!(s.request(ms(50)));
        assert!(s.request(ms(1050)));
        assert!(!s.request(ms(1051)));
        assert!(!s.request(ms(1099)));
        assert!(s.request(ms(1100)));
        // A deeper bucket admits its depth at once.
        let mut s = Stateless::new(Model::Capacity {
            rate: 20.0,
            burst: Some(5),
            outage: None,
        });
        assert_eq!((0..10).filter(|_| s.request(ms(0))).count(), 5);
    }

    #[test]
    fn a_fixed_window_admits_its_limit_then_says_when_it_resets() {
        let mut w = Stateless::new(Model::Window {
            limit: 2,
            every: ms(1000),
        });
        assert!(w.request(ms(10)));
        assert!(w.request(ms(20)));
        assert!(!w.request(ms(30)));
        assert_eq!(w.reset_in(ms(30)), Some(ms(970)));
        // The next window admits two again; its busiest 100 ms is counted.
        for t in [1000, 1000, 1050, 1099] {
            w.request(ms(t));
        }
        assert!(!w.request(ms(1100)));
        assert_eq!(w.busiest_at_reset(), Some(4));
        assert!(w.request(ms(2500)));
        assert_eq!(w.reset_in(ms(2500)), Some(ms(500)));
        assert_eq!(w.busiest_at_reset(), Some(4));
        // The first window's start is not a reset.
        let mut first = Stateless::new(Model::Window {
            limit: 1,
            every: ms(1000),
        });
        for _ in 0..5 {
            first.request(ms(0));
        }
        assert_eq!(first.busiest_at_reset(), Some(0));
        assert_eq!(Stateless::new(Model::AlwaysFail).reset_in(ms(1)), None);
    }

    #[test]
    fn occ_write_succeeds_only_on_the_version_read() {
        let mut o = Occ::default();
        let a = o.read();
        let b = o.read();
        assert!(o.write(a));
        assert!(!o.write(b));
        assert!(o.write(o.read()));
    }

    #[test]
    fn latency_is_about_ten_ms() {
        let mut rng = crate::rng::seeded(3);
        let n = 20_000;
        let draws: Vec<f64> = (0..n)
            .map(|_| latency(&mut rng).as_secs_f64() * 1000.0)
            .collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n as f64;
        assert!((mean - 10.0).abs() < 0.05, "mean {mean}");
        assert!((var.sqrt() - 2.0).abs() < 0.05, "sd {}", var.sqrt());
    }
}
