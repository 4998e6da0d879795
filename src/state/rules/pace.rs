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
}
