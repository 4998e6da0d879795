//! Where an accepted response's body goes: stdout, a device named by `-o`,
//! or a file that appears only whole, by rename, once the run succeeded.
//!
//! The file is written to an unnamed temporary file (`O_TMPFILE`) in the
//! target's directory, private (0600) while it is written, so a killed
//! retry leaves nothing behind and nobody reads a half-written body. It
//! then takes the mode (and owner and group, where retry may set them) of
//! the file it replaces, or 0666 less the umask for a new one, and is
//! renamed over the target. A symbolic link at the target is written
//! through, as curl does: the target is where the link points.
//!
//! stdout and a device or FIFO named by `-o` are written on a thread of
//! their own when their reader may stop reading (`stdio::may_stall`): the
//! attempt awaits the write under its timers and the signals, so a reader
//! that takes nothing never holds the run past `--max-time` or a SIGTERM
//! (the thread is then left blocked, and the process exits without it).

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::Arc;

use crate::fsutil::{Durability, Target, TempFile, new_file_mode};
use crate::human::io_error;

/// Where an accepted response's body goes.
pub enum Sink<'t> {
    /// retry's stdout; `stalls`: its reader may stop reading.
    Stdout { stalls: bool },
    /// `-o` naming something that is not a regular file (`/dev/null`, a
    /// FIFO): written directly, as stdout is.
    Direct { file: Arc<File>, stalls: bool },
    /// `-o FILE`.
    File(FileSink<'t>),
}

/// `-o FILE`: the resolved target and the temporary file beside it.
pub struct FileSink<'t> {
    target: &'t Target,
    temp: TempFile<'t>,
    /// How much of the body the temporary file holds.
    len: u64,
}

impl<'t> FileSink<'t> {
    /// A private temporary file beside `target`: also the proof, before
    /// anything is sent, that the body can be written there.
    pub fn new(target: &'t Target) -> io::Result<FileSink<'t>> {
        let temp = target.dir.temp_file(&target.name, 0o600)?;
        Ok(FileSink {
            target,
            temp,
            len: 0,
        })
    }
}

impl Sink<'_> {
    /// retry's stdout.
    pub fn stdout() -> Sink<'static> {
        // SAFETY: fd 1 stays open for retry's life.
        let fd = unsafe { BorrowedFd::borrow_raw(1) };
        Sink::Stdout {
            stalls: crate::stdio::may_stall(fd),
        }
    }

    /// A device or FIFO named by `-o`.
    pub fn direct(file: File) -> Sink<'static> {
        let stalls = crate::stdio::may_stall(file.as_fd());
        Sink::Direct {
            file: Arc::new(file),
            stalls,
        }
    }

    /// Whether what is written here reaches a reader at once (stdout, a
    /// device) and so cannot be taken back.
    pub fn is_live(&self) -> bool {
        !matches!(self, Sink::File(_))
    }

    /// How much of a body the `-o` file already holds (0 elsewhere).
    pub fn held(&self) -> u64 {
        match self {
            Sink::File(f) => f.len,
            _ => 0,
        }
    }

    /// Gets ready for a body whose first byte is byte `from` of the whole:
    /// the `-o` file keeps its first `from` bytes (a resumed download) and
    /// drops the rest (from 0: starts over).
    pub fn start_at(&mut self, from: u64) -> io::Result<()> {
        if let Sink::File(f) = self {
            let file = f.temp.file_mut();
            file.set_len(from)?;
            file.seek(SeekFrom::Start(from))?;
            f.len = from;
        }
        Ok(())
    }

    /// Writes one chunk of the body: on a thread of its own where the
    /// reader may stall, so that this future can be dropped (the attempt's
    /// timers, a signal) while the write waits for the reader.
    pub async fn write(&mut self, chunk: impl AsRef<[u8]> + Send + 'static) -> io::Result<()> {
        match self {
            Sink::Stdout { stalls } => {
                if crate::stdio::was_closed(1) {
                    return Err(io::Error::from_raw_os_error(nix::libc::EBADF));
                }
                // SAFETY: fd 1 stays open for retry's life.
                let stdout = || unsafe { BorrowedFd::borrow_raw(1) };
                match stalls {
                    true => {
                        off_thread(move || crate::stdio::write_all(stdout(), chunk.as_ref())).await
                    }
                    false => crate::stdio::write_all(stdout(), chunk.as_ref()),
                }
            }
            Sink::Direct { file, stalls: true } => {
                let file = Arc::clone(file);
                off_thread(move || crate::stdio::write_all(file.as_fd(), chunk.as_ref())).await
            }
            Sink::Direct { file, .. } => crate::stdio::write_all(file.as_fd(), chunk.as_ref()),
            Sink::File(f) => {
                let chunk = chunk.as_ref();
                f.temp.file_mut().write_all(chunk)?;
                f.len += chunk.len() as u64;
                Ok(())
            }
        }
    }

    pub fn flush(&mut self) -> io::Result<()> {
        match self {
            // Written with write(2): nothing is buffered.
            Sink::Stdout { .. } | Sink::Direct { .. } => Ok(()),
            Sink::File(f) => f.temp.file_mut().flush(),
        }
    }

    /// How a failed write is named in the log: the destination, never a
    /// temporary name.
    pub fn describe_error(&self, e: &io::Error) -> String {
        match (self, e.kind()) {
            (Sink::Stdout { .. }, io::ErrorKind::BrokenPipe) => {
                "stdout was closed by its reader".into()
            }
            (Sink::Stdout { .. }, _) if e.raw_os_error() == Some(nix::libc::EBADF) => {
                "stdout is closed".into()
            }
            (Sink::Stdout { .. }, _) => format!("stdout: {}", io_error(e)),
            (Sink::Direct { .. }, _) => format!("--output: {}", io_error(e)),
            (Sink::File(f), _) => format!("{}: {}", f.target.path().display(), io_error(e)),
        }
    }

    /// Puts a complete `-o` body in place, with the mode and owner of the
    /// file it replaces (or a new file's mode); nothing to do elsewhere.
    /// The error names the target only.
    pub fn persist(self) -> Result<(), String> {
        let Sink::File(f) = self else {
            return Ok(());
        };
        let target = f.target;
        let shown = || target.path().display().to_string();
        let kept = match &target.existing {
            // The permission bits only: set-user-ID and set-group-ID do
            // not carry over to new content (the kernel too clears them
            // when a file is written).
            Some(st) => f.temp.set_mode_and_owner(
                crate::fsutil::mode_bits(st) & 0o777,
                Some(st.st_uid),
                Some(st.st_gid),
            ),
            None => f.temp.set_mode_and_owner(new_file_mode(), None, None),
        };
        kept.map_err(|e| format!("cannot set the mode of {}: {}", shown(), io_error(&e)))?;
        f.temp.persist(&target.name, Durability::Sync).map_err(|e| {
            format!(
                "cannot move the response body into {}: {}",
                shown(),
                io_error(&e)
            )
        })
    }
}

/// `write` on a blocking thread, awaited. Dropping the future leaves the
/// thread to finish, or to block until the process exits.
async fn off_thread(write: impl FnOnce() -> io::Result<()> + Send + 'static) -> io::Result<()> {
    match tokio::task::spawn_blocking(write).await {
        Ok(done) => done,
        Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
        Err(e) => Err(io::Error::other(e)),
    }
}
