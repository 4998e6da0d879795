//! What an attempt's result means: success, a failure worth retrying, or a
//! permanent failure.
//!
//! Pure: it looks only at the status an attempt reported and the user's
//! classification lists.

use std::fmt;
use std::time::Duration;

use crate::ratelimit::{Floor, Hints};

/// SIGPIPE's number on Linux, where retry runs.
const SIGPIPE: i32 = 13;

mod grpc;
mod http;
pub use grpc::{GrpcAnswer, code_name};
pub use http::{HttpRules, NetFailure, RETRY_AFTER_MAX, StatusSet};

/// What happened to one attempt, as reported by an attempt runner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The command exited with this code.
    Exited(i32),
    /// The command died of this signal, not sent by us.
    Signaled(i32),
    /// The attempt ran out of time and was stopped.
    TimedOut { limit: Limit, after: Duration },
    /// The command (named here) does not exist: exec failed with ENOENT.
    NotFound(String),
    /// The command exists but cannot be executed.
    NotExecutable(String),
    /// The system could not start the command for now (no processes,
    /// memory or descriptors to spare): worth another try.
    CannotStart(String),
    /// retry itself caught this signal during the attempt and stopped it.
    Interrupted(i32),
    /// HTTP mode: a response arrived with this status code. `hints` are
    /// what its rate-limit fields say: the wait they ask for (already a
    /// wait from when it arrived), a verdict they impose, what was ignored.
    Http { code: u16, hints: Hints },
    /// HTTP mode: the exchange failed without a response; TCP mode: a
    /// target did not accept a connection.
    Net { failure: NetFailure, detail: String },
    /// TCP mode: every target has accepted a connection.
    Connected,
    /// `--file`: a path ready (success), not yet (retried), or one retry
    /// may not look at (permanent).
    Path { state: PathState, detail: String },
    /// gRPC mode: what the health check answered, and the server's message.
    Grpc { answer: GrpcAnswer, detail: String },
    /// The command succeeded, but retry could not write its held stdout
    /// out (`--last-stdout`): retry's own failure, and final, since part
    /// of the output may have gone out.
    Undelivered(String),
}

impl Status {
    /// Whether `--max-time` stopped the attempt: the run's end is then the
    /// deadline, in command and HTTP mode alike.
    pub fn stopped_by_deadline(&self) -> bool {
        matches!(
            self,
            Status::TimedOut {
                limit: Limit::Deadline,
                ..
            } | Status::Net {
                failure: NetFailure::TimedOut(Limit::Deadline)
                    | NetFailure::TimedOutAfterOutput(Limit::Deadline),
                ..
            }
        )
    }

    /// The wait the server asked for, if the attempt got one.
    pub fn retry_after(&self) -> Option<Duration> {
        self.floor().map(|f| f.wait)
    }

    /// The wait the server asked for, with the field it came from.
    pub fn floor(&self) -> Option<&Floor> {
        match self {
            Status::Http { hints, .. } => hints.floor.as_ref(),
            _ => None,
        }
    }
}

/// What a command's output matched (`--retry-if-output`, `--stop-if-output`),
/// naming the pattern. A stop match wins over a retry match.
/// What a `--file` probe found at a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathState {
    /// There, and as asked (`--non-empty`, `--directory`).
    Ready,
    /// Missing, empty, or not a directory yet.
    NotYet,
    /// retry may not look at it: waiting does not grant the permission.
    Denied,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum OutputMatch {
    #[default]
    None,
    Retry(String),
    Stop(String),
}

/// Which limit stopped an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `--timeout`, per attempt.
    Attempt,
    /// `--max-time`, the overall deadline.
    Deadline,
    /// `--idle-timeout`: nothing came (HTTP mode), or nothing was written
    /// (a COMMAND), for that long.
    Idle,
}

/// The verdict on one attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Success,
    Retryable,
    Permanent,
}

/// A set of numbers given as single values and inclusive ranges: exit codes
/// (`1,75,100-110`) and HTTP statuses (`429,500-599`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeSet<T>(Vec<(T, T)>);

