//! Where `--plot` writes, settled before the simulation runs: a bad path is
//! a usage error at once, not after a million clients have been simulated,
//! and the picture never lands on the stream the report is written to.
//!
//! A regular file is written as a temporary file beside it and renamed
//! into place once whole; a device or FIFO is written directly.

use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// `--plot`'s destination, opened.
#[derive(Debug)]
pub enum PlotFile {
    /// A temporary file in the target's directory, renamed onto it.
    Beside {
        temp: tempfile::NamedTempFile,
        target: PathBuf,
    },
    /// A device or FIFO, written as it is.
    Direct(std::fs::File),
}

/// Whether `meta` is the file open on descriptor `fd`.
fn same_file(meta: &std::fs::Metadata, fd: std::os::fd::BorrowedFd<'_>) -> bool {
    nix::sys::stat::fstat(fd).is_ok_and(|st| st.st_dev == meta.dev() && st.st_ino == meta.ino())
}

/// Check and open `path`; the error is the usage error's whole line.
pub fn open(path: &Path) -> Result<PlotFile, String> {
    let bad = |why: String| {
        format!(
            "cannot write --plot {}: {why}; expected a file in an existing, writable directory",
            path.display()
        )
    };
    if let Ok(meta) = std::fs::metadata(path) {
        use std::os::fd::AsFd;
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
        if meta.is_dir() {
            return Err(bad("it is a directory".to_string()));
        }
        if !meta.is_file() {
            return std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .map(PlotFile::Direct)
                .map_err(|e| bad(e.to_string()));
        }
    }
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".part")
        // As any new file: 0666 less the umask, not tempfile's private 0600.
        .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o666))
        .tempfile_in(&dir)
        .map(|temp| PlotFile::Beside {
            temp,
            target: path.to_path_buf(),
        })
        .map_err(|e| bad(format!("{}: {}", dir.display(), plain(&e))))
}

impl PlotFile {
    /// Write the picture, and put a regular file in place.
    pub fn write(self, svg: &str) -> std::io::Result<()> {
        match self {
            PlotFile::Direct(mut f) => f.write_all(svg.as_bytes()),
            PlotFile::Beside { mut temp, target } => {
                temp.write_all(svg.as_bytes())?;
                temp.as_file().sync_data()?;
                temp.persist(&target).map(|_| ()).map_err(|e| e.error)
            }
        }
    }
}

/// An I/O error without tempfile's added path (which we name ourselves).
fn plain(e: &std::io::Error) -> String {
    e.raw_os_error().map_or_else(
        || e.to_string(),
        |code| std::io::Error::from_raw_os_error(code).to_string(),
    )
}
