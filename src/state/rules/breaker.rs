//! The circuit breaker (`--breaker THRESHOLD[:COOLDOWN]`): closed until
//! THRESHOLD consecutive failed runs, then open for COOLDOWN, then half-open
//! with one trial run at a time, whose outcome closes or reopens it.

use super::{GroupState, Micros};

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

/// How long a trial without `--max-time` holds its place at least; also
/// the least of the bound on a trial's stored lease.
pub const TRIAL_LEASE: Micros = 60_000_000;

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

impl GroupState {
    /// Stored times bounded by what the current flags allow: an open
    /// circuit half-opens within one COOLDOWN from now, and a trial's lease
    /// ends within the longest this invocation would hold one (its own
    /// lease, COOLDOWN, or [`TRIAL_LEASE`]). A time beyond comes from other
    /// flags or another writer, and must not hold the group's runs off for
    /// longer than the flags say.
    fn bound_breaker(&mut self, now: Micros, breaker: Breaker, lease: Micros) {
        if self.open_until != 0 {
            let latest = now.saturating_add(breaker.cooldown).max(1);
            self.open_until = self.open_until.min(latest);
        }
        let hold = lease.max(breaker.cooldown).max(TRIAL_LEASE);
        self.trial_until = self.trial_until.min(now.saturating_add(hold));
    }

    /// Before an invocation's first attempt. A trial holds its place for
    /// `lease`: long enough to finish, short enough that a trial that never
    /// reports (killed, host gone) cannot keep the circuit stuck half-open.
    pub fn admit(&mut self, now: Micros, lease: Micros, breaker: Breaker) -> Admit {
        self.bound_breaker(now, breaker, lease);
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
        self.bound_breaker(now, breaker, 0);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Micros = 1_000_000;

    const BR: Breaker = Breaker {
        threshold: 3,
        cooldown: 10 * S,
    };

    #[test]
    fn breaker_opens_after_threshold_consecutive_failures() {
        let mut g = GroupState::default();
        for i in 0..2 {
            assert_eq!(g.admit(i * S, BR.cooldown, BR), Admit::Closed);
            g.finish(i * S, BR, false, false);
        }
        // A success in between resets the count.
        g.finish(2 * S, BR, true, false);
        for i in 3..6 {
            assert_eq!(g.admit(i * S, BR.cooldown, BR), Admit::Closed);
            g.finish(i * S, BR, false, false);
        }
        assert_eq!(g.open_until, 15 * S);
        assert_eq!(g.admit(6 * S, BR.cooldown, BR), Admit::Open { wait: 9 * S });
    }

    #[test]
    fn breaker_half_open_lets_exactly_one_trial_through() {
        let mut g = GroupState {
            failures: 3,
            open_until: 10 * S,
            ..GroupState::default()
        };
        assert_eq!(g.admit(10 * S, BR.cooldown, BR), Admit::Trial);
        // Everyone else starting at the same time is refused while it runs.
        for _ in 0..19 {
            assert_eq!(
                g.admit(10 * S, BR.cooldown, BR),
                Admit::TrialUnderWay { wait: 10 * S }
            );
        }
        g.finish(11 * S, BR, true, true);
        assert_eq!(g, GroupState::default());
        assert_eq!(g.admit(11 * S, BR.cooldown, BR), Admit::Closed);
    }

    #[test]
    fn breaker_failed_trial_reopens_for_a_full_cooldown() {
        let mut g = GroupState {
            failures: 3,
            open_until: 10 * S,
            ..GroupState::default()
        };
        assert_eq!(g.admit(12 * S, BR.cooldown, BR), Admit::Trial);
        g.finish(13 * S, BR, false, true);
        assert_eq!((g.open_until, g.trial_until), (23 * S, 0));
        assert_eq!(
            g.admit(14 * S, BR.cooldown, BR),
            Admit::Open { wait: 9 * S }
        );
        assert_eq!(g.admit(23 * S, BR.cooldown, BR), Admit::Trial);
    }

    #[test]
    fn breaker_trial_that_never_reports_expires() {
        let mut g = GroupState {
            open_until: 10 * S,
            ..GroupState::default()
        };
        assert_eq!(g.admit(10 * S, BR.cooldown, BR), Admit::Trial);
        assert!(matches!(
            g.admit(19 * S, BR.cooldown, BR),
            Admit::TrialUnderWay { .. }
        ));
        assert_eq!(g.admit(20 * S, BR.cooldown, BR), Admit::Trial);
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
        assert_eq!(g.admit(6 * S, BR.cooldown, BR), Admit::Closed);
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
    fn breaker_stored_times_are_bounded_by_the_current_flags() {
        // Opened with a cooldown of 259 years (or written by someone else):
        // with a 10s cooldown, it half-opens within 10s from now.
        let far = 259 * 365 * 24 * 3600 * S;
        let mut g = GroupState {
            failures: 3,
            open_until: far,
            ..GroupState::default()
        };
        assert_eq!(g.admit(100 * S, 5 * S, BR), Admit::Open { wait: 10 * S });
        assert_eq!(g.open_until, 110 * S);
        assert_eq!(g.admit(110 * S, 5 * S, BR), Admit::Trial);
        assert_eq!(g.trial_until, 115 * S);
        // A trial's lease is bounded by the longest this invocation would
        // hold: its own lease, the cooldown, or a minute.
        let mut g = GroupState {
            open_until: 1,
            trial_until: far,
            ..GroupState::default()
        };
        assert_eq!(
            g.admit(100 * S, 5 * S, BR),
            Admit::TrialUnderWay { wait: 60 * S }
        );
        assert_eq!(
            g.admit(100 * S, 300 * S, BR),
            Admit::TrialUnderWay { wait: 60 * S }
        );
        let mut g = GroupState {
            open_until: 1,
            trial_until: far,
            ..GroupState::default()
        };
        assert_eq!(
            g.admit(100 * S, 300 * S, BR),
            Admit::TrialUnderWay { wait: 300 * S }
        );
        // A late failure meets the bound too.
        let mut g = GroupState {
            failures: 9,
            open_until: far,
            ..GroupState::default()
        };
        g.finish(100 * S, BR, false, false);
        assert_eq!((g.open_until, g.failures), (110 * S, 10));
        // Times within the bound are left alone.
        let mut g = GroupState {
            failures: 3,
            open_until: 105 * S,
            ..GroupState::default()
        };
        assert_eq!(g.admit(100 * S, 5 * S, BR), Admit::Open { wait: 5 * S });
    }
}