/// Exit codes, as `--retry-on`, `--stop-on` and `--success-on` give them.
pub type CodeSet = RangeSet<i32>;

impl<T> Default for RangeSet<T> {
    fn default() -> Self {
        RangeSet(Vec::new())
    }
}

impl<T: Copy + Ord> RangeSet<T> {
    pub fn new(ranges: Vec<(T, T)>) -> Self {
        RangeSet(ranges)
    }

    pub fn contains(&self, value: T) -> bool {
        self.0.iter().any(|&(lo, hi)| lo <= value && value <= hi)
    }

    /// The smallest value present in both sets, if any.
    pub fn first_overlap(&self, other: &RangeSet<T>) -> Option<T> {
        let mut best: Option<T> = None;
        for &(a_lo, a_hi) in &self.0 {
            for &(b_lo, b_hi) in &other.0 {
                let lo = a_lo.max(b_lo);
                if lo <= a_hi.min(b_hi) {
                    best = Some(best.map_or(lo, |b| b.min(lo)));
                }
            }
        }
        best
    }
}

/// The user's classification rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// When set, only these exit codes are retryable.
    pub retry_on: Option<CodeSet>,
    pub stop_on: CodeSet,
    pub success_on: CodeSet,
    pub retry_on_timeout: bool,
    /// HTTP mode's rules; unused in command mode.
    pub http: HttpRules,
}

impl Default for Rules {
    fn default() -> Self {
        Rules {
            retry_on: None,
            stop_on: CodeSet::default(),
            success_on: CodeSet::default(),
            retry_on_timeout: true,
            http: HttpRules::default(),
        }
    }
}

/// Classify one attempt's status under the rules.
pub fn classify(status: &Status, rules: &Rules) -> Verdict {
    match *status {
        Status::Exited(code) => {
            if code == 0 || rules.success_on.contains(code) {
                Verdict::Success
            } else if rules.stop_on.contains(code) {
                Verdict::Permanent
            } else if let Some(only) = &rules.retry_on {
                if only.contains(code) {
                    Verdict::Retryable
                } else {
                    Verdict::Permanent
                }
            } else if code == 126 || code == 127 {
                // The shell's "cannot execute" and "not found": retrying will not help.
                Verdict::Permanent
            } else {
                Verdict::Retryable
            }
        }
        Status::Signaled(sig) => {
            let code = 128 + sig;
            if rules.success_on.contains(code) {
                Verdict::Success
            } else if rules.stop_on.contains(code) {
                Verdict::Permanent
            } else if sig == SIGPIPE && !rules.retry_on.as_ref().is_some_and(|r| r.contains(code)) {
                // Whoever read the output is gone (`retry -- producer | head`):
                // running the producer again cannot help.
                Verdict::Permanent
            } else {
                Verdict::Retryable
            }
        }
        Status::TimedOut { limit, .. } => match limit {
            // Past the overall deadline there is no time left to retry in.
            Limit::Deadline => Verdict::Permanent,
            Limit::Attempt | Limit::Idle if rules.retry_on_timeout => Verdict::Retryable,
            Limit::Attempt | Limit::Idle => Verdict::Permanent,
        },
        Status::NotFound(_)
        | Status::NotExecutable(_)
        | Status::Interrupted(_)
        | Status::Undelivered(_) => Verdict::Permanent,
        Status::CannotStart(_) => Verdict::Retryable,
        Status::Connected => Verdict::Success,
        Status::Grpc { ref answer, .. } => grpc::classify(answer, rules),
        Status::Path { state, .. } => match state {
            PathState::Ready => Verdict::Success,
            PathState::NotYet => Verdict::Retryable,
            PathState::Denied => Verdict::Permanent,
        },
        Status::Http { .. } | Status::Net { .. } => http::classify(status, rules),
    }
}

