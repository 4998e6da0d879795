//! `--simulate`: N virtual clients that all fail at t = 0, retrying under
//! one policy against a server model, in virtual time (nothing sleeps).
//!
//! Each client follows the retry loop's rules (attempt limit, `--max-time`,
//! `--reset-after`) and takes every wait from `wait::decide` with delays
//! drawn by `backoff`, exactly as a real run does; what happens is reported
//! to a [`Sink`] like the real loop's log. Pure: virtual time is a
//! `Duration` since the start, and the RNG is the caller's. `--dry-run` is
//! this simulation with one client and a server that always fails. Only
//! `plotfile` (writing the picture) does I/O; `mode::simulate` prints the
//! report.
//!
//! Built for a million clients: each is a few dozen bytes, the event queue
//! (`queue`) costs the same per event whatever the fleet's size, and the
//! figures (`tally`) are counted as the run goes rather than from a list of
//! every request.

use std::borrow::Cow;
use std::time::Duration;

use rand::Rng;

use crate::after::{Attempted, Next, Stop, after};
use crate::backoff::Progress;
use crate::classify::{Limit, NetFailure, Status, Verdict};
use crate::event::{End, Ending, Event, Sink, Wait};
use crate::exit;
use crate::human::human;
use crate::ratelimit::{Field, Hints, Reading};
use crate::retry_policy::Policy;
use crate::wait::Decision;

pub mod chart;
pub mod fleet;
pub mod model;
mod queue;
pub mod report;
pub mod tally;

pub use fleet::Fleet;
pub use model::Model;
pub use tally::Tally;

/// Requests a simulation makes per client, at most (and at least
/// [`MIN_REQUEST_LIMIT`] in all), before it stops and reports the clients
/// still retrying: a bound on time for `--forever` against a server that
/// lets clients through only slowly. Memory does not grow with requests.
pub const REQUESTS_PER_CLIENT: u64 = 100;

/// The request limit of small simulations.
pub const MIN_REQUEST_LIMIT: u64 = 10_000_000;

/// The requests a simulation of `clients` clients makes at most.
pub fn request_limit(clients: u32) -> u64 {
    (u64::from(clients) * REQUESTS_PER_CLIENT).max(MIN_REQUEST_LIMIT)
}

/// What happened in one simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub clients: u32,
    /// Requests, successes and give-ups, counted as they happened.
    pub tally: Tally,
    pub gave_up: u32,
    /// Of those that gave up, how many the group's retry budget refused.
    pub refused: u32,
    /// Clients neither through nor given up when the simulation stopped at
    /// its request limit (0 when it ran to the end).
    pub still_retrying: u32,
    /// The window model: the most requests in any 100 ms between one of
    /// its resets and the next.
    pub at_reset: Option<u64>,
}

impl Outcome {
    /// Whether the simulation stopped at its request limit.
    pub fn truncated(&self) -> bool {
        self.still_retrying > 0
    }

    /// Every request time, when the run was traced (else empty).
    pub fn arrivals(&self) -> &[Duration] {
        self.tally.trace.as_ref().map_or(&[], |t| &t.arrivals)
    }

    /// Every success time, when the run was traced (else empty).
    pub fn successes(&self) -> &[Duration] {
        self.tally.trace.as_ref().map_or(&[], |t| &t.successes)
    }
}

/// What a client is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Msg {
    /// Its request to reach a stateless server.
    Request,
    /// OCC: its read to reach the server.
    Read,
    /// OCC: the version it read to come back.
    ReadReply,
    /// OCC: its write to reach the server.
    Write,
    /// OCC: the write's result to come back.
    WriteReply { ok: bool },
}

/// One client, carried by its pending event in the queue: a million of
/// them are held at once, so it stays small (and `Copy`).
#[derive(Debug, Clone, Copy)]
struct Client {
    backoff: Progress,
    attempts: u32,
    /// OCC: the version read.
    version: u32,
    /// How long ago, in nanoseconds, the attempt this event belongs to
    /// began: 0 for a stateless server's request; for OCC, the messages so
    /// far, each under 28 ms (|Normal(10 ms, 2 ms)| from a 53-bit draw).
    since: u32,
    next: Msg,
}

/// `d` in nanoseconds, for [`Client::since`].
fn since(d: Duration) -> u32 {
    u32::try_from(d.as_nanos()).unwrap_or(u32::MAX)
}

