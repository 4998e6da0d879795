//! GitHub Actions annotations: a `::warning::` per failed attempt and an
//! `::error::` on giving up, so a flaky step shows in the run's summary.

use std::fmt::Write as _;
use std::time::Duration;

use super::text;
use crate::classify::Verdict;
use crate::event::{End, Event};

/// The workflow command for an event, if it gets one. Its text is the plain
/// text log line.
pub fn annotation(event: &Event<'_>, elapsed: Duration) -> Option<String> {
    let level = match event {
        Event::Attempt { verdict, .. } if *verdict != Verdict::Success => "warning",
        Event::Done { ending, .. } if !matches!(ending.end, End::Success | End::Interrupted) => {
            "error"
        }
        _ => return None,
    };
    let line = text::line(event, elapsed);
    let message = line.strip_prefix("retry: ").unwrap_or(&line);
    let mut out = format!("::{level} title=retry::");
    // Workflow-command data escapes, so a message cannot end the command early.
    for c in message.chars() {
        match c {
            '%' => out.push_str("%25"),
            '\r' => out.push_str("%0D"),
            '\n' => out.push_str("%0A"),
            // Nor may it drive the terminal that shows the job's log.
            c if c.is_control() => out.push_str(&crate::human::escape_controls(&c.to_string())),
            c => out.push(c),
        }
    }
    let _ = writeln!(out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Status;
    use crate::event::Ending;

    #[test]
    fn annotation_lines_are_escaped_workflow_commands() {
        let status = Status::Exited(1);
        let failed = Event::Attempt {
            attempt: 1,
            max: Some(3),
            status: &status,
            verdict: Verdict::Retryable,
            duration: Duration::from_millis(5),
            next: None,
        };
        assert_eq!(
            annotation(&failed, Duration::ZERO).as_deref(),
            Some("::warning title=retry::attempt 1/3 failed (exit 1) after 5ms\n")
        );
        let broken = Ending {
            attempts: 1,
            ..Ending::before_attempts(End::Permanent, 2, "100% broken\nreally")
        };
        let done = Event::Done {
            ending: &broken,
            max: Some(3),
        };
        let line = annotation(&done, Duration::ZERO).expect("an error annotation");
        assert!(line.starts_with("::error title=retry::giving up after 1 attempt"));
        assert!(line.contains("100%25 broken%0Areally"));
        let raw = Ending {
            attempts: 1,
            ..Ending::before_attempts(End::Permanent, 2, "host \x1b[2Jx\r")
        };
        let line = annotation(
            &Event::Done {
                ending: &raw,
                max: None,
            },
            Duration::ZERO,
        )
        .expect("an error annotation");
        assert!(line.contains("host \\x1b[2Jx%0D"), "{line}");
        assert_eq!(line.matches('\n').count(), 1);
        let succeeded = Ending {
            attempts: 2,
            ..Ending::before_attempts(End::Success, 0, "")
        };
        let ok = Event::Done {
            ending: &succeeded,
            max: Some(3),
        };
        assert_eq!(annotation(&ok, Duration::ZERO), None);
    }
}
