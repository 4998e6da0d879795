//! The exit-status contract: which number `retry` exits with.
//!
//! Pure. Scripts branch on these numbers, so every mapping lives here, next to
//! the tests that pin it, together with [`TABLE`], the one description of them
//! from which `--help` and the man page are generated and against which a
//! test checks the README.

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
/// The group's circuit breaker is open: COMMAND was not run (EX_TEMPFAIL).
pub const REFUSED: u8 = 75;

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
/// The response body ended before its declared length (curl's 18).
pub const HTTP_TRUNCATED: u8 = 18;
/// The body could not be written: stdout closed, or `-o FILE` failed (curl's 23).
pub const HTTP_WRITE: u8 = 23;
/// The reply is not HTTP (curl's 8, "weird server reply").
pub const HTTP_BAD_REPLY: u8 = 8;
/// More redirects than `--max-redirs` (curl's 47).
pub const HTTP_TOO_MANY_REDIRECTS: u8 = 47;
/// A redirect to a scheme retry does not follow (curl's 1, "unsupported
/// protocol"), or from https:// down to http://.
pub const HTTP_UNSUPPORTED: u8 = 1;
/// A redirect's Location is not a URL (curl's 3, "URL malformed").
pub const HTTP_BAD_URL: u8 = 3;

/// File mode: a path was not there (or not as asked), or retry may not
/// look at it (curl's 37, "couldn't read a file://").
pub const FILE_NOT_READY: u8 = 37;

/// gRPC mode: the server was not SERVING when retry gave up
/// (grpc-health-probe's "unhealthy").
pub const GRPC_NOT_SERVING: u8 = 4;
/// gRPC mode: the check failed with gRPC status N: 100 + N.
pub const GRPC_STATUS_BASE: u8 = 100;

/// One documented exit status: how it is written, and when it happens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub status: &'static str,
    pub meaning: &'static str,
}

const fn row(status: &'static str, meaning: &'static str) -> Row {
    Row { status, meaning }
}

/// Every exit status retry documents, in the order people look for them.
/// `--help`, the man page and the README show exactly these rows.
pub const TABLE: &[Row] = &[
    row(
        "0",
        "success (also an exit listed in --success-on, or a status in --expect)",
    ),
    row(
        "N",
        "command mode: gave up (attempts or time exhausted) or hit a permanent failure; N is the last attempt's own exit code",
    ),
    row(
        "124",
        "command mode: the last attempt was stopped by --timeout, --idle-timeout or --max-time (or --max-time ran out while --replay-stdin read stdin, before any attempt)",
    ),
    row("126", "COMMAND is not executable (never retried)"),
    row("127", "COMMAND was not found (never retried)"),
    row(
        "128+N",
        "the last attempt died of signal N, not sent by retry",
    ),
    row(
        "129/130/131/143",
        "retry itself got SIGHUP/SIGINT/SIGQUIT/SIGTERM: it stopped the attempt, did not retry, and exits 128+N",
    ),
    row(
        "2",
        "usage error: one line on stderr (even with --log-file) naming the flag, or the environment variable the value came from, and the accepted form; nothing was run, sent or created",
    ),
    row(
        "125",
        "retry's own failure (e.g. it cannot open its log file, the system kept refusing to start COMMAND for want of processes, memory or descriptors, stdin is larger than --replay-stdin-max, the shared-state store cannot be used with --state-required, or with --last-stdout a successful attempt's stdout could not be written out)",
    ),
    row(
        "75",
        "the group's circuit breaker is open (--breaker): COMMAND was not run",
    ),
    row(
        "1",
        "HTTP mode: a redirect was not followed: to a scheme other than http or https, or from https:// to http://",
    ),
    row("3", "HTTP mode: a redirect's Location is not a valid URL"),
    row("6", "HTTP and TCP mode: the host name did not resolve"),
    row(
        "7",
        "HTTP and TCP mode: could not connect (TCP: a target refused or was unreachable, or a unix: path is not a socket retry may use), or the connection broke before a response",
    ),
    row(
        "8",
        "HTTP mode: the reply is not HTTP (garbage, TLS on an http:// URL, conflicting lengths, a malformed status); gRPC mode: a TLS server asked without --grpc-tls",
    ),
    row(
        "18",
        "HTTP mode: the response body was cut short (never retried once part of it reached stdout)",
    ),
    row(
        "22",
        "HTTP mode: the final status was not accepted (as curl --fail)",
    ),
    row(
        "23",
        "HTTP mode: the body could not be written (stdout closed, or -o FILE failed)",
    ),
    row(
        "28",
        "HTTP and TCP mode: timed out (--timeout, --connect-timeout or --max-time, and in HTTP mode --idle-timeout; never retried once part of an HTTP body reached stdout); file mode: a look that did not return within --timeout or --max-time",
    ),
    row("35", "HTTP mode: TLS handshake or certificate failure"),
    row(
        "37",
        "file mode: a path was not there (or empty with --non-empty, or not a directory with --directory) when retry gave up, or retry may not look at it (never retried)",
    ),
    row("47", "HTTP mode: more redirects than --max-redirs"),
    row(
        "4",
        "gRPC mode: the server answered NOT_SERVING (or UNKNOWN) when retry gave up",
    ),
    row(
        "100+N",
        "gRPC mode: the health check failed with gRPC status N: 112 UNIMPLEMENTED (no health service; never retried), 105 NOT_FOUND (unknown service; retried for 10s from the first attempt), 104 DEADLINE_EXCEEDED (also a call given 10s without --timeout), 114 UNAVAILABLE, 116 UNAUTHENTICATED, 107 PERMISSION_DENIED, 103 INVALID_ARGUMENT (never retried); a connection that failed is 6, 7, 28 or 35 as in HTTP mode",
    ),
];

