//! The shared state of a simulated fleet (`--simulate` with `--pace` and
//! `--budget`): the virtual clients form one group, and every question a
//! real invocation asks its store is answered here by the same pure rules
//! (`state::rules`), on one group state, in virtual time.
//!
//! Pure: the clock is the simulation's virtual time.

use std::time::Duration;

use crate::state::rules::{Budget, GroupState, Micros, Pace, Plan};

/// The shared-state rules the simulated fleet follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fleet {
    pub pace: Option<Pace>,
    pub budget: Option<Budget>,
}

impl Fleet {
    /// Whether the clients share anything at all.
    pub fn shares(&self) -> bool {
        self.pace.is_some() || self.budget.is_some()
    }
}

/// The one group state of a simulated fleet, as a store would hold it.
#[derive(Debug, Clone)]
pub(super) struct Shared {
    fleet: Fleet,
    state: GroupState,
}

/// Whole microseconds, rounded up: the rules count in microseconds, and a
/// slot rounded up never falls before the client's own wake time, so a paced
/// retry starts exactly on its slot.
fn micros_up(d: Duration) -> Micros {
    u64::try_from(d.as_nanos().div_ceil(1000)).unwrap_or(u64::MAX)
}

/// The group's word before a wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Word {
    /// Go, at the later of the client's own wake time and `slot`.
    Go { slot: Option<Duration> },
    /// The budget is spent: no retry.
    BudgetSpent,
    /// The next pace slot lies `wait` from now, past the deadline.
    PastDeadline { wait: Duration },
}

impl Shared {
    pub(super) fn new(fleet: Fleet) -> Shared {
        Shared {
            fleet,
            state: GroupState::default(),
        }
    }

    /// An attempt ended: the budget counts it, as a real run records it.
    pub(super) fn record(&mut self, success: bool) {
        if let Some(b) = self.fleet.budget {
            self.state.record(b, success);
        }
    }

    /// Before a wait of `delay` at `now`: the budget's word and the group's
    /// pace slot. Without shared state the client goes on its own delay.
    pub(super) fn plan(
        &mut self,
        now: Duration,
        delay: Duration,
        deadline: Option<Duration>,
    ) -> Word {
        if !self.fleet.shares() {
            return Word::Go { slot: None };
        }
        let now_us = micros_up(now);
        let plan = self.state.plan(
            now_us,
            micros_up(delay),
            deadline.map(|d| micros_up(d).saturating_sub(now_us)),
            self.fleet.budget,
            self.fleet.pace,
        );
        match plan {
            Plan::Go { wait, .. } => Word::Go {
                slot: self
                    .fleet
                    .pace
                    .map(|_| Duration::from_micros(now_us.saturating_add(wait))),
            },
            Plan::BudgetSpent { .. } => Word::BudgetSpent,
            Plan::PastDeadline { wait } => Word::PastDeadline {
                wait: Duration::from_micros(wait),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn without_shared_state_the_client_goes_on_its_own() {
        let mut s = Shared::new(Fleet::default());
        s.record(false);
        assert_eq!(s.plan(ms(5), ms(7), None), Word::Go { slot: None });
    }

    #[test]
    fn the_pace_is_taken_in_virtual_time() {
        let mut s = Shared::new(Fleet {
            pace: Some(Pace {
                interval: 100_000,
                burst: 1,
            }),
            budget: None,
        });
        assert_eq!(
            s.plan(ms(1000), ms(10), None),
            Word::Go {
                slot: Some(ms(1010))
            }
        );
        assert_eq!(
            s.plan(ms(1000), ms(10), None),
            Word::Go {
                slot: Some(ms(1110))
            }
        );
        // The next slot (1.21 s) lies at the deadline: refused, not taken.
        assert_eq!(
            s.plan(ms(1000), ms(10), Some(ms(1210))),
            Word::PastDeadline { wait: ms(210) }
        );
        // A wake time between microseconds gets the slot after it.
        let odd = Duration::from_nanos(1_210_000_001);
        assert_eq!(
            s.plan(odd, Duration::ZERO, None),
            Word::Go {
                slot: Some(Duration::from_micros(1_210_001))
            }
        );
    }

    #[test]
    fn a_spent_budget_refuses() {
        let mut s = Shared::new(Fleet {
            pace: None,
            budget: Some(Budget {
                max_milli: 2_000,
                ratio_milli: 100,
            }),
        });
        assert_eq!(s.plan(ms(0), ms(10), None), Word::Go { slot: None });
        s.record(false);
        assert_eq!(s.plan(ms(0), ms(10), None), Word::BudgetSpent);
    }
}
