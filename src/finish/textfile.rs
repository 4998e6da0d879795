//! `--metrics-file`: the run's metrics for node_exporter's textfile
//! collector, written whole or not at all.
//!
//! The collector may read the file at any moment, so it is written to a
//! temporary file in the same directory (unnamed where the file system
//! allows), flushed, given mode 0644 and renamed into place: a reader sees
//! the old file or the new one, never half of one. The directory is checked
//! as for every file retry writes (`fsutil::Rule::Output`), once before the
//! command runs ([`check`]: a usage error) and again when writing. The
//! previous file is read without following a link, for the times of the
//! last success and failure, and never more of it than retry could have
//! written. In a directory others can write to, a file another user left
//! at the path is refused (theirs to change, and their times to fake). A
//! FIFO or a device at the path (`/dev/null`) is written to directly, as
//! `-o` writes one, never replaced.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::metrics::{self, Kept};
use super::{Ctx, Output, RunSummary, Work};
use crate::event::Event;
use crate::fsutil::{self, Durability, Rule};

/// Mode of the metrics file: the collector runs as another user.
const MODE: u32 = 0o644;

pub struct Textfile {
    path: PathBuf,
    /// The job label, then `--metrics-label`'s.
    labels: Vec<(String, String)>,
}

impl Textfile {
    pub fn new(path: PathBuf, labels: Vec<(String, String)>) -> Textfile {
        Textfile { path, labels }
    }
}

/// Whether the metrics file can be written at `path`: its directory exists,
/// is trusted, and a file can be created in it (nothing is left there).
/// The error is the usage-error line.
pub fn check(path: &Path) -> Result<(), String> {
    check_output("--metrics-file", path)
}

/// Whether an end-of-run file given with `flag` (`--metrics-file`,
/// `--report`) can be written at `path`, as [`check`] says it.
pub fn check_output(flag: &str, path: &Path) -> Result<(), String> {
    let target = fsutil::resolve(path, Rule::Output)
        .map_err(|e| format!("cannot write {flag} {}: {}", path.display(), e.about(path)))?;
    // A FIFO or a device there (`/dev/null`) is written directly.
    if target
        .existing
        .as_ref()
        .is_some_and(|s| !fsutil::is_regular(s))
    {
        return Ok(());
    }
    target.dir.probe_writable().map_err(|e| {
        format!(
            "cannot write {flag} {}: {}: {}",
            path.display(),
            target.dir.path().display(),
            crate::human::io_error(&e)
        )
    })
}

/// Writes the metrics; the error is the warning's text.
fn write(path: &Path, summary: &RunSummary, labels: &[(String, String)]) -> Result<(), String> {
    let target = fsutil::resolve(path, Rule::Output).map_err(|e| e.to_string())?;
    let shown = target.path();
    let fail = |e: std::io::Error| format!("{}: {}", shown.display(), crate::human::io_error(&e));
    // A FIFO or a device (`/dev/null`) is written to as it is, never
    // replaced by a regular file: as root, `/dev/null` itself would be.
    if target
        .existing
        .as_ref()
        .is_some_and(|s| !fsutil::is_regular(s))
    {
        let text = metrics::render(summary, labels, Kept::default());
        let mut file = target.open_direct().map_err(fail)?;
        return file.write_all(text.as_bytes()).map_err(fail);
    }
    // A file that cannot be read (not a regular file), or that is larger
    // than any retry writes with these labels, keeps no times: it is
    // replaced all the same. Only that much of it is ever read, whatever
    // was left at the path.
    let limit = read_limit(summary, labels);
    let kept = match target.dir.read_at_most(&target.name, limit) {
        Ok(Some(bytes)) if (bytes.len() as u64) < limit => {
            metrics::kept_from(&String::from_utf8_lossy(&bytes))
        }
        Ok(_) | Err(_) => Kept::default(),
    };
    let text = metrics::render(summary, labels, kept);
    let mut temp = target.dir.temp_file(&target.name, MODE).map_err(fail)?;
    temp.file_mut().write_all(text.as_bytes()).map_err(fail)?;
    // An existing file keeps its owner where retry may set it; the mode is
    // always 0644, whatever the umask, so the collector can read it.
    let (uid, gid) = target
        .existing
        .as_ref()
        .map_or((None, None), |s| (Some(s.st_uid), Some(s.st_gid)));
    temp.set_mode_and_owner(MODE, uid, gid).map_err(fail)?;
    temp.persist(&target.name, Durability::Sync).map_err(fail)
}

/// The most of a previous metrics file that is read: a few times what this
/// run writes with the same labels and both times kept at their longest
/// (room for a file written with other flags, still a few kilobytes).
fn read_limit(summary: &RunSummary, labels: &[(String, String)]) -> u64 {
    let longest = Kept {
        last_success: Some(f64::MAX),
        last_failure: Some(f64::MAX),
    };
    4 * metrics::render(summary, labels, longest).len() as u64
}

impl Output for Textfile {
    fn finished<'a>(&'a mut self, summary: &'a RunSummary, ctx: &'a mut Ctx<'_>) -> Work<'a> {
        Box::pin(async move {
            match write(&self.path, summary, &self.labels) {
                Ok(()) => {
                    let message = format!("metrics written to {}", self.path.display());
                    ctx.log.emit(&Event::Note { message: &message });
                }
                Err(why) => {
                    let message = format!("cannot write --metrics-file: {why}");
                    ctx.log.emit(&Event::Warning { message: &message });
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{End, Ending};
    use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
    use std::time::{Duration, SystemTime};

    fn summary() -> RunSummary {
        RunSummary {
            started_at: SystemTime::UNIX_EPOCH,
            duration: Duration::from_secs(1),
            seed: 0,
            ending: Ending::before_attempts(End::Permanent, 1, "x"),
        }
    }

    /// `--metrics-file /dev/null` (as root, /dev is a directory retry may
    /// write in) must not turn the device into a regular file: a FIFO or
    /// a device at the path is written to, as it is.
    #[test]
    fn a_fifo_or_device_at_the_path_is_written_to_not_replaced() {
        use std::io::Read;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("m.prom");
        nix::unistd::mkfifo(&path, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        let mut reader = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&path)
            .expect("open the FIFO's reading end");
        check(&path).expect("a FIFO is a place to write");
        write(&path, &summary(), &[("job".into(), "j".into())]).expect("written");
        assert!(
            std::fs::symlink_metadata(&path)
                .expect("still there")
                .file_type()
                .is_fifo(),
            "the FIFO was replaced"
        );
        let mut got = String::new();
        reader.read_to_string(&mut got).expect("read");
        assert!(
            got.contains("retry_last_run_exit_code{job=\"j\"} 1"),
            "{got}"
        );
    }
}
