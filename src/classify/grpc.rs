//! **Pure.** gRPC mode's answers: what the health check said, how each is
//! judged, and its words.

use std::fmt;

use super::{Rules, Status, Verdict};

/// What a `grpc.health.v1.Health/Check` call ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrpcAnswer {
    /// SERVING: success.
    Serving,
    /// Any other serving status (NOT_SERVING, UNKNOWN), by name: retried.
    NotServing(String),
    /// The call failed with this gRPC status code.
    Code(i32),
    /// NOT_FOUND past the grace: the health service does not know the
    /// service named.
    UnknownService(String),
}

/// gRPC's status codes by number, as the protocol names them.
const NAMES: [&str; 17] = [
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
];

/// A gRPC status code's name (`UNIMPLEMENTED`), or its number.
pub fn code_name(code: i32) -> String {
    usize::try_from(code)
        .ok()
        .and_then(|i| NAMES.get(i))
        .map_or_else(|| code.to_string(), |n| (*n).to_string())
}

pub const UNIMPLEMENTED: i32 = 12;

/// The verdict on a health check's answer.
pub fn classify(answer: &GrpcAnswer, rules: &Rules) -> Verdict {
    match answer {
        GrpcAnswer::Serving => Verdict::Success,
        GrpcAnswer::NotServing(_) => Verdict::Retryable,
        GrpcAnswer::UnknownService(_) => Verdict::Permanent,
        // DEADLINE_EXCEEDED: the server's own timer, a timeout like ours.
        GrpcAnswer::Code(4) if !rules.retry_on_timeout => Verdict::Permanent,
        // No health service, a request it refuses, credentials it wants:
        // none changes on a retry.
        GrpcAnswer::Code(UNIMPLEMENTED | 3 | 7 | 16) => Verdict::Permanent,
        // NOT_FOUND within the grace, UNAVAILABLE, and the rest.
        GrpcAnswer::Code(_) => Verdict::Retryable,
    }
}

/// Why a permanent answer is permanent, for the give-up line.
pub fn explain(status: &Status) -> String {
    match status {
        Status::Grpc {
            answer: GrpcAnswer::Code(UNIMPLEMENTED),
            ..
        } => format!(
            "{status}: the server has no health service (grpc.health.v1.Health), so it cannot be asked"
        ),
        Status::Grpc {
            answer: GrpcAnswer::UnknownService(_),
            ..
        } => status.to_string(),
        _ => format!("{status} is not retried"),
    }
}

impl fmt::Display for GrpcAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GrpcAnswer::Serving => write!(f, "SERVING"),
            GrpcAnswer::NotServing(name) => write!(f, "the server answered {name}"),
            GrpcAnswer::Code(code) => write!(f, "gRPC status {}", code_name(*code)),
            GrpcAnswer::UnknownService(name) => write!(
                f,
                "NOT_FOUND: the health service does not know the service '{name}', still after the grace"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_judged_as_documented() {
        let rules = Rules::default();
        let v = |a: GrpcAnswer| classify(&a, &rules);
        assert_eq!(v(GrpcAnswer::Serving), Verdict::Success);
        assert_eq!(
            v(GrpcAnswer::NotServing("NOT_SERVING".into())),
            Verdict::Retryable
        );
        assert_eq!(v(GrpcAnswer::Code(UNIMPLEMENTED)), Verdict::Permanent);
        assert_eq!(v(GrpcAnswer::Code(5)), Verdict::Retryable);
        assert_eq!(v(GrpcAnswer::Code(14)), Verdict::Retryable);
        assert_eq!(v(GrpcAnswer::Code(16)), Verdict::Permanent);
        assert_eq!(
            v(GrpcAnswer::UnknownService("a".into())),
            Verdict::Permanent
        );
        assert_eq!(code_name(12), "UNIMPLEMENTED");
        assert_eq!(code_name(99), "99");
    }
}
