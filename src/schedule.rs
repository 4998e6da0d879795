//! `--dry-run`: the delay schedule a policy produces, as a table.
//!
//! Pure: draws from the same `backoff` code as a real run, with the same seed,
//! so the table shows exactly the waits a run with that seed would make
//! (as long as no attempt outlasts `--reset-after`).

use std::fmt::Write;
use std::time::Duration;

use rand::Rng;

use crate::backoff::{Backoff, Growth, Jitter};
use crate::log::{human, shell_line};
use crate::policy::Policy;

/// Rows shown for `--forever`, which has no last retry.
const FOREVER_ROWS: u32 = 20;

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

/// The schedule: rows until the attempts run out, `--max-time` would be
/// passed, or [`FOREVER_ROWS`] for `--forever`.
pub fn rows<R: Rng + ?Sized>(policy: &Policy, rng: &mut R) -> (Vec<Row>, bool) {
    let retries = policy
        .max_attempts
        .map_or(FOREVER_ROWS, |m| m.saturating_sub(1));
    let mut backoff = Backoff::new(policy.delay);
    let mut total = Duration::ZERO;
    let mut out = Vec::new();
    for _ in 0..retries {
        let step = backoff.next(rng);
        total = total.saturating_add(step.delay);
        if policy.max_time.is_some_and(|m| total >= m) {
            return (out, true);
        }
        out.push(Row {
            retry: step.retry,
            ceiling: step.ceiling,
            delay: step.delay,
            total,
            worst: policy.delay.worst_case(step.retry),
        });
    }
    (out, false)
}

/// The printed report.
pub fn render(
    policy: &Policy,
    seed: u64,
    command: &[std::ffi::OsString],
    rows: &[Row],
    cut_by_deadline: bool,
) -> String {
    let d = &policy.delay;
    let mut s = String::new();
    let growth = match d.growth {
        Growth::Exponential { multiplier } => format!("exponential x{multiplier}"),
        Growth::Linear => "linear".to_string(),
        Growth::Fixed => "fixed".to_string(),
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
    let _ = writeln!(
        s,
        "{attempts}; {growth} backoff from {} to {}; {jitter}; seed {seed}",
        human(d.base),
        human(d.cap)
    );
    if !command.is_empty() {
        let _ = writeln!(s, "command: {}", shell_line(command));
    }
    if let Some(m) = policy.max_time {
        let _ = writeln!(s, "deadline: --max-time {}", human(m));
    }
    let _ = writeln!(
        s,
        "{:>5}  {:>7}  {:>12}  {:>12}  {:>12}",
        "retry", "attempt", "ceiling", "delay", "total wait"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:>5}  {:>7}  {:>12}  {:>12}  {:>12}",
            r.retry,
            r.retry + 1,
            human(r.ceiling),
            human(r.delay),
            human(r.total)
        );
    }
    let worst = rows
        .iter()
        .fold(Duration::ZERO, |acc, r| acc.saturating_add(r.worst));
    let worst = policy.max_time.map_or(worst, |m| worst.min(m));
    if rows.is_empty() && !cut_by_deadline {
        let _ = writeln!(s, "no retries: the command runs once");
    }
    if cut_by_deadline {
        let _ = writeln!(
            s,
            "the next retry would start after --max-time: retry gives up there"
        );
    } else if policy.max_attempts.is_none() {
        let _ = writeln!(
            s,
            "... and on without limit, each wait at most {}",
            human(policy.delay.worst_case(u32::MAX))
        );
    }
    let _ = writeln!(
        s,
        "worst case: {} of waiting over {} retr{} (any seed; plus the attempts' own run time)",
        human(worst),
        rows.len(),
        if rows.len() == 1 { "y" } else { "ies" }
    );
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
        let (rows, cut) = rows(&policy(Some(5), None), &mut StdRng::seed_from_u64(1));
        assert!(!cut);
        let totals: Vec<u64> = rows.iter().map(|r| r.total.as_secs()).collect();
        assert_eq!(totals, vec![1, 3, 7, 15]);
    }

    #[test]
    fn max_time_cuts_the_schedule() {
        let (rows, cut) = rows(
            &policy(Some(10), Some(Duration::from_secs(10))),
            &mut StdRng::seed_from_u64(1),
        );
        assert!(cut);
        assert_eq!(rows.len(), 3);
    }

    #[test]
    fn forever_shows_a_bounded_table() {
        let p = policy(None, None);
        let (rows, _) = rows(&p, &mut StdRng::seed_from_u64(1));
        assert_eq!(rows.len(), FOREVER_ROWS as usize);
        let text = render(&p, 1, &[], &rows, false);
        assert!(text.contains("on without limit"));
    }
}
