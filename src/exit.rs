//! The exit-status contract: which number `retry` exits with.
//!
//! Pure. Scripts branch on these numbers, so every mapping lives here, next to
//! the tests that pin it.

use crate::classify::{Status, Verdict};

pub const SUCCESS: u8 = 0;
/// A usage error: bad flag or value.
pub const USAGE: u8 = 2;
/// retry's own failure (cannot open its log file, cannot read stdin, ...).
pub const INTERNAL: u8 = 125;
/// An attempt was stopped by `--timeout` or `--max-time` (as timeout(1)).
pub const TIMED_OUT: u8 = 124;
pub const NOT_EXECUTABLE: u8 = 126;
pub const NOT_FOUND: u8 = 127;

/// Exit code for a process that died of signal `sig`: 128 + N, as shells
/// report it. A signal death must never turn into 0 or 1.
pub fn from_signal(sig: i32) -> u8 {
    u8::try_from(128 + sig.clamp(0, 127)).unwrap_or(255)
}

/// The exit status for a run whose last attempt ended with `status` and was
/// judged `verdict`.
pub fn code(status: &Status, verdict: Verdict) -> u8 {
    if verdict == Verdict::Success {
        return SUCCESS;
    }
    match *status {
        // Exit codes are 0..=255 on Unix; anything else is reported as-is, masked.
        Status::Exited(code) => (code & 0xff) as u8,
        Status::Signaled(sig) | Status::Interrupted(sig) => from_signal(sig),
        Status::TimedOut { .. } => TIMED_OUT,
        Status::NotFound => NOT_FOUND,
        Status::NotExecutable(_) => NOT_EXECUTABLE,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Limit;
    use std::time::Duration;

    #[test]
    fn the_contract() {
        let fail = Verdict::Retryable;
        assert_eq!(code(&Status::Exited(0), Verdict::Success), 0);
        // --success-on 3 turns a 3 into a 0.
        assert_eq!(code(&Status::Exited(3), Verdict::Success), 0);
        assert_eq!(code(&Status::Exited(1), fail), 1);
        assert_eq!(code(&Status::Exited(42), Verdict::Permanent), 42);
        assert_eq!(code(&Status::Signaled(9), fail), 137);
        assert_eq!(code(&Status::Interrupted(2), Verdict::Permanent), 130);
        assert_eq!(code(&Status::Interrupted(15), Verdict::Permanent), 143);
        assert_eq!(code(&Status::Interrupted(1), Verdict::Permanent), 129);
        let timeout = Status::TimedOut {
            limit: Limit::Attempt,
            after: Duration::from_secs(1),
        };
        assert_eq!(code(&timeout, fail), 124);
        assert_eq!(code(&Status::NotFound, Verdict::Permanent), 127);
        assert_eq!(
            code(&Status::NotExecutable("x".into()), Verdict::Permanent),
            126
        );
    }
}
