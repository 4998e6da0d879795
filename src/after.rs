//! What follows an attempt: the retry loop's rules after each outcome, in
//! one order, for real runs (`run`) and simulated clients (`sim`, and so
//! the dry run) alike.
//!
//! Pure: the verdict, the attempt's number and running time, the policy,
//! the backoff's progress, now and the deadline go in; out comes "stop, and
//! why" or "retry, after this wait". The caller tells shared state of the
//! outcome before asking (the budget counts every attempt), and asks it for
//! the group's pace slot after (`Retry::with_slot`), so a run and a
//! simulated fleet consult their group at the same two points.

use std::time::Duration;

use rand::Rng;

use crate::backoff::{Progress, Step};
use crate::classify::{Status, Verdict};
use crate::event::End;
use crate::ratelimit::Field;
use crate::retry_policy::Policy;
use crate::wait::{self, Decision, GiveUp, Moment};

/// An attempt that has just ended, as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Attempted<'a, T> {
    /// 1 for the first attempt.
    pub number: u32,
    pub status: &'a Status,
    pub verdict: Verdict,
    /// How long the attempt ran (for `--reset-after`).
    pub ran: Duration,
    pub now: T,
    /// `--max-time` as a point in time.
    pub deadline: Option<T>,
}

/// Why the run stops after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// It succeeded (with `--restart-on-success`: at the attempt limit).
    Success,
    /// Its failure is permanent.
    Permanent,
    /// retry caught a terminating signal during the attempt.
    Interrupted(i32),
    /// `--max-time` stopped the attempt.
    DeadlineDuringAttempt,
    /// It was the last attempt `--max` allows.
    Exhausted,
    /// No wait fits before `--max-time`.
    Deadline(GiveUp),
}

impl Stop {
    /// How the run ended, as the `done` event says it.
    pub fn end(self) -> End {
        match self {
            Stop::Success => End::Success,
            Stop::Permanent => End::Permanent,
            Stop::Interrupted(_) => End::Interrupted,
            Stop::DeadlineDuringAttempt | Stop::Deadline(_) => End::Deadline,
            Stop::Exhausted => End::Exhausted,
        }
    }
}

/// Why no wait fits before `--max-time`, naming the field that asked for
/// the wait when it was not `Retry-After`.
pub fn deadline_reason(why: &GiveUp, status: &Status) -> String {
    match (why, status.floor()) {
        (GiveUp::RetryAfterPastDeadline { after, left }, Some(floor))
            if floor.field != Field::RetryAfter =>
        {
            format!(
                "the server's {} ({}) points past --max-time ({} left)",
                floor.cite(),
                crate::human::asked_wait(*after),
                crate::human::human(*left)
            )
        }
        _ => why.reason(),
    }
}

/// Another attempt follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retry<T> {
    /// The attempt ran at least `--reset-after`: the backoff started over.
    pub reset: bool,
    /// What the wait was decided from (the backoff step among it).
    input: wait::Input<T>,
    /// The wait without a pace slot, as decided (always a sleep).
    own: Decision<T>,
}

impl<T: Moment> Retry<T> {
    /// The backoff step drawn for the next attempt.
    pub fn step(&self) -> Step {
        self.input.step
    }

    /// The server's Retry-After, the floor the jittered delay is added to
    /// (zero without one).
    pub fn retry_after(&self) -> Duration {
        self.input.retry_after.unwrap_or(Duration::ZERO)
    }

    /// The longest the wait could be before the group's pace: the
    /// Retry-After floor plus the step's ceiling.
    pub fn ceiling(&self) -> Duration {
        self.retry_after().saturating_add(self.input.step.ceiling)
    }

    /// The wait as the retry's own backoff (and Retry-After) decide it,
    /// before the group's pace has its say.
    pub fn delay(&self) -> Duration {
        match self.own {
            Decision::Sleep { delay, .. } => delay,
            Decision::GiveUp(_) => Duration::ZERO,
        }
    }

    /// The wait once the group has granted `slot` (None: no pacing, or the
    /// retry's own wait already ends after the slot). It may now be a
    /// give-up: the slot can lie past `--max-time`.
    pub fn with_slot(&self, slot: Option<T>) -> Decision<T> {
        match slot {
            // Decided already, without one.
            None => self.own,
            Some(_) => wait::decide(wait::Input {
                pace_slot: slot,
                ..self.input
            }),
        }
    }
}

/// What follows the attempt `done` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next<T> {
    Stop(Stop),
    Retry(Retry<T>),
}

