//! The retry loop: attempt, classify, wait, again.
//!
//! Bounded by `--max` and `--max-time`; never sleeps after the last attempt;
//! ends with the last attempt's real status. Generic over the kind of attempt,
//! the clock and the RNG, so it is tested with fakes in virtual time.

use std::borrow::Cow;
use std::future::Future;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::after::{Attempted, Next, Retry, Stop as AfterStop, after};
use crate::attempt::{Attempt, Between, Context, Details, Failed, Unready};
use crate::backoff::Progress;
use crate::classify::{
    Limit, Status, Verdict, classify_with_output, explain_reader_gone, explain_with_output,
    with_reader_gone,
};
use crate::event::{End, Ending, Event, Sink, Wait};
use crate::exit;
use crate::human::{human, of_max};
use crate::retry_policy::Policy;
use crate::signals::Signals;
use crate::state::{Gate, Next as Next3, Session, Stop};
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
        // set-up) and the stack's pages below the frames in use go back to
        // the system, so that a sleeping retry holds only the memory it
        // still uses.
        if at.saturating_duration_since(Instant::now()) >= Duration::from_secs(1) {
            crate::sys::release_free_heap();
            crate::sys::release_free_stack();
        }
        tokio::time::sleep_until(at.into()).await;
    }
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
) -> Ending
where
    A: Attempt,
    B: Between,
    C: Clock,
    R: Rng + ?Sized,
    S: Sink,
{
    let deadline = policy.max_time.and_then(|d| clock.now().checked_add(d));
    let mut run = Loop {
        policy,
        attempt,
        between,
        clock,
        rng,
        signals,
        log,
        state,
        deadline,
        max: policy.max_attempts,
        waited: Duration::ZERO,
    };
    let mut ending = run.go().await;
    ending.waited = run.waited;
    ending
}

/// An attempt that has ended, as the loop judged it.
struct Tried {
    number: u32,
    status: Status,
    details: Details,
    /// The verdict on the status and output alone.
    judged: Verdict,
    /// The verdict, once a gone reader of retry's stdout is counted.
    verdict: Verdict,
    ran: Duration,
}

/// One run of the loop: what it works with.
struct Loop<'a, A, B, C, R: ?Sized, S> {
    policy: &'a Policy,
    attempt: &'a mut A,
    between: &'a mut B,
    clock: &'a C,
    rng: &'a mut R,
    signals: &'a mut Signals,
    log: &'a mut S,
    state: &'a mut Session,
    deadline: Option<Instant>,
    max: Option<u32>,
    /// Time spent between attempts so far.
    waited: Duration,
}

