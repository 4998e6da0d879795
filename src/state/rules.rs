//! The pure rules of shared state: GCRA pacing, the retry budget and the
//! circuit breaker, applied to one group's state at a time given by the store.
//!
//! No I/O and no clock: every function takes `now` in microseconds on the
//! store's clock (the local wall clock, or the Redis server's `TIME`). The Lua
//! scripts of the Redis store implement these same rules; the store tests run
//! both stores through the same sequences.

use serde::{Deserialize, Serialize};

/// Microseconds on the store's clock.
pub type Micros = u64;

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

/// `--budget TOKENS[:RATIO]`, in thousandths of a token so that the count is
/// exact integer arithmetic in both stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    pub max_milli: i64,
    pub ratio_milli: i64,
}

impl Budget {
    pub const DEFAULT: Budget = Budget {
        max_milli: 100_000,
        ratio_milli: 100,
    };
}

/// `--breaker THRESHOLD[:COOLDOWN]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Breaker {
    pub threshold: u32,
    pub cooldown: Micros,
}

impl Breaker {
    pub const DEFAULT: Breaker = Breaker {
        threshold: 5,
        cooldown: 30_000_000,
    };
}

/// One group's shared state, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GroupState {
    /// GCRA's theoretical arrival time: the next slot on the schedule.
    #[serde(default)]
    pub tat: Micros,
    /// The budget count in thousandths; None until first used (then it starts full).
    #[serde(default)]
    pub tokens_milli: Option<i64>,
    /// Consecutive failed invocations.
    #[serde(default)]
    pub failures: u32,
    /// While the circuit is open: when it turns half-open. 0 when closed.
    #[serde(default)]
    pub open_until: Micros,
    /// While a half-open trial runs: when its lease ends. 0 when none runs.
    #[serde(default)]
    pub trial_until: Micros,
}

/// The breaker's answer before an invocation's first attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admit {
    /// Closed: run as usual.
    Closed,
    /// Half-open: this invocation is the one trial; its outcome decides.
    Trial,
    /// Open: do not run; the circuit may let a trial through after `wait`.
    Open { wait: Micros },
    /// Half-open with another invocation's trial under way (its lease ends after `wait`).
    TrialUnderWay { wait: Micros },
}

/// The answer before a wait: may this retry go, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// Start the retry `wait` from now; `paced` of it is the group's pace
    /// beyond the retry's own delay.
    Go { wait: Micros, paced: Micros },
    /// The budget is spent: the count is at or below half of TOKENS.
    BudgetSpent { tokens_milli: i64 },
    /// The group's next free slot lies `wait` from now, past the deadline:
    /// the slot was not taken.
    PastDeadline { wait: Micros },
}

impl GroupState {
    fn tokens(&self, budget: Budget) -> i64 {
        self.tokens_milli
            .unwrap_or(budget.max_milli)
            .min(budget.max_milli)
    }

    /// An attempt ended: a failure takes one token, a success gives back RATIO.
    pub fn record(&mut self, budget: Budget, success: bool) {
        let t = self.tokens(budget);
        self.tokens_milli = Some(if success {
            t.saturating_add(budget.ratio_milli).min(budget.max_milli)
        } else {
            t.saturating_sub(1000).max(0)
        });
    }

