//! Hooks: `--on-retry` and `--on-give-up` commands, run through `/bin/sh -c`.
//!
//! A hook is supervised exactly as an attempt is (`process`): its own
//! process group, the stop signal and KILL after `--kill-after` when the
//! deadline passes or a signal arrives, leftovers stopped. It reads
//! /dev/null, and its stdout goes to retry's stderr, so the command's
//! stdout stays the command's. What the hook is told comes in its
//! environment. A hook that fails is reported, never fatal: its caller logs
//! the message and goes on.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use super::process::{ProcessAttempt, ProcessOptions};
use super::{Attempt, Between, Context, Failed};
use crate::classify::{Limit, Status};
use crate::signals::Signals;

/// A hook, as validated from its flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    /// The flag that gave it, for the log (`--on-retry`).
    pub flag: &'static str,
    /// The shell command.
    pub command: String,
    /// How it is stopped: as the attempts are.
    pub stop_signal: i32,
    pub kill_after: Duration,
}

/// What a hook is told, in its environment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Call {
    /// `RETRY_ATTEMPT`: the attempt that failed, or the attempts made.
    pub attempt: u32,
    /// `RETRY_EXIT_CODE`, empty when None.
    pub exit_code: Option<i32>,
    /// `RETRY_NEXT_DELAY_MS`, empty when None.
    pub next_delay: Option<Duration>,
}

impl Call {
    /// The variables a hook gets.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("RETRY_ATTEMPT", self.attempt.to_string()),
            (
                "RETRY_EXIT_CODE",
                self.exit_code.map(|c| c.to_string()).unwrap_or_default(),
            ),
            (
                "RETRY_NEXT_DELAY_MS",
                // Rounded as the log shows it.
                self.next_delay
                    .map(|d| crate::human::round_ms(d).as_millis().to_string())
                    .unwrap_or_default(),
            ),
        ]
    }
}

/// Runs one hook, as often as asked.
pub struct Runner {
    flag: &'static str,
    process: ProcessAttempt,
}

impl Runner {
    pub fn new(hook: &Hook) -> Runner {
        let command = vec![
            OsString::from("/bin/sh"),
            OsString::from("-c"),
            OsString::from(&hook.command),
        ];
        let opts = ProcessOptions {
            stop_signal: hook.stop_signal,
            kill_after: hook.kill_after,
            foreground: false,
            replay_stdin: false,
            replay_max: None,
            output: None,
            idle_timeout: None,
            hold: None,
        };
        Runner {
            flag: hook.flag,
            process: ProcessAttempt::for_hook(command, opts),
        }
    }

    /// Run the hook to its end, stopping it at `deadline` or on a
    /// terminating signal (which the caller then finds in `signals`).
    /// `Err` is the line to log when it did not succeed.
    pub async fn run(
        &mut self,
        call: &Call,
        deadline: Option<Instant>,
        signals: &mut Signals,
    ) -> Result<(), String> {
        self.process.set_hook_env(call.env());
        let ctx = Context {
            number: call.attempt,
            max: None,
            previous_exit: None,
            deadline: deadline.map(|at| (at, Limit::Deadline)),
            max_time: deadline,
        };
        let status = self.process.run(&ctx, signals).await;
        // Leftover processes and the like: not the user's business here.
        let _ = self.process.details();
        match status {
            Status::Exited(0) => Ok(()),
            Status::Exited(code) => {
                Err(format!("the {} command failed with exit {code}", self.flag))
            }
            Status::TimedOut { .. } => Err(format!(
                "the {} command was stopped at --max-time",
                self.flag
            )),
            other => Err(format!("the {} command failed: {other}", self.flag)),
        }
    }
}

/// `--on-retry`: the loop calls it between a failed attempt and its wait.
impl Between for Runner {
    async fn failed(
        &mut self,
        failed: &Failed,
        deadline: Option<Instant>,
        signals: &mut Signals,
    ) -> Option<Result<(), String>> {
        let call = Call {
            attempt: failed.attempt,
            exit_code: failed.exit_code,
            next_delay: Some(failed.next),
        };
        Some(self.run(&call, deadline, signals).await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_environment_names_what_is_known_and_leaves_the_rest_empty() {
        let call = Call {
            attempt: 2,
            exit_code: None,
            next_delay: Some(Duration::from_micros(1_499_700)),
        };
        assert_eq!(
            call.env(),
            [
                ("RETRY_ATTEMPT", "2".to_string()),
                ("RETRY_EXIT_CODE", String::new()),
                ("RETRY_NEXT_DELAY_MS", "1500".to_string()),
            ]
        );
        let call = Call {
            attempt: 5,
            exit_code: Some(3),
            next_delay: None,
        };
        assert_eq!(call.env()[1].1, "3");
        assert_eq!(call.env()[2].1, "");
    }
}
