//! `--hold-output`: the last attempt's held output, written out when the
//! run did not succeed (it gave up, or a signal ended it), dropped when it
//! did.
//!
//! The bytes are copied on a blocking thread, each to its own stream, in
//! the order they were written; a terminating signal while they are being
//! written (a reader that never reads) abandons the rest.

use std::sync::Arc;

use super::{Ctx, Output, RunSummary, Work, client};
use crate::attempt::hold::{Held, Spool};
use crate::event::Event;
use crate::exit;

/// Writes out what the last attempt held.
pub struct HeldOutput {
    held: Held,
}

impl HeldOutput {
    pub fn new(held: Held) -> HeldOutput {
        HeldOutput { held }
    }
}

impl Output for HeldOutput {
    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            let Some(spool) = self.held.take() else {
                return;
            };
            if summary.ending.exit_code == exit::SUCCESS {
                return;
            }
            let copy = tokio::task::spawn_blocking(move || write_out(&spool));
            let written = client::unless_cut(copy, ctx).await.and_then(Result::ok);
            for warning in written.into_iter().flatten() {
                ctx.log.emit(&Event::Warning { message: &warning });
            }
        })
    }
}

/// Write the spool out; the warnings to log.
fn write_out(spool: &Arc<Spool>) -> Vec<String> {
    let out = spool.write_out();
    let mut warnings = Vec::new();
    if let Some((lost, why)) = out.lost {
        warnings.push(format!(
            "{lost} bytes of the held output could not be kept ({why}); the rest follows"
        ));
    }
    if let Some(why) = out.failed {
        warnings.push(why);
    }
    warnings
}
