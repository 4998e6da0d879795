//! Signals that reach `retry` itself: how they were set up when retry
//! started, the ones it catches (queued for the running attempt to forward),
//! and the first terminating one, after which no attempt or sleep starts.
//!
//! A signal that was ignored when retry started (`nohup`, `trap '' HUP`, a
//! background job of a non-interactive shell) stays ignored, by retry and by
//! its children, which inherit the ignored disposition through exec.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use nix::libc;
use nix::sys::signal::{SigHandler, SigSet, SigmaskHow, Signal, sigprocmask};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// The signals retry catches. All are passed on to a running child; the
/// first four also end the run, and TSTP suspends retry with its child.
pub const CAUGHT: [Signal; 7] = [
    Signal::SIGINT,
    Signal::SIGTERM,
    Signal::SIGHUP,
    Signal::SIGQUIT,
    Signal::SIGUSR1,
    Signal::SIGUSR2,
    Signal::SIGTSTP,
];

static SIGPIPE_IGNORED_AT_START: AtomicBool = AtomicBool::new(false);

/// What [`prepare`] found, for [`Signals::install`].
static START: OnceLock<StartState> = OnceLock::new();

/// Record whether SIGPIPE was ignored when the process started. The Rust
/// runtime ignores SIGPIPE before `main` runs, so only code that runs
/// earlier can see what the parent gave us: the binary calls this from its
/// `.init_array` entry.
pub extern "C" fn record_sigpipe_at_start() {
    SIGPIPE_IGNORED_AT_START.store(ignored(libc::SIGPIPE), Ordering::Relaxed);
}

/// Whether SIGPIPE was ignored when retry started (as recorded above).
pub fn sigpipe_ignored_at_start() -> bool {
    SIGPIPE_IGNORED_AT_START.load(Ordering::Relaxed)
}

/// Whether `sig`'s disposition is "ignore" right now.
fn ignored(sig: libc::c_int) -> bool {
    // SAFETY: a null new action only reads the current one into `old`.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        libc::sigaction(sig, std::ptr::null(), &mut old) == 0 && old.sa_sigaction == libc::SIG_IGN
    }
}

/// How retry found its signals at start, before it changed any of them.
#[derive(Debug, Clone, Default)]
pub struct StartState {
    /// Those of [`CAUGHT`] that were ignored: retry leaves them ignored.
    pub ignored: Vec<Signal>,
}

/// Read the dispositions retry was given, then make waiting for children
/// reliable: SIGCHLD back to its default (a parent that ignored it would
/// have the kernel reap our children before we can), and the signals retry
/// relies on unblocked. Call once, before any handler is installed.
pub fn prepare() -> StartState {
    START.get_or_init(prepare_once).clone()
}

fn prepare_once() -> StartState {
    let ignored_now = CAUGHT
        .into_iter()
        .filter(|s| ignored(*s as libc::c_int))
        .collect();
    // SAFETY: restoring the default action installs no handler code.
    unsafe {
        let _ = nix::sys::signal::signal(Signal::SIGCHLD, SigHandler::SigDfl);
    }
    let mut needed = SigSet::empty();
    needed.add(Signal::SIGCHLD);
    for sig in CAUGHT {
        needed.add(sig);
    }
    let _ = sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&needed), None);
    StartState {
        ignored: ignored_now,
    }
}

/// The signals retry has handlers for (or will have): those of [`CAUGHT`]
/// not ignored at start, and SIGCHLD. A child sets them back to their
/// default before it execs, so that none of retry's handlers can run in it.
/// Every handler retry installs must be in this list.
pub fn handled() -> Vec<libc::c_int> {
    let start = prepare();
    CAUGHT
        .into_iter()
        .filter(|s| !start.ignored.contains(s))
        .chain([Signal::SIGCHLD])
        .map(|s| s as libc::c_int)
        .collect()
}

/// Stop this process until a SIGCONT arrives (job control's `fg` or `bg`).
/// Catching TSTP replaced its default action, so retry stops itself this way.
pub fn suspend_self() {
    let _ = nix::sys::signal::raise(Signal::SIGSTOP);
}

