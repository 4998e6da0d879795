//! The decision of each wait: from the backoff step, the server's Retry-After
//! floor, the time now, the deadline and the group's pace slot to "sleep
//! until T" or "give up, because ...".
//!
//! Pure: no clock, no I/O. Real runs (`run`), `--dry-run` and `--simulate`
//! all call [`decide`]; nothing else computes a wait. It is generic over the
//! time type ([`Moment`]): real runs pass `Instant`s, the simulator passes
//! virtual time as a `Duration` since its start.

use std::time::{Duration, Instant};

use crate::backoff::Step;
use crate::human::human;

/// A point in time, real or virtual.
pub trait Moment: Copy + Ord {
    /// `self + d`, None when it cannot be represented.
    fn checked_plus(self, d: Duration) -> Option<Self>;
    /// `self - earlier`, zero when `earlier` is later.
    fn since(self, earlier: Self) -> Duration;
}

impl Moment for Instant {
    fn checked_plus(self, d: Duration) -> Option<Self> {
        self.checked_add(d)
    }
    fn since(self, earlier: Self) -> Duration {
        self.saturating_duration_since(earlier)
    }
}

impl Moment for Duration {
    fn checked_plus(self, d: Duration) -> Option<Self> {
        self.checked_add(d)
    }
    fn since(self, earlier: Self) -> Duration {
        self.saturating_sub(earlier)
    }
}

/// Everything one wait depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Input<T> {
    /// The jittered backoff step drawn for this retry.
    pub step: Step,
    /// The server's Retry-After, if the failed attempt carried one.
    pub retry_after: Option<Duration>,
    pub now: T,
    /// `--max-time` as a point in time.
    pub deadline: Option<T>,
    /// The earliest start a shared pacing schedule grants this retry. Nothing
    /// fills it in yet (always None); when group pacing exists, the retry
    /// waits for the later of its own backoff and this slot.
    pub pace_slot: Option<T>,
}

/// What to do before the next attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision<T> {
    Sleep {
        /// When the next attempt starts.
        until: T,
        /// The wait as the log reports it: Retry-After (if any) plus the
        /// backoff delay.
        delay: Duration,
        /// The whole wait from now to `until` (at least `delay`).
        wait: Duration,
    },
    GiveUp(GiveUp),
}

/// Why no further attempt fits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GiveUp {
    /// The server asked for a wait that ends at or past the deadline.
    RetryAfterPastDeadline { after: Duration, left: Duration },
    /// The next attempt would start at or past the deadline.
    PastDeadline { wait: Duration, left: Duration },
    /// The group's next free slot lies at or past the deadline.
    PaceSlotPastDeadline { wait: Duration, left: Duration },
}

impl GiveUp {
    /// The reason as the log's `done` event gives it.
    pub fn reason(&self) -> String {
        match *self {
            GiveUp::RetryAfterPastDeadline { after, left } => format!(
                "the server's Retry-After ({}) points past --max-time ({} left)",
                crate::human::asked_wait(after),
                human(left)
            ),
            GiveUp::PastDeadline { wait, left } => format!(
                "the next attempt would start after --max-time ({} from now, {} left)",
                human(wait),
                human(left)
            ),
            GiveUp::PaceSlotPastDeadline { wait, left } => format!(
                "the group's next free slot is after --max-time ({} from now, {} left)",
                human(wait),
                human(left)
            ),
        }
    }
}