    /// Before a wait: ask the budget, then take the group's next pace slot at
    /// or after `now + delay`, unless it lies at or past `now + deadline_in`.
    /// Nothing changes when the retry is refused.
    pub fn plan(
        &mut self,
        now: Micros,
        delay: Micros,
        deadline_in: Option<Micros>,
        budget: Option<Budget>,
        pace: Option<Pace>,
    ) -> Plan {
        if let Some(b) = budget {
            let t = self.tokens(b);
            // Allowed only while the count is above TOKENS/2 (2t > max avoids rounding).
            if t.saturating_mul(2) <= b.max_milli {
                return Plan::BudgetSpent { tokens_milli: t };
            }
        }
        let earliest = now.saturating_add(delay);
        let Some(p) = pace else {
            return Plan::Go {
                wait: delay,
                paced: 0,
            };
        };
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

    /// Before an invocation's first attempt. A trial holds its place for
    /// `lease`: long enough to finish, short enough that a trial that never
    /// reports (killed, host gone) cannot keep the circuit stuck half-open.
    pub fn admit(&mut self, now: Micros, lease: Micros) -> Admit {
        if self.open_until == 0 {
            return Admit::Closed;
        }
        if now < self.open_until {
            return Admit::Open {
                wait: self.open_until - now,
            };
        }
        if now < self.trial_until {
            return Admit::TrialUnderWay {
                wait: self.trial_until - now,
            };
        }
        self.trial_until = now.saturating_add(lease.max(1));
        Admit::Trial
    }

    /// An invocation ended; `trial` says whether `admit` made it the trial.
    pub fn finish(&mut self, now: Micros, breaker: Breaker, success: bool, trial: bool) {
        if success {
            self.failures = 0;
            self.open_until = 0;
            self.trial_until = 0;
            return;
        }
        self.failures = self.failures.saturating_add(1);
        if trial {
            self.open_until = now.saturating_add(breaker.cooldown).max(1);
            self.trial_until = 0;
        } else if self.open_until == 0 && self.failures >= breaker.threshold {
            // Late failures of runs admitted before the circuit opened do not
            // push the cooldown further out.
            self.open_until = now.saturating_add(breaker.cooldown).max(1);
        }
    }

    /// The budget count in tokens, for `--state-show`.
    pub fn tokens_for(&self, budget: Budget) -> f64 {
        self.tokens(budget) as f64 / 1000.0
    }
}

/// One read-modify-write of a group's state, as a store carries it out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Admit {
        lease: Micros,
    },
    Record {
        budget: Budget,
        success: bool,
    },
    Plan {
        delay: Micros,
        deadline_in: Option<Micros>,
        budget: Option<Budget>,
        pace: Option<Pace>,
    },
    Finish {
        breaker: Breaker,
        success: bool,
        trial: bool,
    },
    /// Read only, for `--state-show`.
    Show,
}

/// A store's answer to an [`Op`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reply {
    Admit(Admit),
    Plan(Plan),
    Done,
    Show { now: Micros, state: GroupState },
}

