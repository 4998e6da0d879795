//! The retry loop: attempt, classify, wait, again.
//!
//! Bounded by `--max` and `--max-time`; never sleeps after the last attempt;
//! ends with the last attempt's real status. Generic over the kind of attempt,
//! the clock and the RNG, so it is tested with fakes in virtual time.

use std::future::Future;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::attempt::{Attempt, Between, Context, Failed, Unready};
use crate::backoff::Backoff;
use crate::classify::{
    Limit, Status, Verdict, classify_with_output, explain_reader_gone, explain_with_output,
    with_reader_gone,
};
use crate::event::{End, Event, Sink, Wait};
use crate::exit;
use crate::human::{human, of_max};
use crate::retry_policy::Policy;
use crate::signals::Signals;
use crate::state::{Gate, Next, Session, Stop};
use crate::wait::{self, Decision};

/// Time as the loop sees it.
pub trait Clock {
    fn now(&self) -> Instant;
    fn sleep_until(&self, at: Instant) -> impl Future<Output = ()>;
}

/// The real clock: tokio's timer.
pub struct TokioClock;

impl Clock for TokioClock {
    fn now(&self) -> Instant {
        Instant::now()
    }

    async fn sleep_until(&self, at: Instant) {
        // Waiting is where retry spends its life: before a wait of a second
        // or more, the heap's freed pages (flag parsing, the attempt's
        // set-up) go back to the system, so that a sleeping retry holds only
        // the memory it still uses.
        if at.saturating_duration_since(Instant::now()) >= Duration::from_secs(1) {
            release_free_heap();
        }
        tokio::time::sleep_until(at.into()).await;
    }
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn release_free_heap() {
    // SAFETY: malloc_trim only hands whole free pages of the heap back to
    // the system; nothing in use moves.
    unsafe { nix::libc::malloc_trim(0) };
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn release_free_heap() {}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finish {
    /// The last attempt's status (or the interrupt that ended a wait).
    pub status: Status,
    pub end: End,
    pub attempts: u32,
    pub exit_code: u8,
}

/// Run attempts until success, a permanent failure, the attempt limit, the
/// deadline or an interrupt; `between` runs after each failed attempt that
/// is retried, before the wait (`--on-retry`).
#[allow(clippy::too_many_arguments)]
pub async fn run<A, B, C, R, S>(
    policy: &Policy,
    attempt: &mut A,
    between: &mut B,
    clock: &C,
    rng: &mut R,
    signals: &mut Signals,
    log: &mut S,
    state: &mut Session,
) -> Finish
where
    A: Attempt,
    B: Between,
    C: Clock,
    R: Rng + ?Sized,
    S: Sink,
{
    let start = clock.now();
    let deadline = policy.max_time.and_then(|d| start.checked_add(d));
    let max = policy.max_attempts;
    let mut backoff = Backoff::new(policy.delay);
    let mut previous_exit = None;
    let mut number = 0u32;

    // Before anything else: the attempts get ready (`--replay-stdin` reads
    // stdin), under the deadline and signals; the breaker hears nothing of
    // a run that ends here.
    if let Err(why) = attempt.prepare(deadline, signals).await {
        return unready(why, max, log);
    }

    // Hook 1: the group's circuit breaker may refuse the whole run.
    match state.admit(log, signals, deadline).await {
        Ok(Gate::Run) => {}
        Ok(Gate::Refused(why)) => return stopped(Stop::Refused(why), 0, max, log),
        Err(stop) => return stopped(stop, 0, max, log),
    }

    // --stagger: a fleet started in the same instant (one cron minute)
    // spreads its first attempts. Never past --max-time; an interrupt ends it.
    if let Some(spread) = policy.stagger {
        let delay = wait::stagger(Some(spread), rng);
        log.emit(&Event::Stagger { delay, spread });
        let now = clock.now();
        let mut wake = now.checked_add(delay).unwrap_or(now);
        if let Some(d) = deadline {
            wake = wake.min(d);
        }
        tokio::select! {
            () = clock.sleep_until(wake) => {}
            sig = signals.next_interrupt() => return interrupted_in_wait(sig as i32, 0, max, log),
        }
    }

    loop {
        // A signal that landed as the last wait ended must not start another attempt.
        if number > 0
            && let Some(sig) = signals.interrupted()
        {
            return interrupted_in_wait(sig as i32, number, max, log);
        }
        number = number.saturating_add(1);
        log.emit(&Event::AttemptStart {
            attempt: number,
            max,
        });
        let began = clock.now();
        let limit = policy
            .timeout
            .and_then(|t| began.checked_add(t))
            .map(|at| (at, Limit::Attempt));
        let ctx = Context {
            number,
            max,
            previous_exit,
            deadline: earliest(limit, deadline.map(|at| (at, Limit::Deadline))),
        };
        let status = attempt.run(&ctx, signals).await;
        let details = attempt.details();
        let ran = details
            .duration
            .unwrap_or_else(|| clock.now().saturating_duration_since(began));
        for note in &details.notes {
            log.emit(&Event::Note { message: note });
        }
        for warning in &details.warnings {
            log.emit(&Event::Warning { message: warning });
        }
        let judged = classify_with_output(&status, &details.output, &policy.rules);
        let verdict = if details.reader_gone {
            with_reader_gone(judged)
        } else {
            judged
        };
        previous_exit = Some(exit::code(&status, Verdict::Retryable));

        let finish = |end, reason: &str, log: &mut S, status: Status| {
            ended(end, status, verdict, reason, number, max, log)
        };
        let report = |log: &mut S, next| {
            log.emit(&Event::Attempt {
                attempt: number,
                max,
                status: &status,
                verdict,
                duration: ran,
                next,
            });
        };
        // Hook 2: the outcome counts against (or refills) the group's budget.
        match state
            .record(verdict == Verdict::Success, log, signals, deadline)
            .await
        {
            Ok(()) => {}
            Err(Stop::Deadline) => {
                report(log, None);
                return finish(End::Deadline, STORE_DEADLINE, log, status);
            }
            Err(stop) => return stopped(stop, number, max, log),
        }

        match verdict {
            // --restart-on-success: a success is followed by another
            // attempt, after a backoff like a failure's.
            Verdict::Success if policy.restart_on_success => {}
            Verdict::Success => {
                report(log, None);
                return finish(End::Success, "", log, status);
            }
            Verdict::Permanent => {
                report(log, None);
                let (end, reason) = match &status {
                    Status::Interrupted(sig) => (
                        End::Interrupted,
                        format!(
                            "interrupted by {} during attempt {}",
                            crate::classify::signal_name(*sig),
                            of_max(number, max)
                        ),
                    ),
                    s if s.stopped_by_deadline() => (
                        End::Deadline,
                        "--max-time ran out during the attempt".to_string(),
                    ),
                    _ if judged == Verdict::Retryable => {
                        (End::Permanent, explain_reader_gone(&status))
                    }
                    _ => (
                        End::Permanent,
                        explain_with_output(&status, &details.output, &policy.rules),
                    ),
                };
                return finish(end, &reason, log, status);
            }
            Verdict::Retryable => {}
        }

        if max.is_some_and(|m| number >= m) {
            report(log, None);
            if verdict == Verdict::Success {
                return finish(End::Success, "", log, status);
            }
            let reason = format!("no attempts left (last: {status})");
            return finish(End::Exhausted, &reason, log, status);
        }
        if let Some(after) = policy.reset_after
            && ran >= after
        {
            log.emit(&Event::Reset {
                attempt: number,
                up: ran,
                after,
            });
            backoff.reset();
        }
        let step = backoff.next(rng);
        let now = clock.now();
        let retry_after = status.retry_after();
        let own = wait::Input {
            step,
            retry_after,
            now,
            deadline,
            pace_slot: None,
        };
        let delay = match wait::decide(own) {
            Decision::Sleep { delay, .. } => delay,
            Decision::GiveUp(why) => {
                report(log, None);
                return finish(End::Deadline, &why.reason(), log, status);
            }
        };
        // Hook 3: the group's budget must allow the retry, and its pace may
        // push the start to a later slot (never past --max-time).
        let slot = match state.plan(delay, log, signals, deadline).await {
            // The group's slot, when pacing pushes the start past the
            // retry's own backoff.
            Ok(Next::Go { wait, paced }) => (!paced.is_zero())
                .then(|| clock.now().checked_add(wait))
                .flatten(),
            Ok(Next::BudgetSpent { tokens, max: of }) => {
                report(log, None);
                let reason = format!(
                    "the group's retry budget is spent ({tokens} of {of} tokens; retries need more than {})",
                    of / 2.0
                );
                return finish(End::Refused, &reason, log, status);
            }
            Ok(Next::PastDeadline { wait }) => {
                report(log, None);
                let reason = format!(
                    "the group's next pace slot is after --max-time ({} from now, {} left)",
                    human(wait),
                    human(deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(now)))
                );
                return finish(End::Deadline, &reason, log, status);
            }
            Err(Stop::Deadline) => {
                report(log, None);
                return finish(End::Deadline, STORE_DEADLINE, log, status);
            }
            Err(stop) => return stopped(stop, number, max, log),
        };
        // The wait itself, the pace slot included, from the one place that
        // decides waits.
        let now = clock.now();
        let (wake, delay, wait) = match wait::decide(wait::Input {
            now,
            pace_slot: slot,
            ..own
        }) {
            Decision::Sleep { until, delay, wait } => (until, delay, wait),
            Decision::GiveUp(why) => {
                report(log, None);
                return finish(End::Deadline, &why.reason(), log, status);
            }
        };
        report(
            log,
            Some(Wait {
                delay: wait,
                ceiling: step.ceiling,
                jitter: policy.delay.jitter.name(),
                paced: wait.saturating_sub(delay),
            }),
        );
        // --on-retry, after a failure: the wait runs on meanwhile (the next
        // attempt starts at `wake`, or when the hook ends if that is later).
        let hook = if verdict == Verdict::Success {
            None
        } else {
            // What the failed attempt left behind that the next one's follows.
            if let Some(line) = attempt.retrying() {
                log.emit(&Event::Warning { message: &line });
            }
            let failed = Failed {
                attempt: number,
                exit_code: match status {
                    Status::Exited(code) => Some(code),
                    _ => None,
                },
                next: wait,
            };
            between.failed(&failed, deadline, signals).await
        };
        if let Some(Err(why)) = &hook {
            log.emit(&Event::Warning { message: why });
        }
        if let Some(sig) = signals.interrupted() {
            return interrupted_in_wait(sig as i32, number, max, log);
        }
        if hook.is_some() && deadline.is_some_and(|d| clock.now() >= d) {
            return finish(
                End::Deadline,
                "--max-time ran out during the --on-retry command",
                log,
                status,
            );
        }
        // The countdown lives only while no child runs, and is erased before
        // anything else is logged. It counts the whole wait, Retry-After included.
        let left = match hook {
            None => wait,
            Some(_) => wake.saturating_duration_since(clock.now()),
        };
        let countdown = log.countdown(left, number.saturating_add(1), max);
        let interrupt = tokio::select! {
            () = clock.sleep_until(wake) => None,
            sig = signals.next_interrupt() => Some(sig),
        };
        drop(countdown);
        if let Some(sig) = interrupt {
            return interrupted_in_wait(sig as i32, number, max, log);
        }
    }
}

const STORE_DEADLINE: &str = "--max-time ran out while asking the shared state store";

/// The run ends on shared state's word: a refusal, an interrupt or the
/// deadline while the store was asked, or a required store that failed.
fn stopped<S: Sink>(stop: Stop, attempts: u32, max: Option<u32>, log: &mut S) -> Finish {
    let (end, status, reason) = match stop {
        Stop::Interrupted(sig) => return interrupted_in_wait(sig as i32, attempts, max, log),
        Stop::Refused(why) => (End::Refused, Status::Exited(exit::REFUSED.into()), why),
        Stop::Deadline => (End::Deadline, past_deadline(), STORE_DEADLINE.to_string()),
        Stop::Failed(why) => (End::Permanent, Status::Exited(exit::INTERNAL.into()), why),
    };
    ended(end, status, Verdict::Permanent, &reason, attempts, max, log)
}

/// The run ends before its first attempt: the attempts could not get ready.
fn unready<S: Sink>(why: Unready, max: Option<u32>, log: &mut S) -> Finish {
    let (end, status, reason) = match why {
        Unready::Deadline(reason) => (End::Deadline, past_deadline(), reason),
        Unready::Interrupted(sig, reason) => {
            (End::Interrupted, Status::Interrupted(sig as i32), reason)
        }
        Unready::Failed(reason) => (
            End::Permanent,
            Status::Exited(exit::INTERNAL.into()),
            reason,
        ),
    };
    ended(end, status, Verdict::Permanent, &reason, 0, max, log)
}

fn interrupted_in_wait<S: Sink>(sig: i32, attempts: u32, max: Option<u32>, log: &mut S) -> Finish {
    let reason = format!(
        "interrupted by {} while waiting to start attempt {}",
        crate::classify::signal_name(sig),
        of_max(attempts + 1, max)
    );
    let status = Status::Interrupted(sig);
    ended(
        End::Interrupted,
        status,
        Verdict::Permanent,
        &reason,
        attempts,
        max,
        log,
    )
}

/// The status of a run that `--max-time` ended between attempts.
fn past_deadline() -> Status {
    Status::TimedOut {
        limit: Limit::Deadline,
        after: Duration::ZERO,
    }
}

/// The run ends: log it and say how. `verdict` is the last attempt's, or
/// `Permanent` when the run ends outside an attempt's verdict.
fn ended<S: Sink>(
    end: End,
    status: Status,
    verdict: Verdict,
    reason: &str,
    attempts: u32,
    max: Option<u32>,
    log: &mut S,
) -> Finish {
    let exit_code = exit::code(&status, verdict);
    log.emit(&Event::Done {
        end,
        attempts,
        max,
        exit_code,
        reason,
    });
    Finish {
        status,
        end,
        attempts,
        exit_code,
    }
}

fn earliest(a: Option<(Instant, Limit)>, b: Option<(Instant, Limit)>) -> Option<(Instant, Limit)> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y.0 <= x.0 { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

#[cfg(test)]
mod tests;
