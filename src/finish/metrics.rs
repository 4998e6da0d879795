//! The run's metrics in Prometheus's text exposition format (0.0.4), as
//! node_exporter's textfile collector and the Pushgateway read them; and the
//! times kept from a previous file.
//!
//! Pure: a summary and the kept times in, text out. The metric names are
//! an interface (dashboards and alerts use them): never rename one. Every
//! label value comes from the user's flags or from a fixed list (the
//! outcome), so no run can add a series of its own.

use std::fmt::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::RunSummary;
use crate::event::End;

pub const START: &str = "retry_last_run_start_timestamp_seconds";
pub const DURATION: &str = "retry_last_run_duration_seconds";
pub const ATTEMPTS: &str = "retry_last_run_attempts";
pub const EXIT_CODE: &str = "retry_last_run_exit_code";
pub const SUCCESS: &str = "retry_last_run_success";
pub const OUTCOME: &str = "retry_last_run_outcome";
pub const RETRIES_REFUSED: &str = "retry_last_run_retries_refused";
pub const LAST_SUCCESS: &str = "retry_last_success_timestamp_seconds";
pub const LAST_FAILURE: &str = "retry_last_failure_timestamp_seconds";

/// Every outcome, in the order they are written: all of them appear in
/// every file and push (0 or 1), so an alert on one never sees it vanish.
const OUTCOMES: [End; 6] = [
    End::Success,
    End::Exhausted,
    End::Permanent,
    End::Deadline,
    End::Interrupted,
    End::Refused,
];

/// `--metrics-file`, `--metrics-push`, `--metrics-job` and `--metrics-label`,
/// validated: at least one of the file and the push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricsOptions {
    pub file: Option<std::path::PathBuf>,
    pub push: Option<reqwest::Url>,
    pub job: String,
    /// Valid label names, none of them `job`, each once.
    pub labels: Vec<(String, String)>,
}

/// The times of the last success and the last failure, as kept across
/// runs of the other kind (seconds since the Unix epoch).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Kept {
    pub last_success: Option<f64>,
    pub last_failure: Option<f64>,
}

/// Whether `name` is a valid Prometheus label name that a user may set:
/// `[a-zA-Z_][a-zA-Z0-9_]*`, not reserved (`__` names are Prometheus's own).
pub fn is_label_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !name.starts_with("__")
}

/// Seconds since the Unix epoch (0 for a time before it), to the
/// millisecond.
fn epoch_seconds(t: SystemTime) -> f64 {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO);
    round_ms(d)
}

fn round_ms(d: Duration) -> f64 {
    (d.as_millis() as f64) / 1000.0
}

/// A label value as the text format writes it between quotes.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// `{a="1",b="2"}`, or nothing without labels.
fn label_set(labels: &[(&str, &str)]) -> String {
    if labels.is_empty() {
        return String::new();
    }
    let inner: Vec<String> = labels
        .iter()
        .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
        .collect();
    format!("{{{}}}", inner.join(","))
}

/// A number as the text format reads it: integers without a fraction,
/// times to the millisecond.
fn number(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.3}")
    }
}

struct Writer<'a> {
    out: String,
    labels: &'a [(String, String)],
}

impl Writer<'_> {
    fn family(&mut self, name: &str, help: &str) {
        let _ = writeln!(self.out, "# HELP {name} {help}");
        let _ = writeln!(self.out, "# TYPE {name} gauge");
    }

    fn sample(&mut self, name: &str, extra: Option<(&str, &str)>, value: f64) {
        let mut labels: Vec<(&str, &str)> = self
            .labels
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        labels.extend(extra);
        let _ = writeln!(self.out, "{name}{} {}", label_set(&labels), number(value));
    }

    fn gauge(&mut self, name: &str, help: &str, value: f64) {
        self.family(name, help);
        self.sample(name, None, value);
    }
}

