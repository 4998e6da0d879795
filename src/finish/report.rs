//! `--report FILE` and GitHub Actions step outputs: how the run went, as a
//! small versioned JSON document a pipeline reads instead of the log.
//!
//! [`Report`] is built from the run's one [`RunSummary`] (pure: the same
//! summary gives the same document) and rendered twice: as JSON for
//! `--report`, written whole or not at all (a temporary file beside it,
//! renamed into place, under the rules every file retry writes follows),
//! and as `key=value` lines appended to the file `GITHUB_OUTPUT` names,
//! which GitHub Actions turns into the step's outputs. Both are bounded:
//! the one free-text field, `reason`, is masked and cut at [`REASON_MAX`]
//! bytes.
//! Field names are an interface: a change that removes or redefines one
//! raises [`VERSION`]; new fields may be added within a version.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use super::{Ctx, Output, RunSummary, Work};
use crate::classify::{Status, signal_name};
use crate::event::{End, Event};
use crate::fsutil::{self, Durability, Rule};
use crate::mask;

/// The document's version, its first field.
pub const VERSION: u32 = 1;
/// The most of the reason that is kept, in bytes.
pub const REASON_MAX: usize = 1024;

/// `--report` and the step outputs, validated by `policy`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportOptions {
    /// `--report FILE`.
    pub file: Option<PathBuf>,
    /// The file `GITHUB_OUTPUT` names, when step outputs are written.
    pub github_output: Option<PathBuf>,
}

impl ReportOptions {
    pub fn is_empty(&self) -> bool {
        self.file.is_none() && self.github_output.is_none()
    }
}

/// The report, field by field (docs/report.md describes each).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub version: u32,
    /// The run id, as in the JSON log's `run`.
    pub run: String,
    /// success, gave-up, permanent, interrupted or refused.
    pub outcome: &'static str,
    /// For gave-up: the limit reached, `max` or `max-time`.
    pub limit: Option<&'static str>,
    pub attempts: u32,
    /// retry's exit status.
    pub exit_code: u8,
    /// The last attempt's HTTP status, when it got a response.
    pub http_status: Option<u16>,
    /// The signal that ended the last attempt, or retry itself.
    pub signal: Option<String>,
    /// Why the run ended, in words (empty for a success).
    pub reason: String,
    /// When the run started, RFC 3339 UTC.
    pub started_at: String,
    pub elapsed_ms: u64,
    pub waited_ms: u64,
    pub seed: u64,
    /// What the last response asked for, as the log names it
    /// (`X-RateLimit-Reset (epoch) 1764345600`), when it asked.
    pub server_hint: Option<String>,
    /// How long that was, from the response.
    pub server_hint_ms: Option<u64>,
}