static FAILED: Status = Status::Http {
    code: 503,
    hints: Hints::NONE,
};
static SUCCEEDED: Status = Status::Http {
    code: 200,
    hints: Hints::NONE,
};
/// An attempt `--max-time` stopped before its answer came (exit 28).
static CUT_OFF: Status = Status::Net {
    failure: NetFailure::TimedOut(Limit::Deadline),
    detail: String::new(),
};

/// A sink that ignores everything: for simulations nobody watches in detail.
pub struct Quiet;

impl Sink for Quiet {
    type Countdown = ();
    fn emit(&mut self, _: &Event<'_>) {}
    fn countdown(&self, _: Duration, _: u32, _: Option<u32>) {}
}

/// Run `clients` clients under `policy` against `model`, sharing nothing.
pub fn simulate<R, S>(
    policy: &Policy,
    model: Model,
    clients: u32,
    rng: &mut R,
    sink: &mut S,
) -> Outcome
where
    R: Rng + ?Sized,
    S: Sink,
{
    simulate_fleet(policy, Fleet::default(), model, clients, rng, sink)
}

/// Run `clients` clients under `policy` against `model`, as one group
/// sharing `fleet`'s pace and budget.
pub fn simulate_fleet<R, S>(
    policy: &Policy,
    fleet: Fleet,
    model: Model,
    clients: u32,
    rng: &mut R,
    sink: &mut S,
) -> Outcome
where
    R: Rng + ?Sized,
    S: Sink,
{
    run(
        policy,
        fleet,
        model,
        clients,
        rng,
        sink,
        false,
        request_limit(clients),
    )
}

/// An OCC message of `client`'s, taking `latency` from `now`.
fn hop(queue: &mut queue::Queue<Client>, now: Duration, mut client: Client, latency: Duration) {
    client.since = client.since.saturating_add(since(latency));
    queue.push(now + latency, client);
}

#[allow(clippy::too_many_arguments)]
fn run<R, S>(
    policy: &Policy,
    fleet: Fleet,
    model: Model,
    clients: u32,
    rng: &mut R,
    sink: &mut S,
    trace: bool,
    limit: u64,
) -> Outcome
where
    R: Rng + ?Sized,
    S: Sink,
{
    let delay = &policy.delay;
    let occ = model == Model::Occ;
    // The ring spans twice the longest backoff wait: only staggered starts
    // and far pace slots go past it.
    let horizon = tally::nanos(delay.cap.saturating_add(delay.cap));
    let mut world = World {
        policy,
        sink,
        shared: fleet::Shared::new(fleet),
        tally: Tally::new(clients, model.recovery(), trace),
        queue: queue::Queue::new(horizon, clients),
        occ,
        gave_up: 0,
        refused: 0,
    };
    let mut stateless = model::Stateless::new(model);
    let mut row = model::Occ::default();
    for _ in 0..clients {
        // --stagger: each client's first attempt waits U(0, spread), as in
        // a real run; its deadline still counts from 0, when it started.
        let start = crate::wait::stagger(policy.stagger, rng);
        let hop = if occ {
            model::latency(rng)
        } else {
            Duration::ZERO
        };
        let client = Client {
            backoff: Progress::new(delay),
            attempts: 0,
            version: 0,
            since: since(hop),
            next: if occ { Msg::Read } else { Msg::Request },
        };
        world.queue.push(start + hop, client);
    }

    while let Some((now, mut client)) = world.queue.pop() {
        // The result of an attempt, once known.
        let ok = match client.next {
            Msg::Request | Msg::Write if world.tally.requests >= limit => break,
            Msg::Request => {
                client.attempts += 1;
                world.tally.request(now);
                let ok = stateless.request(now);
                // A refusal carries the limiter's reset, if it has one.
                let reset = if ok { None } else { stateless.reset_in(now) };
                world.answered(client, now, ok, reset, rng);
                continue;
            }
            Msg::Read => {
                client.version = row.read();
                client.next = Msg::ReadReply;
                hop(&mut world.queue, now, client, model::latency(rng));
                continue;
            }
            Msg::ReadReply => {
                client.next = Msg::Write;
                hop(&mut world.queue, now, client, model::latency(rng));
                continue;
            }
            Msg::Write => {
                client.attempts += 1;
                world.tally.request(now);
                client.next = Msg::WriteReply {
                    ok: row.write(client.version),
                };
                hop(&mut world.queue, now, client, model::latency(rng));
                continue;
            }
            Msg::WriteReply { ok } => ok,
        };
        world.answered(client, now, ok, None, rng);
    }
    // Every client either succeeded, gave up, or is still waiting.
    let settled = u64::from(world.gave_up) + world.tally.succeeded;
    Outcome {
        clients,
        still_retrying: u32::try_from(u64::from(clients).saturating_sub(settled)).unwrap_or(0),
        at_reset: stateless.busiest_at_reset(),
        tally: world.tally,
        gave_up: world.gave_up,
        refused: world.refused,
    }
}

/// A simulation under way: what its clients share and what it counts.
struct World<'a, S> {
    policy: &'a Policy,
    sink: &'a mut S,
    shared: fleet::Shared,
    tally: Tally,
    queue: queue::Queue<Client>,
    /// The server is the OCC model: an attempt starts with a read.
    occ: bool,
    gave_up: u32,
    /// Of those that gave up, how many the budget refused.
    refused: u32,
}

