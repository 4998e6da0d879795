//! The pure rules of shared state: GCRA pacing (`pace`), the retry budget
//! (`budget`) and the circuit breaker (`breaker`), applied to one group's
//! state at a time as the store hands it over.
//!
//! No I/O and no clock: every function takes `now` in microseconds on the
//! store's clock (the local wall clock, or the Redis server's `TIME`). The Lua
//! scripts of the Redis store implement these same rules; the store tests run
//! both stores through the same sequences.

use serde::{Deserialize, Serialize};

mod breaker;
mod budget;
mod pace;

pub use breaker::{Admit, Breaker, TRIAL_LEASE};
pub use budget::Budget;
pub use pace::{Pace, SCHEDULE_AHEAD};

/// Microseconds on the store's clock.
pub type Micros = u64;

/// One group's shared state, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct GroupState {
    /// GCRA's theoretical arrival time: the next slot on the schedule.
    #[serde(default)]
    pub tat: Micros,
    /// Budget tokens spent, in thousandths: 0 is a full budget.
    #[serde(default)]
    pub spent_milli: i64,
    /// The budget count left, as earlier versions stored it (read once,
    /// then replaced by `spent_milli`; see `budget.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
        if let Some(tokens_milli) = budget.and_then(|b| self.budget_spent(b)) {
            return Plan::BudgetSpent { tokens_milli };
        }
        match pace {
            Some(p) => self.take_slot(now, delay, deadline_in, p),
            None => Plan::Go {
                wait: delay,
                paced: 0,
            },
        }
    }
}

/// One read-modify-write of a group's state, as a store carries it out.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Admit {
        lease: Micros,
        breaker: Breaker,
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
}

/// A store's answer to an [`Op`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reply {
    Admit(Admit),
    Plan(Plan),
    Done,
}

/// Apply `op` to `state` at `now`: the whole of what a store does under its lock.
pub fn apply(state: &mut GroupState, now: Micros, op: Op) -> Reply {
    match op {
        Op::Admit { lease, breaker } => Reply::Admit(state.admit(now, lease, breaker)),
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Micros = 1000;
    const S: Micros = 1_000_000;

    #[test]
    fn without_pace_the_wait_is_the_delay() {
        let mut g = GroupState::default();
        assert_eq!(
            g.plan(S, 7 * MS, Some(S), None, None),
            Plan::Go {
                wait: 7 * MS,
                paced: 0
            }
        );
        assert_eq!(g, GroupState::default());
    }

    #[test]
    fn state_survives_a_json_round_trip_and_tolerates_missing_fields() {
        let g = GroupState {
            tat: 5,
            spent_milli: 7,
            tokens_milli: None,
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