/// Whether catching `sig` ends the run (exit 128+N) rather than only being passed on.
pub fn is_terminating(sig: Signal) -> bool {
    matches!(
        sig,
        Signal::SIGINT | Signal::SIGTERM | Signal::SIGHUP | Signal::SIGQUIT
    )
}

/// The stream of caught signals, plus the first terminating one seen.
pub struct Signals {
    rx: mpsc::UnboundedReceiver<Signal>,
    // Kept so that `recv` never sees a closed channel when nothing is installed.
    _tx: Option<mpsc::UnboundedSender<Signal>>,
    interrupted: Option<Signal>,
}

impl Signals {
    /// Install handlers for every signal in [`CAUGHT`] that was not ignored
    /// at start (see [`prepare`]). Needs a tokio runtime.
    pub fn install() -> std::io::Result<Signals> {
        let start = prepare();
        let (tx, rx) = mpsc::unbounded_channel();
        for sig in CAUGHT.into_iter().filter(|s| !start.ignored.contains(s)) {
            let mut stream = signal(SignalKind::from_raw(sig as i32))?;
            let tx = tx.clone();
            tokio::spawn(async move {
                while stream.recv().await.is_some() {
                    if tx.send(sig).is_err() {
                        break;
                    }
                }
            });
        }
        Ok(Signals {
            rx,
            _tx: None,
            interrupted: None,
        })
    }

    /// A source that never yields a signal.
    pub fn none() -> Signals {
        let (tx, rx) = mpsc::unbounded_channel();
        Signals {
            rx,
            _tx: Some(tx),
            interrupted: None,
        }
    }

    /// Signals fed through a channel as if caught: how tests drive the
    /// loop's handling of signals without sending real ones. Once every
    /// sender is gone, no further signal arrives.
    pub fn from_channel(rx: mpsc::UnboundedReceiver<Signal>) -> Signals {
        Signals {
            rx,
            _tx: None,
            interrupted: None,
        }
    }

    /// The next caught signal. Pending forever once no signal can arrive.
    pub async fn recv(&mut self) -> Signal {
        match self.rx.recv().await {
            Some(sig) => {
                self.note(sig);
                sig
            }
            None => std::future::pending().await,
        }
    }

    /// Remember `sig` as the interrupt that ends the run, if it is the first
    /// terminating one. Also for signals that reached the attempt instead of
    /// retry (Ctrl-C on a terminal the attempt had).
    pub fn note(&mut self, sig: Signal) {
        if is_terminating(sig) && self.interrupted.is_none() {
            self.interrupted = Some(sig);
        }
    }

    /// The next terminating signal, while no child runs: a TSTP suspends
    /// retry, others are dropped (there is no child to pass them to).
    pub async fn next_interrupt(&mut self) -> Signal {
        if let Some(sig) = self.interrupted {
            return sig;
        }
        self.next_terminating().await
    }

    /// The next terminating signal that arrives from now on, one caught
    /// before not counted (the second Ctrl-C that cuts the end-of-run
    /// reports short); Ctrl-Z still suspends retry meanwhile.
    pub async fn next_terminating(&mut self) -> Signal {
        loop {
            let sig = self.recv().await;
            if is_terminating(sig) {
                return sig;
            }
            if sig == Signal::SIGTSTP {
                suspend_self();
            }
        }
    }

    /// The first terminating signal caught so far, without waiting.
    pub fn interrupted(&mut self) -> Option<Signal> {
        while let Ok(sig) = self.rx.try_recv() {
            self.note(sig);
        }
        self.interrupted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_an_ignored_disposition() {
        // SAFETY: test-only changes of a signal nothing else here uses.
        unsafe {
            let _ = nix::sys::signal::signal(Signal::SIGWINCH, SigHandler::SigIgn);
            assert!(ignored(libc::SIGWINCH));
            let _ = nix::sys::signal::signal(Signal::SIGWINCH, SigHandler::SigDfl);
            assert!(!ignored(libc::SIGWINCH));
        }
    }
}
