//! The retry loop: attempt, classify, wait, again.
//!
//! Bounded by `--max` and `--max-time`; never sleeps after the last attempt;
//! ends with the last attempt's real status. Generic over the kind of attempt,
//! the clock and the RNG, so it is tested with fakes in virtual time.

use std::future::Future;
use std::time::{Duration, Instant};

use rand::Rng;

use crate::attempt::{Attempt, Context, Unready};
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
/// deadline or an interrupt.
pub async fn run<A, C, R, S>(
    policy: &Policy,
    attempt: &mut A,
    clock: &C,
    rng: &mut R,
    signals: &mut Signals,
    log: &mut S,
    state: &mut Session,
) -> Finish
where
    A: Attempt,
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
        let judged = classify_with_output(&status, &details.output, &policy.rules);
        let verdict = if details.reader_gone {
            with_reader_gone(judged)
        } else {
            judged
        };
        previous_exit = Some(exit::code(&status, Verdict::Retryable));

        let finish = |end, reason: &str, log: &mut S, status: Status| {
            let exit_code = exit::code(&status, verdict);
            log.emit(&Event::Done {
                end,
                attempts: number,
                max,
                exit_code,
                reason,
            });
            Finish {
                status,
                end,
                attempts: number,
                exit_code,
            }
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
        if let Some(sig) = signals.interrupted() {
            return interrupted_in_wait(sig as i32, number, max, log);
        }
        // The countdown lives only while no child runs, and is erased before
        // anything else is logged. It counts the whole wait, Retry-After included.
        let countdown = log.countdown(wait, number.saturating_add(1), max);
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
    ended(end, status, &reason, attempts, max, log)
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
    ended(end, status, &reason, 0, max, log)
}

fn interrupted_in_wait<S: Sink>(sig: i32, attempts: u32, max: Option<u32>, log: &mut S) -> Finish {
    let reason = format!(
        "interrupted by {} while waiting to start attempt {}",
        crate::classify::signal_name(sig),
        of_max(attempts + 1, max)
    );
    let status = Status::Interrupted(sig);
    ended(End::Interrupted, status, &reason, attempts, max, log)
}

/// The status of a run that `--max-time` ended between attempts.
fn past_deadline() -> Status {
    Status::TimedOut {
        limit: Limit::Deadline,
        after: Duration::ZERO,
    }
}