impl<A, B, C, R, S> Loop<'_, A, B, C, R, S>
where
    A: Attempt,
    B: Between,
    C: Clock,
    R: Rng + ?Sized,
    S: Sink,
{
    /// The attempts, until the run ends.
    async fn go(&mut self) -> Ending {
        if let Err(ending) = self.begin().await {
            return ending;
        }
        let policy = self.policy;
        let deadline = self.deadline;
        let mut progress = Progress::new(&policy.delay);
        let mut previous_exit = None;
        let mut number = 0u32;
        loop {
            // A signal that landed as the last wait ended must not start another attempt.
            if number > 0
                && let Some(sig) = self.signals.interrupted()
            {
                return interrupted_in_wait(sig as i32, number, self.max, self.log);
            }
            number = number.saturating_add(1);
            let tried = self.attempt(number, previous_exit).await;
            previous_exit = Some(exit::code(&tried.status, Verdict::Retryable));
            // Hook 2: the outcome counts against (or refills) the group's budget.
            let ok = tried.verdict == Verdict::Success;
            match self
                .state
                .record(ok, self.log, self.signals, deadline)
                .await
            {
                Ok(()) => {}
                Err(Stop::Deadline) => return self.end(tried, End::Deadline, STORE_DEADLINE),
                Err(stop) => return stopped(stop, number, self.max, self.log),
            }
            let done = Attempted {
                number,
                status: &tried.status,
                verdict: tried.verdict,
                ran: tried.ran,
                now: self.clock.now(),
                deadline,
            };
            let retry = match after(policy, &mut progress, done, self.rng) {
                Next::Retry(retry) => retry,
                Next::Stop(stop) => {
                    let reason = self.reason(&tried, stop);
                    return self.end(tried, stop.end(), reason);
                }
            };
            if retry.reset
                && let Some(after) = policy.reset_after
            {
                self.log.emit(&Event::Reset {
                    attempt: number,
                    up: tried.ran,
                    after,
                });
            }
            let began = self.clock.now();
            let waited = self.wait(tried, retry).await;
            self.waited += self.clock.now().saturating_duration_since(began);
            if let Err(ending) = waited {
                return ending;
            }
        }
    }

    /// Before the first attempt: the attempts get ready, the breaker
    /// admits the run, `--stagger` spreads a fleet's first attempts.
    async fn begin(&mut self) -> Result<(), Ending> {
        // `--replay-stdin` reads stdin here, under the deadline and signals;
        // the breaker hears nothing of a run that ends here.
        if let Err(why) = self.attempt.prepare(self.deadline, self.signals).await {
            return Err(unready(why, self.max, self.log));
        }
        // Hook 1: the group's circuit breaker may refuse the whole run.
        match self
            .state
            .admit(self.log, self.signals, self.deadline)
            .await
        {
            Ok(Gate::Run) => {}
            Ok(Gate::Refused(why)) => {
                return Err(stopped(Stop::Refused(why), 0, self.max, self.log));
            }
            Err(stop) => return Err(stopped(stop, 0, self.max, self.log)),
        }
        // --stagger: a fleet started in the same instant (one cron minute)
        // spreads its first attempts. Never past --max-time; an interrupt ends it.
        if let Some(spread) = self.policy.stagger {
            let delay = wait::stagger(Some(spread), self.rng);
            self.log.emit(&Event::Stagger { delay, spread });
            let now = self.clock.now();
            let mut wake = now.checked_add(delay).unwrap_or(now);
            if let Some(d) = self.deadline {
                wake = wake.min(d);
            }
            let slept = tokio::select! {
                () = self.clock.sleep_until(wake) => None,
                sig = self.signals.next_interrupt() => Some(sig),
            };
            self.waited += self.clock.now().saturating_duration_since(now);
            if let Some(sig) = slept {
                return Err(interrupted_in_wait(sig as i32, 0, self.max, self.log));
            }
        }
        Ok(())
    }

    /// Attempt `number`, under the earlier of `--timeout` and `--max-time`,
    /// judged.
    async fn attempt(&mut self, number: u32, previous_exit: Option<u8>) -> Tried {
        self.log.emit(&Event::AttemptStart {
            attempt: number,
            max: self.max,
        });
        let began = self.clock.now();
        let limit = self
            .policy
            .timeout
            .and_then(|t| began.checked_add(t))
            .map(|at| (at, Limit::Attempt));
        let ctx = Context {
            number,
            max: self.max,
            previous_exit,
            deadline: earliest(limit, self.deadline.map(|at| (at, Limit::Deadline))),
            max_time: self.deadline,
        };
        let status = self.attempt.run(&ctx, self.signals).await;
        let details = self.attempt.details();
        let ran = details
            .duration
            .unwrap_or_else(|| self.clock.now().saturating_duration_since(began));
        for note in &details.notes {
            self.log.emit(&Event::Note { message: note });
        }
        for warning in &details.warnings {
            self.log.emit(&Event::Warning { message: warning });
        }
        let judged = classify_with_output(&status, &details.output, &self.policy.rules);
        let verdict = if details.reader_gone {
            with_reader_gone(judged)
        } else {
            judged
        };
        Tried {
            number,
            status,
            details,
            judged,
            verdict,
            ran,
        }
    }

    /// Why the run stops after `tried`, in words.
    fn reason(&self, tried: &Tried, stop: AfterStop) -> String {
        let status = &tried.status;
        let reason = match stop {
            AfterStop::Success => String::new(),
            AfterStop::Interrupted(sig) => format!(
                "interrupted by {} during attempt {}",
                crate::classify::signal_name(sig),
                of_max(tried.number, self.max)
            ),
            AfterStop::DeadlineDuringAttempt => "--max-time ran out during the attempt".to_string(),
            AfterStop::Permanent if tried.judged == Verdict::Retryable => {
                explain_reader_gone(status)
            }
            AfterStop::Permanent => {
                explain_with_output(status, &tried.details.output, &self.policy.rules)
            }
            AfterStop::Exhausted => format!("no attempts left (last: {status})"),
            AfterStop::Deadline(why) => crate::after::deadline_reason(&why, status),
        };
        match &tried.details.hint {
            Some(hint) => format!("{reason}; {hint}"),
            None => reason,
        }
    }

    /// The attempt's line in the log, with the wait that follows it if any.
    fn report(&mut self, tried: &Tried, next: Option<Wait>) {
        self.log.emit(&Event::Attempt {
            attempt: tried.number,
            max: self.max,
            status: &tried.status,
            verdict: tried.verdict,
            duration: tried.ran,
            next,
        });
    }

    /// The run ends after `tried`: its line, then the end.
    fn end(&mut self, tried: Tried, end: End, reason: impl Into<Cow<'static, str>>) -> Ending {
        self.report(&tried, None);
        ended(
            end,
            tried.status,
            tried.verdict,
            reason,
            tried.number,
            self.max,
            self.log,
        )
    }

    /// The wait before the next attempt: the group's word on it (budget,
    /// pace slot), the `--on-retry` hook, then the wait itself, which a
    /// signal ends; the run's end if the next attempt may not start.
    async fn wait(&mut self, tried: Tried, retry: Retry<Instant>) -> Result<(), Ending> {
        let deadline = self.deadline;
        // Hook 3: the group's budget must allow the retry, and its pace may
        // push the start to a later slot (never past --max-time).
        let now = self.clock.now();
        let slot = match self
            .state
            .plan(retry.delay(), self.log, self.signals, deadline)
            .await
        {
            // The group's slot, when pacing pushes the start past the
            // retry's own backoff.
            Ok(Next3::Go { wait, paced }) => (!paced.is_zero())
                .then(|| self.clock.now().checked_add(wait))
                .flatten(),
            Ok(Next3::BudgetSpent { tokens, max: of }) => {
                let reason = format!(
                    "the group's retry budget is spent ({tokens} of {of} tokens; retries need more than {})",
                    of / 2.0
                );
                return Err(self.end(tried, End::Refused, reason));
            }
            Ok(Next3::PastDeadline { wait }) => {
                let left = deadline.map_or(Duration::ZERO, |d| d.saturating_duration_since(now));
                let reason = format!(
                    "the group's next pace slot is after --max-time ({} from now, {} left)",
                    human(wait),
                    human(left)
                );
                return Err(self.end(tried, End::Deadline, reason));
            }
            Err(Stop::Deadline) => return Err(self.end(tried, End::Deadline, STORE_DEADLINE)),
            Err(stop) => return Err(stopped(stop, tried.number, self.max, self.log)),
        };
        // The wait itself, the pace slot included, from the one place that
        // decides waits.
        let (wake, delay, wait) = match retry.with_slot(slot) {
            Decision::Sleep { until, delay, wait } => (until, delay, wait),
            Decision::GiveUp(why) => {
                let reason = crate::after::deadline_reason(&why, &tried.status);
                return Err(self.end(tried, End::Deadline, reason));
            }
        };
        let planned = Wait {
            delay: wait,
            ceiling: retry.ceiling(),
            after: retry.retry_after(),
            jitter: self.policy.delay.jitter.name(),
            paced: wait.saturating_sub(delay),
        };
        self.report(&tried, Some(planned));
        // --on-retry, after a failure: the wait runs on meanwhile (the next
        // attempt starts at `wake`, or when the hook ends if that is later).
        let hook = if tried.verdict == Verdict::Success {
            None
        } else {
            // What the failed attempt left behind that the next one's follows.
            if let Some(line) = self.attempt.retrying() {
                self.log.emit(&Event::Warning { message: &line });
            }
            let failed = Failed {
                attempt: tried.number,
                exit_code: match tried.status {
                    Status::Exited(code) => Some(code),
                    _ => None,
                },
                next: wait,
            };
            self.between.failed(&failed, deadline, self.signals).await
        };
        if let Some(Err(why)) = &hook {
            self.log.emit(&Event::Warning { message: why });
        }
        if let Some(sig) = self.signals.interrupted() {
            return Err(interrupted_in_wait(
                sig as i32,
                tried.number,
                self.max,
                self.log,
            ));
        }
        if hook.is_some() && deadline.is_some_and(|d| self.clock.now() >= d) {
            let reason = "--max-time ran out during the --on-retry command";
            return Err(ended(
                End::Deadline,
                tried.status,
                tried.verdict,
                reason,
                tried.number,
                self.max,
                self.log,
            ));
        }
        // The countdown lives only while no child runs, and is erased before
        // anything else is logged. It counts the whole wait, Retry-After included.
        let left = match hook {
            None => wait,
            Some(_) => wake.saturating_duration_since(self.clock.now()),
        };
        let countdown = self
            .log
            .countdown(left, tried.number.saturating_add(1), self.max);
        let interrupt = tokio::select! {
            () = self.clock.sleep_until(wake) => None,
            sig = self.signals.next_interrupt() => Some(sig),
        };
        drop(countdown);
        match interrupt {
            Some(sig) => Err(interrupted_in_wait(
                sig as i32,
                tried.number,
                self.max,
                self.log,
            )),
            None => Ok(()),
        }
    }
}

