//! `--dry-run`: the delay schedule a policy produces, as a table.
//!
//! Pure: a one-client run of the simulator against a server that always
//! fails, drawing from the same `backoff` and `wait` code as a real run with
//! the same seed, so the table shows exactly the waits a run with that seed
//! would make (as long as no attempt outlasts `--reset-after`).

use std::fmt::Write;
use std::time::Duration;

use rand::Rng;

use crate::backoff::{Growth, Jitter};
use crate::event::{End, Event, Sink, Wait};
use crate::human::{human, shell_line};
use crate::retry_policy::Policy;
use crate::sim::Model;

/// Most rows shown: `--forever` has no last retry, and a huge `--max`
/// would print for ever. The remainder is summarised in one line.
const MAX_ROWS: u32 = 50;

/// One retry in the schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub retry: u32,
    pub ceiling: Duration,
    pub delay: Duration,
    /// Waiting so far, this delay included.
    pub total: Duration,
    /// The largest this retry's delay can be under any seed.
    pub worst: Duration,
}

/// The schedule for a policy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub rows: Vec<Row>,
    /// The next retry would start after `--max-time`: the run gives up there.
    pub cut_by_deadline: bool,
    /// Retries after the last row shown (None: without limit).
    pub more: Option<u64>,
}

/// The schedule: rows until the attempts run out, `--max-time` would be
/// passed, or [`MAX_ROWS`]. It is a one-client simulation against a server
/// that always fails, so the waits come from the very code a real run uses.
/// Attempts take no time here, so `--reset-after` never applies.
pub fn schedule<R: Rng + ?Sized>(policy: &Policy, rng: &mut R) -> Schedule {
    let retries = policy.max_attempts.map(|m| u64::from(m.saturating_sub(1)));
    let shown = retries.map_or(MAX_ROWS, |r| r.min(u64::from(MAX_ROWS)) as u32);
    let one = Policy {
        max_attempts: Some(shown + 1),
        reset_after: None,
        ..policy.clone()
    };
    let mut rec = Recorder::default();
    crate::sim::simulate(&one, Model::AlwaysFail, 1, rng, &mut rec);
    let mut total = Duration::ZERO;
    let rows = rec
        .waits
        .iter()
        .zip(1u32..)
        .map(|(w, retry)| {
            total = total.saturating_add(w.delay);
            Row {
                retry,
                ceiling: w.ceiling,
                delay: w.delay,
                total,
                worst: policy.delay.worst_case(retry),
            }
        })
        .collect();
    if rec.end == Some(End::Deadline) {
        return Schedule {
            rows,
            cut_by_deadline: true,
            more: Some(0),
        };
    }
    Schedule {
        rows,
        cut_by_deadline: false,
        more: retries.map(|r| r - u64::from(shown)),
    }
}

/// What the one simulated client reported.
#[derive(Default)]
struct Recorder {
    waits: Vec<Wait>,
    end: Option<End>,
}

impl Sink for Recorder {
    type Countdown = ();
    fn emit(&mut self, event: &Event<'_>) {
        match event {
            Event::Attempt { next: Some(w), .. } => self.waits.push(*w),
            Event::Done { ending, .. } => self.end = Some(ending.end),
            _ => {}
        }
    }
    fn countdown(&self, _: Duration, _: u32, _: Option<u32>) {}
}

