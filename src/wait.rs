//! The decision of each wait: from the backoff step, the server's Retry-After
//! floor, the time now, the deadline and the group's pace slot to "sleep
//! until T" or "give up, because ...".
//!
//! Pure: no clock, no I/O. Real runs (`run`), `--dry-run` and `--simulate`
//! all call [`decide`]; nothing else computes a wait. It is generic over the
//! time type ([`Moment`]): real runs pass `Instant`s, the simulator passes
//! virtual time as a `Duration` since its start.
//!
//! With `--max-time`, a wait that would start the next attempt too late is
//! drawn again inside the time left, from the same jitter shrunk to fit (see
//! `fit`), so a run uses the time it was given without a fleet's last
//! attempts all landing on the deadline.

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
    /// `--max-time` as given, a length: how much time is "too little left"
    /// follows it (see [`room`]).
    pub max_time: Option<Duration>,
    /// The earliest start the group's pace grants this retry (None: no
    /// pacing, or no slot later than the retry's own wait; see
    /// `after::Retry::with_slot`): the retry waits for the later of its own
    /// backoff and this slot.
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
    /// The next attempt would start at or past the deadline, and too little
    /// time is left to draw the wait again (see `fit`).
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
                "the next attempt would start after --max-time ({} from now, {} left, too little to draw a shorter wait)",
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

/// Below this share of the top of a step's range (a sixth: 5s once the
/// default 30s cap is reached), the time left is too little to draw a wait
/// again (see [`room`]).
const ROOM_SHARE: u32 = 6;

/// ... or below this share of `--max-time` (a twelfth: 5s of 1m), whichever
/// is less: a short deadline's last attempt starts as late in it as a long
/// one's does under the default cap.
const ROOM_SHARE_OF_DEADLINE: u32 = 12;

/// A redrawn wait ends at least this share of the top of the step's range,
/// or of `--max-time`, whichever is less, before the deadline (a sixtieth:
/// 0.5s under a 30s cap and a deadline of 30s or more), so the attempt it
/// leads to has time to run, even under `--jitter none`.
const MARGIN_SHARE: u32 = 60;

/// The least time left in which a wait that would pass the deadline is drawn
/// again: the smaller of a sixth of the step's range top `high` and a
/// twelfth of `--max-time`. Below it, the wait stays as drawn, and if it
/// crosses the deadline the run ends; above it, waits are drawn again (see
/// `fit`), so a run's last attempt starts within this room before the
/// deadline, and a fleet's last attempts spread over it. It follows the
/// deadline as well as the range, so a deadline of a few seconds is used as
/// fully as one of a minute: a cap far above the deadline does not make the
/// room most of it.
fn room(high: Duration, max_time: Option<Duration>) -> Duration {
    let by_range = high / ROOM_SHARE;
    max_time.map_or(by_range, |d| by_range.min(d / ROOM_SHARE_OF_DEADLINE))
}

/// How long before the deadline a redrawn wait ends: the smaller of a
/// sixtieth of `high` and of `--max-time`; always less than [`room`].
fn margin(high: Duration, max_time: Option<Duration>) -> Duration {
    max_time.map_or(high, |d| high.min(d)) / MARGIN_SHARE
}

