//! Command attempts: run COMMAND once as a child process, supervised.
//!
//! The child gets its own process group (unless `--foreground`), so a
//! timeout or an interrupt reaches everything it started: the stop signal
//! (with SIGCONT, so a stopped group ends too), then KILL after the grace
//! period. When the main process ends, whatever it left in its group is
//! stopped the same way, and every child retry inherits as a subreaper is
//! reaped, so no zombie holds cleanup up. The group dies with retry, even
//! when retry is killed with SIGKILL: the main process by its parent-death
//! signal, the rest by the `watchdog`. On a terminal the attempt's group gets
//! the foreground while it runs (see `terminal`). stdout and stderr are
//! inherited: the child writes to them directly, unless output patterns,
//! held output (`--hold-output`, `--last-stdout`) or `--idle-timeout` are
//! given; then they pass through the `output` pump, which is stopped once
//! the group has been cleaned up, and the idle limit is kept from the
//! pump's last byte. With `--last-stdout` a success's held stdout is
//! written out as soon as the attempt ends; without it, a failed attempt
//! whose stdout stays in a file or pipe is worth a line when it is retried
//! (`retrying`). Hooks (`hook`) run through the same supervision.

use std::ffi::{OsStr, OsString};
use std::io;
use std::time::{Duration, Instant};

use nix::libc;
use nix::sys::signal::{Signal, killpg};
use nix::unistd::{Pid, getpgrp, getpid};

use super::children::reap_and_check_gone;
use super::hold::Held;
use super::output::{Activity, Pump};
use super::scan::Patterns;
use super::stdin::{StdinSource, capture_stdin};
use super::stdout::{Left, release};
use super::terminal::Terminal;
use super::watchdog;
use super::{Attempt, Context, Details, Unready};
use crate::classify::{Limit, OutputMatch, Status, Verdict};
use crate::signals::{Signals, handled, is_terminating, suspend_self};
use crate::stdio::closed_at_start;
use crate::sys::count_group;

mod steps;

/// How attempts are run as processes, as validated from the flags.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOptions {
    /// A raw signal number: real-time signals have no `nix::Signal`.
    pub stop_signal: i32,
    pub kill_after: Duration,
    pub foreground: bool,
    pub replay_stdin: bool,
    /// `--replay-stdin-max`: the most stdin is read for replay; None: no limit.
    pub replay_max: Option<u64>,
    /// `--retry-if-output`/`--stop-if-output`: None leaves the child's
    /// output alone.
    pub output: Option<Patterns>,
    /// `--idle-timeout`: an attempt silent this long is stopped.
    pub idle_timeout: Option<Duration>,
    /// `--hold-output`, `--last-stdout`: where each attempt's output is held.
    pub hold: Option<Held>,
}

/// Runs COMMAND once per attempt.
pub struct ProcessAttempt {
    command: Vec<OsString>,
    opts: ProcessOptions,
    /// RETRY_DEPTH given to the child.
    depth: u32,
    stdin: StdinSource,
    /// retry's controlling terminal, to hand to each attempt (not with
    /// `--foreground`, where the child shares retry's group anyway).
    terminal: Option<Terminal>,
    /// Wakes the loop when any child changes state.
    sigchld: Option<tokio::signal::unix::Signal>,
    /// The signals retry has handlers for, reset in each child before exec.
    caught: Vec<libc::c_int>,
    details: Details,
    /// Set when this runs a hook (see `hook`): its environment for the next
    /// run. A hook reads /dev/null and its stdout goes to retry's stderr.
    hook_env: Option<Vec<(&'static str, String)>>,
    /// What the last attempt left on retry's stdout, for [`Attempt::retrying`].
    left: Left,
    /// Whether retry said it cannot tell what an attempt left (once a run).
    said_unknown: bool,
    /// The last attempt's number.
    number: u32,
}

impl ProcessAttempt {
    pub fn new(command: Vec<OsString>, opts: ProcessOptions, depth: u32) -> Self {
        // Whatever the attempts fork and abandon is reparented to retry, to
        // be reaped and stopped here rather than linger under init.
        let _ = crate::sys::become_subreaper();
        let terminal = if opts.foreground {
            None
        } else {
            Terminal::open()
        };
        ProcessAttempt {
            command,
            opts,
            depth,
            stdin: StdinSource::Inherit,
            terminal,
            sigchld: None,
            caught: handled(),
            details: Details::default(),
            hook_env: None,
            left: Left::Nothing,
            said_unknown: false,
            number: 0,
        }
    }

