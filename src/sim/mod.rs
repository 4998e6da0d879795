//! `--simulate`: N virtual clients that all fail at t = 0, retrying under
//! one policy against a server model, in virtual time (nothing sleeps).
//!
//! Each client follows the retry loop's rules (attempt limit, `--max-time`,
//! `--reset-after`) and takes every wait from `wait::decide` with delays
//! drawn by `backoff`, exactly as a real run does; what happens is reported
//! to a [`Sink`] like the real loop's log. Pure: virtual time is a
//! `Duration` since the start, and the RNG is the caller's. `--dry-run` is
//! this simulation with one client and a server that always fails. Only
//! `cmd` (printing the report) and `plot` (writing the picture) do I/O.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use rand::Rng;

use crate::backoff::Backoff;
use crate::classify::{Status, Verdict};
use crate::event::{End, Event, Sink, Wait};
use crate::human::human;
use crate::retry_policy::Policy;
use crate::wait::{self, Decision};

pub mod chart;
pub mod cmd;
pub mod fleet;
pub mod model;
pub mod plot;
pub mod report;

pub use fleet::Fleet;
pub use model::Model;

/// Events beyond this end the simulation (and the report says so): a bound
/// on time and memory for `--forever` against a server that lets clients
/// through only slowly. 10,000 OCC clients need about 3.4 million.
const MAX_EVENTS: u64 = 10_000_000;

/// What happened in one simulation.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub clients: u32,
    /// The time of every request that counts, in order.
    pub arrivals: Vec<Duration>,
    /// When each client that succeeded did, in order.
    pub successes: Vec<Duration>,
    pub gave_up: u32,
    /// Of those that gave up, how many the group's retry budget refused.
    pub refused: u32,
    /// The simulation stopped at [`MAX_EVENTS`] with clients still retrying.
    pub truncated: bool,
}

/// A message in flight, in time order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Msg {
    /// A request reaches a stateless server.
    Request,
    /// OCC: the read reaches the server.
    Read,
    /// OCC: the version read reaches the client.
    ReadReply(u64),
    /// OCC: the write reaches the server.
    Write(u64),
    /// OCC: the write's result reaches the client.
    WriteReply(bool),
}

struct Client {
    backoff: Backoff,
    attempts: u32,
    began: Duration,
}

