//! `--on-give-up`: a shell command run once when the run gives up.
//!
//! Not after a success, and not when a signal ended the run (whoever sent
//! it wants retry gone). The hook runs within what is left of `--max-time`,
//! but for at least [`AT_LEAST`]: a run often gives up because that time ran
//! out, and the hook must still get its chance.

use std::time::{Duration, Instant};

use super::{Ctx, Output, RunSummary, Work};
use crate::attempt::hook::{Call, Hook, Runner};
use crate::event::{End, Event};
use crate::exit;

/// The least time the hook gets, whatever is left of `--max-time`.
pub const AT_LEAST: Duration = Duration::from_secs(10);

/// Runs the `--on-give-up` command.
pub struct GiveUp {
    runner: Runner,
}

impl GiveUp {
    pub fn new(hook: &Hook) -> GiveUp {
        GiveUp {
            runner: Runner::new(hook),
        }
    }
}

impl Output for GiveUp {
    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            if summary.ending.exit_code == exit::SUCCESS
                || summary.ending.end == End::Interrupted
                || ctx.cut.is_some()
                || ctx.signals.interrupted().is_some()
            {
                return;
            }
            let call = Call {
                attempt: summary.ending.attempts,
                exit_code: Some(i32::from(summary.ending.exit_code)),
                next_delay: None,
            };
            let soonest = Instant::now().checked_add(AT_LEAST);
            let deadline = match (ctx.deadline, soonest) {
                (Some(d), Some(s)) => Some(d.max(s)),
                (None, _) => None,
                (d, None) => d,
            };
            if let Err(why) = self.runner.run(&call, deadline, ctx.signals).await {
                ctx.log.emit(&Event::Warning { message: &why });
            }
        })
    }
}
