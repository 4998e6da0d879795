//! The countdown a person at a terminal sees during a long wait.
//!
//! It is drawn only on a terminal, and only while retry is in the terminal's
//! foreground: a retry started with `&` stays quiet.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

use super::text::{PREFIX, paint_word};
use crate::human::{human, of_max};

/// Waits up to this long get no countdown: it would only flicker.
const MIN_WAIT: Duration = Duration::from_secs(1);

/// The countdown shown during one wait; dropping it erases it, so that the
/// next line written to the terminal starts on a clean line.
#[must_use = "the countdown disappears when dropped"]
pub struct Countdown(Option<ProgressBar>);

impl Countdown {
    pub fn none() -> Countdown {
        Countdown(None)
    }

    /// A countdown of `wait` to attempt `next`, if this wait deserves one
    /// and stderr is the terminal that retry has in the foreground.
    pub fn start(wait: Duration, next: u32, max: Option<u32>, color: bool) -> Countdown {
        if wait <= MIN_WAIT || !stderr_is_foreground_terminal() {
            return Countdown(None);
        }
        let left = move |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            // Whole seconds, rounded up: "1s" until the wait is over.
            let secs = wait.saturating_sub(state.elapsed()).as_secs_f64().ceil();
            let _ = w.write_str(&human(Duration::from_secs(secs as u64)));
        };
        let Ok(style) = ProgressStyle::with_template("{prefix} attempt {msg} starts in {left}")
        else {
            return Countdown(None);
        };
        let prefix = if color {
            paint_word("retry:", PREFIX)
        } else {
            "retry:".to_string()
        };
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
            .with_style(style.with_key("left", left))
            .with_prefix(prefix)
            .with_message(of_max(next, max));
        // A thread redraws it, so the wait itself stays a plain timer.
        bar.enable_steady_tick(Duration::from_millis(250));
        Countdown(Some(bar))
    }
}

impl Drop for Countdown {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}

/// Whether stderr is a terminal whose foreground process group is retry's.
fn stderr_is_foreground_terminal() -> bool {
    let stderr = std::io::stderr();
    stderr.is_terminal()
        && nix::unistd::tcgetpgrp(stderr.as_fd()).is_ok_and(|fg| fg == nix::unistd::getpgrp())
}