/// Classify one attempt's status and what its output matched.
///
/// A match only decides how a *failure* is treated: a success stays a
/// success whatever was printed. On a failure a stop match makes it
/// permanent and a retry match retryable, overriding the exit-code lists,
/// except where no retry can help: an interrupt from the user, the overall
/// deadline, or a command that never started.
pub fn classify_with_output(status: &Status, output: &OutputMatch, rules: &Rules) -> Verdict {
    let verdict = classify(status, rules);
    if verdict == Verdict::Success || !output_decides(status) {
        return verdict;
    }
    match output {
        OutputMatch::None => verdict,
        OutputMatch::Stop(_) => Verdict::Permanent,
        OutputMatch::Retry(_) => Verdict::Retryable,
    }
}

/// The verdict once the reader of retry's own stdout has gone (a pipe into
/// `head` that has exited), or when there never was one (stdout closed at
/// start, `>&-`): a failure that would be retried is permanent,
/// whatever its exit code, since another attempt's output would go
/// nowhere. A command that exits with a status of its own on EPIPE (Python
/// exits 1 on BrokenPipeError) is then treated as one that died of SIGPIPE.
pub fn with_reader_gone(verdict: Verdict) -> Verdict {
    match verdict {
        Verdict::Retryable => Verdict::Permanent,
        v => v,
    }
}

/// Why [`with_reader_gone`] made this failure permanent, for the give-up line.
pub fn explain_reader_gone(status: &Status) -> String {
    format!(
        "{status}, and nothing reads retry's stdout (it is closed, or its reader has gone): another attempt's output would go nowhere"
    )
}

/// Whether what the output matched may decide this failure.
fn output_decides(status: &Status) -> bool {
    matches!(
        status,
        Status::Exited(_)
            | Status::Signaled(_)
            | Status::TimedOut {
                limit: Limit::Attempt | Limit::Idle,
                ..
            }
    )
}

/// [`explain`], naming the output pattern when a stop match decided it.
pub fn explain_with_output(status: &Status, output: &OutputMatch, rules: &Rules) -> String {
    match output {
        OutputMatch::Stop(pattern) if output_decides(status) => {
            format!("{status}, and the output matched --stop-if-output '{pattern}'")
        }
        _ => explain(status, rules),
    }
}

/// Why a permanent failure is permanent, for the give-up line.
pub fn explain(status: &Status, rules: &Rules) -> String {
    match *status {
        Status::Exited(code) if rules.stop_on.contains(code) => {
            format!("exit {code} is in --stop-on")
        }
        Status::Exited(code) if rules.retry_on.is_some() => {
            format!("exit {code} is not in --retry-on")
        }
        Status::Exited(126) => "exit 126 (command not executable) is not retried".to_string(),
        Status::Exited(127) => "exit 127 (command not found) is not retried".to_string(),
        Status::Signaled(sig) if rules.stop_on.contains(128 + sig) => {
            format!("{status} and {} is in --stop-on", 128 + sig)
        }
        Status::Signaled(SIGPIPE) => {
            format!("{status}: whoever read its output is gone (--retry-on 141 retries it)")
        }
        Status::TimedOut {
            limit: Limit::Attempt | Limit::Idle,
            ..
        } => format!("{status}, and --no-retry-on-timeout is set"),
        Status::Http { .. } | Status::Net { .. } => http::explain(status, rules),
        // The status says why it stays so.
        Status::Path { .. } => status.to_string(),
        Status::Grpc { .. } => grpc::explain(status),
        _ => format!("{status} is not retried"),
    }
}

