//! `--hold-output`: an attempt's stdout and stderr kept in a spool instead
//! of passing through, and written out only if the run does not succeed.
//!
//! The spool is a temporary file in `$TMPDIR` (or `/tmp`), unnamed or
//! unlinked as soon as it is created: nothing is left behind whatever ends
//! retry, and however much the command prints, retry's memory stays flat.
//! The two streams share one file as a sequence of records (which stream,
//! how long, the bytes), appended in the order retry read them, so writing
//! it out gives each byte back to its own stream in the original merged
//! order.
//!
//! [`Held`] is where the last attempt's spool waits for the end of the run:
//! each attempt replaces the one before (dropping it), and the end-of-run
//! output that writes it out takes it from there.

use std::fs::File;
use std::io;
use std::os::fd::BorrowedFd;
use std::os::unix::fs::FileExt;
use std::sync::{Arc, Mutex};

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};

use crate::human::io_error;

/// The bytes in front of each record: the stream (1 or 2) and the length
/// of the bytes that follow (u32, little-endian).
pub const HEADER: usize = 5;

/// An attempt's output, held.
#[derive(Debug)]
pub struct Spool {
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    file: File,
    /// Bytes of complete records in the file.
    len: u64,
    /// Bytes of output that could not be held (the disk was full).
    lost: u64,
    error: Option<String>,
}

/// What writing the held output out came to.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct WrittenOut {
    /// Bytes of output written out.
    pub written: u64,
    /// Bytes that were never held, and why.
    pub lost: Option<(u64, String)>,
    /// A stream that could not take its bytes (a closed pipe), and why.
    pub failed: Option<String>,
}

impl Spool {
    /// A new, empty spool in the temporary directory: see
    /// [`crate::fsutil::scratch_in_tmpdir`].
    pub fn create() -> Result<Spool, String> {
        let file = crate::fsutil::scratch_in_tmpdir()?;
        Ok(Spool {
            state: Mutex::new(State {
                file,
                len: 0,
                lost: 0,
                error: None,
            }),
        })
    }

    /// Append one record: `record[HEADER..]` are the bytes `stream` (1 or 2)
    /// wrote; `record[..HEADER]` is room for the header, filled in here, so
    /// that a record costs one write. Bytes that cannot be held are counted
    /// as lost, and the run goes on.
    pub fn append(&self, stream: u8, record: &mut [u8]) {
        let n = record.len().saturating_sub(HEADER);
        if n == 0 {
            return;
        }
        let Ok(len) = u32::try_from(n) else {
            // Records are at most one read of the pump's buffer.
            return;
        };
        record[0] = stream;
        record[1..HEADER].copy_from_slice(&len.to_le_bytes());
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if state.error.is_some() {
            state.lost += n as u64;
            return;
        }
        let at = state.len;
        match state.file.write_all_at(record, at) {
            Ok(()) => state.len += record.len() as u64,
            Err(e) => {
                state.lost += n as u64;
                state.error = Some(e.to_string());
            }
        }
    }

    /// Bytes of output held so far.
    pub fn held(&self) -> u64 {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let records = state.len;
        drop(state);
        records
    }

    /// Write every record out to retry's own stdout (1) or stderr (2), in
    /// order. A stream that cannot take its bytes (a closed pipe) is
    /// skipped from then on; the other still gets its own.
    pub fn write_out(&self) -> WrittenOut {
        let state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let mut out = WrittenOut {
            lost: state.error.as_ref().map(|why| (state.lost, why.clone())),
            ..WrittenOut::default()
        };
        let mut buf = vec![0u8; 64 * 1024];
        let mut dead = [false; 3];
        let mut at = 0u64;
        while at + HEADER as u64 <= state.len {
            let mut head = [0u8; HEADER];
            if let Err(e) = state.file.read_exact_at(&mut head, at) {
                out.failed = Some(format!("cannot read the held output: {}", io_error(&e)));
                break;
            }
            let stream = usize::from(head[0]).clamp(1, 2);
            let mut left = u64::from(u32::from_le_bytes([head[1], head[2], head[3], head[4]]));
            at += HEADER as u64;
            while left > 0 {
                let take = left.min(buf.len() as u64) as usize;
                if let Err(e) = state.file.read_exact_at(&mut buf[..take], at) {
                    out.failed = Some(format!("cannot read the held output: {}", io_error(&e)));
                    return out;
                }
                at += take as u64;
                left -= take as u64;
                if dead[stream] {
                    continue;
                }
                match write_all(stream as i32, &buf[..take]) {
                    Ok(()) => out.written += take as u64,
                    Err(e) => {
                        dead[stream] = true;
                        let name = if stream == 1 { "stdout" } else { "stderr" };
                        out.failed = Some(format!(
                            "cannot write the held output to {name}: {}",
                            io_error(&e)
                        ));
                    }
                }
            }
        }
        out
    }
}

