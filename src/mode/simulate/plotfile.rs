//! Where `--plot` writes, settled before the simulation runs: a bad path is
//! a usage error at once, not after a million clients have been simulated,
//! and the picture never lands on the stream the report is written to.
//!
//! The path is resolved with `fsutil` (its directory must be the user's or
//! root's, a symbolic link followed only when safe); a regular file is
//! written as a temporary file and renamed into place once whole, so a
//! killed run leaves nothing half-drawn; a device or FIFO is written
//! directly (a FIFO nobody reads is an error, not a wait). In a directory
//! others can write to, another user's file, FIFO or device is refused.

use std::io::Write;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use crate::fsutil::{self, Destination, Durability, Rule, Target};

/// `--plot`'s destination, checked.
#[derive(Debug)]
pub struct PlotFile {
    path: PathBuf,
    to: To,
}

#[derive(Debug)]
enum To {
    /// A regular file (or none yet): replaced by rename.
    File(Box<Target>),
    /// A device or FIFO with a reader, opened, written as it is.
    Direct(std::fs::File),
}

/// Whether `meta` is the file open on descriptor `fd`.
#[allow(clippy::unnecessary_cast)] // dev_t is signed on macOS; `dev()` widens it so
fn same_file(meta: &std::fs::Metadata, fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::unix::fs::MetadataExt;
    nix::sys::stat::fstat(fd).is_ok_and(|s| s.st_dev as u64 == meta.dev() && s.st_ino == meta.ino())
}

/// Check `path` and make sure a file can be created there; the error is
/// the usage error's whole line.
pub fn open(path: &Path) -> Result<PlotFile, String> {
    // The kernel's view first, every link followed: `/dev/stdout` names
    // the report's pipe, terminal or file.
    if let Ok(meta) = std::fs::metadata(path) {
        for (stream, what) in [
            (
                std::io::stdout().as_fd(),
                "standard output, where the report goes",
            ),
            (
                std::io::stderr().as_fd(),
                "standard error, where retry's messages go",
            ),
        ] {
            if same_file(&meta, stream) {
                return Err(format!(
                    "--plot {} is {what}: give the picture a file of its own",
                    path.display()
                ));
            }
        }
    }
    let bad = |why: String| {
        format!(
            "cannot write --plot {}: {why}; expected a file in an existing directory of yours",
            path.display()
        )
    };
    let target = match fsutil::open_destination(path, Rule::Output) {
        Ok(Destination::Replace(t)) => t,
        Ok(Destination::Direct(file)) => {
            return Ok(PlotFile {
                path: path.to_path_buf(),
                to: To::Direct(file),
            });
        }
        Err(e) => return Err(bad(e.about(path))),
    };
    target.dir.probe_writable().map_err(|e| {
        bad(format!(
            "{}: {}",
            target.dir.path().display(),
            crate::human::io_error(&e)
        ))
    })?;
    Ok(PlotFile {
        path: path.to_path_buf(),
        to: To::File(target),
    })
}

impl PlotFile {
    /// The path as given, for messages.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Write the picture; a regular file appears only whole.
    pub fn write(self, svg: &str) -> std::io::Result<()> {
        match self.to {
            To::Direct(mut f) => f.write_all(svg.as_bytes()),
            To::File(target) => {
                // As any new file: 0666 less the umask.
                let mut temp = target.dir.temp_file(&target.name, 0o666)?;
                temp.file_mut().write_all(svg.as_bytes())?;
                temp.persist(&target.name, Durability::Sync)
            }
        }
    }
}
