//! The steps of a command attempt, in the order `Attempt::run` takes
//! them: watch SIGCHLD, the environment, the streams (every branch for a
//! hook decided there), the start, the supervision, what is settled after
//! the child, and the status.

use std::io::PipeWriter;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::time::Instant;

use nix::libc;
use nix::sys::signal::Signal;
use nix::unistd::Pid;
use tokio::signal::unix::{SignalKind, signal};

use super::{
    ProcessAttempt, Stop, Target, activity, finish_output, is_terminal_interrupt, start_failure,
};
use crate::attempt::Context;
use crate::attempt::children::{Change, reap};
use crate::attempt::hold::{Holding, Spool};
use crate::attempt::output::{ChildEnds, Plan, Pump};
use crate::attempt::spawn::{Spawn, spawn};
use crate::attempt::stdout::{Left, left_on_stdout, stdout_offset};
use crate::attempt::terminal::Terminal;
use crate::attempt::watchdog;
use crate::classify::{Limit, OutputMatch, Status};
use crate::signals::{Signals, is_terminating, sigpipe_ignored_at_start};
use crate::stdio::{closed_at_start, stdout_reader_gone};

/// One attempt's streams: what the child is given and what is watched
/// around it, set up by [`ProcessAttempt::streams`], where every branch for
/// a hook is decided.
pub(super) struct Streams {
    stdin: Option<OwnedFd>,
    /// Feeds a replayed stdin once the child runs.
    feed: Option<PipeWriter>,
    pub(super) pump: Option<Pump>,
    /// The child's ends of the pump's pipes: they close once it is started.
    ends: Option<ChildEnds>,
    /// The child's stdout and stderr: None inherits retry's.
    stdout: Option<RawFd>,
    stderr: Option<RawFd>,
    /// The standard streams retry was given closed, closed for the child.
    closed: [bool; 3],
    /// Where the attempt's output is held, if it is.
    spool: Option<Arc<Spool>>,
    /// With `--last-stdout`: where the attempt's stdout is held.
    pub(super) stdout_spool: Option<Arc<Spool>>,
    /// Whether stdout passes through the pump (patterns or `--idle-timeout`).
    stdout_pumped: bool,
    /// Whether retry's stdout is a file the child writes to directly, and
    /// its offset before the attempt: what the attempt leaves there.
    watch_stdout: bool,
    offset_before: Option<u64>,
}

/// An attempt's child, once started.
pub(super) struct Child {
    pid: Pid,
    pub(super) started: Instant,
    target: Target,
    /// Whether the attempt's group holds the terminal.
    handed: bool,
}

/// How the supervision of a child ended.
pub(super) struct Ended {
    stop: Option<(Stop, Instant)>,
    change: Change,
    /// Whether the attempt's group held the terminal at the end.
    handed: bool,
}

impl Ended {
    /// The attempt's status (a terminal interrupt is noted in `signals`).
    pub(super) fn status(&self, started: Instant, signals: &mut Signals) -> Status {
        match (self.stop, self.change) {
            (Some((Stop::Interrupt(sig), _)), _) => Status::Interrupted(sig as i32),
            (Some((Stop::Timeout(limit), _)), _) => Status::TimedOut {
                limit,
                after: started.elapsed(),
            },
            (None, Change::Signaled(sig)) if self.handed && is_terminal_interrupt(sig) => {
                // The person at the terminal pressed Ctrl-C (or Ctrl-\): it
                // reached the attempt, which had the terminal, not retry; it
                // ends the run all the same.
                if let Ok(s) = Signal::try_from(sig) {
                    signals.note(s);
                }
                Status::Interrupted(sig)
            }
            (None, Change::Signaled(sig)) => Status::Signaled(sig),
            (None, Change::Exited(code) | Change::Stopped(code)) => Status::Exited(code),
        }
    }
}