/// The report of the run `summary` describes, whose run id is `run`.
pub fn report(summary: &RunSummary, run: &str) -> Report {
    let ending = &summary.ending;
    let (outcome, limit) = match ending.end {
        End::Success => ("success", None),
        End::Exhausted => ("gave-up", Some("max")),
        End::Deadline => ("gave-up", Some("max-time")),
        End::Permanent => ("permanent", None),
        End::Interrupted => ("interrupted", None),
        End::Refused => ("refused", None),
    };
    let signal = match (ending.end, &ending.last_status) {
        // The signal retry got: its exit status is 128 + N (also when it
        // came before the first attempt, which leaves no status).
        (End::Interrupted, _) => Some(signal_name(i32::from(ending.exit_code.saturating_sub(128)))),
        (_, Some(Status::Signaled(sig) | Status::Interrupted(sig))) => Some(signal_name(*sig)),
        _ => None,
    };
    let (http_status, floor) = match &ending.last_status {
        Some(Status::Http { code, hints }) => (Some(*code), hints.floor.as_ref()),
        _ => (None, None),
    };
    Report {
        version: VERSION,
        run: run.to_string(),
        outcome,
        limit,
        attempts: ending.attempts,
        exit_code: ending.exit_code,
        http_status,
        signal,
        // Reasons are masked where they are made, as the log shows them;
        // masked again here, since a report may travel further than a log.
        reason: bounded(&mask::text(&ending.reason)),
        started_at: humantime::format_rfc3339_millis(summary.started_at).to_string(),
        elapsed_ms: millis(summary.duration),
        waited_ms: millis(ending.waited),
        seed: summary.seed,
        server_hint: floor.map(|f| bounded(&f.describe())),
        server_hint_ms: floor.map(|f| millis(f.wait)),
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `reason` cut at [`REASON_MAX`] bytes (on a character boundary), with
/// "..." saying so.
fn bounded(reason: &str) -> String {
    if reason.len() <= REASON_MAX {
        return reason.to_string();
    }
    let mut end = REASON_MAX - 3;
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &reason[..end])
}

/// The report as `--report` writes it: JSON, one field a line.
pub fn to_json(report: &Report) -> String {
    // Serialising plain strings and numbers cannot fail.
    let mut text = serde_json::to_string_pretty(report).unwrap_or_default();
    text.push('\n');
    text
}

/// The report as GitHub Actions step outputs: one `key=value` line per
/// field, the JSON names, an absent value empty, control characters in
/// the reason escaped so that every value stays on its line.
pub fn to_step_outputs(report: &Report) -> String {
    let opt = |v: Option<String>| v.unwrap_or_default();
    let mut reason = String::new();
    for c in report.reason.chars() {
        if c.is_control() {
            reason.extend(c.escape_default());
        } else {
            reason.push(c);
        }
    }
    let fields = [
        ("version", report.version.to_string()),
        ("run", report.run.clone()),
        ("outcome", report.outcome.to_string()),
        ("limit", opt(report.limit.map(str::to_string))),
        ("attempts", report.attempts.to_string()),
        ("exit_code", report.exit_code.to_string()),
        (
            "http_status",
            opt(report.http_status.map(|c| c.to_string())),
        ),
        ("signal", opt(report.signal.clone())),
        ("reason", reason),
        ("started_at", report.started_at.clone()),
        ("elapsed_ms", report.elapsed_ms.to_string()),
        ("waited_ms", report.waited_ms.to_string()),
        ("seed", report.seed.to_string()),
        ("server_hint", opt(report.server_hint.clone())),
        (
            "server_hint_ms",
            opt(report.server_hint_ms.map(|m| m.to_string())),
        ),
    ];
    let mut text = String::new();
    for (key, value) in fields {
        let _ = writeln!(text, "{key}={value}");
    }
    text
}

/// Whether `--report` can be written at `path`: its directory exists, is
/// trusted, and a file can be created in it (nothing is left there). The
/// error is the usage-error line.
pub fn check(path: &Path) -> Result<(), String> {
    super::textfile::check_output("--report", path)
}

/// Writes `text` at `path` whole: beside it and renamed into place (a
/// FIFO or a device there is written to as it is). The error is the
/// warning's text.
fn write_file(path: &Path, text: &str) -> Result<(), String> {
    let target = fsutil::resolve(path, Rule::Output).map_err(|e| e.to_string())?;
    let shown = target.path();
    let fail = |e: std::io::Error| format!("{}: {}", shown.display(), crate::human::io_error(&e));
    if target
        .existing
        .as_ref()
        .is_some_and(|s| !fsutil::is_regular(s))
    {
        let mut file = target.open_direct().map_err(fail)?;
        return file.write_all(text.as_bytes()).map_err(fail);
    }
    let mode = fsutil::new_file_mode();
    let mut temp = target.dir.temp_file(&target.name, mode).map_err(fail)?;
    temp.file_mut().write_all(text.as_bytes()).map_err(fail)?;
    // An existing file keeps its mode and owner where retry may set them.
    let (mode, uid, gid) = target.existing.as_ref().map_or((mode, None, None), |s| {
        (
            crate::fsutil::mode_bits(s) & 0o777,
            Some(s.st_uid),
            Some(s.st_gid),
        )
    });
    temp.set_mode_and_owner(mode, uid, gid).map_err(fail)?;
    temp.persist(&target.name, Durability::Sync).map_err(fail)
}

/// Appends `text` to the step outputs' file in one write.
fn append(path: &Path, text: &str) -> Result<(), String> {
    let mut file = fsutil::open_append(path, Rule::Output).map_err(|e| e.to_string())?;
    file.write_all(text.as_bytes())
        .map_err(|e| format!("{}: {}", path.display(), crate::human::io_error(&e)))
}

/// The output that writes the report and the step outputs.
pub struct ReportOutput {
    options: ReportOptions,
}

impl ReportOutput {
    pub fn new(options: ReportOptions) -> ReportOutput {
        ReportOutput { options }
    }
}

impl Output for ReportOutput {
    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            let report = report(summary, ctx.log.run_id());
            if let Some(path) = &self.options.file {
                match write_file(path, &to_json(&report)) {
                    Ok(()) => {
                        let message = format!("report written to {}", path.display());
                        ctx.log.emit(&Event::Note { message: &message });
                    }
                    Err(why) => {
                        let message = format!("cannot write --report: {why}");
                        ctx.log.emit(&Event::Warning { message: &message });
                    }
                }
            }
            if let Some(path) = &self.options.github_output
                && let Err(why) = append(path, &to_step_outputs(&report))
            {
                let message = format!("cannot write the step outputs to GITHUB_OUTPUT: {why}");
                ctx.log.emit(&Event::Warning { message: &message });
            }
        })
    }
}

#[cfg(test)]
mod tests;
