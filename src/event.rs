//! What a run reports: the events every log format renders, and the
//! [`Sink`] they are reported to.
//!
//! Plain data borrowed from the loop (real, dry-run or simulated); rendering
//! lives in `log`. This sits below both, so that the loop, the simulator and
//! the state session report without knowing the log, and the log renders
//! without knowing the loop.

use std::borrow::Cow;
use std::ffi::OsString;
use std::time::Duration;

use crate::classify::{Status, Verdict};

/// Where a run reports what happens: the log in real runs, a recorder in
/// simulations and tests.
pub trait Sink {
    /// Shown while a wait runs; dropped before anything else is reported.
    type Countdown;
    fn emit(&mut self, event: &Event<'_>);
    /// A countdown to attempt `next_attempt`, over the whole `wait`.
    fn countdown(&self, wait: Duration, next_attempt: u32, max: Option<u32>) -> Self::Countdown;
}

/// One planned wait before the next attempt.
#[derive(Debug, Clone, Copy)]
pub struct Wait {
    /// The whole wait.
    pub delay: Duration,
    /// The longest the wait could have been before the group's pace: the
    /// server's Retry-After floor (`after`) plus the backoff's ceiling, so
    /// no logged wait (pace aside) is longer than its ceiling.
    pub ceiling: Duration,
    /// The server's Retry-After, the floor the jittered delay is added to
    /// (zero without one).
    pub after: Duration,
    pub jitter: &'static str,
    /// The part of `delay` spent waiting for the group's next pace slot,
    /// beyond the retry's own backoff.
    pub paced: Duration,
}

/// How a run ended, as the `done` event reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Success,
    /// No attempts left.
    Exhausted,
    /// The last failure was permanent.
    Permanent,
    /// `--max-time` left no room for another attempt.
    Deadline,
    /// retry caught a terminating signal.
    Interrupted,
    /// The group's shared state refused: the circuit breaker is open, or
    /// the retry budget is spent.
    Refused,
}

impl End {
    pub fn as_str(self) -> &'static str {
        match self {
            End::Success => "success",
            End::Exhausted => "exhausted",
            End::Permanent => "permanent",
            End::Deadline => "deadline",
            End::Interrupted => "interrupted",
            End::Refused => "refused",
        }
    }
}

/// How a run ended: built once, by the loop (or by the lifecycle, when the
/// run ends before the loop starts), then read by the `done` event, the
/// exit status and every end-of-run output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ending {
    pub end: End,
    /// Attempts started (0 when the run ended before the first).
    pub attempts: u32,
    /// retry's exit status.
    pub exit_code: u8,
    /// Why, in words ("" for a success).
    pub reason: Cow<'static, str>,
    /// The last attempt's status, or the interrupt that ended the wait
    /// after it; None when no attempt ran.
    pub last_status: Option<Status>,
    /// Retries the group's retry budget refused (its refusal ends the run).
    pub retries_refused: u32,
    /// Time spent between attempts (and in `--stagger` before the first):
    /// the waits, with whatever ran during them.
    pub waited: Duration,
}

impl Ending {
    /// A run that ended before its first attempt.
    pub fn before_attempts(
        end: End,
        exit_code: u8,
        reason: impl Into<Cow<'static, str>>,
    ) -> Ending {
        Ending {
            end,
            attempts: 0,
            exit_code,
            reason: reason.into(),
            last_status: None,
            retries_refused: 0,
            waited: Duration::ZERO,
        }
    }
}

/// Something worth a log line.
#[derive(Debug)]
pub enum Event<'a> {
    /// The run begins (text: only with -v).
    Start {
        command: &'a [OsString],
        max: Option<u32>,
        /// `--max-time`, when given.
        max_time: Option<Duration>,
        seed: u64,
    },
    /// An attempt begins (only with -v).
    AttemptStart { attempt: u32, max: Option<u32> },
    /// An attempt ended; `next` is the wait before the following one, if any.
    Attempt {
        attempt: u32,
        max: Option<u32>,
        status: &'a Status,
        verdict: Verdict,
        duration: Duration,
        next: Option<Wait>,
    },
    /// The attempt that just ended had been up at least `--reset-after`:
    /// the backoff starts again from its first step.
    Reset {
        attempt: u32,
        up: Duration,
        after: Duration,
    },
    /// `--stagger`: the first attempt waits this long (only with -v).
    Stagger { delay: Duration, spread: Duration },
    /// The run is over.
    Done {
        ending: &'a Ending,
        max: Option<u32>,
    },
    /// Something worth knowing that does not change the run.
    Warning { message: &'a str },
    /// Detail only `-v` shows (leftover processes stopped, and the like).
    Note { message: &'a str },
    /// retry's own failure: it cannot go on.
    Error { message: &'a str },
}

/// The failed attempt every renderer's tests describe: attempt 2 of 5 exited
/// 1 after 312.4 ms, next in 870 ms under a 2 s ceiling.
#[cfg(test)]
pub fn sample_failed_attempt(status: &Status) -> Event<'_> {
    Event::Attempt {
        attempt: 2,
        max: Some(5),
        status,
        verdict: Verdict::Retryable,
        duration: Duration::from_micros(312_400),
        next: Some(Wait {
            delay: Duration::from_millis(870),
            ceiling: Duration::from_secs(2),
            after: Duration::ZERO,
            jitter: "full",
            paced: Duration::ZERO,
        }),
    }
}