/// The steps of `Attempt::run`, in order.
impl ProcessAttempt {
    /// Watch SIGCHLD, once a run.
    pub(super) fn watch_children(&mut self) -> Result<(), Status> {
        if self.sigchld.is_none() {
            match signal(SignalKind::child()) {
                Ok(s) => self.sigchld = Some(s),
                Err(e) => {
                    return Err(Status::CannotStart(format!(
                        "cannot watch child processes: {e}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The child's environment: the attempt's variables, or the hook's.
    pub(super) fn environment(&self, ctx: &Context) -> Vec<(&'static str, String)> {
        let mut env: Vec<(&str, String)> = match &self.hook_env {
            Some(env) => env.clone(),
            None => vec![
                ("RETRY_ATTEMPT", ctx.number.to_string()),
                (
                    "RETRY_MAX_ATTEMPTS",
                    ctx.max.map(|m| m.to_string()).unwrap_or_default(),
                ),
                (
                    "RETRY_PREVIOUS_EXIT",
                    ctx.previous_exit.map(|c| c.to_string()).unwrap_or_default(),
                ),
                ("RETRY_DEPTH", self.depth.to_string()),
            ],
        };
        // A store password never reaches the command's (or a hook's)
        // environment.
        if let Some(v) = crate::state::child_state_var() {
            env.push(("RETRY_STATE", v));
        }
        // The attempt's own span (for a hook, the attempt it follows).
        env.extend(super::super::carrier::env());
        env
    }

    /// The attempt's streams: stdin (replayed, or /dev/null for a hook),
    /// held output, the pump, and which streams retry was given closed.
    pub(super) fn streams(&mut self, ctx: &Context) -> Result<Streams, Status> {
        let hook = self.hook_env.is_some();
        let prepared = if hook {
            std::fs::File::open("/dev/null").map(|f| (Some(f.into()), None))
        } else {
            self.stdin.for_attempt()
        };
        let (stdin, feed) = match prepared {
            Ok(s) => s,
            Err(e) => return Err(Status::CannotStart(format!("cannot prepare stdin: {e}"))),
        };
        self.number = ctx.number;
        self.left = Left::Nothing;
        let holding = match &self.opts.hold {
            Some(held) if !hook => held.begin(ctx.number),
            _ => Holding::default(),
        };
        let spool = holding.spool.clone();
        let stdout_spool = holding.spool.clone().filter(|_| holding.streams[0]);
        let plan = Plan {
            patterns: self.opts.output.clone(),
            hold: holding,
            watch: self.opts.idle_timeout.is_some(),
        };
        let stdout_held = plan.hold.streams[0];
        let stdout_pumped = plan.patterns.is_some() || plan.watch;
        let (pump, ends) = if !plan.is_needed() {
            (None, None)
        } else {
            match Pump::start(plan) {
                Ok((pump, ends)) => (Some(pump), Some(ends)),
                Err(e) => {
                    return Err(Status::CannotStart(format!(
                        "cannot set up the output pipes: {e}"
                    )));
                }
            }
        };
        // A stream retry was given closed stays closed for the child: the
        // output pump does not stand in for it.
        let closed = closed_at_start();
        // A hook reads /dev/null and writes both streams to retry's stderr.
        let closed = if hook {
            [false, closed[2], closed[2]]
        } else {
            closed
        };
        let stdout = match &ends {
            Some(e) => e.stdout_fd().filter(|_| !closed[1]),
            // A hook writes to retry's stderr, or to nothing when
            // retry was given none.
            None if hook => Some(libc::STDERR_FILENO).filter(|_| !closed[2]),
            None => None,
        };
        let stderr = ends
            .as_ref()
            .filter(|_| !closed[2])
            .and_then(ChildEnds::stderr_fd);
        // Where retry's stdout stands, when it is a file the child writes
        // to directly: what the attempt leaves there is told by the offset.
        let watch_stdout = !hook && !stdout_held && !closed[1];
        let offset_before = watch_stdout.then(stdout_offset).flatten();
        Ok(Streams {
            stdin,
            feed,
            pump,
            ends,
            stdout,
            stderr,
            closed,
            spool,
            stdout_spool,
            stdout_pumped,
            watch_stdout,
            offset_before,
        })
    }

    /// Start the child (in a group of its own unless `--foreground`),
    /// handing it the terminal if retry holds it now.
    pub(super) fn start(
        &mut self,
        env: &[(&str, String)],
        streams: &mut Streams,
    ) -> Result<Child, Status> {
        let Some((program, args)) = self.command.split_first() else {
            return Err(Status::NotFound(String::new()));
        };
        let foreground = self.opts.foreground;
        // Hand the terminal over only if retry holds it now: never from the background.
        let handed = self
            .terminal
            .as_ref()
            .is_some_and(Terminal::retry_is_foreground);
        let tty = self.terminal.as_ref().filter(|_| handed).map(Terminal::raw);
        let spawned = spawn(&Spawn {
            program,
            args,
            env,
            stdio: [
                streams.stdin.as_ref().map(AsRawFd::as_raw_fd),
                streams.stdout,
                streams.stderr,
            ],
            closed: streams.closed,
            new_group: !foreground,
            publish: (!foreground).then(watchdog::group),
            terminal: tty,
            sigpipe_ignored: sigpipe_ignored_at_start(),
            caught: &self.caught,
        });
        // The child's ends of the pipes must close here, or the pump never
        // sees the end of its output (nor the child the end of its input).
        drop((streams.stdin.take(), streams.ends.take()));
        let pid = match spawned {
            Ok(pid) => pid,
            Err(e) => {
                watchdog::clear();
                let status = start_failure(&e, program);
                if matches!(status, Status::NotFound(_)) {
                    self.details.hint = crate::hint::command_not_found(&self.command);
                }
                return Err(status);
            }
        };
        let started = Instant::now();
        let target = if foreground {
            Target::Child(pid)
        } else {
            Target::Group(pid)
        };
        if let (true, Some(t)) = (handed, &self.terminal) {
            t.give_to(pid);
        }
        self.stdin.feed(streams.feed.take());
        Ok(Child {
            pid,
            started,
            target,
            handed,
        })
    }

    /// Wait for the child: reap it, mirror its stops, stop it at its
    /// deadline or when silent too long (then KILL after the grace), and
    /// forward the signals retry catches.
    pub(super) async fn supervise(
        &mut self,
        child: &Child,
        ctx: &Context,
        signals: &mut Signals,
        pump: &Option<Pump>,
    ) -> Ended {
        let Child {
            pid,
            target,
            mut handed,
            ..
        } = *child;
        let mut stop: Option<(Stop, Instant)> = None;
        let mut killed = false;
        let change = loop {
            match reap(Some(pid)) {
                Some(Change::Exited(code)) => break Change::Exited(code),
                Some(Change::Signaled(sig)) => break Change::Signaled(sig),
                Some(Change::Stopped(sig)) => {
                    handed = self.mirror_stop(sig, pid, handed, activity(pump));
                }
                None => {}
            }
            let wake = match stop {
                None => ctx.deadline.map(|(at, _)| at),
                // An absurd grace period overflows to "never", not a panic.
                Some((_, since)) if !killed => since.checked_add(self.opts.kill_after),
                Some(_) => None,
            };
            // --idle-timeout: when the child will have been silent too long.
            let silent = |pump: &Option<Pump>| {
                let idle = self.opts.idle_timeout?;
                pump.as_ref()?.activity()?.silent_until(idle)
            };
            let idle_wake = if stop.is_none() { silent(pump) } else { None };
            let Some(sigchld) = self.sigchld.as_mut() else {
                break Change::Exited(1);
            };
            tokio::select! {
                _ = sigchld.recv() => {}
                () = crate::bound::until(wake) => match stop {
                    None => {
                        let limit = ctx.deadline.map_or(Limit::Attempt, |(_, l)| l);
                        target.stop(self.opts.stop_signal);
                        stop = Some((Stop::Timeout(limit), Instant::now()));
                    }
                    Some(_) => {
                        target.send(libc::SIGKILL);
                        killed = true;
                    }
                },
                () = crate::bound::until(idle_wake) => {
                    // The child may have written meanwhile: then this wait
                    // only moves on.
                    if silent(pump).is_some_and(|at| at <= Instant::now()) {
                        target.stop(self.opts.stop_signal);
                        stop = Some((Stop::Timeout(Limit::Idle), Instant::now()));
                    }
                }
                sig = signals.recv() => {
                    handed = self.forward(target, sig, handed, activity(pump));
                    if is_terminating(sig) && !matches!(stop, Some((Stop::Interrupt(_), _))) {
                        let since = stop.map_or_else(Instant::now, |(_, since)| since);
                        stop = Some((Stop::Interrupt(sig), since));
                    }
                }
            }
        };
        Ended {
            stop,
            change,
            handed,
        }
    }

    /// After the child: the terminal taken back, leftovers stopped, the
    /// output's verdict, and what the attempt left on stdout.
    pub(super) async fn settle(
        &mut self,
        child: &Child,
        ended: &Ended,
        ctx: &Context,
        signals: &mut Signals,
        streams: &mut Streams,
    ) {
        self.details.duration = Some(child.started.elapsed());
        if self.hook_env.is_none() {
            self.details.hint = crate::hint::grpc_probe_command(&self.command);
        }
        if ended.handed
            && let Some(t) = &self.terminal
        {
            t.take_back_from(child.pid);
        }
        if let Target::Group(pgid) = child.target {
            let left = self.drain(pgid, ended.stop, ctx, signals).await;
            watchdog::clear();
            match left {
                Some(0) => {}
                Some(left) => {
                    let plural = if left == 1 { "" } else { "es" };
                    self.details.notes.push(format!(
                        "stopped {left} leftover process{plural} of attempt {}",
                        ctx.number
                    ));
                }
                // Where the system cannot count a group's members.
                None => self.details.notes.push(format!(
                    "stopped the leftover processes of attempt {}",
                    ctx.number
                )),
            }
        }
        if let Some(pump) = streams.pump.as_mut() {
            let (output, left_behind) = finish_output(pump, ctx, signals).await;
            // A pump left behind in the middle of writing the held output
            // out (stdout could not be held whole) keeps the spool.
            if let (true, Some(spool)) = (left_behind, &streams.spool) {
                spool.abandon_if_busy();
            }
            let said = match &output {
                OutputMatch::None => None,
                OutputMatch::Retry(p) => Some(format!("--retry-if-output '{p}'")),
                OutputMatch::Stop(p) => Some(format!("--stop-if-output '{p}'")),
            };
            if let Some(said) = said {
                self.details.notes.push(format!(
                    "the output of attempt {} matched {said}",
                    ctx.number
                ));
            }
            self.details.output = output;
        }
        // One poll: `retry -- producer | head` where the producer exits
        // with a code of its own on EPIPE (Python's BrokenPipeError); or a
        // stdout closed from the start, which no attempt can write to.
        self.details.reader_gone = stdout_reader_gone();
        if streams.watch_stdout {
            let pumped = streams.pump.as_ref().filter(|_| streams.stdout_pumped);
            self.left = left_on_stdout(streams.offset_before, pumped);
        }
    }
}
