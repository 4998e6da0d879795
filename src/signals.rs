//! Signals that reach `retry` itself: caught, queued for the running attempt
//! to forward, and remembered so that no new attempt or sleep starts after a
//! terminating one.

use nix::sys::signal::Signal;
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
    /// Install handlers for every signal in [`CAUGHT`]. Needs a tokio runtime.
    pub fn install() -> std::io::Result<Signals> {
        let (tx, rx) = mpsc::unbounded_channel();
        for sig in CAUGHT {
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
                if is_terminating(sig) && self.interrupted.is_none() {
                    self.interrupted = Some(sig);
                }
                sig
            }
            None => std::future::pending().await,
        }
    }

    /// The next terminating signal, while no child runs: a TSTP suspends
    /// retry, others are dropped (there is no child to pass them to).
    pub async fn next_interrupt(&mut self) -> Signal {
        if let Some(sig) = self.interrupted {
            return sig;
        }
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
            if is_terminating(sig) && self.interrupted.is_none() {
                self.interrupted = Some(sig);
            }
        }
        self.interrupted
    }
}