    /// A hook's runner: no terminal, nothing read, output to stderr.
    pub(super) fn for_hook(command: Vec<OsString>, opts: ProcessOptions) -> Self {
        let _ = crate::sys::become_subreaper();
        ProcessAttempt {
            command,
            opts,
            depth: 0,
            stdin: StdinSource::Inherit,
            terminal: None,
            sigchld: None,
            caught: handled(),
            details: Details::default(),
            hook_env: Some(Vec::new()),
            left: Left::Nothing,
            said_unknown: false,
            number: 0,
        }
    }

    /// The environment the hook gets on its next run.
    pub(super) fn set_hook_env(&mut self, env: Vec<(&'static str, String)>) {
        self.hook_env = Some(env);
    }
}

impl Drop for ProcessAttempt {
    /// The attempts are over: end the watchdog, which has nothing to guard.
    fn drop(&mut self) {
        watchdog::stop();
    }
}

/// Why an attempt is being stopped.
#[derive(Clone, Copy)]
enum Stop {
    Timeout(Limit),
    Interrupt(Signal),
}

/// Where signals for the attempt go.
#[derive(Clone, Copy)]
enum Target {
    /// The child's own process group (the default).
    Group(Pid),
    /// Only the child: it shares retry's group (`--foreground`).
    Child(Pid),
}

impl Target {
    fn send(self, sig: i32) {
        // ESRCH (already gone) is the only likely error, and harmless.
        // SAFETY: plain kill(2) calls; raw numbers because the stop signal
        // may be a real-time one, which nix's Signal cannot name.
        unsafe {
            match self {
                Target::Group(pgid) => libc::killpg(pgid.as_raw(), sig),
                Target::Child(pid) => libc::kill(pid.as_raw(), sig),
            };
        }
    }

    /// Send the stop signal, and SIGCONT so that a stopped process acts on it.
    fn stop(self, sig: i32) {
        self.send(sig);
        if sig != libc::SIGKILL && sig != libc::SIGCONT {
            self.send(libc::SIGCONT);
        }
    }
}

impl Attempt for ProcessAttempt {
    /// `--replay-stdin`: read stdin (unless retry was given it closed: then
    /// every attempt gets it closed).
    async fn prepare(
        &mut self,
        deadline: Option<Instant>,
        signals: &mut Signals,
    ) -> Result<(), Unready> {
        if self.opts.replay_stdin && !closed_at_start()[0] {
            self.stdin = capture_stdin(self.opts.replay_max, deadline, signals).await?;
        }
        Ok(())
    }

    async fn run(&mut self, ctx: &Context, signals: &mut Signals) -> Status {
        self.details = Details::default();
        if self.command.is_empty() {
            return Status::NotFound(String::new());
        }
        if let Err(status) = self.watch_children() {
            return status;
        }
        let env = self.environment(ctx);
        if !self.opts.foreground {
            // Once per run; without it (no process slot to spare) only the
            // attempt's main process dies with retry.
            let _ = watchdog::start();
        }
        let mut streams = match self.streams(ctx) {
            Ok(streams) => streams,
            Err(status) => return status,
        };
        let child = match self.start(&env, &mut streams) {
            Ok(child) => child,
            Err(status) => return status,
        };
        let ended = self.supervise(&child, ctx, signals, &streams.pump).await;
        self.settle(&child, &ended, ctx, signals, &mut streams)
            .await;
        let status = ended.status(child.started, signals);
        match streams.stdout_spool {
            Some(spool) if self.last_stdout_success(&status) => {
                let (status, warning) = release(&spool, status, ctx.max_time, signals).await;
                self.details.warnings.extend(warning);
                status
            }
            _ => status,
        }
    }

    fn details(&mut self) -> Details {
        std::mem::take(&mut self.details)
    }

    fn retrying(&mut self) -> Option<String> {
        if matches!(self.left, Left::Unknown(_)) {
            if self.said_unknown {
                return None;
            }
            self.said_unknown = true;
        }
        self.left.line(self.number)
    }
}

impl ProcessAttempt {
    /// Whether `status` is a success whose stdout `--last-stdout` releases
    /// at once: exit 0, or a status `--success-on` names.
    fn last_stdout_success(&self, status: &Status) -> bool {
        let Some(options) = self.opts.hold.as_ref().map(|h| h.options()) else {
            return false;
        };
        let rules = crate::classify::Rules {
            success_on: options.success_on.clone(),
            ..crate::classify::Rules::default()
        };
        options.last_stdout && crate::classify::classify(status, &rules) == Verdict::Success
    }

