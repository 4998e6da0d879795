//! Server models for the simulator: what a virtual server answers to each
//! request, in virtual time.
//!
//! Pure: the only randomness (network latency in the OCC model) comes from
//! the RNG the caller passes.

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
            Model::AlwaysFail | Model::Occ => None,
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
}

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
