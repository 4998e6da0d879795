//! The loop in virtual time: a fake clock, scripted attempts, recording sinks.

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
        // A time already past is no sleep at all, and time never runs back.
        let now = self.now.get();
        self.sleeps
            .borrow_mut()
            .push(at.saturating_duration_since(now));
        self.now.set(at.max(now));
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
            Event::Done { ending, .. } => self.ends.push(ending.end),
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
) -> (Ending, Vec<Duration>, Vec<Context>) {
    let (finish, sleeps, seen, ()) = go_between(policy, statuses, takes, signals, sink, |_| ());
    (finish, sleeps, seen)
}

/// As `go_with`, with a step between attempts made from the fake clock.
fn go_between<S: Sink, B: Between>(
    policy: &Policy,
    statuses: Vec<Status>,
    takes: Duration,
    signals: &mut Signals,
    sink: &mut S,
    between: impl FnOnce(Rc<FakeClock>) -> B,
) -> (Ending, Vec<Duration>, Vec<Context>, B) {
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
    let mut between = between(Rc::clone(&clock));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut rng = StdRng::seed_from_u64(1);
    let finish = rt.block_on(run(
        policy,
        &mut attempt,
        &mut between,
        clock.as_ref(),
        &mut rng,
        signals,
        sink,
        &mut crate::state::Session::none(),
    ));
    let sleeps = clock.sleeps.borrow().clone();
    (finish, sleeps, attempt.seen, between)
}

fn go(
    policy: &Policy,
    statuses: Vec<Status>,
    takes: Duration,
) -> (Ending, Vec<Duration>, Vec<Context>) {
    go_with(policy, statuses, takes, &mut Signals::none(), &mut quiet())
}

