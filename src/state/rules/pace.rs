//! GCRA pacing (`--pace RATE`, `--pace-burst N`): the group's retries take
//! slots on one schedule, at most `burst` at once and otherwise one per
//! `interval`. The state is a single number, the theoretical arrival time.

use super::{GroupState, Micros, Plan};

/// `--pace RATE` with `--pace-burst N`: retries of the group start at most one
/// per `interval`, with up to `burst` of them allowed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pace {
    pub interval: Micros,
    pub burst: u32,
}

/// How many slots the schedule may run ahead of a retry's own wake time: a
/// fleet of this many runs all waiting at once. A stored schedule further
/// ahead (from a slower `--pace` than the current one, or another writer)
/// is pulled back to it, so the group's pace can hold a retry off for at
/// most this many intervals of the current RATE beyond its own backoff.
pub const SCHEDULE_AHEAD: u64 = 10_000;

impl Pace {
    /// GCRA's tolerance: how far ahead of the schedule a slot may be taken.
    fn tolerance(self) -> Micros {
        self.interval
            .saturating_mul(u64::from(self.burst.saturating_sub(1)))
    }
}

impl GroupState {
    /// Take the group's next slot at or after `now + delay`, unless it lies
    /// at or past `now + deadline_in` (then nothing changes).
    pub(super) fn take_slot(
        &mut self,
        now: Micros,
        delay: Micros,
        deadline_in: Option<Micros>,
        p: Pace,
    ) -> Plan {
        let earliest = now.saturating_add(delay);
        let latest = earliest.saturating_add(
            p.interval
                .saturating_mul(SCHEDULE_AHEAD.saturating_add(u64::from(p.burst))),
        );
        self.tat = self.tat.min(latest);
        let slot = earliest.max(self.tat.saturating_sub(p.tolerance()));
        let wait = slot - now;
        if deadline_in.is_some_and(|d| wait >= d) {
            return Plan::PastDeadline { wait };
        }
        self.tat = self.tat.max(slot).saturating_add(p.interval);
        Plan::Go {
            wait,
            paced: slot - earliest,
        }
    }
}

