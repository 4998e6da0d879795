//! Held output at the ends of a run.
//!
//! Before the first attempt, the first spool is made: a temporary
//! directory that cannot be used is said then, even with `-q`, since every
//! attempt's output will pass through. When the run has ended, the last
//! attempt's held output is written out: with `--hold-output`, all of it
//! when the run did not succeed (it gave up, or a signal ended it), none
//! when it did; with `--last-stdout`, its stdout whatever the ending (a
//! success's went out when the attempt ended).
//!
//! What was not held as asked is said before the output, also with `-q`:
//! the middle dropped at `--hold-max` or on a full disk (and a mark where
//! it was), bytes lost, output that passed through instead, and stdout
//! that holds more than the last attempt's output. The bytes are copied on
//! a blocking thread, each to its own stream, in the order they were
//! written, within a bound ([`until`]) whatever the reader does: a further
//! terminating signal, or the bound passing while a reader takes nothing,
//! abandons the rest, and the thread with it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Ctx, Output, REPORTS_AFTER_SIGNAL, RunSummary, Work, client};
use crate::attempt::hold::{Count, Held, HoldOptions, Learned, Part, Report, Spool, Why, tmpdir};
use crate::event::{End, Event};
use crate::exit;
use crate::human::{grouped, human, human_size, human_size_about, io_error};

/// Makes the first spool, and writes out what the last attempt held.
pub struct HeldOutput {
    held: Held,
}

impl HeldOutput {
    pub fn new(held: Held) -> HeldOutput {
        HeldOutput { held }
    }
}

impl Output for HeldOutput {
    fn started<'a>(&'a mut self, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            if let Err(why) = self.held.check() {
                ctx.log.output_warning(&unusable(self.held.options(), &why));
            }
        })
    }

    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            let bound = until(summary.ending.end, ctx.deadline, Instant::now());
            let held = self.held.clone();
            let Some((last, learned)) = on_thread(move || held.end(), &bound, ctx).await else {
                return;
            };
            let options = self.held.options().clone();
            let failed = summary.ending.exit_code != exit::SUCCESS;
            let streams = [
                options.last_stdout || (options.output && failed),
                options.output && failed,
            ];
            for (line, loud) in learned_lines(&options, &learned, summary.ending.attempts) {
                match loud {
                    true => ctx.log.output_warning(&line),
                    false => ctx.log.emit(&Event::Warning { message: &line }),
                }
            }
            // A spool whose writer was left behind (the attempt said so)
            // has nothing more to give.
            let Some((n, spool)) = last.filter(|(_, s)| streams.contains(&true) && !s.abandoned())
            else {
                return;
            };
            let held = Arc::clone(&spool);
            let Some(report) = on_thread(move || held.report(), &bound, ctx).await else {
                return;
            };
            let cut = writes_cut(&report, streams);
            for line in before_lines(n, &report, streams) {
                ctx.log.output_warning(&line);
            }
            let mut failures = Vec::new();
            let Some(head) = write_part(&spool, Part::Head, streams, &bound, ctx).await else {
                return;
            };
            failures.extend(head);
            if let Some(dropped) = cut {
                ctx.log.output_warning(&format!("[{dropped} dropped here]"));
            }
            let Some(tail) = write_part(&spool, Part::Tail, streams, &bound, ctx).await else {
                return;
            };
            failures.extend(tail);
            failures.dedup();
            for why in failures {
                ctx.log.emit(&Event::Warning { message: &why });
            }
        })
    }
}

/// When writing the held output out must be over, from `now`, the end of
/// a run that ended as `end`: after a signal, [`REPORTS_AFTER_SIGNAL`]
/// (the supervisor that sent it waits for retry); else within `--max-time`
/// but for at least [`AT_LEAST`] (a run often gives up because that time
/// ran out, and its output is why it is held), and without `--max-time`
/// no bound but a further signal. With the bound, how it is named.
fn until(end: End, deadline: Option<Instant>, now: Instant) -> Option<(Instant, String)> {
    let after = |d: Duration| now.checked_add(d);
    if end == End::Interrupted {
        let at = after(REPORTS_AFTER_SIGNAL)?;
        return Some((
            at,
            format!("{} after the signal", human(REPORTS_AFTER_SIGNAL)),
        ));
    }
    let deadline = deadline?;
    match after(AT_LEAST) {
        Some(least) if least > deadline => Some((
            least,
            format!("{} after the end of the run", human(AT_LEAST)),
        )),
        _ => Some((deadline, "--max-time".to_string())),
    }
}

/// The least time writing the held output out gets after a run that was
/// not ended by a signal, whatever is left of `--max-time`.
pub const AT_LEAST: Duration = Duration::from_secs(10);

