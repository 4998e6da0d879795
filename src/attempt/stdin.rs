//! What each attempt reads on stdin: retry's own, or, with
//! `--replay-stdin`, the same captured bytes every time.
//!
//! No attempt can change what the next one reads: each gets its own pipe, or
//! its own read-only descriptor (with its own offset) of the spilled file.
//!
//! The capture is a wait like any other: it gives way to `--max-time` and to
//! a terminating signal, and it is bounded by `--replay-stdin-max`, so that
//! `yes | retry --replay-stdin ...` cannot fill the disk. The reading is
//! done by a thread of its own, which a run that gives up leaves behind
//! (blocked in a read, it ends with the process).

use std::io::{self, PipeWriter, Read, Seek, Write};
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use super::Unready;
use crate::bound::{Bounded, within};
use crate::human::human_size;
use crate::signals::Signals;

/// stdin held in memory up to this size, in a private temp file beyond it.
pub const REPLAY_MEMORY_LIMIT: usize = 8 * 1024 * 1024;

/// `--replay-stdin-max` when not given: enough for any request body or
/// upload a retry is usually wrapped around, and far from filling a disk
/// (or, with /tmp on tmpfs, the memory).
pub const REPLAY_DEFAULT_MAX: u64 = 1 << 30;

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

/// Why stdin could not be captured.
#[derive(Debug)]
pub enum CaptureError {
    /// More than this many bytes came.
    TooLarge(u64),
    /// Reading stdin failed.
    Read(io::Error),
    /// The spool file could not be made or written.
    Spool(String),
}

impl std::fmt::Display for CaptureError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaptureError::TooLarge(max) => write!(
                f,
                "stdin is larger than --replay-stdin-max ({}): raise it with --replay-stdin-max SIZE, or inf for no limit",
                human_size(*max)
            ),
            CaptureError::Read(e) => write!(f, "cannot read stdin for --replay-stdin: {e}"),
            CaptureError::Spool(why) => write!(f, "cannot spill stdin for --replay-stdin: {why}"),
        }
    }
}

/// Capture retry's own stdin for `--replay-stdin`, at most `max` bytes
/// (None: no limit), giving way to `deadline` and to a terminating signal.
pub async fn capture_stdin(
    max: Option<u64>,
    deadline: Option<Instant>,
    signals: &mut Signals,
) -> Result<StdinSource, Unready> {
    let (tx, rx) = oneshot::channel();
    let reader = std::thread::Builder::new()
        .name("stdin".into())
        .spawn(move || {
            let _ = tx.send(StdinSource::capture(
                io::stdin().lock(),
                max,
                crate::fsutil::scratch_in_tmpdir,
            ));
        });
    if let Err(e) = reader {
        return Err(Unready::Failed(format!(
            "cannot read stdin for --replay-stdin: {e}"
        )));
    }
    match within(rx, deadline, signals).await {
        Bounded::Done(Ok(Ok(source))) => Ok(source),
        Bounded::Done(Ok(Err(e))) => Err(Unready::Failed(e.to_string())),
        Bounded::Done(Err(_)) => Err(Unready::Failed(
            "cannot read stdin for --replay-stdin".into(),
        )),
        Bounded::TimedOut => Err(Unready::Deadline(
            "--max-time ran out while reading stdin for --replay-stdin".into(),
        )),
        Bounded::Interrupted(sig) => Err(Unready::Interrupted(
            sig,
            format!(
                "interrupted by {} while reading stdin for --replay-stdin",
                crate::classify::signal_name(sig as i32)
            ),
        )),
    }
}