/// The printed report.
pub fn render(
    policy: &Policy,
    seed: u64,
    command: &[std::ffi::OsString],
    sched: &Schedule,
) -> String {
    let d = &policy.delay;
    let mut s = heading(policy, seed, command);
    let _ = writeln!(
        s,
        "{:>5}  {:>7}  {:>12}  {:>12}  {:>12}",
        "retry", "attempt", "ceiling", "delay", "total wait"
    );
    for r in &sched.rows {
        let _ = writeln!(
            s,
            "{:>5}  {:>7}  {:>12}  {:>12}  {:>12}",
            r.retry,
            u64::from(r.retry) + 1,
            human(r.ceiling),
            human(r.delay),
            human(r.total)
        );
    }
    let longest = d.worst_case(u32::MAX);
    let mut worst = sched
        .rows
        .iter()
        .fold(Duration::ZERO, |acc, r| acc.saturating_add(r.worst));
    if sched.rows.is_empty() && !sched.cut_by_deadline {
        let _ = writeln!(s, "no retries: the command runs once");
    }
    if sched.cut_by_deadline {
        let _ = writeln!(
            s,
            "the next retry would start after --max-time, with too little time left to draw it again: retry gives up there"
        );
    }
    match sched.more {
        None => {
            let _ = writeln!(
                s,
                "... and on without limit, each wait at most {}",
                human(longest)
            );
        }
        Some(0) => {}
        Some(n) => {
            let _ = writeln!(
                s,
                "... and {n} more retries, each wait at most {}",
                human(longest)
            );
            let extra = u32::try_from(n).map_or(Duration::MAX, |n| longest.saturating_mul(n));
            worst = worst.saturating_add(extra);
        }
    }
    if let Some(m) = policy.max_time {
        worst = worst.min(m);
    }
    let retries = sched.rows.len() as u64 + sched.more.unwrap_or(0);
    if sched.more.is_some() {
        let _ = writeln!(
            s,
            "worst case: {} of waiting over {retries} retr{} (any seed; plus the attempts' own run time)",
            human(worst),
            if retries == 1 { "y" } else { "ies" }
        );
    }
    s
}