/// `work` on a blocking thread (it writes to a reader, or waits for the
/// pump that does), before `bound` and unless a further signal cuts it
/// short: None when either came first (the bound is said), and the
/// thread is left behind.
async fn on_thread<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
    bound: &Option<(Instant, String)>,
    ctx: &mut Ctx<'_>,
) -> Option<T> {
    let task = tokio::task::spawn_blocking(work);
    let at = bound.as_ref().map(|(at, _)| *at);
    let bounded = async {
        tokio::select! {
            biased;
            done = task => Some(done),
            () = crate::bound::until(at) => None,
        }
    };
    match client::unless_cut(bounded, ctx).await? {
        Some(Ok(done)) => Some(done),
        Some(Err(e)) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Some(Err(_)) => None,
        None => {
            let when = bound.as_ref().map_or("", |(_, when)| when.as_str());
            ctx.log.output_warning(&format!(
                "the held output was not all written out: its reader had not taken it by {when}, and the rest is abandoned"
            ));
            None
        }
    }
}

/// Write `part` of the spool out (see [`on_thread`]); None when it was
/// cut short, else why a stream could not take its bytes.
async fn write_part(
    spool: &Arc<Spool>,
    part: Part,
    streams: [bool; 2],
    bound: &Option<(Instant, String)>,
    ctx: &mut Ctx<'_>,
) -> Option<Option<String>> {
    let spool = Arc::clone(spool);
    let out = on_thread(move || spool.write_out(part, streams), bound, ctx).await?;
    Some(out.failed.map(|(fd, e)| match fd {
        1 => format!("cannot write the held output to stdout: {}", io_error(&e)),
        2 => format!("cannot write the held output to stderr: {}", io_error(&e)),
        _ => format!("cannot read the held output back: {}", io_error(&e)),
    }))
}

/// The first spool could not be made: nothing is held in this run.
fn unusable(options: &HoldOptions, why: &str) -> String {
    match (options.output, options.last_stdout) {
        (false, _) => format!(
            "cannot hold stdout for --last-stdout, so it passes through as it comes and a retried attempt's follows what the failed one wrote: {why}"
        ),
        (true, false) => format!(
            "cannot hold the output for --hold-output, so every attempt's output passes through as it comes: {why}"
        ),
        (true, true) => format!(
            "cannot hold the output for --hold-output and --last-stdout, so every attempt's output passes through as it comes: {why}"
        ),
    }
}

/// Why holding stopped, as the end of a sentence about an attempt's output.
fn stopped(why: &Why) -> String {
    match why {
        Why::Bound(max) => format!("passed --hold-max ({})", human_size(*max)),
        Why::Full(e) => format!("could not be held in {} ({e})", tmpdir().display()),
        Why::Failed(e) => format!("could not be held ({e})"),
    }
}

/// What the run's attempts learned, as lines to log: (line, whether `-q`
/// shows it). `last` is the last attempt's number.
fn learned_lines(options: &HoldOptions, learned: &Learned, last: u32) -> Vec<(String, bool)> {
    let mut lines = Vec::new();
    if let Some((n, why)) = &learned.stdout_passed {
        let why = stopped(why);
        let later = match last - n {
            0 => String::new(),
            1 => format!("attempt {last}'s"),
            _ => format!("that of attempts {} to {last}", n + 1),
        };
        lines.push(if *n < last {
            // What --last-stdout promised is broken: say so whatever -q.
            (
                format!(
                    "stdout holds more than the last attempt's output: attempt {n}'s stdout {why}, so it passed through as it came, and {later} followed it"
                ),
                true,
            )
        } else {
            (
                format!("attempt {n}'s stdout {why}: it passed through as it came"),
                false,
            )
        });
    }
    if let Some((n, why, count)) = &learned.unheld {
        let which = if options.last_stdout {
            "stderr"
        } else {
            "output"
        };
        let more = match count {
            1 => String::new(),
            2 => "; so did that of one later attempt".to_string(),
            c => format!("; so did that of {} later attempts", c - 1),
        };
        lines.push((
            format!(
                "attempt {n}'s {which} {}: it passed through as it came{more}",
                stopped(why)
            ),
            true,
        ));
    }
    lines
}

/// Bytes and lines of the chosen streams.
fn counted(counts: &[Count; 2], streams: [bool; 2]) -> Count {
    let mut total = Count::default();
    for s in 0..2 {
        if streams[s] {
            total.bytes += counts[s].bytes;
            total.lines += counts[s].lines;
        }
    }
    total
}

/// A count as the lines about dropped output name it.
fn amount(count: Count) -> String {
    let lines = match count.lines {
        1 => "1 line".to_string(),
        n => format!("{} lines", grouped(n)),
    };
    format!("{} ({lines})", human_size_about(count.bytes))
}

/// The middle dropped from what is written out of `streams`, if any.
fn writes_cut(report: &Report, streams: [bool; 2]) -> Option<String> {
    report.cut.as_ref()?;
    let dropped = counted(&report.dropped, streams);
    (dropped.bytes > 0).then(|| amount(dropped))
}