/// The metrics of the run `summary` describes, each sample with `labels`
/// (the textfile's job and labels; none for a push, whose grouping key
/// carries them). The success or failure time this run does not set is
/// taken from `kept`, and left out when `kept` has none (a push leaves it
/// out so that the gateway keeps the one it has).
pub fn render(summary: &RunSummary, labels: &[(String, String)], kept: Kept) -> String {
    let ended = epoch_seconds(summary.started_at + summary.duration);
    let succeeded = summary.ending.exit_code == 0;
    let (last_success, last_failure) = if succeeded {
        (Some(ended), kept.last_failure)
    } else {
        (kept.last_success, Some(ended))
    };
    let mut w = Writer {
        out: String::new(),
        labels,
    };
    w.gauge(
        START,
        "When the last run started, in seconds since the Unix epoch.",
        epoch_seconds(summary.started_at),
    );
    w.gauge(
        DURATION,
        "How long the last run took, waits included, in seconds.",
        round_ms(summary.duration),
    );
    w.gauge(
        ATTEMPTS,
        "Attempts the last run started (0 when the circuit breaker refused it).",
        f64::from(summary.ending.attempts),
    );
    w.gauge(
        EXIT_CODE,
        "The exit status of the last run.",
        f64::from(summary.ending.exit_code),
    );
    w.gauge(
        SUCCESS,
        "1 if the last run succeeded, else 0.",
        if succeeded { 1.0 } else { 0.0 },
    );
    w.family(
        OUTCOME,
        "How the last run ended: 1 for its outcome, 0 for the others.",
    );
    for end in OUTCOMES {
        let value = if end == summary.ending.end { 1.0 } else { 0.0 };
        w.sample(OUTCOME, Some(("outcome", end.as_str())), value);
    }
    w.gauge(
        RETRIES_REFUSED,
        "Retries the group's shared retry budget refused in the last run.",
        f64::from(summary.ending.retries_refused),
    );
    if let Some(t) = last_success {
        w.gauge(
            LAST_SUCCESS,
            "When a run last succeeded, in seconds since the Unix epoch.",
            t,
        );
    }
    if let Some(t) = last_failure {
        w.gauge(
            LAST_FAILURE,
            "When a run last failed, was refused or was interrupted, in seconds since the Unix epoch.",
            t,
        );
    }
    w.out
}

