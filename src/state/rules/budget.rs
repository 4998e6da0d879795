//! The retry budget (`--budget TOKENS[:RATIO]`), as gRPC throttles retries:
//! a count that failures drain and successes refill, and retries allowed only
//! while it is above half. Counted in thousandths of a token, so that both
//! stores do exact integer arithmetic.

use super::GroupState;

/// `--budget TOKENS[:RATIO]`, in thousandths of a token.
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

impl GroupState {
    /// The count as this invocation sees it: full until first used, and
    /// never above its own TOKENS.
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

    /// The count when it allows no retry: at or below TOKENS/2 (compared as
    /// 2t <= max, so an odd TOKENS needs no rounding).
    pub(super) fn budget_spent(&self, budget: Budget) -> Option<i64> {
        let t = self.tokens(budget);
        (t.saturating_mul(2) <= budget.max_milli).then_some(t)
    }

    /// The budget count in tokens, for `--state-show`.
    pub fn tokens_for(&self, budget: Budget) -> f64 {
        self.tokens(budget) as f64 / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::super::Plan;
    use super::*;

    const S: u64 = 1_000_000;

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
            g.plan(
                S,
                0,
                None,
                Some(B),
                Some(super::super::Pace {
                    interval: S,
                    burst: 1
                })
            ),
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
}