/// What to say before attempt `n`'s held output is written out.
fn before_lines(n: u32, report: &Report, streams: [bool; 2]) -> Vec<String> {
    let mut lines = Vec::new();
    if let (Some(why), Some(dropped)) = (&report.cut, writes_cut(report, streams)) {
        let (head, tail) = report.kept;
        let kept = format!(
            "what follows is its first {} and last {}, and {dropped} in between was dropped",
            human_size_about(head),
            human_size_about(tail)
        );
        lines.push(match why {
            Why::Full(e) => format!(
                "attempt {n}'s output filled {} ({e}): {kept}",
                tmpdir().display()
            ),
            why => format!("attempt {n}'s output {}: {kept}", stopped(why)),
        });
    }
    if let Some((bytes, why)) = &report.lost
        && *bytes > 0
    {
        lines.push(format!(
            "{} of attempt {n}'s output could not be held ({why}) and is missing from what follows",
            human_size_about(*bytes)
        ));
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(output: bool, last_stdout: bool) -> HoldOptions {
        HoldOptions::given(output, last_stdout)
    }

    #[test]
    fn held_output_is_written_out_within_max_time_but_for_10s_at_least() {
        let now = Instant::now();
        let secs = Duration::from_secs;
        // After a signal: 4 s, whatever the deadline.
        for deadline in [None, Some(now + secs(60)), Some(now)] {
            let (at, said) = until(End::Interrupted, deadline, now).expect("bounded");
            assert_eq!(at, now + REPORTS_AFTER_SIGNAL);
            assert_eq!(said, "4s after the signal");
        }
        // A deadline far enough: the deadline.
        let far = now + secs(30);
        assert_eq!(
            until(End::Exhausted, Some(far), now),
            Some((far, "--max-time".to_string()))
        );
        // One already past or too close: 10 s from the end of the run.
        for near in [now, now + secs(3)] {
            assert_eq!(
                until(End::Deadline, Some(near), now),
                Some((now + secs(10), "10s after the end of the run".to_string()))
            );
        }
        // No --max-time: nothing but a further signal.
        assert_eq!(until(End::Exhausted, None, now), None);
    }

    #[test]
    fn a_cut_is_named_before_the_output_in_words() {
        let report = Report {
            cut: Some(Why::Bound(64 << 20)),
            dropped: [
                Count {
                    bytes: 3 << 30,
                    lines: 41_234_567,
                },
                Count::default(),
            ],
            kept: (32 << 20, 31 << 20),
            ..Report::default()
        };
        let lines = before_lines(3, &report, [true, true]);
        assert_eq!(
            lines,
            [
                "attempt 3's output passed --hold-max (64 MiB): what follows is its first 32 MiB and last 31 MiB, and 3 GiB (41,234,567 lines) in between was dropped"
            ]
        );
        assert_eq!(
            writes_cut(&report, [true, true]).as_deref(),
            Some("3 GiB (41,234,567 lines)")
        );
        // Only stderr is written out, and none of it was dropped.
        assert!(before_lines(3, &report, [false, true]).is_empty());
    }

    #[test]
    fn a_full_disk_is_named_without_an_error_number() {
        let report = Report {
            cut: Some(Why::Full("no space left on device".into())),
            dropped: [
                Count::default(),
                Count {
                    bytes: 10,
                    lines: 1,
                },
            ],
            kept: (100, 200),
            ..Report::default()
        };
        let line = &before_lines(1, &report, [true, true])[0];
        assert!(line.contains("(no space left on device)"), "{line}");
        assert!(line.contains("10 bytes (1 line)"), "{line}");
        assert!(!line.contains("os error"), "{line}");
    }

    #[test]
    fn stdout_that_passed_through_is_loud_only_when_a_later_attempt_followed() {
        let learned = Learned {
            stdout_passed: Some((1, Why::Bound(64 << 20))),
            ..Learned::default()
        };
        let lines = learned_lines(&options(false, true), &learned, 3);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].1, "loud");
        assert!(lines[0].0.starts_with("stdout holds more than the last attempt's output: attempt 1's stdout passed --hold-max (64 MiB)"), "{}", lines[0].0);
        assert!(
            lines[0].0.ends_with("that of attempts 2 to 3 followed it"),
            "{}",
            lines[0].0
        );
        let lines = learned_lines(&options(false, true), &learned, 1);
        assert!(
            !lines[0].1,
            "the one attempt's stdout is still alone: {lines:?}"
        );
    }

    #[test]
    fn output_that_passed_through_in_cron_mode_is_said_with_q() {
        let learned = Learned {
            unheld: Some((2, Why::Failed("the temporary directory is gone".into()), 3)),
            ..Learned::default()
        };
        let lines = learned_lines(&options(true, false), &learned, 4);
        assert_eq!(
            lines,
            [(
                "attempt 2's output could not be held (the temporary directory is gone): it passed through as it came; so did that of 2 later attempts".to_string(),
                true
            )]
        );
    }
}