/// The success and failure times in a file [`render`] wrote before.
/// Anything else in it, and anything unreadable, is ignored.
pub fn kept_from(text: &str) -> Kept {
    let mut kept = Kept::default();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let name_end = line.find(['{', ' ', '\t']).unwrap_or(line.len());
        let slot = match &line[..name_end] {
            LAST_SUCCESS => &mut kept.last_success,
            LAST_FAILURE => &mut kept.last_failure,
            _ => continue,
        };
        let value = line
            .rsplit([' ', '\t'])
            .next()
            .and_then(|v| v.parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0);
        if value.is_some() {
            *slot = value;
        }
    }
    kept
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::Ending;

    fn summary(exit_code: u8, end: End) -> RunSummary {
        RunSummary {
            started_at: UNIX_EPOCH + Duration::from_millis(1_700_000_000_250),
            duration: Duration::from_millis(2_500),
            seed: 0,
            ending: Ending {
                end,
                attempts: 3,
                exit_code,
                reason: "".into(),
                last_status: None,
                retries_refused: 0,
                waited: std::time::Duration::ZERO,
            },
        }
    }

    fn labels() -> Vec<(String, String)> {
        vec![
            ("job".into(), "backup".into()),
            ("instance".into(), "db\"1\\\n".into()),
        ]
    }

    #[test]
    fn a_success_in_the_text_format() {
        let text = render(
            &summary(0, End::Success),
            &[("job".into(), "backup".into())],
            Kept {
                last_success: Some(1.0),
                last_failure: Some(1_600_000_000.5),
            },
        );
        let expected = "\
# HELP retry_last_run_start_timestamp_seconds When the last run started, in seconds since the Unix epoch.
# TYPE retry_last_run_start_timestamp_seconds gauge
retry_last_run_start_timestamp_seconds{job=\"backup\"} 1700000000.250
# HELP retry_last_run_duration_seconds How long the last run took, waits included, in seconds.
# TYPE retry_last_run_duration_seconds gauge
retry_last_run_duration_seconds{job=\"backup\"} 2.500
# HELP retry_last_run_attempts Attempts the last run started (0 when the circuit breaker refused it).
# TYPE retry_last_run_attempts gauge
retry_last_run_attempts{job=\"backup\"} 3
# HELP retry_last_run_exit_code The exit status of the last run.
# TYPE retry_last_run_exit_code gauge
retry_last_run_exit_code{job=\"backup\"} 0
# HELP retry_last_run_success 1 if the last run succeeded, else 0.
# TYPE retry_last_run_success gauge
retry_last_run_success{job=\"backup\"} 1
# HELP retry_last_run_outcome How the last run ended: 1 for its outcome, 0 for the others.
# TYPE retry_last_run_outcome gauge
retry_last_run_outcome{job=\"backup\",outcome=\"success\"} 1
retry_last_run_outcome{job=\"backup\",outcome=\"exhausted\"} 0
retry_last_run_outcome{job=\"backup\",outcome=\"permanent\"} 0
retry_last_run_outcome{job=\"backup\",outcome=\"deadline\"} 0
retry_last_run_outcome{job=\"backup\",outcome=\"interrupted\"} 0
retry_last_run_outcome{job=\"backup\",outcome=\"refused\"} 0
# HELP retry_last_run_retries_refused Retries the group's shared retry budget refused in the last run.
# TYPE retry_last_run_retries_refused gauge
retry_last_run_retries_refused{job=\"backup\"} 0
# HELP retry_last_success_timestamp_seconds When a run last succeeded, in seconds since the Unix epoch.
# TYPE retry_last_success_timestamp_seconds gauge
retry_last_success_timestamp_seconds{job=\"backup\"} 1700000002.750
# HELP retry_last_failure_timestamp_seconds When a run last failed, was refused or was interrupted, in seconds since the Unix epoch.
# TYPE retry_last_failure_timestamp_seconds gauge
retry_last_failure_timestamp_seconds{job=\"backup\"} 1600000000.500
";
        assert_eq!(text, expected);
    }

    #[test]
    fn a_failure_keeps_the_last_success_and_sets_its_own_time() {
        let kept = Kept {
            last_success: Some(1_690_000_000.0),
            last_failure: None,
        };
        let text = render(&summary(143, End::Interrupted), &labels(), kept);
        assert!(
            text.contains("retry_last_run_success{job=\"backup\",instance=\"db\\\"1\\\\\\n\"} 0\n")
        );
        assert!(text.contains("outcome=\"interrupted\"} 1\n"));
        assert!(text.contains(
            "retry_last_run_exit_code{job=\"backup\",instance=\"db\\\"1\\\\\\n\"} 143\n"
        ));
        let again = kept_from(&text);
        assert_eq!(again.last_success, Some(1_690_000_000.0));
        assert_eq!(again.last_failure, Some(1_700_000_002.75));
    }

    #[test]
    fn a_time_never_seen_is_left_out() {
        // What a push sends: the gateway keeps the other kind's time.
        let text = render(&summary(1, End::Exhausted), &[], Kept::default());
        assert!(!text.contains(LAST_SUCCESS), "{text}");
        assert!(text.contains("\nretry_last_failure_timestamp_seconds 1700000002.750\n"));
        assert!(text.contains("\nretry_last_run_outcome{outcome=\"exhausted\"} 1\n"));
        let text = render(&summary(0, End::Success), &[], Kept::default());
        assert!(!text.contains(LAST_FAILURE), "{text}");
    }

    #[test]
    fn kept_times_are_read_whatever_the_labels_and_garbage_is_ignored() {
        let text = "\
# HELP retry_last_success_timestamp_seconds x
retry_last_success_timestamp_seconds{job=\"a b\",x=\"}\"} 12.5
retry_last_failure_timestamp_seconds NaN
retry_last_failure_timestamp_seconds_x 9
garbage
retry_last_failure_timestamp_seconds{job=\"a\"} -3
";
        assert_eq!(
            kept_from(text),
            Kept {
                last_success: Some(12.5),
                last_failure: None
            }
        );
        assert_eq!(kept_from(""), Kept::default());
    }

    #[test]
    fn label_names_as_prometheus_accepts_them() {
        for ok in ["instance", "_x", "a1_b", "Env"] {
            assert!(is_label_name(ok), "{ok}");
        }
        for bad in ["", "1a", "a-b", "__name__", "__x", "é", "a b"] {
            assert!(!is_label_name(bad), "{bad}");
        }
    }
}