    /// Pass on a signal retry caught; returns whether the attempt still has
    /// the terminal.
    fn forward(
        &self,
        target: Target,
        sig: Signal,
        handed: bool,
        activity: Option<&Activity>,
    ) -> bool {
        match (target, sig) {
            // Job control: the child's group is not the terminal's, so a TSTP
            // sent to retry reached only retry. Stop the group, stop retry,
            // and when the shell continues retry, continue the group.
            (Target::Group(pgid), Signal::SIGTSTP) => {
                target.send(libc::SIGTSTP);
                if handed && let Some(t) = &self.terminal {
                    t.take_back_from(pgid);
                }
                suspend_self();
                resumed(activity);
                self.resume(pgid)
            }
            // In retry's group the terminal already delivered these to the
            // child, and `fg` continues the whole group.
            (Target::Child(_), Signal::SIGTSTP) => {
                suspend_self();
                resumed(activity);
                handed
            }
            (Target::Child(_), Signal::SIGINT | Signal::SIGQUIT) => handed,
            _ => {
                target.send(sig as i32);
                handed
            }
        }
    }

    /// The attempt's main process was stopped. A job-control stop (Ctrl-Z,
    /// or reading the terminal from the background) stops retry's own job
    /// too, as the terminal would have without retry in between, so the
    /// shell sees a stopped job; `fg` or `bg` then continues both. Returns
    /// whether the attempt has the terminal afterwards.
    fn mirror_stop(&self, sig: i32, pgid: Pid, handed: bool, activity: Option<&Activity>) -> bool {
        let job_control = matches!(sig, libc::SIGTSTP | libc::SIGTTIN | libc::SIGTTOU);
        // As PID 1 retry cannot be stopped, and a stopped group would only
        // spin; without a terminal nobody asked for job control.
        if !job_control || self.terminal.is_none() || getpid().as_raw() == 1 {
            return handed;
        }
        if handed && let Some(t) = &self.terminal {
            t.take_back_from(pgid);
        }
        let _ = killpg(getpgrp(), Signal::SIGSTOP);
        resumed(activity);
        self.resume(pgid)
    }

    /// retry was continued: give the attempt the terminal again if retry is
    /// in the foreground now (`fg`), then continue the attempt's group.
    fn resume(&self, pgid: Pid) -> bool {
        let fg = self.terminal.as_ref().filter(|t| t.retry_is_foreground());
        if let Some(t) = fg {
            t.give_to(pgid);
        }
        let _ = killpg(pgid, Signal::SIGCONT);
        fg.is_some()
    }

