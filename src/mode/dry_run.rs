//! `--dry-run`: the delay schedule this policy produces, on stdout; nothing
//! runs. COMMAND (or the probe), if given, is only shown, its secrets
//! masked as the log masks them (a dry run's report ends up in CI output
//! as often as the log does), and so is the trace a run would keep
//! (nothing is sent).

use std::ffi::OsString;

use crate::finish::trace::TraceOptions;
use crate::policy::Config;
use crate::{rng, schedule};

pub fn main(config: &Config, command: &[OsString], seed: u64) -> u8 {
    let sched = schedule::schedule(&config.policy, &mut rng::seeded(seed));
    let shown: Vec<OsString> = crate::mask::command_line(command)
        .into_iter()
        .map(Into::into)
        .collect();
    let mut report = schedule::render(&config.policy, seed, &shown, &sched);
    if let Some(line) = trace_line(&config.finish.trace) {
        report.push_str(&line);
        report.push('\n');
    }
    super::print(&report)
}

/// What a run would do with traces, when it would keep one or was handed
/// a context it would ignore; None otherwise (the report stays as it was).
fn trace_line(options: &TraceOptions) -> Option<String> {
    let mut parts = Vec::new();
    for warning in &options.warnings {
        parts.push(warning.clone());
    }
    if options.active() {
        parts.push(match options.incoming.parent {
            Some(parent) => format!(
                "a child of trace {} span {} (TRACEPARENT)",
                parent.trace_id.hex(),
                parent.span_id.hex()
            ),
            None => "a new trace".to_string(),
        });
        parts.push(if options.hand_on {
            "each attempt gets a span and a TRACEPARENT of its own".to_string()
        } else {
            "attempts get no trace context (--trace-context off)".to_string()
        });
        parts.push(match &options.export {
            Some(export) => format!("spans exported to {} when the run ends", export.shown),
            None => "no spans exported".to_string(),
        });
    }
    (!parts.is_empty()).then(|| format!("trace: {}", parts.join("; ")))
}