/// Decide the wait before the next attempt. No sleep runs past
/// `--max-time`: a wait that would is drawn again inside the time left
/// (`fit`), or, with too little left for that, means giving up now.
pub fn decide<T: Moment>(input: Input<T>) -> Decision<T> {
    let Input {
        step,
        retry_after,
        now,
        deadline,
        max_time,
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
    let after = retry_after.unwrap_or(Duration::ZERO);
    let jitter = deadline.map_or(step.delay, |d| fit(&step, after, left(d), max_time));
    let delay = after.saturating_add(jitter);
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

/// The step's delay, fitted to the `left` until the deadline when the
/// Retry-After floor `after` comes first. A delay that would start the next
/// attempt less than the [`margin`] before the deadline, or after it, is
/// drawn again from the step's range shrunk to end at that margin: the same
/// jitter shape, only narrower. With less than the [`room`] left, the delay
/// stays as drawn.
fn fit(step: &Step, after: Duration, left: Duration, max_time: Option<Duration>) -> Duration {
    if left < room(step.high, max_time) {
        return step.delay;
    }
    let window = left
        .saturating_sub(margin(step.high, max_time))
        .saturating_sub(after);
    if step.delay <= window {
        return step.delay;
    }
    redraw(step, window)
}

/// A delay from `step`'s range scaled down to end at `window`, given that
/// the step's delay lies beyond `window` (`step.delay > window`).
///
/// The part of the first draw past `window` is itself uniform, so it serves
/// as a fresh draw: the new delay is as random as one drawn anew, and the
/// run's RNG stream is left as it was, so a seed's schedule stays the same
/// up to the first redraw and a real run, `--dry-run` and a simulation
/// agree on every wait.
fn redraw(step: &Step, window: Duration) -> Duration {
    // Ranges beyond u64 nanoseconds (584 years) are taken at that width, as
    // `backoff` draws them.
    let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
    let (low, high, delay, w) = (
        nanos(step.low),
        nanos(step.high),
        nanos(step.delay),
        nanos(window),
    );
    if high <= w {
        return window;
    }
    // The range shrunk by w/high: [low', w].
    let low_fit = scale(low, w, high);
    // Where the first draw lay in the part of its range beyond w, as a
    // fraction of that part, placed at the same fraction of [low', w].
    let from = low.max(w);
    let beyond = delay.saturating_sub(from);
    let span = high - from;
    let fitted = if span == 0 {
        low_fit
    } else {
        low_fit + scale(beyond.min(span), w - low_fit, span)
    };
    Duration::from_nanos(fitted)
}

/// `x * num / den`, rounded down; with `x <= den` it is at most `num`.
fn scale(x: u64, num: u64, den: u64) -> u64 {
    let v = u128::from(x) * u128::from(num) / u128::from(den.max(1));
    u64::try_from(v).unwrap_or(u64::MAX)
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
                low: ms(delay),
                high: ms(delay),
                delay: ms(delay),
            },
            retry_after: None,
            now: ms(now),
            deadline: None,
            max_time: None,
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

    /// A full-jitter step under a 30s ceiling that drew `delay`, `left`
    /// before a deadline at 60s.
    fn full(delay: Duration, left: Duration) -> Input<Duration> {
        Input {
            step: Step {
                retry: 6,
                ceiling: ms(30_000),
                low: Duration::ZERO,
                high: ms(30_000),
                delay,
            },
            retry_after: None,
            now: ms(60_000) - left,
            deadline: Some(ms(60_000)),
            max_time: Some(ms(60_000)),
            pace_slot: None,
        }
    }

    fn sleep_of(d: Decision<Duration>) -> Duration {
        match d {
            Decision::Sleep { delay, wait, .. } => {
                assert_eq!(delay, wait);
                delay
            }
            other => panic!("expected a sleep, got {other:?}"),
        }
    }

    #[test]
    fn a_wait_crossing_the_deadline_is_drawn_again_inside_the_time_left() {
        // 20s drawn from [0, 30s] with 10s left: the part of the draw past
        // the 9.5s window (10.5s of 20.5s) is placed as far into it.
        let d = decide(full(ms(20_000), ms(10_000)));
        assert_eq!(sleep_of(d), Duration::from_nanos(4_865_853_658));
        // The deadline alone made the difference: without it, 20s.
        let mut no_deadline = full(ms(20_000), ms(10_000));
        no_deadline.deadline = None;
        assert_eq!(sleep_of(decide(no_deadline)), ms(20_000));
    }

    #[test]
    fn a_wait_ending_within_the_margin_is_drawn_again_and_one_before_it_is_kept() {
        // The margin under a 30s range is 0.5s: with 10s left, 9.5s is kept.
        assert_eq!(sleep_of(decide(full(ms(9_500), ms(10_000)))), ms(9_500));
        assert_eq!(
            sleep_of(decide(full(ms(9_700), ms(10_000)))),
            Duration::from_nanos(92_682_926)
        );
    }

    #[test]
    fn without_jitter_the_last_attempt_starts_a_margin_before_the_deadline() {
        // 10s fixed, 3s left: the wait becomes 3s less 10s/60.
        let mut i = input(10_000, 0);
        i.deadline = Some(ms(3_000));
        assert_eq!(sleep_of(decide(i)), Duration::from_nanos(2_833_333_334));
    }

    #[test]
    fn equal_jitter_below_its_range_keeps_its_shape_shrunk() {
        // [15s, 30s] shrunk to end at 9.5s is [4.75s, 9.5s]; 27s lay at 4/5
        // of the range, and so does 8.55s.
        let mut i = full(ms(27_000), ms(10_000));
        i.step.low = ms(15_000);
        assert_eq!(sleep_of(decide(i)), ms(8_550));
    }

    #[test]
    fn too_little_time_left_keeps_the_old_rule() {
        // Under a 30s range, 5s is the least left to draw again: with
        // 4.9s, a wait past the deadline gives up, one before it is slept.
        assert_eq!(
            sleep_of(decide(full(ms(20_000), ms(5_000)))),
            Duration::from_nanos(2_735_294_117)
        );
        let d = decide(full(ms(20_000), ms(4_900)));
        assert_eq!(
            d,
            Decision::GiveUp(GiveUp::PastDeadline {
                wait: ms(20_000),
                left: ms(4_900)
            })
        );
        if let Decision::GiveUp(g) = d {
            assert_eq!(
                g.reason(),
                "the next attempt would start after --max-time (20s from now, 4s 900ms left, too little to draw a shorter wait)"
            );
        }
        assert_eq!(sleep_of(decide(full(ms(4_800), ms(4_900)))), ms(4_800));
        // The old rule's edge: a wait ending at the deadline gives up.
        assert!(matches!(
            decide(full(ms(4_900), ms(4_900))),
            Decision::GiveUp(GiveUp::PastDeadline { .. })
        ));
    }

    #[test]
    fn a_cap_far_above_a_short_deadline_no_longer_ends_the_run_early() {
        // `--max-time 10s` with the range at the 30s cap and 4.8s left: the
        // room is 10s/12, not 30s/6, so the wait is drawn again, to end
        // 10s/60 before the deadline, where the run gave up 5.2s in.
        let mut i = full(ms(20_000), ms(4_800));
        i.max_time = Some(ms(10_000));
        let d = sleep_of(decide(i));
        assert!(d < ms(4_800 - 166), "{d:?}");
        assert_eq!(
            room(ms(30_000), i.max_time),
            Duration::from_nanos(833_333_333)
        );
        assert_eq!(
            margin(ms(30_000), i.max_time),
            Duration::from_nanos(166_666_666)
        );
        // Under the room, a wait past the deadline still ends the run.
        let mut i = full(ms(20_000), ms(800));
        i.max_time = Some(ms(10_000));
        assert!(matches!(
            decide(i),
            Decision::GiveUp(GiveUp::PastDeadline { .. })
        ));
        // A range below the deadline keeps its own, smaller room.
        assert_eq!(
            room(ms(2_000), i.max_time),
            Duration::from_nanos(333_333_333)
        );
        assert_eq!(room(ms(30_000), None), ms(5_000));
    }

    #[test]
    fn a_redrawn_wait_keeps_the_retry_after_floor() {
        // 4s asked, 10s left: the jitter is drawn again in 10 - 0.5 - 4s.
        let mut i = full(ms(20_000), ms(10_000));
        i.retry_after = Some(ms(4_000));
        assert_eq!(
            sleep_of(decide(i)),
            ms(4_000) + Duration::from_nanos(3_255_102_040)
        );
        // A floor ending inside the margin leaves no jitter at all.
        i.retry_after = Some(ms(9_800));
        assert_eq!(sleep_of(decide(i)), ms(9_800));
    }

    /// Fitted waits of `n` steps drawn from [low, high] by a seeded RNG, in
    /// seconds, for a run with `left` to go; only draws past the window count,
    /// as only they are drawn again.
    fn fitted(low: Duration, high: Duration, left: Duration, n: usize) -> Vec<f64> {
        let mut rng = crate::rng::seeded(29);
        let span = (high - low).as_nanos() as u64;
        let mut out = Vec::new();
        while out.len() < n {
            let delay = low + Duration::from_nanos(crate::rng::up_to(&mut rng, span));
            let step = Step {
                retry: 1,
                ceiling: high,
                low,
                high,
                delay,
            };
            if delay > left - margin(high, None) {
                out.push(fit(&step, Duration::ZERO, left, None).as_secs_f64());
            }
        }
        out
    }

    #[test]
    fn redrawn_waits_spread_as_the_jitter_does_not_onto_the_deadline() {
        use crate::backoff::tests::{ks_critical, ks_statistic};
        use statrs::distribution::Uniform;
        let n = 5000;
        // Full jitter under 30s with 10s left: uniform over [0, 9.5s].
        let full = fitted(Duration::ZERO, ms(30_000), ms(10_000), n);
        let d = ks_statistic(full.clone(), &Uniform::new(0.0, 9.5).expect("bounds"));
        assert!(d < ks_critical(n), "KS statistic {d}");
        // The test has power: the same waits are not bunched at the end.
        let wrong = ks_statistic(full, &Uniform::new(4.75, 9.5).expect("bounds"));
        assert!(wrong > ks_critical(n));
        // Equal jitter [15s, 30s] with 10s left: uniform over [4.75s, 9.5s].
        let equal = fitted(ms(15_000), ms(30_000), ms(10_000), n);
        let d = ks_statistic(equal, &Uniform::new(4.75, 9.5).expect("bounds"));
        assert!(d < ks_critical(n), "KS statistic {d}");
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
                low: Duration::MAX,
                high: Duration::MAX,
                delay: Duration::MAX,
            },
            retry_after: None,
            now,
            deadline: None,
            max_time: None,
            pace_slot: None,
        };
        match decide(i) {
            Decision::Sleep { until, .. } => assert!(until > now),
            other => panic!("expected a sleep, got {other:?}"),
        }
    }

    proptest::proptest! {
        #[test]
        fn a_deadline_never_lengthens_a_wait_and_ends_a_run_only_when_too_little_is_left(
            low in 0u64..40_000,
            width in 0u64..40_000,
            at in 0.0f64..=1.0,
            left in 1u64..80_000,
            spent in 0u64..80_000,
        ) {
            let (low, high) = (ms(low), ms(low + width));
            let delay = low + (high - low).mul_f64(at);
            let i = Input {
                step: Step { retry: 3, ceiling: high, low, high, delay },
                retry_after: None,
                now: ms(100_000),
                deadline: Some(ms(100_000 + left)),
                // The run has `left` of its --max-time to go.
                max_time: Some(ms(left + spent)),
                pace_slot: None,
            };
            let room = room(high, i.max_time);
            proptest::prop_assert!(room <= high / ROOM_SHARE && room <= ms(left + spent) / ROOM_SHARE_OF_DEADLINE);
            proptest::prop_assert!(margin(high, i.max_time) < room || room.is_zero());
            match decide(i) {
                Decision::Sleep { delay: d, .. } => {
                    proptest::prop_assert!(d <= delay);
                    proptest::prop_assert!(d < ms(left));
                    if d < delay {
                        // Drawn again: inside the range shrunk to end a
                        // margin before the deadline.
                        let w = ms(left) - margin(high, i.max_time);
                        proptest::prop_assert!(d <= w && d >= low.mul_f64(w.as_secs_f64() / high.as_secs_f64()).saturating_sub(Duration::from_nanos(1)));
                    }
                }
                Decision::GiveUp(GiveUp::PastDeadline { .. }) => {
                    proptest::prop_assert!(ms(left) < room && delay >= ms(left));
                }
                other => proptest::prop_assert!(false, "{:?}", other),
            }
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