impl GroupState {
    /// For `--state-show`: how long until a retry could start, and how many
    /// could start at once now (0 while the next slot is in the future).
    pub fn pace_now(&self, now: Micros, p: Pace) -> (Micros, u32) {
        let tol = p.tolerance();
        let first = self.tat.saturating_sub(tol);
        if first > now {
            return (first - now, 0);
        }
        let ahead = self.tat.saturating_sub(now);
        let free = (tol - ahead) / p.interval.max(1) + 1;
        (0, u32::try_from(free).unwrap_or(u32::MAX).min(p.burst))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Micros = 1000;
    const S: Micros = 1_000_000;

    fn pace(per_sec: u64, burst: u32) -> Option<Pace> {
        Some(Pace {
            interval: S / per_sec,
            burst,
        })
    }

    fn go(p: Plan) -> (Micros, Micros) {
        match p {
            Plan::Go { wait, paced } => (wait, paced),
            other => panic!("expected Go, got {other:?}"),
        }
    }

    #[test]
    fn pace_spaces_simultaneous_retries_one_interval_apart() {
        let mut g = GroupState::default();
        let now = 1_000 * S;
        let waits: Vec<_> = (0..5)
            .map(|_| go(g.plan(now, 0, None, None, pace(20, 1))))
            .collect();
        assert_eq!(
            waits,
            vec![
                (0, 0),
                (50 * MS, 50 * MS),
                (100 * MS, 100 * MS),
                (150 * MS, 150 * MS),
                (200 * MS, 200 * MS)
            ]
        );
    }

    #[test]
    fn pace_slot_is_the_later_of_backoff_and_schedule() {
        let mut g = GroupState::default();
        let now = 10 * S;
        // First retry backs off 300ms: its slot is its own delay.
        assert_eq!(
            go(g.plan(now, 300 * MS, None, None, pace(10, 1))),
            (300 * MS, 0)
        );
        // The next slot is 400ms; a retry wanting 100ms waits 300ms more.
        assert_eq!(
            go(g.plan(now, 100 * MS, None, None, pace(10, 1))),
            (400 * MS, 300 * MS)
        );
        // A retry wanting 2s is past the schedule: no pacing.
        assert_eq!(go(g.plan(now, 2 * S, None, None, pace(10, 1))), (2 * S, 0));
        assert_eq!(g.tat, now + 2 * S + 100 * MS);
    }

    #[test]
    fn pace_burst_lets_n_go_at_once_then_spaces() {
        let mut g = GroupState::default();
        let now = 5 * S;
        let waits: Vec<_> = (0..6)
            .map(|_| go(g.plan(now, 0, None, None, pace(10, 3))).0)
            .collect();
        assert_eq!(waits, vec![0, 0, 0, 100 * MS, 200 * MS, 300 * MS]);
    }

    #[test]
    fn pace_schedule_recovers_when_idle() {
        let mut g = GroupState::default();
        go(g.plan(S, 0, None, None, pace(1, 2)));
        go(g.plan(S, 0, None, None, pace(1, 2)));
        // Long after, the burst is available again.
        let later = 100 * S;
        assert_eq!(go(g.plan(later, 0, None, None, pace(1, 2))).0, 0);
        assert_eq!(go(g.plan(later, 0, None, None, pace(1, 2))).0, 0);
        assert_eq!(go(g.plan(later, 0, None, None, pace(1, 2))).0, S);
    }

    #[test]
    fn pace_slot_past_the_deadline_is_not_taken() {
        let mut g = GroupState::default();
        let now = S;
        go(g.plan(now, 0, Some(S), None, pace(2, 1)));
        let before = g;
        // Next slot is at +500ms; a deadline 400ms away refuses it.
        assert_eq!(
            g.plan(now, 0, Some(400 * MS), None, pace(2, 1)),
            Plan::PastDeadline { wait: 500 * MS }
        );
        assert_eq!(g, before);
        // Exactly at the deadline is past it too: no attempt starts at the deadline.
        assert_eq!(
            g.plan(now, 0, Some(500 * MS), None, pace(2, 1)),
            Plan::PastDeadline { wait: 500 * MS }
        );
        assert_eq!(
            go(g.plan(now, 0, Some(501 * MS), None, pace(2, 1))),
            (500 * MS, 500 * MS)
        );
    }

    #[test]
    fn pace_schedule_far_ahead_is_pulled_back_to_what_the_rate_allows() {
        let far = 259 * 365 * 24 * 3600 * S;
        let mut g = GroupState {
            tat: far,
            ..GroupState::default()
        };
        let now = 10 * S;
        // At 20/s the schedule may run 10,000 slots (500s) ahead of the wake time.
        let (wait, paced) = go(g.plan(now, 100 * MS, None, None, pace(20, 1)));
        assert_eq!(paced, 500 * S + 50 * MS);
        assert_eq!(wait, 100 * MS + paced);
        assert_eq!(g.tat, now + wait + 50 * MS);
        // A schedule within the bound is kept as it is.
        let mut g = GroupState {
            tat: now + 3 * S,
            ..GroupState::default()
        };
        assert_eq!(go(g.plan(now, 0, None, None, pace(20, 1))), (3 * S, 3 * S));
        assert_eq!(g.tat, now + 3 * S + 50 * MS);
    }

    #[test]
    fn pace_now_counts_the_free_burst_slots() {
        let p = Pace {
            interval: 100 * MS,
            burst: 3,
        };
        let now = 10 * S;
        let mut g = GroupState::default();
        assert_eq!(g.pace_now(now, p), (0, 3));
        go(g.plan(now, 0, None, None, Some(p)));
        assert_eq!(g.pace_now(now, p), (0, 2));
        go(g.plan(now, 0, None, None, Some(p)));
        assert_eq!(g.pace_now(now, p), (0, 1));
        go(g.plan(now, 0, None, None, Some(p)));
        // All three taken: the next is one interval away.
        assert_eq!(g.pace_now(now, p), (100 * MS, 0));
        assert_eq!(g.pace_now(now + 100 * MS, p), (0, 1));
        assert_eq!(g.pace_now(now + 250 * MS, p), (0, 2));
        assert_eq!(g.pace_now(now + S, p), (0, 3));
        // Burst 1: free now, or not.
        let one = Pace {
            interval: 100 * MS,
            burst: 1,
        };
        let g = GroupState {
            tat: now + 76 * MS,
            ..GroupState::default()
        };
        assert_eq!(g.pace_now(now, one), (76 * MS, 0));
        assert_eq!(g.pace_now(now + 76 * MS, one), (0, 1));
    }
}