/// Apply `op` to `state` at `now`: the whole of what a store does under its lock.
pub fn apply(state: &mut GroupState, now: Micros, op: Op) -> Reply {
    match op {
        Op::Admit { lease } => Reply::Admit(state.admit(now, lease)),
        Op::Record { budget, success } => {
            state.record(budget, success);
            Reply::Done
        }
        Op::Plan {
            delay,
            deadline_in,
            budget,
            pace,
        } => Reply::Plan(state.plan(now, delay, deadline_in, budget, pace)),
        Op::Finish {
            breaker,
            success,
            trial,
        } => {
            state.finish(now, breaker, success, trial);
            Reply::Done
        }
        Op::Show => Reply::Show { now, state: *state },
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
    fn without_pace_the_wait_is_the_delay() {
        let mut g = GroupState::default();
        assert_eq!(go(g.plan(S, 7 * MS, Some(S), None, None)), (7 * MS, 0));
        assert_eq!(g, GroupState::default());
    }

    const B: Budget = Budget {
        max_milli: 10_000,
        ratio_milli: 500,
    };

    #[test]
    fn budget_starts_full_and_failures_take_one() {
        let mut g = GroupState::default();
        assert_eq!(g.tokens_for(B), 10.0);
        g.record(B, false);
        assert_eq!(g.tokens_milli, Some(9_000));
    }

    #[test]
    fn budget_refuses_at_half_and_below() {
        let mut g = GroupState::default();
        for _ in 0..4 {
            g.record(B, false);
        }
        // 6 > 10/2: allowed.
        assert!(matches!(g.plan(S, 0, None, Some(B), None), Plan::Go { .. }));
        g.record(B, false);
        // 5 is not above 5: refused, and nothing else changes.
        let before = g;
        assert_eq!(
            g.plan(S, 0, None, Some(B), pace(1, 1)),
            Plan::BudgetSpent {
                tokens_milli: 5_000
            }
        );
        assert_eq!(g, before);
        // One success gives back 0.5: 5.5 > 5 allows again.
        g.record(B, true);
        assert!(matches!(g.plan(S, 0, None, Some(B), None), Plan::Go { .. }));
    }

    #[test]
    fn budget_count_has_a_floor_and_a_cap() {
        let mut g = GroupState::default();
        for _ in 0..30 {
            g.record(B, false);
        }
        assert_eq!(g.tokens_milli, Some(0));
        for _ in 0..100 {
            g.record(B, true);
        }
        assert_eq!(g.tokens_milli, Some(10_000));
        // A smaller TOKENS from another invocation caps what it sees.
        let small = Budget {
            max_milli: 4_000,
            ratio_milli: 100,
        };
        assert_eq!(g.tokens_for(small), 4.0);
        g.record(small, false);
        assert_eq!(g.tokens_milli, Some(3_000));
    }

    #[test]
    fn budget_odd_tokens_threshold_is_exact() {
        // TOKENS 3: allowed above 1.5, so at 2 yes and at 1 no.
        let b = Budget {
            max_milli: 3_000,
            ratio_milli: 100,
        };
        let mut g = GroupState::default();
        g.record(b, false);
        assert!(matches!(g.plan(S, 0, None, Some(b), None), Plan::Go { .. }));
        g.record(b, false);
        assert!(matches!(
            g.plan(S, 0, None, Some(b), None),
            Plan::BudgetSpent { .. }
        ));
    }

    const BR: Breaker = Breaker {
        threshold: 3,
        cooldown: 10 * S,
    };

    #[test]
    fn breaker_opens_after_threshold_consecutive_failures() {
        let mut g = GroupState::default();
        for i in 0..2 {
            assert_eq!(g.admit(i * S, BR.cooldown), Admit::Closed);
            g.finish(i * S, BR, false, false);
        }
        // A success in between resets the count.
        g.finish(2 * S, BR, true, false);
        for i in 3..6 {
            assert_eq!(g.admit(i * S, BR.cooldown), Admit::Closed);
            g.finish(i * S, BR, false, false);
        }
        assert_eq!(g.open_until, 15 * S);
        assert_eq!(g.admit(6 * S, BR.cooldown), Admit::Open { wait: 9 * S });
    }

    #[test]
    fn breaker_half_open_lets_exactly_one_trial_through() {
        let mut g = GroupState {
            failures: 3,
            open_until: 10 * S,
            ..GroupState::default()
        };
        assert_eq!(g.admit(10 * S, BR.cooldown), Admit::Trial);
        // Everyone else starting at the same time is refused while it runs.
        for _ in 0..19 {
            assert_eq!(
                g.admit(10 * S, BR.cooldown),
                Admit::TrialUnderWay { wait: 10 * S }
            );
        }
        g.finish(11 * S, BR, true, true);
        assert_eq!(g, GroupState::default());
        assert_eq!(g.admit(11 * S, BR.cooldown), Admit::Closed);
    }

    #[test]
    fn breaker_failed_trial_reopens_for_a_full_cooldown() {
        let mut g = GroupState {
            failures: 3,
            open_until: 10 * S,
            ..GroupState::default()
        };
        assert_eq!(g.admit(12 * S, BR.cooldown), Admit::Trial);
        g.finish(13 * S, BR, false, true);
        assert_eq!((g.open_until, g.trial_until), (23 * S, 0));
        assert_eq!(g.admit(14 * S, BR.cooldown), Admit::Open { wait: 9 * S });
        assert_eq!(g.admit(23 * S, BR.cooldown), Admit::Trial);
    }

    #[test]
    fn breaker_trial_that_never_reports_expires() {
        let mut g = GroupState {
            open_until: 10 * S,
            ..GroupState::default()
        };
        assert_eq!(g.admit(10 * S, BR.cooldown), Admit::Trial);
        assert!(matches!(
            g.admit(19 * S, BR.cooldown),
            Admit::TrialUnderWay { .. }
        ));
        assert_eq!(g.admit(20 * S, BR.cooldown), Admit::Trial);
    }

    #[test]
    fn breaker_late_failures_do_not_extend_the_cooldown() {
        let mut g = GroupState::default();
        for _ in 0..3 {
            g.finish(S, BR, false, false);
        }
        assert_eq!(g.open_until, 11 * S);
        g.finish(5 * S, BR, false, false);
        assert_eq!((g.open_until, g.failures), (11 * S, 4));
        // A late success from a run admitted earlier closes it: the service works.
        g.finish(6 * S, BR, true, false);
        assert_eq!(g.admit(6 * S, BR.cooldown), Admit::Closed);
    }

    #[test]
    fn breaker_at_time_zero_still_opens() {
        // open_until 0 means closed, so opening at t=0 with no cooldown must not look closed.
        let br = Breaker {
            threshold: 1,
            cooldown: 0,
        };
        let mut g = GroupState::default();
        g.finish(0, br, false, false);
        assert_eq!(g.open_until, 1);
    }

    #[test]
    fn state_survives_a_json_round_trip_and_tolerates_missing_fields() {
        let g = GroupState {
            tat: 5,
            tokens_milli: Some(7),
            failures: 2,
            open_until: 9,
            trial_until: 11,
        };
        let s = serde_json::to_string(&g).expect("serialize");
        assert_eq!(serde_json::from_str::<GroupState>(&s).expect("parse"), g);
        assert_eq!(
            serde_json::from_str::<GroupState>("{}").expect("parse"),
            GroupState::default()
        );
    }
}