    /// Stop whatever is left in the attempt's process group after its main
    /// process ended: the stop signal at once (unless the group already had
    /// it, from a timeout), KILL when the grace period is over (counted from
    /// the timeout or interrupt that stopped the attempt, if one did). A
    /// deadline or a second interrupt cuts the grace short. Returns how many
    /// processes were left (None: some, where the system cannot count them).
    async fn drain(
        &mut self,
        pgid: Pid,
        stop: Option<(Stop, Instant)>,
        ctx: &Context,
        signals: &mut Signals,
    ) -> Option<usize> {
        if reap_and_check_gone(pgid) {
            return Some(0);
        }
        let left = count_group(pgid);
        let target = Target::Group(pgid);
        // After an interrupt the group had only the forwarded signal, which
        // a background job of a shell ignores (SIGINT, SIGQUIT): it gets the
        // stop signal too, rather than waiting for KILL.
        match stop {
            Some((Stop::Interrupt(sig), _)) if sig as i32 != self.opts.stop_signal => {
                target.stop(self.opts.stop_signal);
            }
            Some(_) => {}
            None => target.stop(self.opts.stop_signal),
        }
        let since = stop.map_or_else(Instant::now, |(_, since)| since);
        let mut kill_at = since.checked_add(self.opts.kill_after);
        if let Some((deadline, Limit::Deadline)) = ctx.deadline {
            kill_at = Some(kill_at.map_or(deadline, |k| k.min(deadline)));
        }
        let mut interrupted = stop.is_some() && signals.interrupted().is_some();
        let mut killed_at: Option<Instant> = None;
        while let Some(sigchld) = self.sigchld.as_mut() {
            let kill_wake = if killed_at.is_some() { None } else { kill_at };
            tokio::select! {
                _ = sigchld.recv() => {}
                // Grandchildren that are not retry's to reap send no SIGCHLD.
                () = tokio::time::sleep(Duration::from_millis(10)) => {}
                () = crate::bound::until(kill_wake) => {
                    target.send(libc::SIGKILL);
                    killed_at = Some(Instant::now());
                }
                sig = signals.recv() => {
                    target.send(sig as i32);
                    if is_terminating(sig) {
                        if interrupted && killed_at.is_none() {
                            // Asked twice: no more grace.
                            target.send(libc::SIGKILL);
                            killed_at = Some(Instant::now());
                        }
                        interrupted = true;
                    }
                }
            }
            if reap_and_check_gone(pgid) {
                break;
            }
            // Past KILL only a process stuck in the kernel can linger; do
            // not wait on it for ever.
            if killed_at.is_some_and(|at| at.elapsed() > Duration::from_secs(2)) {
                break;
            }
        }
        left
    }
}

/// How long the output pump may take past the deadline to copy what the
/// child left in its pipes (it takes longer only when retry's own output
/// is blocked).
const PUMP_GRACE: Duration = Duration::from_secs(1);

/// The attempt's group is gone: let the pump copy what is left, and report
/// what the output matched, and whether the pump was left behind. A pump
/// stuck writing to a blocked stdout is left behind at the deadline (plus
/// [`PUMP_GRACE`]), [`PUMP_GRACE`] after the interrupt that ended the
/// attempt, or on a further one.
async fn finish_output(
    pump: &mut Pump,
    ctx: &Context,
    signals: &mut Signals,
) -> (OutputMatch, bool) {
    pump.stop();
    let grace = Instant::now() + PUMP_GRACE;
    let give_up = match signals.interrupted() {
        Some(_) => Some(grace),
        None => ctx.deadline.map(|(at, _)| at.max(grace)),
    };
    let finished = tokio::select! {
        biased;
        () = pump.finished() => true,
        () = crate::bound::until(give_up) => false,
        () = async {
            while !is_terminating(signals.recv().await) {}
        } => false,
    };
    (pump.matched(), !finished)
}

/// Signals a terminal sends to its foreground group from the keyboard that
/// end a job: Ctrl-C and Ctrl-\.
fn is_terminal_interrupt(sig: i32) -> bool {
    sig == libc::SIGINT || sig == libc::SIGQUIT
}

/// A failure to start COMMAND, classified by its cause: a missing program
/// is 127, one that cannot be executed 126, and a passing shortage of
/// processes, memory or descriptors is worth another try.
fn start_failure(e: &io::Error, program: &OsStr) -> Status {
    // A URL, or a whole command line given as one word (`retry "curl -u
    // me:pw …"`), is shown as the log shows a command line: masked.
    let name = crate::mask::command_line(&[program.to_os_string()])
        .into_iter()
        .next()
        .unwrap_or_default();
    match e.raw_os_error() {
        Some(libc::ENOENT) => Status::NotFound(name),
        Some(libc::EAGAIN | libc::ENOMEM | libc::EMFILE | libc::ENFILE) => {
            Status::CannotStart(format!("cannot start {name}: {e}"))
        }
        Some(libc::EACCES | libc::EPERM) => {
            Status::NotExecutable(format!("{name}: permission denied"))
        }
        Some(libc::E2BIG) => Status::NotExecutable(format!("{name}: argument list too long")),
        Some(libc::ENOEXEC) => Status::NotExecutable(format!("{name}: exec format error")),
        _ => Status::NotExecutable(format!("{name}: {e}")),
    }
}

/// The pump's record of the child's last output, when `--idle-timeout`
/// keeps one.
fn activity(pump: &Option<Pump>) -> Option<&Activity> {
    pump.as_ref()?.activity()
}

/// retry and the attempt were suspended (Ctrl-Z) until `fg` or `bg`: the
/// time stopped is not the command's silence, so `--idle-timeout` counts
/// afresh, as HTTP mode's does.
fn resumed(activity: Option<&Activity>) {
    if let Some(a) = activity {
        a.touch();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_failures_by_cause() {
        let err = |n| io::Error::from_raw_os_error(n);
        let p = OsStr::new("prog");
        assert_eq!(
            start_failure(&err(libc::ENOENT), p),
            Status::NotFound("prog".into())
        );
        for n in [libc::EAGAIN, libc::ENOMEM, libc::EMFILE, libc::ENFILE] {
            assert!(matches!(start_failure(&err(n), p), Status::CannotStart(_)));
        }
        for n in [libc::EACCES, libc::E2BIG, libc::ENOEXEC, libc::EISDIR] {
            assert!(matches!(
                start_failure(&err(n), p),
                Status::NotExecutable(_)
            ));
        }
    }

    #[test]
    fn only_keyboard_signals_count_as_the_terminal_interrupting() {
        assert!(is_terminal_interrupt(libc::SIGINT));
        assert!(is_terminal_interrupt(libc::SIGQUIT));
        assert!(!is_terminal_interrupt(libc::SIGTERM));
        assert!(!is_terminal_interrupt(libc::SIGKILL));
    }
}
