//! Waiting with a bound: every wait of retry's that may not end of itself
//! (a child's exit, a connection, stdin, a store's answer) ends at a
//! deadline and gives way to a terminating signal. `until` is the deadline
//! as a future for a `select!` of several things; `within` is the whole
//! bounded, signal-aware wait for one piece of work.

use std::future::Future;
use std::time::Instant;

use nix::sys::signal::Signal;

use crate::signals::Signals;

/// Resolves at `at`; never, without one.
pub async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at.into()).await,
        None => std::future::pending().await,
    }
}

/// How a bounded wait ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Bounded<T> {
    Done(T),
    /// The deadline came first.
    TimedOut,
    /// A terminating signal came first.
    Interrupted(Signal),
}

/// `work`, unless `at` (None: no deadline) or a terminating signal comes
/// first. Work that is ready at once wins over a deadline already past.
pub async fn within<T>(
    work: impl Future<Output = T>,
    at: Option<Instant>,
    signals: &mut Signals,
) -> Bounded<T> {
    tokio::select! {
        biased;
        r = work => Bounded::Done(r),
        sig = signals.next_interrupt() => Bounded::Interrupted(sig),
        () = until(at) => Bounded::TimedOut,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime")
    }

    #[test]
    fn work_deadline_and_signal_each_end_the_wait() {
        runtime().block_on(async {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let mut signals = Signals::from_channel(rx);
            let soon = Some(Instant::now() + Duration::from_millis(50));
            let done = within(async { 7 }, soon, &mut signals).await;
            assert_eq!(done, Bounded::Done(7));
            // Ready work wins over a deadline already past.
            let past = Some(Instant::now());
            assert_eq!(
                within(async { 8 }, past, &mut signals).await,
                Bounded::Done(8)
            );
            let never = std::future::pending::<()>();
            assert_eq!(within(never, soon, &mut signals).await, Bounded::TimedOut);
            tx.send(Signal::SIGTERM).expect("send");
            let never = std::future::pending::<()>();
            assert_eq!(
                within(never, None, &mut signals).await,
                Bounded::Interrupted(Signal::SIGTERM)
            );
        });
    }
}