static FAILED: Status = Status::Http {
    code: 503,
    retry_after: None,
};
static SUCCEEDED: Status = Status::Http {
    code: 200,
    retry_after: None,
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
    let mut shared = fleet::Shared::new(fleet);
    let max = policy.max_attempts;
    // Every client starts at 0, so the deadline is the same for all.
    let deadline = policy.max_time;
    let mut out = Outcome {
        clients,
        arrivals: Vec::new(),
        successes: Vec::new(),
        gave_up: 0,
        refused: 0,
        truncated: false,
    };
    let mut state: Vec<Client> = (0..clients)
        .map(|_| Client {
            backoff: Backoff::new(policy.delay),
            attempts: 0,
            began: Duration::ZERO,
        })
        .collect();
    let mut stateless = model::Stateless::new(model);
    let mut occ = model::Occ::default();
    // (time, sequence, client, message): the sequence keeps ties in order of
    // sending, so a seed always gives the same run.
    let mut queue: BinaryHeap<Reverse<(Duration, u64, u32, Msg)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut push = |q: &mut BinaryHeap<_>, at: Duration, c: u32, m: Msg| {
        q.push(Reverse((at, seq, c, m)));
        seq += 1;
    };
    let first = if model == Model::Occ {
        Msg::Read
    } else {
        Msg::Request
    };
    for (c, client) in (0..clients).zip(state.iter_mut()) {
        // --stagger: each client's first attempt waits U(0, spread), as in
        // a real run; its deadline still counts from 0, when it started.
        let start = crate::wait::stagger(policy.stagger, rng);
        client.began = start;
        let at = if first == Msg::Read {
            start + model::latency(rng)
        } else {
            start
        };
        push(&mut queue, at, c, first);
    }

    let mut events = 0u64;
    while let Some(Reverse((now, _, c, msg))) = queue.pop() {
        events += 1;
        if events > MAX_EVENTS {
            out.truncated = true;
            break;
        }
        let idx = c as usize;
        // The result of an attempt, once known.
        let done = match msg {
            Msg::Request => {
                let client = &mut state[idx];
                client.attempts += 1;
                out.arrivals.push(now);
                Some(stateless.request(now))
            }
            Msg::Read => {
                let v = occ.read();
                push(&mut queue, now + model::latency(rng), c, Msg::ReadReply(v));
                None
            }
            Msg::ReadReply(v) => {
                push(&mut queue, now + model::latency(rng), c, Msg::Write(v));
                None
            }
            Msg::Write(v) => {
                state[idx].attempts += 1;
                out.arrivals.push(now);
                let ok = occ.write(v);
                push(
                    &mut queue,
                    now + model::latency(rng),
                    c,
                    Msg::WriteReply(ok),
                );
                None
            }
            Msg::WriteReply(ok) => Some(ok),
        };
        let Some(ok) = done else { continue };
        let client = &mut state[idx];
        let number = client.attempts;
        let ran = now.saturating_sub(client.began);
        let report = |sink: &mut S, status: &Status, verdict, next| {
            sink.emit(&Event::Attempt {
                attempt: number,
                max,
                status,
                verdict,
                duration: ran,
                next,
            });
        };
        let end = |sink: &mut S, end, exit_code, reason: &str| {
            sink.emit(&Event::Done {
                end,
                attempts: number,
                max,
                exit_code,
                reason,
            });
        };
        // A real run stops an attempt still running at --max-time: its
        // answer, even a success, is never seen.
        if deadline.is_some_and(|d| now > d) {
            shared.record(false);
            report(sink, &FAILED, Verdict::Permanent, None);
            end(
                sink,
                End::Deadline,
                28,
                "--max-time ran out during the attempt",
            );
            out.gave_up += 1;
            continue;
        }
        // As a real run does after each attempt: the budget counts it.
        shared.record(ok);
        if ok {
            report(sink, &SUCCEEDED, Verdict::Success, None);
            end(sink, End::Success, 0, "");
            out.successes.push(now);
            continue;
        }
        if max.is_some_and(|m| number >= m) {
            report(sink, &FAILED, Verdict::Retryable, None);
            end(sink, End::Exhausted, 22, "no attempts left");
            out.gave_up += 1;
            continue;
        }
        if policy.reset_after.is_some_and(|r| ran >= r) {
            client.backoff.reset();
        }
        let step = client.backoff.next(rng);
        let own = wait::Input {
            step,
            retry_after: None,
            now,
            deadline,
            pace_slot: None,
        };
        // The same three steps as a real run: the client's own wait, the
        // group's word on it (budget, pace slot), then the wait with the slot.
        let decision = match wait::decide(own) {
            Decision::Sleep { delay, .. } => match shared.plan(now, delay, deadline) {
                fleet::Word::Go { slot } => wait::decide(wait::Input {
                    pace_slot: slot,
                    ..own
                }),
                fleet::Word::BudgetSpent => {
                    report(sink, &FAILED, Verdict::Retryable, None);
                    end(sink, End::Refused, 22, "the group's retry budget is spent");
                    out.gave_up += 1;
                    out.refused += 1;
                    continue;
                }
                fleet::Word::PastDeadline { wait } => {
                    report(sink, &FAILED, Verdict::Retryable, None);
                    let reason = format!(
                        "the group's next pace slot is after --max-time ({} from now)",
                        human(wait)
                    );
                    end(sink, End::Deadline, 22, &reason);
                    out.gave_up += 1;
                    continue;
                }
            },
            other => other,
        };
        match decision {
            Decision::Sleep { until, delay, wait } => {
                report(
                    sink,
                    &FAILED,
                    Verdict::Retryable,
                    Some(Wait {
                        delay: wait,
                        ceiling: step.ceiling,
                        jitter: policy.delay.jitter.name(),
                        paced: wait.saturating_sub(delay),
                    }),
                );
                let client = &mut state[idx];
                client.began = until;
                if first == Msg::Read {
                    push(&mut queue, until + model::latency(rng), c, Msg::Read);
                } else {
                    push(&mut queue, until, c, Msg::Request);
                }
            }
            Decision::GiveUp(why) => {
                report(sink, &FAILED, Verdict::Retryable, None);
                end(sink, End::Deadline, 22, &why.reason());
                out.gave_up += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backoff::Jitter;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
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
        simulate(p, model, n, &mut crate::rng::seeded(seed), &mut Quiet)
    }

    #[test]
    fn one_occ_client_succeeds_at_once() {
        let o = sim(&policy(Jitter::Full, Some(5)), Model::Occ, 1, 1);
        assert_eq!(o.arrivals.len(), 1);
        assert_eq!(o.successes.len(), 1);
        assert_eq!(o.gave_up, 0);
        // Read, reply, write, reply: four one-way messages of about 10 ms.
        let t = o.successes[0];
        assert!(t > ms(20) && t < ms(60), "{t:?}");
    }

    #[test]
    fn occ_lets_exactly_one_write_per_version_through() {
        let o = sim(&policy(Jitter::Full, None), Model::Occ, 50, 7);
        assert_eq!(o.successes.len(), 50);
        assert!(o.arrivals.len() > 50);
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
        assert_eq!(o.arrivals.len(), n as usize * 5);
        for (i, wave) in [0, 100, 300, 700, 1500].iter().enumerate() {
            let at = &o.arrivals[i * n as usize..(i + 1) * n as usize];
            assert!(at.iter().all(|t| *t == ms(*wave)), "wave {i}");
        }
        assert_eq!(o.successes, vec![ms(1500); n as usize]);
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
        assert_eq!((o.arrivals.len(), o.gave_up), (30, 10));
        let mut p = policy(Jitter::None, None);
        p.max_time = Some(ms(1000));
        // 0, 100, 300, 700; the next (1500 ms) is past the deadline.
        let o = sim(&p, Model::Outage { until: ms(60_000) }, 10, 1);
        assert_eq!((o.arrivals.len(), o.gave_up), (40, 10));
    }

    #[test]
    fn an_occ_attempt_running_at_the_deadline_is_cut_off() {
        // One client's attempt takes four ~10 ms messages: a 15 ms deadline
        // stops it before the answer comes back.
        let mut p = policy(Jitter::Full, None);
        p.max_time = Some(ms(15));
        let o = sim(&p, Model::Occ, 1, 1);
        assert_eq!((o.successes.len(), o.gave_up), (0, 1));
        p.max_time = Some(ms(500));
        let o = sim(&p, Model::Occ, 1, 1);
        assert_eq!((o.successes.len(), o.gave_up), (1, 0));
    }

    #[test]
    fn a_seed_gives_the_same_simulation() {
        let p = policy(Jitter::Decorrelated, Some(8));
        let m = Model::Capacity {
            rate: 50.0,
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
                outage: None,
            },
            1000,
            2,
        );
        assert_eq!(o.successes.len(), 1000);
        // 10 at once, then 100/s: the last cannot succeed before ~9.9 s.
        let last = *o.successes.last().expect("successes");
        assert!(last >= ms(9900), "{last:?}");
    }

    fn fleet_sim(p: &Policy, fleet: Fleet, model: Model, n: u32, seed: u64) -> Outcome {
        simulate_fleet(
            p,
            fleet,
            model,
            n,
            &mut crate::rng::seeded(seed),
            &mut Quiet,
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
            outage: Some(ms(3000)),
        };
        for burst in [1, 4] {
            let n = 300;
            let o = fleet_sim(&policy(Jitter::Full, None), paced(50, burst), m, n, 3);
            assert_eq!((o.successes.len(), o.gave_up), (n as usize, 0));
            // The first attempts come first, all at 0 and never paced.
            assert!(o.arrivals[..n as usize].iter().all(|t| t.is_zero()));
            let retries = &o.arrivals[n as usize..];
            assert!(retries.len() > n as usize, "{}", retries.len());
            // Any `burst + 1` retries in a row span at least one interval.
            let b = burst as usize;
            for (i, w) in retries.windows(b + 1).enumerate() {
                assert!(w[b] - w[0] >= ms(20), "burst {burst}, retry {i}: {w:?}");
            }
            // Never more than 100 ms worth of the pace (plus the burst).
            let after = report::busiest(retries, ms(100));
            assert!(after < 5 + u64::from(burst), "burst {burst}: {after}");
        }
        // Unpaced, the same fleet comes back many at a time.
        let o = sim(&policy(Jitter::Full, None), m, 300, 3);
        assert!(report::busiest(&o.arrivals[300..], ms(100)) > 20);
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
        assert_eq!(o.arrivals.len(), 24);
        assert_eq!(&o.arrivals[20..], &[ms(100); 4]);
        assert_eq!((o.gave_up, o.refused), (20, 20));
        // The four that retried find the server back at 100 ms.
        let o = fleet_sim(&p, budget, Model::Outage { until: ms(50) }, 20, 1);
        assert_eq!((o.successes, o.refused), (vec![ms(100); 4], 16));
        // Without the budget, all 20 come back.
        let o = sim(&p, Model::Outage { until: ms(50) }, 20, 1);
        assert_eq!((o.successes.len(), o.gave_up), (20, 0));
    }

    #[test]
    fn a_paced_slot_past_the_deadline_gives_up() {
        // One slot a second, 10 clients, --max-time 3.5 s: the slots at
        // 0.1, 1.1, 2.1 and 3.1 s are taken; the rest would start too late.
        let mut p = policy(Jitter::None, None);
        p.max_time = Some(ms(3500));
        let o = fleet_sim(&p, paced(1, 1), Model::Outage { until: ms(0) }, 10, 1);
        assert_eq!(o.arrivals.len(), 10);
        let o = fleet_sim(&p, paced(1, 1), Model::Outage { until: ms(1) }, 10, 1);
        assert_eq!(o.successes, vec![ms(100), ms(1100), ms(2100), ms(3100)]);
        assert_eq!((o.gave_up, o.refused), (6, 0));
    }

    #[test]
    fn a_seed_gives_the_same_fleet_simulation() {
        let mut f = paced(30, 2);
        f.budget = Some(crate::state::rules::Budget::DEFAULT);
        let p = policy(Jitter::Decorrelated, Some(8));
        let m = Model::Capacity {
            rate: 50.0,
            outage: Some(ms(2000)),
        };
        assert_eq!(fleet_sim(&p, f, m, 300, 9), fleet_sim(&p, f, m, 300, 9));
        assert_ne!(fleet_sim(&p, f, m, 300, 9), fleet_sim(&p, f, m, 300, 10));
    }
}