/// `--stagger`: how long the first attempt waits, U(0, spread), drawn from
/// the run's RNG; zero without it, and then nothing is drawn. Real runs and
/// the simulator's clients both start this way.
pub fn stagger<R: rand::Rng + ?Sized>(spread: Option<Duration>, rng: &mut R) -> Duration {
    let Some(spread) = spread else {
        return Duration::ZERO;
    };
    let nanos = u64::try_from(spread.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(crate::rng::up_to(rng, nanos))
}

/// Far beyond any real delay: a wake time past what the clock can represent
/// saturates to this instead of overflowing.
const FAR: Duration = Duration::from_secs(u32::MAX as u64);

/// Decide the wait before the next attempt. A wait that would end at the
/// deadline or later means giving up now: no sleep runs past `--max-time`.
pub fn decide<T: Moment>(input: Input<T>) -> Decision<T> {
    let Input {
        step,
        retry_after,
        now,
        deadline,
        pace_slot,
    } = input;
    let left = |d: T| d.since(now);
    if let (Some(after), Some(d)) = (retry_after, deadline)
        && now.checked_plus(after).is_none_or(|at| at >= d)
    {
        return Decision::GiveUp(GiveUp::RetryAfterPastDeadline {
            after,
            left: left(d),
        });
    }
    // Retry-After is the earliest the server wants us back, so it is a floor
    // that the jittered delay is added on top of, not a value to take the
    // maximum with: clients told the same Retry-After whose own delays are
    // shorter would all return at that instant, in one wave. Added, they
    // spread over [after, after + ceiling] as the jitter kind spreads any
    // other retry.
    let delay = retry_after.map_or(step.delay, |after| after.saturating_add(step.delay));
    let own = now.checked_plus(delay);
    if let (Some(slot), Some(d)) = (pace_slot, deadline)
        && slot >= d
    {
        return Decision::GiveUp(GiveUp::PaceSlotPastDeadline {
            wait: slot.since(now),
            left: left(d),
        });
    }
    let wake = match (own, pace_slot) {
        (Some(w), Some(slot)) => Some(w.max(slot)),
        (w, _) => w,
    };
    if let Some(d) = deadline
        && wake.is_none_or(|w| w >= d)
    {
        return Decision::GiveUp(GiveUp::PastDeadline {
            wait: wake.map_or(delay, |w| w.since(now)),
            left: left(d),
        });
    }
    let until = wake.or_else(|| now.checked_plus(FAR)).unwrap_or(now);
    Decision::Sleep {
        until,
        delay,
        wait: until.since(now),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn input(delay: u64, now: u64) -> Input<Duration> {
        Input {
            step: Step {
                retry: 1,
                ceiling: ms(delay),
                delay: ms(delay),
            },
            retry_after: None,
            now: ms(now),
            deadline: None,
            pace_slot: None,
        }
    }

    #[test]
    fn sleeps_the_backoff_delay() {
        assert_eq!(
            decide(input(300, 1000)),
            Decision::Sleep {
                until: ms(1300),
                delay: ms(300),
                wait: ms(300)
            }
        );
    }

    #[test]
    fn retry_after_is_a_floor_with_the_delay_on_top() {
        let mut i = input(300, 0);
        i.retry_after = Some(ms(5000));
        assert_eq!(
            decide(i),
            Decision::Sleep {
                until: ms(5300),
                delay: ms(5300),
                wait: ms(5300)
            }
        );
    }

    #[test]
    fn a_wait_ending_at_the_deadline_gives_up() {
        let mut i = input(400, 600);
        i.deadline = Some(ms(1000));
        assert_eq!(
            decide(i),
            Decision::GiveUp(GiveUp::PastDeadline {
                wait: ms(400),
                left: ms(400)
            })
        );
        i.deadline = Some(ms(1001));
        assert!(matches!(decide(i), Decision::Sleep { .. }));
    }

    #[test]
    fn retry_after_past_the_deadline_gives_up_before_anything_else() {
        let mut i = input(1, 0);
        i.retry_after = Some(ms(60_000));
        i.deadline = Some(ms(30_000));
        let d = decide(i);
        assert_eq!(
            d,
            Decision::GiveUp(GiveUp::RetryAfterPastDeadline {
                after: ms(60_000),
                left: ms(30_000)
            })
        );
        if let Decision::GiveUp(g) = d {
            assert_eq!(
                g.reason(),
                "the server's Retry-After (1m) points past --max-time (30s left)"
            );
        }
    }

    #[test]
    fn a_later_pace_slot_stretches_the_wait_but_not_the_logged_delay() {
        let mut i = input(100, 0);
        i.pace_slot = Some(ms(700));
        assert_eq!(
            decide(i),
            Decision::Sleep {
                until: ms(700),
                delay: ms(100),
                wait: ms(700)
            }
        );
        i.pace_slot = Some(ms(50));
        assert_eq!(
            decide(i),
            Decision::Sleep {
                until: ms(100),
                delay: ms(100),
                wait: ms(100)
            }
        );
        i.deadline = Some(ms(700));
        i.pace_slot = Some(ms(700));
        assert!(matches!(
            decide(i),
            Decision::GiveUp(GiveUp::PaceSlotPastDeadline { .. })
        ));
    }

    #[test]
    fn an_unrepresentable_wake_saturates() {
        let now = Instant::now();
        let i = Input {
            step: Step {
                retry: 1,
                ceiling: Duration::MAX,
                delay: Duration::MAX,
            },
            retry_after: None,
            now,
            deadline: None,
            pace_slot: None,
        };
        match decide(i) {
            Decision::Sleep { until, .. } => assert!(until > now),
            other => panic!("expected a sleep, got {other:?}"),
        }
    }

    #[test]
    fn stagger_draws_within_its_spread_and_only_when_asked() {
        let mut rng = crate::rng::seeded(7);
        assert_eq!(stagger(None, &mut rng), Duration::ZERO);
        // Nothing was drawn: the stream is where a fresh one starts.
        let mut fresh = crate::rng::seeded(7);
        assert_eq!(
            stagger(Some(Duration::from_secs(1)), &mut rng),
            stagger(Some(Duration::from_secs(1)), &mut fresh)
        );
        let spread = Duration::from_millis(500);
        let draws: Vec<Duration> = (0..2000).map(|_| stagger(Some(spread), &mut rng)).collect();
        assert!(draws.iter().all(|d| *d <= spread));
        // Spread out over the whole range, not bunched.
        let low = draws.iter().filter(|d| **d < spread / 4).count();
        let high = draws.iter().filter(|d| **d > spread * 3 / 4).count();
        assert!((400..600).contains(&low), "{low}");
        assert!((400..600).contains(&high), "{high}");
    }
}
