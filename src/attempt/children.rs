//! Reaping and counting the processes an attempt leaves behind.
//!
//! retry is a child subreaper: what an attempt forks and abandons is
//! reparented to retry, so retry reaps every child that changes state, not
//! only the attempt's main process. A zombie must never count as a live
//! process, or cleanup would wait for the dead.

use nix::libc;
use nix::sys::signal::killpg;
use nix::unistd::Pid;

use crate::sys::count_group;

/// What happened to the attempt's main process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    Exited(i32),
    Signaled(i32),
    /// Stopped by this signal (job control, or SIGSTOP).
    Stopped(i32),
}

/// Reap every child with news, without blocking; report the news of `main`.
/// Stops are reported only for `main`; anything else is reaped and dropped.
pub fn reap(main: Option<Pid>) -> Option<Change> {
    let mut news = None;
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid writes only to `status`. Raw status decoding,
        // because a death by a real-time signal has no nix Signal value.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG | libc::WUNTRACED) };
        if pid == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        if pid <= 0 {
            // 0: nobody has news; -1: no children at all (ECHILD).
            return news;
        }
        if Some(Pid::from_raw(pid)) != main {
            continue;
        }
        news = if libc::WIFEXITED(status) {
            Some(Change::Exited(libc::WEXITSTATUS(status)))
        } else if libc::WIFSIGNALED(status) {
            Some(Change::Signaled(libc::WTERMSIG(status)))
        } else if libc::WIFSTOPPED(status) {
            Some(Change::Stopped(libc::WSTOPSIG(status)))
        } else {
            news
        };
    }
}

/// Reap what has news, then whether group `pgid` has ended. A member that
/// dies between the reap and the count shows as a zombie and counts as
/// gone: it is reaped too, so that nothing is left for retry's own parent
/// to reap when retry exits.
pub fn reap_and_check_gone(pgid: Pid) -> bool {
    reap(None);
    if group_alive(pgid) {
        return false;
    }
    reap(None);
    true
}

/// Whether anything still lives in group `pgid`. Zombies that are not
/// retry's to reap (their parent is a leftover too) do not count.
pub fn group_alive(pgid: Pid) -> bool {
    killpg(pgid, None).is_ok() && count_group(pgid).is_none_or(|n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_this_process_group() {
        let own = nix::unistd::getpgrp();
        if cfg!(feature = "portable") {
            // No count there: a group is alive while killpg finds it.
            assert_eq!(count_group(own), None);
        } else {
            assert!(count_group(own).is_some_and(|n| n >= 1));
        }
        assert!(group_alive(own));
    }
}