const STORE_DEADLINE: &str = "--max-time ran out while asking the shared state store";

/// The run ends on shared state's word: a refusal, an interrupt or the
/// deadline while the store was asked, or a required store that failed.
fn stopped<S: Sink>(stop: Stop, attempts: u32, max: Option<u32>, log: &mut S) -> Ending {
    let (end, status, reason) = match stop {
        Stop::Interrupted(sig) => return interrupted_in_wait(sig as i32, attempts, max, log),
        Stop::Refused(why) => (End::Refused, Status::Exited(exit::REFUSED.into()), why),
        Stop::Deadline => (End::Deadline, past_deadline(), STORE_DEADLINE.to_string()),
        Stop::Failed(why) => (End::Permanent, Status::Exited(exit::INTERNAL.into()), why),
    };
    ended(end, status, Verdict::Permanent, reason, attempts, max, log)
}

/// The run ends before its first attempt: the attempts could not get ready.
fn unready<S: Sink>(why: Unready, max: Option<u32>, log: &mut S) -> Ending {
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
    ended(end, status, Verdict::Permanent, reason, 0, max, log)
}

fn interrupted_in_wait<S: Sink>(sig: i32, attempts: u32, max: Option<u32>, log: &mut S) -> Ending {
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
        reason,
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
    reason: impl Into<Cow<'static, str>>,
    attempts: u32,
    max: Option<u32>,
    log: &mut S,
) -> Ending {
    let ending = Ending {
        end,
        attempts,
        exit_code: exit::code(&status, verdict),
        reason: reason.into(),
        last_status: (attempts > 0).then_some(status),
        // Only the budget refuses once attempts have run (the breaker
        // refuses before the first), and its refusal ends the run.
        retries_refused: u32::from(end == End::Refused && attempts > 0),
        // Set by `run` once the loop is over.
        waited: Duration::ZERO,
    };
    log.emit(&Event::Done {
        ending: &ending,
        max,
    });
    ending
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
