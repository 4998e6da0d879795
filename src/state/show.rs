//! `--state-show`: what a group has stored, in words.
//!
//! Read only: nothing is created or changed, not even a directory or a lock
//! file. The flags given say how to read what is stored (TOKENS for the
//! budget's count, the pace's burst for free slots, the breaker's
//! threshold); without them, what is stored is shown as it is.

use std::time::Duration;

use super::rules::{Breaker, Budget, GroupState, Micros, Pace};
use super::session::located;
use super::{AnyStore, Features, Store};
use crate::human::human;

/// The group's state as `--state-show` prints it on stdout.
pub async fn show(features: &Features) -> anyhow::Result<String> {
    let failed = |at: &str, e: &anyhow::Error| anyhow::Error::msg(located(at, e));
    let at = features
        .at
        .resolve()
        .map_err(|why| failed(&features.at.shown(), &anyhow::Error::msg(why)))?;
    let shown = at.shown();
    let mut store = AnyStore::new(
        &at,
        features.password_file.as_deref(),
        features.cacert.as_deref(),
    )
    .map_err(|e| failed(&shown, &e))?;
    let (now, state) = store
        .show(&features.group)
        .await
        .map_err(|e| failed(&shown, &e))?;
    let mut out = format!("group:   {}\nstore:   {shown}\n", features.group);
    match state {
        None => out.push_str("state:   nothing is stored for this group\n"),
        Some(s) => {
            out.push_str(&format!("pace:    {}\n", pace_line(&s, now, features.pace)));
            out.push_str(&format!("budget:  {}\n", budget_line(&s, features.budget)));
            out.push_str(&format!(
                "breaker: {}\n",
                breaker_line(&s, now, features.breaker)
            ));
        }
    }
    Ok(out)
}

fn after(us: Micros) -> String {
    human(Duration::from_micros(us))
}

fn pace_line(s: &GroupState, now: Micros, pace: Option<Pace>) -> String {
    let ahead = s.tat.saturating_sub(now);
    let Some(p) = pace else {
        return if ahead == 0 {
            "no retry scheduled: the next slot is free now".to_string()
        } else {
            format!(
                "slots taken until {} from now (give --pace and --pace-burst for when the next is free)",
                after(ahead)
            )
        };
    };
    // A stored schedule is bounded as a retry would bound it.
    let mut s = *s;
    let _ = s.plan(now, 0, Some(0), None, Some(p));
    match s.pace_now(now, p) {
        (0, free) if p.burst > 1 => {
            format!("a retry may start now ({free} of {} slots free)", p.burst)
        }
        (0, _) => "a retry may start now: the next slot is free".to_string(),
        (wait, _) => format!("next free slot in {}", after(wait)),
    }
}

fn budget_line(s: &GroupState, budget: Option<Budget>) -> String {
    let Some(b) = budget else {
        return match s.tokens_milli {
            Some(left) => format!(
                "{} tokens left, as an earlier version of retry stored it (give --budget TOKENS for the count)",
                left as f64 / 1000.0
            ),
            None => format!(
                "{} tokens spent (retries stop once TOKENS/2 are; give --budget TOKENS for the count)",
                s.spent_milli.max(0) as f64 / 1000.0
            ),
        };
    };
    let max = b.max_milli as f64 / 1000.0;
    let count = s.tokens_for(b);
    format!(
        "{count} of {max} tokens; retries {} (they need more than {})",
        if count * 2.0 > max {
            "allowed"
        } else {
            "refused"
        },
        max / 2.0
    )
}

fn breaker_line(s: &GroupState, now: Micros, breaker: Option<Breaker>) -> String {
    // Bounded by the flags given, as the next run would see it.
    let open_until = match breaker {
        Some(b) if s.open_until != 0 => s.open_until.min(now.saturating_add(b.cooldown).max(1)),
        _ => s.open_until,
    };
    if open_until == 0 {
        match breaker {
            Some(b) => format!(
                "closed ({} consecutive failed runs; opens at {})",
                s.failures, b.threshold
            ),
            None => format!("closed ({} consecutive failed runs)", s.failures),
        }
    } else if now < open_until {
        format!(
            "open ({} consecutive failed runs); half-open in {}",
            s.failures,
            after(open_until - now)
        )
    } else if now < s.trial_until {
        format!(
            "half-open, a trial run under way (its lease ends in {})",
            after(s.trial_until - now)
        )
    } else {
        "half-open: the next run is its trial".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Micros = 1_000_000;
    const MS: Micros = 1000;

    #[test]
    fn pace_with_burst_slots_left_says_a_retry_may_start_now() {
        let now = 100 * S;
        let s = GroupState {
            tat: now + 76 * MS,
            ..GroupState::default()
        };
        let three = Pace {
            interval: 100 * MS,
            burst: 3,
        };
        assert_eq!(
            pace_line(&s, now, Some(three)),
            "a retry may start now (2 of 3 slots free)"
        );
        let one = Pace {
            interval: 100 * MS,
            burst: 1,
        };
        assert_eq!(pace_line(&s, now, Some(one)), "next free slot in 76ms");
        assert!(pace_line(&s, now, None).starts_with("slots taken until 76ms from now"));
    }

    #[test]
    fn budget_without_flags_shows_what_is_stored() {
        let s = GroupState {
            spent_milli: 9_000,
            ..GroupState::default()
        };
        assert!(budget_line(&s, None).starts_with("9 tokens spent"));
        let b = Budget {
            max_milli: 1_000_000,
            ratio_milli: 100,
        };
        assert_eq!(
            budget_line(&s, Some(b)),
            "991 of 1000 tokens; retries allowed (they need more than 500)"
        );
    }

    #[test]
    fn breaker_shown_as_the_next_run_would_see_it() {
        let now = 100 * S;
        let s = GroupState {
            failures: 3,
            open_until: now + 3_600 * S,
            ..GroupState::default()
        };
        assert_eq!(
            breaker_line(&s, now, None),
            "open (3 consecutive failed runs); half-open in 1h"
        );
        let b = Breaker {
            threshold: 3,
            cooldown: 2 * S,
        };
        assert_eq!(
            breaker_line(&s, now, Some(b)),
            "open (3 consecutive failed runs); half-open in 2s"
        );
    }
}