/// Write all of `bytes` to retry's own descriptor `fd` (1 or 2), also when
/// someone else set it non-blocking; an error when the destination is gone.
pub(super) fn write_all(fd: i32, mut bytes: &[u8]) -> io::Result<()> {
    // SAFETY: fds 1 and 2 are retry's own and stay open for its life (they
    // are on /dev/null when retry was started without them).
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    while !bytes.is_empty() {
        match nix::unistd::write(fd, bytes) {
            Ok(0) => return Err(io::Error::from(io::ErrorKind::WriteZero)),
            Ok(n) => bytes = &bytes[n..],
            Err(Errno::EINTR) => {}
            // A destination someone else set non-blocking: wait for room.
            Err(Errno::EAGAIN) => {
                let mut fds = [PollFd::new(fd, PollFlags::POLLOUT)];
                let _ = poll(&mut fds, PollTimeout::NONE);
            }
            Err(e) => return Err(io::Error::from_raw_os_error(e as i32)),
        }
    }
    Ok(())
}

/// Where the last attempt's held output waits for the end of the run. One
/// per run, shared by the attempts that fill it and the end-of-run output
/// that writes it out; clones are the same place.
#[derive(Clone, Default)]
pub struct Held(Arc<Mutex<Option<Arc<Spool>>>>);

impl Held {
    /// The spool of the attempt now starting: the one before is dropped.
    pub fn replace(&self, spool: Option<Arc<Spool>>) {
        let old = std::mem::replace(
            &mut *self.0.lock().unwrap_or_else(|e| e.into_inner()),
            spool,
        );
        drop(old);
    }

    /// The last attempt's spool, if it was held.
    pub fn take(&self) -> Option<Arc<Spool>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).take()
    }
}

impl std::fmt::Debug for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Held")
    }
}

/// Two handles are equal when they are the same place.
impl PartialEq for Held {
    fn eq(&self, other: &Held) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Held {}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(bytes: &[u8]) -> Vec<u8> {
        let mut r = vec![0u8; HEADER];
        r.extend_from_slice(bytes);
        r
    }

    #[test]
    fn records_keep_their_stream_and_order_and_the_file_has_no_name() {
        let spool = Spool::create().expect("spool");
        spool.append(1, &mut record(b"one\n"));
        spool.append(2, &mut record(b"two\n"));
        spool.append(1, &mut record(b""));
        spool.append(1, &mut record(b"three\n"));
        assert_eq!(spool.held(), 3 * HEADER as u64 + 14);
        let state = spool.state.lock().unwrap();
        let mut all = Vec::new();
        let mut buf = vec![0u8; state.len as usize];
        state.file.read_exact_at(&mut buf, 0).unwrap();
        all.extend_from_slice(&buf);
        assert_eq!(&all[..HEADER], &[1, 4, 0, 0, 0]);
        assert_eq!(&all[HEADER..HEADER + 4], b"one\n");
        assert_eq!(&all[2 * HEADER + 4..2 * HEADER + 8], b"two\n");
        // Unnamed or unlinked: no link count.
        let meta = state.file.metadata().unwrap();
        assert_eq!(std::os::unix::fs::MetadataExt::nlink(&meta), 0);
    }

    #[test]
    fn a_held_place_is_shared_by_its_clones_and_replaced_by_each_attempt() {
        let held = Held::default();
        let other = held.clone();
        assert_eq!(held, other);
        assert_ne!(held, Held::default());
        let first = Arc::new(Spool::create().expect("spool"));
        held.replace(Some(Arc::clone(&first)));
        held.replace(None);
        assert_eq!(Arc::strong_count(&first), 1, "the old spool is dropped");
        other.replace(Some(first));
        assert!(held.take().is_some());
        assert!(other.take().is_none());
    }
}