impl StdinSource {
    /// Read `input` to its end once, for `--replay-stdin`: held in memory up
    /// to [`REPLAY_MEMORY_LIMIT`], beyond it in the file `spool` makes;
    /// refused past `max` bytes.
    pub fn capture(
        mut input: impl Read,
        max: Option<u64>,
        spool: impl FnOnce() -> Result<std::fs::File, String>,
    ) -> Result<StdinSource, CaptureError> {
        let mut spool = Some(spool);
        let mut buf = Vec::new();
        let mut chunk = vec![0u8; 64 * 1024];
        let mut file: Option<std::fs::File> = None;
        let mut total: u64 = 0;
        loop {
            let n = match input.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(CaptureError::Read(e)),
            };
            total = total.saturating_add(n as u64);
            if let Some(max) = max.filter(|&m| total > m) {
                return Err(CaptureError::TooLarge(max));
            }
            let data = &chunk[..n];
            match file.as_mut() {
                Some(f) => f
                    .write_all(data)
                    .map_err(|e| CaptureError::Spool(e.to_string()))?,
                None if buf.len() + n > REPLAY_MEMORY_LIMIT => {
                    // Spill: memory stays flat however large the input is.
                    let make = spool
                        .take()
                        .ok_or_else(|| CaptureError::Spool("spilled twice".into()))?;
                    let mut f = make().map_err(CaptureError::Spool)?;
                    f.write_all(&buf)
                        .and_then(|()| f.write_all(data))
                        .map_err(|e| CaptureError::Spool(e.to_string()))?;
                    buf = Vec::new();
                    file = Some(f);
                }
                None => buf.extend_from_slice(data),
            }
        }
        Ok(match file {
            Some(f) => StdinSource::File(f),
            None => StdinSource::Memory(Arc::new(buf)),
        })
    }

    /// The child's stdin for one attempt (None: retry's own), and the end of
    /// its pipe to [`feed`](Self::feed) once the child has started.
    pub fn for_attempt(&self) -> io::Result<(Option<OwnedFd>, Option<PipeWriter>)> {
        Ok(match self {
            StdinSource::Inherit => (None, None),
            StdinSource::Memory(_) => {
                // Both ends close on exec: the child gets its end as fd 0 only.
                let (read, write) = io::pipe()?;
                (Some(read.into()), Some(write))
            }
            StdinSource::File(f) => (Some(private_view(f)?.into()), None),
        })
    }

    /// Feed the captured bytes to a child's stdin pipe, if there are any.
    /// A thread of its own does the writing: it ends when the child has read
    /// everything or closed the pipe, and never holds retry up at exit.
    pub fn feed(&self, pipe: Option<PipeWriter>) {
        if let (StdinSource::Memory(bytes), Some(mut pipe)) = (self, pipe) {
            let bytes = Arc::clone(bytes);
            std::thread::spawn(move || {
                // A child that stops reading closes the pipe; that is its business.
                let _ = pipe.write_all(&bytes);
            });
        }
    }
}

/// A read-only descriptor of `file` with an offset of its own, at the start.
/// Reopening through /proc gives a new open file description, so an attempt
/// (or a leftover of one) that reads or seeks cannot move the next one's
/// offset; without /proc, a rewound duplicate is the fallback.
fn private_view(file: &std::fs::File) -> io::Result<std::fs::File> {
    match crate::sys::reopen(file) {
        Ok(view) => Ok(view),
        Err(_) => {
            let mut dup = file.try_clone()?;
            dup.rewind()?;
            Ok(dup)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_spool() -> Result<std::fs::File, String> {
        Err("no spool here".into())
    }

    fn temp() -> Result<std::fs::File, String> {
        tempfile::tempfile().map_err(|e| e.to_string())
    }

    #[test]
    fn more_than_the_limit_is_refused_in_memory_and_in_the_spool() {
        let err = StdinSource::capture(&b"hello!"[..], Some(5), no_spool).expect_err("refused");
        assert!(matches!(err, CaptureError::TooLarge(5)), "{err:?}");
        let data = vec![1u8; REPLAY_MEMORY_LIMIT + 100];
        let max = REPLAY_MEMORY_LIMIT as u64 + 99;
        let err = StdinSource::capture(&data[..], Some(max), temp).expect_err("refused");
        assert!(
            err.to_string()
                .starts_with("stdin is larger than --replay-stdin-max")
        );
        let err = StdinSource::capture(&data[..], None, no_spool).expect_err("no spool");
        assert_eq!(
            err.to_string(),
            "cannot spill stdin for --replay-stdin: no spool here"
        );
    }

    #[test]
    fn small_stdin_stays_in_memory() {
        let src = StdinSource::capture(&b"hello"[..], Some(5), no_spool).expect("capture");
        match src {
            StdinSource::Memory(b) => assert_eq!(&b[..], b"hello"),
            other => panic!("expected memory, got {other:?}"),
        }
    }

    #[test]
    fn large_stdin_spills_to_a_file_and_each_view_starts_at_the_beginning() {
        let data = vec![7u8; REPLAY_MEMORY_LIMIT + 1];
        let src = StdinSource::capture(&data[..], None, temp).expect("capture");
        let StdinSource::File(f) = &src else {
            panic!("expected a file");
        };
        let mut first = private_view(f).expect("view");
        let mut some = [0u8; 10];
        first.read_exact(&mut some).expect("read");
        // A reader that stopped half way does not move the next one's offset.
        let mut second = private_view(f).expect("view");
        let mut back = Vec::new();
        second.read_to_end(&mut back).expect("read");
        assert_eq!(back, data);
        if cfg!(feature = "portable") {
            // Without /proc, each view is a rewound copy of one descriptor:
            // the views share one offset.
            assert_eq!(first.stream_position().expect("offset"), data.len() as u64);
        } else {
            // Each view has an offset of its own, and is read-only.
            assert_eq!(first.stream_position().expect("offset"), 10);
            assert!(second.write_all(b"x").is_err());
        }
    }
}
