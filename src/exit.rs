//! The exit-status contract: which number `retry` exits with.
//!
//! Pure. Scripts branch on these numbers, so every mapping lives here, next to
//! the tests that pin it.

use crate::classify::{NetFailure, Status, Verdict};

pub const SUCCESS: u8 = 0;
/// A usage error: bad flag or value.
pub const USAGE: u8 = 2;
/// retry's own failure (cannot open its log file, cannot read stdin, ...).
pub const INTERNAL: u8 = 125;
/// An attempt was stopped by `--timeout` or `--max-time` (as timeout(1)).
pub const TIMED_OUT: u8 = 124;
pub const NOT_EXECUTABLE: u8 = 126;
pub const NOT_FOUND: u8 = 127;

// HTTP mode speaks curl's numbers, so scripts moving from `curl --fail` keep
// their branches.
/// The final HTTP status was not accepted (curl --fail's 22).
pub const HTTP_NOT_ACCEPTED: u8 = 22;
/// The host name did not resolve (curl's 6).
pub const HTTP_DNS: u8 = 6;
/// Could not connect, or the connection failed before a response (curl's 7).
pub const HTTP_CONNECT: u8 = 7;
/// The request timed out (curl's 28).
pub const HTTP_TIMED_OUT: u8 = 28;
/// TLS handshake or certificate failure (curl's 35).
pub const HTTP_TLS: u8 = 35;

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
        Status::NotFound(_) => NOT_FOUND,
        Status::CannotStart(_) => INTERNAL,
        Status::NotExecutable(_) => NOT_EXECUTABLE,
        Status::Http { .. } => HTTP_NOT_ACCEPTED,
        Status::Net { failure, .. } => match failure {
            NetFailure::Dns => HTTP_DNS,
            NetFailure::ConnectTimeout | NetFailure::TimedOut(_) => HTTP_TIMED_OUT,
            NetFailure::Tls => HTTP_TLS,
            NetFailure::Connect | NetFailure::Lost | NetFailure::Other => HTTP_CONNECT,
        },
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
        assert_eq!(code(&Status::NotFound("x".into()), Verdict::Permanent), 127);
        assert_eq!(
            code(&Status::NotExecutable("x".into()), Verdict::Permanent),
            126
        );
    }

    #[test]
    fn http_mode_speaks_curl() {
        let http = |code| Status::Http {
            code,
            retry_after: None,
        };
        let net = |failure| Status::Net {
            failure,
            detail: String::new(),
        };
        assert_eq!(code(&http(200), Verdict::Success), 0);
        assert_eq!(code(&http(503), Verdict::Retryable), 22);
        assert_eq!(code(&http(404), Verdict::Permanent), 22);
        // --expect 404 makes a 404 a success.
        assert_eq!(code(&http(404), Verdict::Success), 0);
        assert_eq!(code(&net(NetFailure::Dns), Verdict::Retryable), 6);
        assert_eq!(code(&net(NetFailure::Connect), Verdict::Retryable), 7);
        assert_eq!(code(&net(NetFailure::Lost), Verdict::Retryable), 7);
        assert_eq!(code(&net(NetFailure::Other), Verdict::Permanent), 7);
        assert_eq!(
            code(&net(NetFailure::ConnectTimeout), Verdict::Retryable),
            28
        );
        assert_eq!(
            code(
                &net(NetFailure::TimedOut(Limit::Attempt)),
                Verdict::Retryable
            ),
            28
        );
        assert_eq!(
            code(
                &net(NetFailure::TimedOut(Limit::Deadline)),
                Verdict::Permanent
            ),
            28
        );
        assert_eq!(code(&net(NetFailure::Tls), Verdict::Permanent), 35);
    }
}