/// The rules after an attempt, in their order: the verdict, the attempt
/// limit, `--reset-after`, the backoff step, then the wait (Retry-After and
/// the deadline included). The backoff's progress moves only when a retry
/// follows.
pub fn after<T: Moment, R: Rng + ?Sized>(
    policy: &Policy,
    progress: &mut Progress,
    done: Attempted<'_, T>,
    rng: &mut R,
) -> Next<T> {
    match done.verdict {
        // --restart-on-success: a success is followed by another attempt,
        // after a backoff like a failure's.
        Verdict::Success if policy.restart_on_success => {}
        Verdict::Success => return Next::Stop(Stop::Success),
        Verdict::Permanent => {
            return Next::Stop(match done.status {
                Status::Interrupted(sig) => Stop::Interrupted(*sig),
                s if s.stopped_by_deadline() => Stop::DeadlineDuringAttempt,
                _ => Stop::Permanent,
            });
        }
        Verdict::Retryable => {}
    }
    if policy.max_attempts.is_some_and(|m| done.number >= m) {
        return Next::Stop(match done.verdict {
            Verdict::Success => Stop::Success,
            _ => Stop::Exhausted,
        });
    }
    let reset = policy.reset_after.is_some_and(|after| done.ran >= after);
    if reset {
        progress.reset(&policy.delay);
    }
    let step = progress.next(&policy.delay, rng);
    // After a wait the server asked for, the jitter spreads over
    // --retry-after-spread when given, so a fleet told one reset does not
    // wake in one wave (and not later than the window needs).
    let step = match policy.rules.http.retry_after_spread {
        Some(window) if done.status.retry_after().is_some() => step.over(window),
        _ => step,
    };
    let input = wait::Input {
        step,
        retry_after: done.status.retry_after(),
        now: done.now,
        deadline: done.deadline,
        max_time: policy.max_time,
        pace_slot: None,
    };
    match wait::decide(input) {
        own @ Decision::Sleep { .. } => Next::Retry(Retry { reset, input, own }),
        Decision::GiveUp(why) => Next::Stop(Stop::Deadline(why)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::Jitter;
    use crate::classify::Limit;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn policy() -> Policy {
        let mut p = Policy {
            max_attempts: Some(3),
            ..Policy::default()
        };
        p.delay.jitter = Jitter::None;
        p.delay.base = ms(100);
        p.delay.cap = ms(1000);
        p
    }

    /// What follows attempt `number` ending in `status` judged `verdict`
    /// at `now`, after running `ran`, under `p`.
    fn next(p: &Policy, number: u32, status: &Status, verdict: Verdict) -> Next<Duration> {
        let mut progress = Progress::new(&p.delay);
        let mut rng = crate::rng::seeded(1);
        after(
            p,
            &mut progress,
            Attempted {
                number,
                status,
                verdict,
                ran: ms(10),
                now: ms(500),
                deadline: p.max_time,
            },
            &mut rng,
        )
    }

    fn wait_of(n: Next<Duration>) -> Duration {
        match n {
            Next::Retry(r) => r.delay(),
            Next::Stop(s) => panic!("stopped: {s:?}"),
        }
    }

    #[test]
    fn the_verdict_comes_first() {
        let p = policy();
        let failed = Status::Exited(1);
        assert_eq!(
            next(&p, 1, &Status::Exited(0), Verdict::Success),
            Next::Stop(Stop::Success)
        );
        assert_eq!(
            next(&p, 1, &failed, Verdict::Permanent),
            Next::Stop(Stop::Permanent)
        );
        assert_eq!(
            next(&p, 1, &Status::Interrupted(15), Verdict::Permanent),
            Next::Stop(Stop::Interrupted(15))
        );
        let cut = Status::TimedOut {
            limit: Limit::Deadline,
            after: ms(10),
        };
        assert_eq!(
            next(&p, 1, &cut, Verdict::Permanent),
            Next::Stop(Stop::DeadlineDuringAttempt)
        );
        assert_eq!(wait_of(next(&p, 1, &failed, Verdict::Retryable)), ms(100));
    }

    #[test]
    fn the_attempt_limit_ends_a_retryable_run_and_a_restarting_one() {
        let mut p = policy();
        let failed = Status::Exited(1);
        assert_eq!(
            next(&p, 3, &failed, Verdict::Retryable),
            Next::Stop(Stop::Exhausted)
        );
        p.restart_on_success = true;
        let ok = Status::Exited(0);
        assert_eq!(wait_of(next(&p, 2, &ok, Verdict::Success)), ms(100));
        assert_eq!(
            next(&p, 3, &ok, Verdict::Success),
            Next::Stop(Stop::Success)
        );
    }

    #[test]
    fn a_long_attempt_resets_the_backoff_before_the_step() {
        let mut p = policy();
        p.max_attempts = None;
        p.reset_after = Some(ms(50));
        let mut progress = Progress::new(&p.delay);
        let mut rng = crate::rng::seeded(1);
        let failed = Status::Exited(1);
        let mut go = |ran| {
            after(
                &p,
                &mut progress,
                Attempted {
                    number: 1,
                    status: &failed,
                    verdict: Verdict::Retryable,
                    ran,
                    now: Duration::ZERO,
                    deadline: None,
                },
                &mut rng,
            )
        };
        let waits: Vec<(Duration, bool)> = [ms(1), ms(1), ms(60), ms(1)]
            .into_iter()
            .map(|ran| match go(ran) {
                Next::Retry(r) => (r.delay(), r.reset),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            waits,
            [
                (ms(100), false),
                (ms(200), false),
                (ms(100), true),
                (ms(200), false)
            ]
        );
    }

    #[test]
    fn a_wait_past_the_deadline_is_drawn_again_or_gives_up() {
        let mut p = policy();
        let failed = Status::Exited(1);
        // 50 ms left: the 100 ms wait is drawn again to end before --max-time.
        p.max_time = Some(ms(550));
        let w = wait_of(next(&p, 1, &failed, Verdict::Retryable));
        assert!(w < ms(50), "{w:?}");
        // 10 ms left: too little for another attempt.
        p.max_time = Some(ms(510));
        assert!(matches!(
            next(&p, 1, &failed, Verdict::Retryable),
            Next::Stop(Stop::Deadline(GiveUp::PastDeadline { .. }))
        ));
        p.max_time = Some(ms(10_000));
        let busy = Status::Http {
            code: 503,
            hints: crate::ratelimit::Hints::retry_after(ms(2000)),
        };
        // Retry-After is a floor the backoff is added to.
        assert_eq!(wait_of(next(&p, 1, &busy, Verdict::Retryable)), ms(2100));
    }

    #[test]
    fn retry_after_spread_scales_the_jitter_after_a_servers_wait() {
        let mut p = policy();
        p.delay.jitter = Jitter::Full;
        p.delay.cap = ms(1000);
        p.delay.base = ms(1000);
        let asked = Status::Http {
            code: 429,
            hints: crate::ratelimit::Hints::retry_after(ms(2000)),
        };
        let own = wait_of(next(&p, 1, &asked, Verdict::Retryable)) - ms(2000);
        assert!(own <= ms(1000));
        // The same draw over a 100ms window: a tenth of it.
        p.rules.http.retry_after_spread = Some(ms(100));
        let spread = wait_of(next(&p, 1, &asked, Verdict::Retryable)) - ms(2000);
        assert_eq!(spread, own / 10);
        // Zero: exactly at the server's time.
        p.rules.http.retry_after_spread = Some(Duration::ZERO);
        assert_eq!(wait_of(next(&p, 1, &asked, Verdict::Retryable)), ms(2000));
        // A failure without a server's wait keeps its own backoff.
        let plain = Status::Exited(1);
        assert_eq!(wait_of(next(&p, 1, &plain, Verdict::Retryable)), own);
    }

    #[test]
    fn a_deadline_give_up_names_the_field() {
        let floor = Status::Http {
            code: 403,
            hints: crate::ratelimit::Hints::floor(
                ms(60_000),
                Field::XReset,
                crate::ratelimit::Reading::EpochSeconds,
                "1764345600".into(),
            ),
        };
        let why = GiveUp::RetryAfterPastDeadline {
            after: ms(60_000),
            left: ms(30_000),
        };
        assert_eq!(
            deadline_reason(&why, &floor),
            "the server's X-RateLimit-Reset 1764345600, read as epoch (1m) points past --max-time (30s left)"
        );
        let plain = Status::Http {
            code: 429,
            hints: crate::ratelimit::Hints::retry_after(ms(60_000)),
        };
        assert_eq!(deadline_reason(&why, &plain), why.reason());
    }

    #[test]
    fn a_pace_slot_later_than_the_own_wait_is_waited_for() {
        let p = policy();
        let failed = Status::Exited(1);
        let Next::Retry(r) = next(&p, 1, &failed, Verdict::Retryable) else {
            panic!("a retry follows");
        };
        assert_eq!(
            r.with_slot(None),
            Decision::Sleep {
                until: ms(600),
                delay: ms(100),
                wait: ms(100)
            }
        );
        assert_eq!(
            r.with_slot(Some(ms(900))),
            Decision::Sleep {
                until: ms(900),
                delay: ms(100),
                wait: ms(400)
            }
        );
    }
}