/// The schedule's heading: attempts, shape, jitter and seed; the command,
/// the deadline and the stagger when there are.
fn heading(policy: &Policy, seed: u64, command: &[std::ffi::OsString]) -> String {
    let d = &policy.delay;
    let mut s = String::new();
    let shape = match (d.jitter, d.growth) {
        // Decorrelated jitter grows from the previous delay: no growth kind applies.
        (Jitter::Decorrelated, _) => format!(
            "delays from {} to {}, each at most 3x the last (growth settings do not apply)",
            human(d.base),
            human(d.cap)
        ),
        (_, growth) => {
            let growth = match growth {
                Growth::Exponential { multiplier } => format!("exponential x{multiplier}"),
                Growth::Linear => "linear".to_string(),
                Growth::Fixed => "fixed".to_string(),
            };
            format!(
                "{growth} backoff from {} to {}",
                human(d.base),
                human(d.cap)
            )
        }
    };
    let jitter = match d.jitter {
        Jitter::Additive { max } => format!("additive jitter up to {}", human(max)),
        Jitter::None => "no jitter".to_string(),
        j => format!("{} jitter", j.name()),
    };
    let attempts = match policy.max_attempts {
        Some(1) => "1 attempt".to_string(),
        Some(m) => format!("up to {m} attempts"),
        None => "attempts without limit".to_string(),
    };
    let _ = writeln!(s, "{attempts}; {shape}; {jitter}; seed {seed}");
    if !command.is_empty() {
        let _ = writeln!(s, "command: {}", shell_line(command));
    }
    if let Some(m) = policy.max_time {
        let _ = writeln!(
            s,
            "deadline: --max-time {}; a wait that would pass it is drawn again in the time left",
            human(m)
        );
    }
    if let Some(spread) = policy.stagger {
        // The run's first draw, as a real run with this seed makes it.
        let first = crate::wait::stagger(Some(spread), &mut crate::rng::seeded(seed));
        let _ = writeln!(
            s,
            "stagger: attempt 1 after {} (--stagger {}: uniform from 0)",
            human(first),
            human(spread)
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    fn policy(max: Option<u32>, max_time: Option<Duration>) -> Policy {
        let mut p = Policy {
            max_attempts: max,
            max_time,
            ..Policy::default()
        };
        p.delay.jitter = Jitter::None;
        p
    }

    #[test]
    fn one_row_per_retry_with_running_total() {
        let sched = schedule(&policy(Some(5), None), &mut StdRng::seed_from_u64(1));
        assert!(!sched.cut_by_deadline);
        assert_eq!(sched.more, Some(0));
        let totals: Vec<u64> = sched.rows.iter().map(|r| r.total.as_secs()).collect();
        assert_eq!(totals, vec![1, 3, 7, 15]);
    }

    #[test]
    fn max_time_cuts_the_schedule() {
        let sched = schedule(
            &policy(Some(10), Some(Duration::from_secs(10))),
            &mut StdRng::seed_from_u64(1),
        );
        assert!(sched.cut_by_deadline);
        // 1s, 2s, 4s; 8s drawn again to end 8s/60 before the deadline.
        let delays: Vec<Duration> = sched.rows.iter().map(|r| r.delay).collect();
        assert_eq!(
            delays,
            [
                Duration::from_secs(1),
                Duration::from_secs(2),
                Duration::from_secs(4),
                Duration::from_nanos(2_866_666_667)
            ]
        );
    }

    #[test]
    fn forever_shows_a_bounded_table() {
        let p = policy(None, None);
        let sched = schedule(&p, &mut StdRng::seed_from_u64(1));
        assert_eq!(sched.rows.len(), MAX_ROWS as usize);
        assert_eq!(sched.more, None);
        let text = render(&p, 1, &[], &sched);
        assert!(text.contains("on without limit"));
        assert!(!text.contains("worst case"));
    }

    #[test]
    fn a_huge_max_is_summarised_not_printed() {
        let p = policy(Some(u32::MAX), None);
        let sched = schedule(&p, &mut StdRng::seed_from_u64(1));
        assert_eq!(sched.rows.len(), MAX_ROWS as usize);
        assert_eq!(
            sched.more,
            Some(u64::from(u32::MAX) - 1 - u64::from(MAX_ROWS))
        );
        let text = render(&p, 1, &[], &sched);
        assert!(
            text.contains("more retries, each wait at most 30s"),
            "{text}"
        );
    }

    /// When each retry of `retry --dry-run --max-time D --seed S` starts
    /// (the default policy; attempts take no time here).
    fn starts(max_time: Duration, seed: u64) -> Vec<Duration> {
        let p = Policy {
            max_attempts: None,
            max_time: Some(max_time),
            ..Policy::default()
        };
        let sched = schedule(&p, &mut crate::rng::seeded(seed));
        assert!(sched.cut_by_deadline, "seed {seed}: {sched:?}");
        sched.rows.iter().map(|r| r.total).collect()
    }

    const SIZES: [u64; 5] = [5, 10, 15, 20, 60];

    #[test]
    fn a_short_deadline_is_used_as_fully_as_a_long_one_and_a_fleet_still_spreads() {
        for secs in SIZES {
            let d = Duration::from_secs(secs);
            let lasts: Vec<Duration> = (1..=300)
                .map(|seed| *starts(d, seed).last().expect("a retry"))
                .collect();
            // The promise: after 80 % of the deadline in 95 % of the runs.
            let late = lasts.iter().filter(|t| **t > d * 4 / 5).count();
            assert!(late >= 285, "{secs}s: {late} of 300 after 80 %");
            // The rule behind it: within a twelfth of the deadline (5s of 1m)
            // for every seed, before its end.
            for (seed, t) in (1..).zip(&lasts) {
                assert!(*t >= d - d / 12 && *t < d, "{secs}s, seed {seed}: {t:?}");
            }
            // As 300 runs that failed at once, their last attempts spread
            // over the end of the deadline, not piled on one instant before
            // it: no sixtieth of the deadline holds a third of them.
            let mut bins = [0u32; 60];
            for t in &lasts {
                bins[(t.as_nanos() * 60 / d.as_nanos()) as usize] += 1;
            }
            let busiest = bins.iter().max().copied().unwrap_or(0);
            assert!(busiest < 100, "{secs}s: {bins:?}");
            assert!(
                bins.iter().filter(|b| **b > 0).count() >= 4,
                "{secs}s: {bins:?}"
            );
        }
    }

    #[test]
    fn a_short_deadline_gave_up_with_a_third_of_it_unused() {
        // `retry --max-time 5s --seed 4 -- false` gave up 2.8s in.
        let last = *starts(Duration::from_secs(5), 4).last().expect("a retry");
        assert!(last > Duration::from_millis(4_500), "{last:?}");
        // `--max-time 10s --seed 52` against a port opening at 7s gave up
        // at 5.2s.
        let s = starts(Duration::from_secs(10), 52);
        assert!(s.iter().any(|t| *t >= Duration::from_secs(7)), "{s:?}");
    }

    #[test]
    fn a_port_opening_at_four_fifths_of_the_deadline_is_reached_by_every_seed() {
        for secs in [10, 20] {
            let d = Duration::from_secs(secs);
            for seed in 1..=20 {
                let s = starts(d, seed);
                assert!(
                    s.iter().any(|t| *t >= d * 4 / 5 && *t < d),
                    "{secs}s, seed {seed}: {s:?}"
                );
            }
        }
    }
}