/// The "Exit status" section of `--help`, drawn from [`TABLE`] and wrapped
/// to 80 columns.
pub fn help_section() -> String {
    const INDENT: usize = 19;
    const WIDTH: usize = 80;
    let mut out = String::from("Exit status:\n");
    for r in TABLE {
        let mut line = format!("  {:<w$}", r.status, w = INDENT - 2);
        if r.status.len() > INDENT - 3 {
            line = format!("  {} ", r.status);
        }
        let mut col = line.len();
        let mut first = true;
        for word in r.meaning.split(' ') {
            if !first && col + 1 + word.len() > WIDTH {
                out.push_str(line.trim_end());
                out.push('\n');
                line = " ".repeat(INDENT);
                col = INDENT;
            } else if !first {
                line.push(' ');
                col += 1;
            }
            line.push_str(word);
            col += word.len();
            first = false;
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

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
        Status::CannotStart(_) | Status::Undelivered(_) => INTERNAL,
        Status::NotExecutable(_) => NOT_EXECUTABLE,
        Status::Connected => SUCCESS,
        Status::Path { .. } => FILE_NOT_READY,
        Status::Grpc { ref answer, .. } => match answer {
            crate::classify::GrpcAnswer::Serving => SUCCESS,
            crate::classify::GrpcAnswer::NotServing(_) => GRPC_NOT_SERVING,
            crate::classify::GrpcAnswer::UnknownService(_) => GRPC_STATUS_BASE + 5,
            crate::classify::GrpcAnswer::Code(c) => {
                GRPC_STATUS_BASE.saturating_add(u8::try_from((*c).clamp(0, 23)).unwrap_or(23))
            }
        },
        Status::Http { .. } => HTTP_NOT_ACCEPTED,
        Status::Net { failure, .. } => match failure {
            NetFailure::Dns => HTTP_DNS,
            NetFailure::ConnectTimeout
            | NetFailure::TimedOut(_)
            | NetFailure::TimedOutAfterOutput(_) => HTTP_TIMED_OUT,
            NetFailure::Tls => HTTP_TLS,
            NetFailure::Truncated | NetFailure::TruncatedOutput => HTTP_TRUNCATED,
            NetFailure::Write => HTTP_WRITE,
            NetFailure::BadReply => HTTP_BAD_REPLY,
            NetFailure::TooManyRedirects => HTTP_TOO_MANY_REDIRECTS,
            NetFailure::RedirectRefused => HTTP_UNSUPPORTED,
            NetFailure::BadRedirect => HTTP_BAD_URL,
            NetFailure::Connect | NetFailure::Lost | NetFailure::NotUsable | NetFailure::Other => {
                HTTP_CONNECT
            }
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
            hints: crate::ratelimit::Hints::NONE,
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
        assert_eq!(code(&net(NetFailure::Truncated), Verdict::Retryable), 18);
        assert_eq!(code(&net(NetFailure::Write), Verdict::Permanent), 23);
        assert_eq!(
            code(
                &net(NetFailure::TimedOutAfterOutput(Limit::Idle)),
                Verdict::Permanent
            ),
            28
        );
        assert_eq!(code(&net(NetFailure::BadReply), Verdict::Permanent), 8);
        assert_eq!(
            code(&net(NetFailure::TooManyRedirects), Verdict::Permanent),
            47
        );
        assert_eq!(
            code(&net(NetFailure::RedirectRefused), Verdict::Permanent),
            1
        );
        assert_eq!(code(&net(NetFailure::BadRedirect), Verdict::Permanent), 3);
    }

    /// Every fixed number `code` can return has a row, and every row's
    /// number is one retry can exit with.
    #[test]
    fn the_table_covers_every_status() {
        let numbers: Vec<&str> = TABLE.iter().map(|r| r.status).collect();
        for c in [
            SUCCESS,
            USAGE,
            INTERNAL,
            TIMED_OUT,
            NOT_EXECUTABLE,
            NOT_FOUND,
            REFUSED,
            HTTP_NOT_ACCEPTED,
            HTTP_DNS,
            HTTP_CONNECT,
            HTTP_TIMED_OUT,
            HTTP_TLS,
            HTTP_TRUNCATED,
            HTTP_WRITE,
            HTTP_BAD_REPLY,
            HTTP_TOO_MANY_REDIRECTS,
            HTTP_UNSUPPORTED,
            HTTP_BAD_URL,
        ] {
            assert!(numbers.contains(&c.to_string().as_str()), "{c} has no row");
        }
        let mut seen = std::collections::HashSet::new();
        assert!(numbers.iter().all(|n| seen.insert(*n)), "a row twice");
    }

    #[test]
    fn help_section_lists_every_row_within_80_columns() {
        let help = help_section();
        assert!(help.starts_with("Exit status:\n"));
        for r in TABLE {
            assert!(help.contains(&format!("  {} ", r.status)), "{}", r.status);
        }
        assert!(help.lines().all(|l| l.len() <= 80), "{help}");
        assert!(help.contains("  18               HTTP mode: the response body was cut short"));
        assert!(help.contains("  47               HTTP mode: more redirects than --max-redirs"));
    }

    /// README's "Exit status" table is this table, row for row.
    #[test]
    fn readme_lists_exactly_these_statuses() {
        let readme = include_str!("../README.md");
        let section = readme
            .split("\n## Exit status\n")
            .nth(1)
            .expect("README has an Exit status section");
        let rows: Vec<&str> = section
            .lines()
            .skip_while(|l| !l.starts_with('|'))
            .take_while(|l| l.starts_with('|'))
            .skip(2)
            .collect();
        let want: Vec<String> = TABLE
            .iter()
            .map(|r| format!("| {} | {} |", r.status, r.meaning))
            .collect();
        assert_eq!(
            rows, want,
            "README's exit status table differs from src/exit.rs TABLE"
        );
    }
}