/// The run ends outside an attempt's verdict: log it and say how.
fn ended<S: Sink>(
    end: End,
    status: Status,
    reason: &str,
    attempts: u32,
    max: Option<u32>,
    log: &mut S,
) -> Finish {
    let exit_code = exit::code(&status, Verdict::Permanent);
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
mod tests {
    use super::*;
    use crate::backoff::Jitter;
    use crate::log::{LogFormat, LogOptions, Logger, When};
    use rand::SeedableRng;
    use rand::rngs::StdRng;
    use std::cell::{Cell, RefCell};
    use std::collections::VecDeque;
    use std::rc::Rc;

    /// Virtual time: sleeping moves the clock and records the wait.
    struct FakeClock {
        now: Cell<Instant>,
        sleeps: RefCell<Vec<Duration>>,
    }

    impl Clock for FakeClock {
        fn now(&self) -> Instant {
            self.now.get()
        }
        async fn sleep_until(&self, at: Instant) {
            self.sleeps.borrow_mut().push(at - self.now.get());
            self.now.set(at);
        }
    }

    /// Returns scripted statuses, each taking `takes` of virtual time.
    struct Scripted {
        statuses: VecDeque<Status>,
        clock: Rc<FakeClock>,
        takes: Duration,
        seen: Vec<Context>,
    }

    impl Attempt for Scripted {
        async fn run(&mut self, ctx: &Context, _: &mut Signals) -> Status {
            self.seen.push(*ctx);
            self.clock.now.set(self.clock.now.get() + self.takes);
            self.statuses.pop_front().unwrap_or(Status::Exited(1))
        }
    }

    fn policy(max: Option<u32>) -> Policy {
        let mut p = Policy {
            max_attempts: max,
            ..Policy::default()
        };
        p.delay.jitter = Jitter::None;
        p
    }

    fn quiet() -> Logger {
        let opts = LogOptions {
            format: LogFormat::Text,
            verbosity: -2,
            file: None,
            color: When::Never,
            annotations: When::Never,
        };
        Logger::open(&opts, Instant::now()).expect("stderr logger")
    }

    /// A sink that keeps what the loop reported.
    #[derive(Default)]
    struct Recorder {
        delays: Vec<Duration>,
        ends: Vec<End>,
        countdowns: RefCell<Vec<Duration>>,
    }

    impl Sink for Recorder {
        type Countdown = ();
        fn emit(&mut self, event: &Event<'_>) {
            match event {
                Event::Attempt {
                    next: Some(wait), ..
                } => self.delays.push(wait.delay),
                Event::Done { end, .. } => self.ends.push(*end),
                _ => {}
            }
        }
        fn countdown(&self, wait: Duration, _: u32, _: Option<u32>) {
            self.countdowns.borrow_mut().push(wait);
        }
    }

    fn go_with<S: Sink>(
        policy: &Policy,
        statuses: Vec<Status>,
        takes: Duration,
        signals: &mut Signals,
        sink: &mut S,
    ) -> (Finish, Vec<Duration>, Vec<Context>) {
        let clock = Rc::new(FakeClock {
            now: Cell::new(Instant::now()),
            sleeps: RefCell::new(Vec::new()),
        });
        let mut attempt = Scripted {
            statuses: statuses.into(),
            clock: Rc::clone(&clock),
            takes,
            seen: Vec::new(),
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let mut rng = StdRng::seed_from_u64(1);
        let finish = rt.block_on(run(
            policy,
            &mut attempt,
            clock.as_ref(),
            &mut rng,
            signals,
            sink,
            &mut crate::state::Session::none(),
        ));
        let sleeps = clock.sleeps.borrow().clone();
        (finish, sleeps, attempt.seen)
    }

    fn go(
        policy: &Policy,
        statuses: Vec<Status>,
        takes: Duration,
    ) -> (Finish, Vec<Duration>, Vec<Context>) {
        go_with(policy, statuses, takes, &mut Signals::none(), &mut quiet())
    }

    #[test]
    fn the_sink_hears_each_wait_and_the_countdown_counts_all_of_it() {
        let ok = Status::Http {
            code: 200,
            retry_after: None,
        };
        let mut rec = Recorder::default();
        let statuses = vec![told_to_wait(5), Status::Exited(1), ok];
        let (f, sleeps, _) = go_with(
            &policy(Some(5)),
            statuses,
            Duration::ZERO,
            &mut Signals::none(),
            &mut rec,
        );
        assert_eq!(f.end, End::Success);
        assert_eq!(rec.delays, vec![secs(6), secs(2)]);
        assert_eq!(rec.delays, sleeps);
        assert_eq!(*rec.countdowns.borrow(), vec![secs(6), secs(2)]);
        assert_eq!(rec.ends, vec![End::Success]);
    }

    #[test]
    fn a_terminating_signal_ends_the_run_instead_of_the_next_wait() {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut signals = Signals::from_channel(rx);
        tx.send(nix::sys::signal::Signal::SIGTERM).expect("send");
        let mut rec = Recorder::default();
        let (f, sleeps, seen) = go_with(
            &policy(Some(5)),
            vec![],
            Duration::ZERO,
            &mut signals,
            &mut rec,
        );
        assert_eq!((f.end, f.attempts, f.exit_code), (End::Interrupted, 1, 143));
        assert!(sleeps.is_empty());
        assert_eq!(seen.len(), 1);
        assert_eq!(rec.ends, vec![End::Interrupted]);
    }

    #[test]
    fn a_signal_that_stays_in_the_channel_does_nothing() {
        // A non-terminating signal (USR1) is only passed on; with no child
        // between attempts it is dropped and the run goes on.
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let mut signals = Signals::from_channel(rx);
        tx.send(nix::sys::signal::Signal::SIGUSR1).expect("send");
        let (f, sleeps, _) = go_with(
            &policy(Some(3)),
            vec![],
            Duration::ZERO,
            &mut signals,
            &mut Recorder::default(),
        );
        assert_eq!((f.end, f.attempts), (End::Exhausted, 3));
        assert_eq!(sleeps, vec![secs(1), secs(2)]);
    }

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn gives_up_with_the_last_code_and_never_sleeps_after_the_last_attempt() {
        let statuses = vec![Status::Exited(1), Status::Exited(2), Status::Exited(3)];
        let (f, sleeps, seen) = go(&policy(Some(3)), statuses, Duration::ZERO);
        assert_eq!(f.exit_code, 3);
        assert_eq!(f.end, End::Exhausted);
        assert_eq!(f.attempts, 3);
        assert_eq!(sleeps, vec![secs(1), secs(2)]);
        let prev: Vec<Option<u8>> = seen.iter().map(|c| c.previous_exit).collect();
        assert_eq!(prev, vec![None, Some(1), Some(2)]);
    }

    #[test]
    fn stops_at_the_first_success() {
        let statuses = vec![Status::Exited(1), Status::Exited(0)];
        let (f, sleeps, _) = go(&policy(Some(5)), statuses, Duration::ZERO);
        assert_eq!((f.exit_code, f.end, f.attempts), (0, End::Success, 2));
        assert_eq!(sleeps, vec![secs(1)]);
    }

    #[test]
    fn permanent_failure_stops_at_once() {
        let (f, sleeps, _) = go(
            &policy(Some(5)),
            vec![Status::NotFound("x".into())],
            Duration::ZERO,
        );
        assert_eq!((f.exit_code, f.end, f.attempts), (127, End::Permanent, 1));
        assert!(sleeps.is_empty());
    }

    #[test]
    fn max_time_gives_up_instead_of_sleeping_past_it() {
        let mut p = policy(None);
        p.max_time = Some(secs(10));
        // Attempts take 1s: fail at 1s, sleep 1s, fail at 3s, sleep 2s, fail at 6s;
        // the next sleep (4s) would end at 10s, the deadline itself: give up.
        let (f, sleeps, _) = go(&p, vec![], secs(1));
        assert_eq!(sleeps, vec![secs(1), secs(2)]);
        assert_eq!((f.end, f.attempts, f.exit_code), (End::Deadline, 3, 1));
    }

    #[test]
    fn attempts_get_the_earlier_of_timeout_and_deadline() {
        let mut p = policy(Some(3));
        p.max_time = Some(secs(10));
        p.timeout = Some(secs(4));
        let (_, _, seen) = go(&p, vec![], secs(1));
        let first = seen[0].deadline.expect("deadline");
        assert_eq!(first.1, Limit::Attempt);
        // Third attempt begins at 1+1+1+2 = 5s: 5+4 = 9 < 10.
        assert_eq!(seen[2].deadline.map(|d| d.1), Some(Limit::Attempt));
        p.timeout = Some(secs(9));
        let (_, _, seen) = go(&p, vec![], secs(1));
        assert_eq!(seen[1].deadline.map(|d| d.1), Some(Limit::Deadline));
    }

    #[test]
    fn reset_after_restarts_the_backoff() {
        let mut p = policy(Some(4));
        p.reset_after = Some(secs(5));
        // Attempts take 6s, so each failure resets: every wait is the base.
        let (_, sleeps, _) = go(&p, vec![], secs(6));
        assert_eq!(sleeps, vec![secs(1), secs(1), secs(1)]);
    }

    #[test]
    fn timeouts_are_retried_and_exit_124() {
        let t = Status::TimedOut {
            limit: Limit::Attempt,
            after: secs(1),
        };
        let (f, sleeps, _) = go(&policy(Some(2)), vec![t.clone(), t], Duration::ZERO);
        assert_eq!((f.exit_code, f.attempts), (124, 2));
        assert_eq!(sleeps.len(), 1);
    }

    fn told_to_wait(secs_: u64) -> Status {
        Status::Http {
            code: 429,
            retry_after: Some(secs(secs_)),
        }
    }

    #[test]
    fn retry_after_is_a_floor_with_the_delay_on_top() {
        let ok = Status::Http {
            code: 200,
            retry_after: None,
        };
        let (f, sleeps, _) = go(&policy(Some(3)), vec![told_to_wait(5), ok], Duration::ZERO);
        assert_eq!((f.exit_code, f.attempts), (0, 2));
        // No jitter in this policy: 5s from the server plus the 1s backoff.
        assert_eq!(sleeps, vec![secs(6)]);
    }

    #[test]
    fn retry_after_past_max_time_gives_up_at_once() {
        let mut p = policy(Some(5));
        p.max_time = Some(secs(30));
        let (f, sleeps, _) = go(&p, vec![told_to_wait(60)], Duration::ZERO);
        assert!(sleeps.is_empty());
        assert_eq!((f.end, f.attempts, f.exit_code), (End::Deadline, 1, 22));
    }

    #[test]
    fn restart_on_success_runs_again_after_a_backoff_until_max() {
        let mut p = policy(Some(3));
        p.restart_on_success = true;
        let ok = || Status::Exited(0);
        let (f, sleeps, seen) = go(&p, vec![ok(), ok(), ok()], Duration::ZERO);
        assert_eq!(seen.len(), 3);
        assert_eq!((f.end, f.exit_code), (End::Success, 0));
        // Quick clean exits back off like failures.
        assert_eq!(sleeps, vec![secs(1), secs(2)]);
        // Without the flag, the first success ends the run.
        let (f, _, seen) = go(&policy(Some(3)), vec![ok(), ok()], Duration::ZERO);
        assert_eq!((seen.len(), f.end), (1, End::Success));
    }

    /// A sink that keeps the resets and staggers it heard.
    #[derive(Default)]
    struct Resets {
        resets: Vec<(u32, Duration)>,
        staggers: Vec<Duration>,
    }

    impl Sink for Resets {
        type Countdown = ();
        fn emit(&mut self, event: &Event<'_>) {
            match event {
                Event::Reset { attempt, up, .. } => self.resets.push((*attempt, *up)),
                Event::Stagger { delay, .. } => self.staggers.push(*delay),
                _ => {}
            }
        }
        fn countdown(&self, _: Duration, _: u32, _: Option<u32>) {}
    }

    #[test]
    fn an_attempt_up_past_reset_after_resets_the_backoff_and_says_so() {
        let mut p = policy(Some(4));
        p.reset_after = Some(secs(10));
        p.restart_on_success = true;
        let mut rec = Resets::default();
        // Every attempt is up 10 s: each one resets.
        let (_, sleeps, _) = go_with(
            &p,
            vec![Status::Exited(0), Status::Exited(1), Status::Exited(0)],
            secs(10),
            &mut Signals::none(),
            &mut rec,
        );
        assert_eq!(sleeps, vec![secs(1), secs(1), secs(1)]);
        assert_eq!(
            rec.resets,
            vec![(1, secs(10)), (2, secs(10)), (3, secs(10))]
        );
        // Up 9 s: no reset, the backoff grows.
        let mut rec = Resets::default();
        let (_, sleeps, _) = go_with(&p, vec![], secs(9), &mut Signals::none(), &mut rec);
        assert_eq!(sleeps, vec![secs(1), secs(2), secs(4)]);
        assert!(rec.resets.is_empty());
    }

    #[test]
    fn stagger_delays_the_first_attempt_only() {
        let mut p = policy(Some(2));
        p.stagger = Some(secs(60));
        let mut rec = Resets::default();
        let (_, sleeps, _) = go_with(&p, vec![], Duration::ZERO, &mut Signals::none(), &mut rec);
        assert_eq!(rec.staggers.len(), 1);
        let first = rec.staggers[0];
        assert!(first <= secs(60));
        assert_eq!(sleeps, vec![first, secs(1)]);
    }
}
