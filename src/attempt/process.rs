//! Command attempts: run COMMAND once as a child process.
//!
//! The child gets its own process group (unless `--foreground`), so a timeout
//! or an interrupt reaches everything it started: first the stop signal, then
//! KILL after the grace period. Whatever is left of the group when the child
//! exits is stopped the same way, so no grandchild outlives its attempt.
//! stdout and stderr are inherited: the child writes to them directly.

use std::ffi::OsString;
use std::io::{self, Read, Seek, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use super::{Attempt, Context};
use crate::classify::{Limit, Status};
use crate::policy::ProcessOptions;
use crate::signals::{Signals, is_terminating, suspend_self};

/// stdin held in memory up to this size, in a private temp file beyond it.
pub const REPLAY_MEMORY_LIMIT: usize = 8 * 1024 * 1024;

/// What each attempt reads on stdin.
#[derive(Debug)]
pub enum StdinSource {
    /// retry's own stdin, shared by every attempt.
    Inherit,
    /// The same bytes for every attempt, held in memory.
    Memory(Arc<Vec<u8>>),
    /// The same bytes for every attempt, in an unlinked temp file.
    File(std::fs::File),
}

impl StdinSource {
    /// Read `input` to its end once, for `--replay-stdin`.
    pub fn capture(mut input: impl Read) -> io::Result<StdinSource> {
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            let n = match input.read(&mut chunk) {
                Ok(0) => return Ok(StdinSource::Memory(Arc::new(buf))),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.len() + n > REPLAY_MEMORY_LIMIT {
                // Spill: memory stays flat however large the input is.
                // tempfile() is unlinked at once and created 0600.
                let mut file = tempfile::tempfile()?;
                file.write_all(&buf)?;
                file.write_all(&chunk[..n])?;
                drop(buf);
                io::copy(&mut input, &mut file)?;
                return Ok(StdinSource::File(file));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
    }

    fn stdio(&mut self) -> io::Result<Stdio> {
        Ok(match self {
            StdinSource::Inherit => Stdio::inherit(),
            StdinSource::Memory(_) => Stdio::piped(),
            StdinSource::File(f) => {
                // The child shares this file offset: rewind before every attempt.
                f.rewind()?;
                Stdio::from(f.try_clone()?)
            }
        })
    }
}

/// Runs COMMAND once per attempt.
pub struct ProcessAttempt {
    command: Vec<OsString>,
    opts: ProcessOptions,
    /// RETRY_DEPTH given to the child.
    depth: u32,
    stdin: StdinSource,
}

impl ProcessAttempt {
    pub fn new(
        command: Vec<OsString>,
        opts: ProcessOptions,
        depth: u32,
        stdin: StdinSource,
    ) -> Self {
        ProcessAttempt {
            command,
            opts,
            depth,
            stdin,
        }
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
    /// Send a raw signal number (the stop signal may be real-time, which
    /// `Signal` cannot hold).
    fn send_raw(self, sig: i32) {
        // ESRCH (already gone) is the only likely error, and harmless.
        // SAFETY: kill(2)/killpg(2) touch no memory of ours.
        let _ = unsafe {
            match self {
                Target::Group(pgid) => nix::libc::killpg(pgid.as_raw(), sig),
                Target::Child(pid) => nix::libc::kill(pid.as_raw(), sig),
            }
        };
    }

    fn send(self, sig: Signal) {
        // ESRCH (already gone) is the only likely error, and harmless.
        let _ = match self {
            Target::Group(pgid) => killpg(pgid, sig),
            Target::Child(pid) => kill(pid, sig),
        };
    }

    /// Pass on a signal retry caught.
    fn forward(self, sig: Signal) {
        match (self, sig) {
            // Job control: the child's group is not the terminal's, so Ctrl-Z
            // reached only retry. Stop the group, stop retry, and when the
            // shell continues retry, continue the group.
            (Target::Group(_), Signal::SIGTSTP) => {
                self.send(Signal::SIGTSTP);
                suspend_self();
                self.send(Signal::SIGCONT);
            }
            // In retry's group the terminal already delivered these to the
            // child, and `fg` continues the whole group.
            (Target::Child(_), Signal::SIGTSTP) => suspend_self(),
            (Target::Child(_), Signal::SIGINT | Signal::SIGQUIT) => {}
            _ => self.send(sig),
        }
    }
}

impl Attempt for ProcessAttempt {
    async fn run(&mut self, ctx: &Context, signals: &mut Signals) -> Status {
        let started = Instant::now();
        let Some((program, args)) = self.command.split_first() else {
            return Status::NotFound;
        };
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("RETRY_ATTEMPT", ctx.number.to_string())
            .env(
                "RETRY_MAX_ATTEMPTS",
                ctx.max.map(|m| m.to_string()).unwrap_or_default(),
            )
            .env(
                "RETRY_PREVIOUS_EXIT",
                ctx.previous_exit.map(|c| c.to_string()).unwrap_or_default(),
            )
            .env("RETRY_DEPTH", self.depth.to_string())
            .kill_on_drop(true);
        if !self.opts.foreground {
            cmd.process_group(0);
        }
        match self.stdin.stdio() {
            Ok(s) => cmd.stdin(s),
            Err(e) => return Status::NotExecutable(format!("cannot prepare stdin: {e}")),
        };

        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => return spawn_error(&e),
        };
        let Some(pid) = child.id().and_then(|id| i32::try_from(id).ok()) else {
            return Status::NotExecutable("child exited before it could be tracked".into());
        };
        let pid = Pid::from_raw(pid);
        let target = if self.opts.foreground {
            Target::Child(pid)
        } else {
            Target::Group(pid)
        };
        if let (StdinSource::Memory(bytes), Some(mut pipe)) = (&self.stdin, child.stdin.take()) {
            let bytes = Arc::clone(bytes);
            // A child that stops reading closes the pipe; that is its business.
            tokio::spawn(async move {
                let _ = pipe.write_all(&bytes).await;
            });
        }

        let mut stop: Option<(Stop, Instant)> = None;
        let mut killed = false;
        let result = loop {
            let wake = match stop {
                None => ctx.deadline.map(|(at, _)| at),
                // An absurd grace period overflows to "never", not a panic.
                Some((_, since)) if !killed => since.checked_add(self.opts.kill_after),
                Some(_) => None,
            };
            tokio::select! {
                res = child.wait() => break res,
                () = sleep_until(wake) => match stop {
                    None => {
                        let limit = ctx.deadline.map_or(Limit::Attempt, |(_, l)| l);
                        target.send_raw(self.opts.stop_signal);
                        stop = Some((Stop::Timeout(limit), Instant::now()));
                    }
                    Some(_) => {
                        target.send(Signal::SIGKILL);
                        killed = true;
                    }
                },
                sig = signals.recv() => {
                    target.forward(sig);
                    if is_terminating(sig) && !matches!(stop, Some((Stop::Interrupt(_), _))) {
                        let since = stop.map_or_else(Instant::now, |(_, since)| since);
                        stop = Some((Stop::Interrupt(sig), since));
                    }
                }
            }
        };

        if let Target::Group(pgid) = target {
            let grace_from = stop.map(|(_, since)| since);
            drain_group(
                pgid,
                self.opts.stop_signal,
                self.opts.kill_after,
                grace_from,
            )
            .await;
        }

        match (stop, result) {
            (Some((Stop::Interrupt(sig), _)), _) => Status::Interrupted(sig as i32),
            (Some((Stop::Timeout(limit), _)), _) => Status::TimedOut {
                limit,
                after: started.elapsed(),
            },
            (None, Ok(st)) => match (st.code(), st.signal()) {
                (Some(code), _) => Status::Exited(code),
                (None, Some(sig)) => Status::Signaled(sig),
                (None, None) => Status::Exited(1),
            },
            (None, Err(e)) => Status::NotExecutable(format!("cannot wait for the command: {e}")),
        }
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// Stop whatever is left in the attempt's process group after the child
/// exited: the stop signal (unless the group already had it, at `grace_from`),
/// then KILL when the grace period is over.
async fn drain_group(pgid: Pid, stop_signal: i32, grace: Duration, grace_from: Option<Instant>) {
    let alive = || killpg(pgid, None).is_ok();
    if !alive() {
        return;
    }
    let since = match grace_from {
        Some(since) => since,
        None => {
            Target::Group(pgid).send_raw(stop_signal);
            Instant::now()
        }
    };
    let until = since.checked_add(grace);
    while until.is_none_or(|u| Instant::now() < u) {
        tokio::time::sleep(Duration::from_millis(10)).await;
        if !alive() {
            return;
        }
    }
    let _ = killpg(pgid, Signal::SIGKILL);
}

/// A spawn failure as a status: 127 for a missing program, 126 otherwise.
fn spawn_error(e: &io::Error) -> Status {
    match e.kind() {
        io::ErrorKind::NotFound => Status::NotFound,
        io::ErrorKind::PermissionDenied => Status::NotExecutable("permission denied".into()),
        _ => Status::NotExecutable(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_stdin_stays_in_memory() {
        let src = StdinSource::capture(&b"hello"[..]).expect("capture");
        match src {
            StdinSource::Memory(b) => assert_eq!(&b[..], b"hello"),
            other => panic!("expected memory, got {other:?}"),
        }
    }

    #[test]
    fn large_stdin_spills_to_a_file() {
        let data = vec![7u8; REPLAY_MEMORY_LIMIT + 1];
        let mut src = StdinSource::capture(&data[..]).expect("capture");
        let StdinSource::File(f) = &mut src else {
            panic!("expected a file");
        };
        f.rewind().expect("rewind");
        let mut back = Vec::new();
        f.read_to_end(&mut back).expect("read");
        assert_eq!(back, data);
    }
}
