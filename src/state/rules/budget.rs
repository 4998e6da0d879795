//! The retry budget (`--budget TOKENS[:RATIO]`), as gRPC throttles retries:
//! a count that failures drain and successes refill, and retries allowed only
//! while it is above half. Counted in thousandths of a token, so that both
//! stores do exact integer arithmetic.
//!
//! The group stores how many tokens it has *spent*, not how many are left:
//! the count an invocation sees is its own TOKENS less what was spent. So a
//! change of TOKENS keeps its meaning (how many net failures the group may
//! have before retries stop): raising `--budget 10` to `--budget 1000` turns
//! "9 of 10" into "999 of 1000", where a stored count of 9 would have read
//! as 9 of 1000 and refused every retry. Files written before kept the count
//! left (`tokens_milli`); they are read as spent = TOKENS − count with the
//! TOKENS of the first invocation that uses them, which is how they were
//! read then, and written back in the new form.

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
    /// Tokens spent as this invocation sees them: from 0 to its own TOKENS
    /// (a stored value out of that range, from other flags or another
    /// writer, is bounded by the current ones).
    pub fn spent(&self, budget: Budget) -> i64 {
        let max = budget.max_milli.max(0);
        match self.tokens_milli {
            // The form of earlier versions: the count left.
            Some(left) => max.saturating_sub(left).clamp(0, max),
            None => self.spent_milli.clamp(0, max),
        }
    }

    /// The count as this invocation sees it, in thousandths.
    fn tokens(&self, budget: Budget) -> i64 {
        budget.max_milli - self.spent(budget)
    }

    /// An attempt ended: a failure takes one token, a success gives back RATIO.
    pub fn record(&mut self, budget: Budget, success: bool) {
        let spent = self.spent(budget);
        self.spent_milli = if success {
            spent.saturating_sub(budget.ratio_milli).max(0)
        } else {
            spent.saturating_add(1000).min(budget.max_milli)
        };
        self.tokens_milli = None;
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
        assert_eq!(g.spent_milli, 1_000);
        assert_eq!(g.tokens_for(B), 9.0);
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
        assert_eq!(g.spent_milli, 10_000);
        assert_eq!(g.tokens_for(B), 0.0);
        for _ in 0..100 {
            g.record(B, true);
        }
        assert_eq!(g.spent_milli, 0);
        // A smaller TOKENS from another invocation sees the same spending
        // against its own TOKENS.
        let small = Budget {
            max_milli: 4_000,
            ratio_milli: 100,
        };
        g.record(B, false);
        assert_eq!(g.tokens_for(small), 3.0);
        g.record(small, false);
        assert_eq!(g.spent_milli, 2_000);
    }

    #[test]
    fn a_change_of_tokens_keeps_what_was_spent() {
        let ten = Budget {
            max_milli: 10_000,
            ratio_milli: 100,
        };
        let thousand = Budget {
            max_milli: 1_000_000,
            ratio_milli: 100,
        };
        let mut g = GroupState::default();
        g.record(ten, false);
        assert_eq!(g.tokens_for(ten), 9.0);
        // Raised: one token spent of a thousand, retries allowed.
        assert_eq!(g.tokens_for(thousand), 999.0);
        assert!(matches!(
            g.plan(S, 0, None, Some(thousand), None),
            Plan::Go { .. }
        ));
        // Lowered below what was spent: the count stops at zero.
        for _ in 0..20 {
            g.record(thousand, false);
        }
        assert_eq!(g.tokens_for(thousand), 979.0);
        assert_eq!(g.tokens_for(ten), 0.0);
        g.record(ten, true);
        assert_eq!(g.spent_milli, 9_900);
    }

    #[test]
    fn a_count_stored_by_an_earlier_version_is_read_against_the_current_tokens() {
        let thousand = Budget {
            max_milli: 1_000_000,
            ratio_milli: 100,
        };
        let mut g: GroupState =
            serde_json::from_str(r#"{"tat":0,"tokens_milli":991000,"failures":0}"#).unwrap();
        assert_eq!(g.tokens_for(thousand), 991.0);
        // As it was read then: never above the invocation's own TOKENS.
        assert_eq!(g.tokens_for(B), 10.0);
        g.record(thousand, false);
        assert_eq!((g.tokens_milli, g.spent_milli), (None, 10_000));
        let written = serde_json::to_string(&g).unwrap();
        assert!(!written.contains("tokens_milli"), "{written}");
    }

    #[test]
    fn a_stored_spending_out_of_range_is_bounded() {
        let g = GroupState {
            spent_milli: -5_000,
            ..GroupState::default()
        };
        assert_eq!(g.tokens_for(B), 10.0);
        let g = GroupState {
            spent_milli: i64::MAX,
            ..GroupState::default()
        };
        assert_eq!(g.tokens_for(B), 0.0);
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