/// Human wording of a status, for log lines: `exit 1`, `killed by SIGKILL`.
impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Status::Exited(code) => write!(f, "exit {code}"),
            Status::Signaled(sig) => write!(f, "killed by {}", signal_name(*sig)),
            Status::TimedOut { limit, .. } => match limit {
                Limit::Attempt => write!(f, "timed out by --timeout"),
                Limit::Deadline => write!(f, "stopped at --max-time"),
                Limit::Idle => write!(f, "idle: no output for --idle-timeout"),
            },
            Status::NotFound(name) if name.is_empty() => write!(f, "command not found"),
            Status::NotFound(name) => write!(f, "command not found: {name}"),
            Status::CannotStart(why) => write!(f, "{why}"),
            Status::NotExecutable(why) => write!(f, "cannot execute: {why}"),
            Status::Interrupted(sig) => write!(f, "interrupted by {}", signal_name(*sig)),
            Status::Http { code, hints } => {
                write!(f, "HTTP {code}")?;
                if let Some(floor) = &hints.floor {
                    let wait = crate::human::asked_wait(floor.wait);
                    write!(f, ", {} {wait}", floor.field.name())?;
                }
                Ok(())
            }
            Status::Net { failure, detail } if detail.is_empty() => write!(f, "{failure}"),
            Status::Net { failure, detail } => write!(f, "{failure}: {detail}"),
            Status::Connected => write!(f, "connected"),
            Status::Path { detail, .. } => write!(f, "{detail}"),
            Status::Grpc { answer, detail } if detail.is_empty() => write!(f, "{answer}"),
            Status::Grpc { answer, detail } => write!(f, "{answer}: {detail}"),
            Status::Undelivered(why) => write!(f, "the command succeeded, but {why}"),
        }
    }
}

