//! What each attempt reads on stdin: retry's own, or, with
//! `--replay-stdin`, the same captured bytes every time.
//!
//! No attempt can change what the next one reads: each gets its own pipe, or
//! its own read-only descriptor (with its own offset) of the spilled file.

use std::io::{self, PipeWriter, Read, Seek, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;

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
    match std::fs::File::open(format!("/proc/self/fd/{}", file.as_raw_fd())) {
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

    #[test]
    fn small_stdin_stays_in_memory() {
        let src = StdinSource::capture(&b"hello"[..]).expect("capture");
        match src {
            StdinSource::Memory(b) => assert_eq!(&b[..], b"hello"),
            other => panic!("expected memory, got {other:?}"),
        }
    }

    #[test]
    fn large_stdin_spills_to_a_file_and_each_view_starts_at_the_beginning() {
        let data = vec![7u8; REPLAY_MEMORY_LIMIT + 1];
        let src = StdinSource::capture(&data[..]).expect("capture");
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
        // And the view is read-only.
        assert!(second.write_all(b"x").is_err());
    }
}
