//! What retry's standard descriptors were when it started.
//!
//! `main` opens a standard descriptor the parent left closed on /dev/null,
//! so that no file retry opens can take its number, and records it here:
//! HTTP mode must tell a closed stdout (the body cannot be delivered: exit
//! 23, as curl) from one sent to /dev/null on purpose.

use std::sync::atomic::{AtomicU8, Ordering};

/// Bit N set: descriptor N was closed at start.
static CLOSED: AtomicU8 = AtomicU8::new(0);

/// Records that standard descriptor `fd` (0, 1 or 2) was closed at start.
pub fn record_closed(fd: i32) {
    if (0..3).contains(&fd) {
        CLOSED.fetch_or(1 << fd, Ordering::Relaxed);
    }
}

/// Whether standard descriptor `fd` was closed at start.
pub fn was_closed(fd: i32) -> bool {
    (0..3).contains(&fd) && CLOSED.load(Ordering::Relaxed) & (1 << fd) != 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_standard_descriptors() {
        record_closed(7);
        assert!(!was_closed(7));
        assert!(!was_closed(2));
        record_closed(2);
        assert!(was_closed(2));
    }
}