/// `SIGTERM` for 15, `SIGRTMIN+2`, `signal 99` for numbers without a name.
pub fn signal_name(sig: i32) -> String {
    crate::signame::name(sig)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(r: &[(i32, i32)]) -> CodeSet {
        CodeSet::new(r.to_vec())
    }

    #[test]
    fn default_rules() {
        let r = Rules::default();
        assert_eq!(classify(&Status::Exited(0), &r), Verdict::Success);
        assert_eq!(classify(&Status::Exited(1), &r), Verdict::Retryable);
        assert_eq!(classify(&Status::Exited(255), &r), Verdict::Retryable);
        assert_eq!(classify(&Status::Exited(126), &r), Verdict::Permanent);
        assert_eq!(classify(&Status::Exited(127), &r), Verdict::Permanent);
        assert_eq!(
            classify(&Status::NotFound(String::new()), &r),
            Verdict::Permanent
        );
        assert_eq!(
            classify(&Status::NotExecutable("x".into()), &r),
            Verdict::Permanent
        );
        assert_eq!(classify(&Status::Signaled(9), &r), Verdict::Retryable);
        assert_eq!(classify(&Status::Interrupted(15), &r), Verdict::Permanent);
    }

    #[test]
    fn timeouts() {
        let attempt = Status::TimedOut {
            limit: Limit::Attempt,
            after: Duration::from_secs(1),
        };
        let deadline = Status::TimedOut {
            limit: Limit::Deadline,
            after: Duration::from_secs(1),
        };
        let mut r = Rules::default();
        assert_eq!(classify(&attempt, &r), Verdict::Retryable);
        assert_eq!(classify(&deadline, &r), Verdict::Permanent);
        r.retry_on_timeout = false;
        assert_eq!(classify(&attempt, &r), Verdict::Permanent);
    }

    #[test]
    fn lists() {
        let r = Rules {
            retry_on: Some(set(&[(1, 1), (75, 75), (100, 110)])),
            stop_on: set(&[(3, 3)]),
            success_on: set(&[(42, 42)]),
            retry_on_timeout: true,
            http: HttpRules::default(),
        };
        assert_eq!(classify(&Status::Exited(1), &r), Verdict::Retryable);
        assert_eq!(classify(&Status::Exited(105), &r), Verdict::Retryable);
        assert_eq!(classify(&Status::Exited(2), &r), Verdict::Permanent);
        assert_eq!(classify(&Status::Exited(3), &r), Verdict::Permanent);
        assert_eq!(classify(&Status::Exited(42), &r), Verdict::Success);
        // Signals are not exit codes: --retry-on does not narrow them, --stop-on does.
        assert_eq!(classify(&Status::Signaled(9), &r), Verdict::Retryable);
        let stop_kill = Rules {
            stop_on: set(&[(137, 137)]),
            ..Rules::default()
        };
        assert_eq!(
            classify(&Status::Signaled(9), &stop_kill),
            Verdict::Permanent
        );
        assert_eq!(
            classify(&Status::Signaled(15), &stop_kill),
            Verdict::Retryable
        );
    }

    #[test]
    fn retry_on_can_make_127_retryable() {
        let r = Rules {
            retry_on: Some(set(&[(127, 127)])),
            ..Rules::default()
        };
        assert_eq!(classify(&Status::Exited(127), &r), Verdict::Retryable);
        // A failed exec is still permanent: there is no program to run.
        assert_eq!(
            classify(&Status::NotFound(String::new()), &r),
            Verdict::Permanent
        );
    }

    #[test]
    fn overlap() {
        assert_eq!(set(&[(1, 5)]).first_overlap(&set(&[(5, 9)])), Some(5));
        assert_eq!(
            set(&[(1, 5), (20, 30)]).first_overlap(&set(&[(25, 26), (3, 3)])),
            Some(3)
        );
        assert_eq!(set(&[(1, 5)]).first_overlap(&set(&[(6, 9)])), None);
    }

    #[test]
    fn wording() {
        assert_eq!(Status::Exited(3).to_string(), "exit 3");
        assert_eq!(Status::Signaled(9).to_string(), "killed by SIGKILL");
        assert_eq!(Status::Signaled(99).to_string(), "killed by signal 99");
        assert_eq!(
            Status::TimedOut {
                limit: Limit::Attempt,
                after: Duration::from_millis(1500)
            }
            .to_string(),
            "timed out by --timeout"
        );
    }

    #[test]
    fn output_matches_decide_failures_only() {
        let r = Rules {
            stop_on: set(&[(3, 3)]),
            ..Rules::default()
        };
        let stop = OutputMatch::Stop("fatal".into());
        let again = OutputMatch::Retry("busy".into());
        let none = OutputMatch::None;
        let judge = |s: &Status, o: &OutputMatch| classify_with_output(s, o, &r);
        // A success stays a success.
        assert_eq!(judge(&Status::Exited(0), &stop), Verdict::Success);
        assert_eq!(judge(&Status::Exited(0), &again), Verdict::Success);
        // A stop match makes a retryable failure permanent...
        assert_eq!(judge(&Status::Exited(1), &stop), Verdict::Permanent);
        assert_eq!(judge(&Status::Signaled(9), &stop), Verdict::Permanent);
        let timed_out = Status::TimedOut {
            limit: Limit::Attempt,
            after: Duration::from_secs(1),
        };
        assert_eq!(judge(&timed_out, &stop), Verdict::Permanent);
        // ...and a retry match a permanent one retryable.
        assert_eq!(judge(&Status::Exited(3), &again), Verdict::Retryable);
        assert_eq!(judge(&Status::Exited(127), &again), Verdict::Retryable);
        assert_eq!(judge(&Status::Signaled(13), &again), Verdict::Retryable);
        // No match: the exit-code rules alone.
        assert_eq!(judge(&Status::Exited(1), &none), Verdict::Retryable);
        assert_eq!(judge(&Status::Exited(3), &none), Verdict::Permanent);
        // Where no retry can help, the output does not change that.
        assert_eq!(judge(&Status::Interrupted(15), &again), Verdict::Permanent);
        let deadline = Status::TimedOut {
            limit: Limit::Deadline,
            after: Duration::from_secs(1),
        };
        assert_eq!(judge(&deadline, &again), Verdict::Permanent);
        assert_eq!(
            judge(&Status::CannotStart("x".into()), &stop),
            Verdict::Retryable
        );
        assert_eq!(
            explain_with_output(&Status::Exited(1), &stop, &r),
            "exit 1, and the output matched --stop-if-output 'fatal'"
        );
        assert_eq!(
            explain_with_output(&Status::Exited(3), &none, &r),
            "exit 3 is in --stop-on"
        );
    }

    #[test]
    fn a_gone_reader_makes_a_retryable_failure_permanent_and_nothing_else() {
        assert_eq!(with_reader_gone(Verdict::Retryable), Verdict::Permanent);
        assert_eq!(with_reader_gone(Verdict::Success), Verdict::Success);
        assert_eq!(with_reader_gone(Verdict::Permanent), Verdict::Permanent);
        assert!(
            explain_reader_gone(&Status::Exited(1))
                .starts_with("exit 1, and nothing reads retry's stdout")
        );
    }
}