impl<S: Sink> World<'_, S> {
    /// `client`'s attempt was answered at `now` (`ok`: it succeeded): the
    /// same steps as a real run after an attempt. The loop's rules, the
    /// group's word on the retry (budget, pace slot), then the wait with
    /// the slot; the client waits in the queue, or is done.
    fn answered<R: Rng + ?Sized>(
        &mut self,
        mut client: Client,
        now: Duration,
        ok: bool,
        reset: Option<Duration>,
        rng: &mut R,
    ) {
        let policy = self.policy;
        let deadline = policy.max_time;
        // A real run stops an attempt still running at --max-time: its
        // answer, even a success, is never seen.
        let cut = deadline.is_some_and(|d| now > d);
        // A refusal that says when the limit resets, as a server's field
        // does (to the nanosecond, as X-RateLimit-Reset-After can).
        let limited = reset.map(|wait| Status::Http {
            code: 429,
            hints: Hints::floor(wait, Field::XResetAfter, Reading::Seconds, String::new()),
        });
        let (status, verdict) = match (cut, ok, &limited) {
            (true, ..) => (&CUT_OFF, Verdict::Permanent),
            (false, true, _) => (&SUCCEEDED, Verdict::Success),
            (false, false, Some(limited)) => (limited, Verdict::Retryable),
            (false, false, None) => (&FAILED, Verdict::Retryable),
        };
        // As a real run does after each attempt: the budget counts it.
        self.shared.record(ok && !cut);
        let done = Attempted {
            number: client.attempts,
            status,
            verdict,
            ran: Duration::from_nanos(u64::from(client.since)),
            now,
            deadline,
        };
        let retry = match after(policy, &mut client.backoff, done, rng) {
            Next::Retry(retry) => retry,
            Next::Stop(stop) => {
                let reason: Cow<'static, str> = match stop {
                    Stop::Success => "".into(),
                    Stop::DeadlineDuringAttempt => "--max-time ran out during the attempt".into(),
                    Stop::Deadline(why) => crate::after::deadline_reason(&why, done.status).into(),
                    _ => "no attempts left".into(),
                };
                return self.end(&done, stop.end(), reason);
            }
        };
        let decision = match self.shared.plan(now, retry.delay(), deadline) {
            // Without a slot the decision is the retry's own.
            fleet::Word::Go { slot } => retry.with_slot(slot),
            fleet::Word::BudgetSpent => {
                let reason = "the group's retry budget is spent";
                return self.end(&done, End::Refused, reason.into());
            }
            fleet::Word::PastDeadline { wait } => {
                let reason = format!(
                    "the group's next pace slot is after --max-time ({} from now)",
                    human(wait)
                );
                return self.end(&done, End::Deadline, reason.into());
            }
        };
        let (until, delay, wait) = match decision {
            Decision::Sleep { until, delay, wait } => (until, delay, wait),
            Decision::GiveUp(why) => {
                let reason = crate::after::deadline_reason(&why, done.status);
                return self.end(&done, End::Deadline, reason.into());
            }
        };
        let planned = Wait {
            delay: wait,
            ceiling: retry.ceiling(),
            after: retry.retry_after(),
            jitter: policy.delay.jitter.name(),
            paced: wait.saturating_sub(delay),
        };
        self.report(&done, Some(planned));
        if self.occ {
            client.next = Msg::Read;
            let hop = model::latency(rng);
            client.since = since(hop);
            self.queue.push(until + hop, client);
        } else {
            client.since = 0;
            self.queue.push(until, client);
        }
    }

    /// The attempt's event, with the wait that follows it if any.
    fn report(&mut self, done: &Attempted<'_, Duration>, next: Option<Wait>) {
        self.sink.emit(&Event::Attempt {
            attempt: done.number,
            max: self.policy.max_attempts,
            status: done.status,
            verdict: done.verdict,
            duration: done.ran,
            next,
        });
    }

    /// The client is done after `done`: reported, ended and counted.
    fn end(&mut self, done: &Attempted<'_, Duration>, end: End, reason: Cow<'static, str>) {
        self.report(done, None);
        let ending = Ending {
            end,
            attempts: done.number,
            exit_code: exit::code(done.status, done.verdict),
            reason,
            last_status: Some(done.status.clone()),
            retries_refused: u32::from(end == End::Refused),
            waited: std::time::Duration::ZERO,
        };
        self.sink.emit(&Event::Done {
            ending: &ending,
            max: self.policy.max_attempts,
        });
        if end == End::Success {
            self.tally.success(done.now);
        } else {
            self.gave_up += 1;
            self.refused += u32::from(end == End::Refused);
            self.tally.give_up(done.now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::Jitter;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// The busiest 100 ms among sorted request times.
    fn busiest(times: &[Duration]) -> u64 {
        let mut t = Tally::new(1, None, false);
        times.iter().for_each(|a| t.request(*a));
        t.busiest
    }

    fn policy(jitter: Jitter, max: Option<u32>) -> Policy {
        let mut p = Policy {
            max_attempts: max,
            ..Policy::default()
        };
        p.delay.jitter = jitter;
        p.delay.base = ms(100);
        p.delay.cap = ms(10_000);
        p
    }

    fn sim(p: &Policy, model: Model, n: u32, seed: u64) -> Outcome {
        fleet_sim(p, Fleet::default(), model, n, seed)
    }

    #[test]
    fn clients_told_a_reset_wake_at_it_together_unless_spread_after_it() {
        let window = Model::Window {
            limit: 10,
            every: ms(1000),
        };
        let mut p = policy(Jitter::Full, Some(30));
        p.rules.http.retry_after_spread = Some(Duration::ZERO);
        let exact = sim(&p, window, 100, 1);
        // All 90 refused at the first window come back at its reset; every
        // window serves ten, so the fleet is through after ten.
        assert_eq!(exact.at_reset, Some(90));
        assert_eq!(exact.successes().len(), 100);
        assert_eq!(exact.successes().iter().max(), Some(&ms(9000)));
        p.rules.http.retry_after_spread = Some(ms(1000));
        let spread = sim(&p, window, 100, 1);
        assert!(
            spread.at_reset.is_some_and(|n| n < 20),
            "{:?}",
            spread.at_reset
        );
        assert_eq!(spread.successes().len(), 100);
        // No wait ever starts before the server's reset: a window never
        // serves more than its limit, so ten windows are the least.
        assert!(spread.successes().iter().max() > Some(&ms(9000)));
    }

    #[test]
    fn one_occ_client_succeeds_at_once() {
        let o = sim(&policy(Jitter::Full, Some(5)), Model::Occ, 1, 1);
        assert_eq!(o.arrivals().len(), 1);
        assert_eq!(o.successes().len(), 1);
        assert_eq!(o.gave_up, 0);
        // Read, reply, write, reply: four one-way messages of about 10 ms.
        let t = o.successes()[0];
        assert!(t > ms(20) && t < ms(60), "{t:?}");
    }

    #[test]
    fn occ_lets_exactly_one_write_per_version_through() {
        let o = sim(&policy(Jitter::Full, None), Model::Occ, 50, 7);
        assert_eq!(o.successes().len(), 50);
        assert!(o.arrivals().len() > 50);
    }

    #[test]
    fn outage_without_jitter_comes_in_synchronized_waves() {
        // Waves at 0, 100, 300, 700, 1500 ms; the outage ends at 1 s, so the
        // fifth wave (1500 ms) succeeds: every client makes exactly 5 attempts.
        let n = 200;
        let o = sim(
            &policy(Jitter::None, Some(10)),
            Model::Outage { until: ms(1000) },
            n,
            1,
        );
        assert_eq!(o.arrivals().len(), n as usize * 5);
        for (i, wave) in [0, 100, 300, 700, 1500].iter().enumerate() {
            let at = &o.arrivals()[i * n as usize..(i + 1) * n as usize];
            assert!(at.iter().all(|t| *t == ms(*wave)), "wave {i}");
        }
        assert_eq!(o.successes(), vec![ms(1500); n as usize]);
        assert_eq!(o.gave_up, 0);
    }

    #[test]
    fn clients_give_up_at_the_attempt_limit_and_the_deadline() {
        let o = sim(
            &policy(Jitter::None, Some(3)),
            Model::Outage { until: ms(60_000) },
            10,
            1,
        );
        assert_eq!((o.arrivals().len(), o.gave_up), (30, 10));
        let mut p = policy(Jitter::None, None);
        p.max_time = Some(ms(1000));
        // 0, 100, 300, 700; the next (1500 ms) would pass the deadline and is
        // drawn again to end 800/60 ms before it; the one after would pass it
        // with too little time left.
        let o = sim(&p, Model::Outage { until: ms(60_000) }, 10, 1);
        assert_eq!((o.arrivals().len(), o.gave_up), (50, 10));
        assert_eq!(o.arrivals()[40..], [Duration::from_nanos(986_666_667); 10]);
    }

    #[test]
    fn an_occ_attempt_running_at_the_deadline_is_cut_off() {
        // One client's attempt takes four ~10 ms messages: a 15 ms deadline
        // stops it before the answer comes back.
        let mut p = policy(Jitter::Full, None);
        p.max_time = Some(ms(15));
        let o = sim(&p, Model::Occ, 1, 1);
        assert_eq!((o.successes().len(), o.gave_up), (0, 1));
        p.max_time = Some(ms(500));
        let o = sim(&p, Model::Occ, 1, 1);
        assert_eq!((o.successes().len(), o.gave_up), (1, 0));
    }

    #[test]
    fn a_seed_gives_the_same_simulation() {
        let p = policy(Jitter::Decorrelated, Some(8));
        let m = Model::Capacity {
            rate: 50.0,
            burst: None,
            outage: Some(ms(2000)),
        };
        assert_eq!(sim(&p, m, 300, 9), sim(&p, m, 300, 9));
        assert_ne!(sim(&p, m, 300, 9), sim(&p, m, 300, 10));
        assert_eq!(sim(&p, Model::Occ, 30, 9), sim(&p, Model::Occ, 30, 9));
    }

    #[test]
    fn capacity_admits_at_most_its_rate() {
        let o = sim(
            &policy(Jitter::Full, None),
            Model::Capacity {
                rate: 100.0,
                burst: None,
                outage: None,
            },
            1000,
            2,
        );
        assert_eq!(o.successes().len(), 1000);
        // 10 at once, then 100/s: the last cannot succeed before ~9.9 s.
        let last = *o.successes().last().expect("successes");
        assert!(last >= ms(9900), "{last:?}");
    }

    fn fleet_sim(p: &Policy, fleet: Fleet, model: Model, n: u32, seed: u64) -> Outcome {
        // Traced: every request and success time is kept
        // ([`Outcome::arrivals`], [`Outcome::successes`]) to be checked exactly.
        let mut rng = crate::rng::seeded(seed);
        run(
            p,
            fleet,
            model,
            n,
            &mut rng,
            &mut Quiet,
            true,
            request_limit(n),
        )
    }

    fn paced(per_sec: u64, burst: u32) -> Fleet {
        Fleet {
            pace: Some(crate::state::rules::Pace {
                interval: 1_000_000 / per_sec,
                burst,
            }),
            budget: None,
        }
    }

    #[test]
    fn a_paced_fleet_never_retries_closer_than_the_pace_beyond_the_burst() {
        let m = Model::Capacity {
            rate: 200.0,
            burst: None,
            outage: Some(ms(3000)),
        };
        for burst in [1, 4] {
            let n = 300;
            let o = fleet_sim(&policy(Jitter::Full, None), paced(50, burst), m, n, 3);
            assert_eq!((o.successes().len(), o.gave_up), (n as usize, 0));
            // The first attempts come first, all at 0 and never paced.
            assert!(o.arrivals()[..n as usize].iter().all(|t| t.is_zero()));
            let retries = &o.arrivals()[n as usize..];
            assert!(retries.len() > n as usize, "{}", retries.len());
            // Any `burst + 1` retries in a row span at least one interval.
            let b = burst as usize;
            for (i, w) in retries.windows(b + 1).enumerate() {
                assert!(w[b] - w[0] >= ms(20), "burst {burst}, retry {i}: {w:?}");
            }
            // Never more than 100 ms worth of the pace (plus the burst).
            let after = busiest(retries);
            assert!(after < 5 + u64::from(burst), "burst {burst}: {after}");
        }
        // Unpaced, the same fleet comes back many at a time.
        let o = sim(&policy(Jitter::Full, None), m, 300, 3);
        assert!(busiest(&o.arrivals()[300..]) > 20);
    }

    #[test]
    fn a_budget_refuses_retries_once_the_group_is_at_half() {
        let budget = Fleet {
            pace: None,
            budget: Some(crate::state::rules::Budget {
                max_milli: 10_000,
                ratio_milli: 100,
            }),
        };
        // 20 first attempts fail at 0, one after another: the count falls
        // 9, 8, 7, 6 (above half: retry), then 5 and below (refused).
        let p = policy(Jitter::None, None);
        let o = fleet_sim(&p, budget, Model::Outage { until: ms(60_000) }, 20, 1);
        assert_eq!(o.arrivals().len(), 24);
        assert_eq!(&o.arrivals()[20..], &[ms(100); 4]);
        assert_eq!((o.gave_up, o.refused), (20, 20));
        // The four that retried find the server back at 100 ms.
        let o = fleet_sim(&p, budget, Model::Outage { until: ms(50) }, 20, 1);
        assert_eq!((o.successes(), o.refused), (&[ms(100); 4][..], 16));
        // Without the budget, all 20 come back.
        let o = sim(&p, Model::Outage { until: ms(50) }, 20, 1);
        assert_eq!((o.successes().len(), o.gave_up), (20, 0));
    }

    #[test]
    fn a_paced_slot_past_the_deadline_gives_up() {
        // One slot a second, 10 clients, --max-time 3.5 s: the slots at
        // 0.1, 1.1, 2.1 and 3.1 s are taken; the rest would start too late.
        let mut p = policy(Jitter::None, None);
        p.max_time = Some(ms(3500));
        let o = fleet_sim(&p, paced(1, 1), Model::Outage { until: ms(0) }, 10, 1);
        assert_eq!(o.arrivals().len(), 10);
        let o = fleet_sim(&p, paced(1, 1), Model::Outage { until: ms(1) }, 10, 1);
        assert_eq!(o.successes(), &[ms(100), ms(1100), ms(2100), ms(3100)]);
        assert_eq!((o.gave_up, o.refused), (6, 0));
    }

    #[test]
    fn a_run_stopped_at_its_request_limit_counts_the_clients_still_retrying() {
        // 100 clients retrying forever against a server that admits one a
        // second: 500 requests go nowhere near through them all.
        let p = policy(Jitter::Full, None);
        let m = Model::Capacity {
            rate: 1.0,
            burst: None,
            outage: None,
        };
        let mut rng = crate::rng::seeded(1);
        let o = run(
            &p,
            Fleet::default(),
            m,
            100,
            &mut rng,
            &mut Quiet,
            false,
            500,
        );
        assert_eq!(o.tally.requests, 500);
        assert!(o.truncated());
        let through = o.tally.succeeded as u32 + o.gave_up;
        assert!(through < 100, "{through}");
        assert_eq!(o.still_retrying, 100 - through);
        // The limit is far past what such runs need: a million clients
        // making thirty attempts each stay within it.
        assert!(request_limit(1_000_000) >= 30 * 1_000_000);
    }

    #[test]
    fn a_seed_gives_the_same_fleet_simulation() {
        let mut f = paced(30, 2);
        f.budget = Some(crate::state::rules::Budget::DEFAULT);
        let p = policy(Jitter::Decorrelated, Some(8));
        let m = Model::Capacity {
            rate: 50.0,
            burst: None,
            outage: Some(ms(2000)),
        };
        assert_eq!(fleet_sim(&p, f, m, 300, 9), fleet_sim(&p, f, m, 300, 9));
        assert_ne!(fleet_sim(&p, f, m, 300, 9), fleet_sim(&p, f, m, 300, 10));
    }
}