#[test]
fn the_sink_hears_each_wait_and_the_countdown_counts_all_of_it() {
    let ok = Status::Http {
        code: 200,
        hints: crate::ratelimit::Hints::NONE,
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
    assert_eq!(f.waited, Duration::ZERO);
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
    assert_eq!(f.waited, secs(3), "the waits, and nothing after the last");
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
fn max_time_draws_the_last_wait_inside_the_time_left_then_gives_up() {
    let mut p = policy(None);
    p.max_time = Some(secs(10));
    // Attempts take 1s: fail at 1s, sleep 1s, fail at 3s, sleep 2s, fail at 6s;
    // the next sleep (4s) would end at the deadline: it is drawn again to end
    // 4s/60 before it. After that attempt, 8s would pass the deadline with
    // no time left: give up, never sleeping past it.
    let (f, sleeps, _) = go(&p, vec![], secs(1));
    assert_eq!(
        sleeps,
        vec![secs(1), secs(2), Duration::from_nanos(3_933_333_334)]
    );
    assert_eq!((f.end, f.attempts, f.exit_code), (End::Deadline, 4, 1));
    // The attempts' own second each is not waiting.
    assert_eq!(f.waited, Duration::from_nanos(6_933_333_334));
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
        hints: crate::ratelimit::Hints::retry_after(secs(secs_)),
    }
}

#[test]
fn retry_after_is_a_floor_with_the_delay_on_top() {
    let ok = Status::Http {
        code: 200,
        hints: crate::ratelimit::Hints::NONE,
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

/// Records each call between attempts; each takes `takes` of virtual time,
/// and may fail or "receive" a signal.
struct Hook {
    clock: Rc<FakeClock>,
    takes: Duration,
    calls: Vec<Failed>,
    fails: bool,
    signal: Option<tokio::sync::mpsc::UnboundedSender<nix::sys::signal::Signal>>,
}

impl Between for Hook {
    async fn failed(
        &mut self,
        failed: &Failed,
        _: Option<Instant>,
        signals: &mut Signals,
    ) -> Option<Result<(), String>> {
        self.calls.push(*failed);
        self.clock.now.set(self.clock.now.get() + self.takes);
        if let Some(tx) = self.signal.take() {
            tx.send(nix::sys::signal::Signal::SIGTERM).expect("send");
            let _ = signals.interrupted();
        }
        Some(if self.fails {
            Err("hook failed".to_string())
        } else {
            Ok(())
        })
    }
}

fn hook(takes: Duration) -> impl FnOnce(Rc<FakeClock>) -> Hook {
    move |clock| Hook {
        clock,
        takes,
        calls: Vec::new(),
        fails: false,
        signal: None,
    }
}

#[test]
fn the_hook_runs_after_each_retried_failure_never_after_the_last_or_a_success() {
    let statuses = vec![
        Status::Exited(3),
        Status::TimedOut {
            limit: Limit::Attempt,
            after: secs(1),
        },
        Status::Exited(4),
    ];
    let (f, sleeps, _, h) = go_between(
        &policy(Some(3)),
        statuses,
        Duration::ZERO,
        &mut Signals::none(),
        &mut Recorder::default(),
        hook(Duration::ZERO),
    );
    assert_eq!((f.end, f.attempts, f.exit_code), (End::Exhausted, 3, 4));
    assert_eq!(
        h.calls,
        [
            Failed {
                attempt: 1,
                exit_code: Some(3),
                next: secs(1)
            },
            Failed {
                attempt: 2,
                exit_code: None,
                next: secs(2)
            },
        ]
    );
    assert_eq!(sleeps, [secs(1), secs(2)]);
    // A success ends the run: no hook.
    let (_, _, _, h) = go_between(
        &policy(Some(3)),
        vec![Status::Exited(1), Status::Exited(0)],
        Duration::ZERO,
        &mut Signals::none(),
        &mut Recorder::default(),
        hook(Duration::ZERO),
    );
    assert_eq!(h.calls.len(), 1);
    // --restart-on-success: a success is not a failure.
    let mut p = policy(Some(2));
    p.restart_on_success = true;
    let (_, _, _, h) = go_between(
        &p,
        vec![Status::Exited(0), Status::Exited(0)],
        Duration::ZERO,
        &mut Signals::none(),
        &mut Recorder::default(),
        hook(Duration::ZERO),
    );
    assert!(h.calls.is_empty());
}

#[test]
fn the_wait_counts_from_the_failure_so_a_slow_hook_delays_nothing_more() {
    // The hook takes 1.5 s of the 2 s wait: 0.5 s are left to sleep (the
    // countdown shows what is left); one that outlasts the wait leaves none.
    let mut rec = Recorder::default();
    let (f, sleeps, _, _) = go_between(
        &policy(Some(3)),
        vec![Status::Exited(1), Status::Exited(1), Status::Exited(0)],
        Duration::ZERO,
        &mut Signals::none(),
        &mut rec,
        hook(Duration::from_millis(1500)),
    );
    assert_eq!(f.end, End::Success);
    assert_eq!(sleeps, [Duration::ZERO, Duration::from_millis(500)]);
    assert_eq!(*rec.countdowns.borrow(), sleeps);
    // The log still names the planned waits.
    assert_eq!(rec.delays, [secs(1), secs(2)]);
}

#[test]
fn a_failed_hook_is_a_warning_and_changes_nothing() {
    #[derive(Default)]
    struct Warnings(Vec<String>);
    impl Sink for Warnings {
        type Countdown = ();
        fn emit(&mut self, event: &Event<'_>) {
            if let Event::Warning { message } = event {
                self.0.push(message.to_string());
            }
        }
        fn countdown(&self, _: Duration, _: u32, _: Option<u32>) {}
    }
    let mut warnings = Warnings::default();
    let (f, _, _, _) = go_between(
        &policy(Some(2)),
        vec![Status::Exited(1), Status::Exited(0)],
        Duration::ZERO,
        &mut Signals::none(),
        &mut warnings,
        |clock| Hook {
            fails: true,
            ..hook(Duration::ZERO)(clock)
        },
    );
    assert_eq!((f.end, f.exit_code), (End::Success, 0));
    assert_eq!(warnings.0, ["hook failed"]);
}

#[test]
fn a_signal_during_the_hook_ends_the_run_and_so_does_the_deadline() {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut signals = Signals::from_channel(rx);
    let (f, sleeps, seen, _) = go_between(
        &policy(Some(5)),
        vec![],
        Duration::ZERO,
        &mut signals,
        &mut Recorder::default(),
        |clock| Hook {
            signal: Some(tx),
            ..hook(Duration::ZERO)(clock)
        },
    );
    assert_eq!((f.end, f.attempts, f.exit_code), (End::Interrupted, 1, 143));
    assert!(sleeps.is_empty());
    assert_eq!(seen.len(), 1);
    // A hook that runs past --max-time ends the run at once.
    let mut p = policy(Some(5));
    p.max_time = Some(secs(10));
    let (f, sleeps, seen, _) = go_between(
        &p,
        vec![],
        Duration::ZERO,
        &mut Signals::none(),
        &mut Recorder::default(),
        hook(secs(11)),
    );
    assert_eq!((f.end, f.attempts, f.exit_code), (End::Deadline, 1, 1));
    assert!(sleeps.is_empty());
    assert_eq!(seen.len(), 1);
}
