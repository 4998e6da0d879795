//! The controlling terminal, handed to each attempt's process group the way
//! a shell hands it to a job.
//!
//! When retry runs in the foreground of its terminal, the attempt's group is
//! made the foreground group while it runs, so programs that prompt (ssh,
//! sudo, `read`) can read the terminal and Ctrl-C or Ctrl-Z reach them
//! directly. retry takes the terminal back when the attempt's main process
//! ends or stops. Run in the background, retry never touches the terminal.

use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};

use std::os::unix::fs::OpenOptionsExt;

use nix::libc;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::unistd::{Pid, getpgrp, tcgetpgrp, tcsetpgrp};

/// retry's controlling terminal, if it has one.
pub struct Terminal {
    fd: OwnedFd,
}

impl Terminal {
    /// Open the controlling terminal; None when there is none.
    pub fn open() -> Option<Terminal> {
        // std opens with O_CLOEXEC: the attempt never inherits this descriptor.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOCTTY)
            .open("/dev/tty")
            .ok()?;
        Some(Terminal { fd: file.into() })
    }

    /// Whether retry's process group is the terminal's foreground group.
    pub fn retry_is_foreground(&self) -> bool {
        tcgetpgrp(self.fd.as_fd()).is_ok_and(|fg| fg == getpgrp())
    }

    /// Whether `pgid` is the terminal's foreground group.
    pub fn is_foreground(&self, pgid: Pid) -> bool {
        tcgetpgrp(self.fd.as_fd()).is_ok_and(|fg| fg == pgid)
    }

    /// Make `pgid` the foreground group. Called from retry's side after the
    /// spawn (the child does the same before exec: whichever runs first wins
    /// the race, as in a shell).
    pub fn give_to(&self, pgid: Pid) {
        without_ttou(|| {
            let _ = tcsetpgrp(self.fd.as_fd(), pgid);
        });
    }

    /// Take the terminal back for retry's own group, but only from `pgid`:
    /// if the terminal has moved on (the user put retry in the background),
    /// it is not retry's to take.
    pub fn take_back_from(&self, pgid: Pid) {
        if self.is_foreground(pgid) {
            without_ttou(|| {
                let _ = tcsetpgrp(self.fd.as_fd(), getpgrp());
            });
        }
    }

    /// The raw descriptor, for the child's side of the hand-over.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Run `f` with SIGTTOU blocked: a process outside the foreground group may
/// then change the foreground group instead of being stopped for trying.
fn without_ttou(f: impl FnOnce()) {
    let mut ttou = SigSet::empty();
    ttou.add(Signal::SIGTTOU);
    let mut old = SigSet::empty();
    let blocked = pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&ttou), Some(&mut old)).is_ok();
    f();
    if blocked {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old), None);
    }
}
