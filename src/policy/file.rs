//! Validation of file mode's flags: `--file PATH` (repeatable), and what
//! the path must be: `--non-empty`, `--directory`.

use super::values::{UsageError, path_arg};
use crate::attempt::file::{FileOptions, Wanted};
use crate::cli::Cli;

/// Validate `--file`. `Ok(None)` when it was not given (its companions
/// without it are refused by `modes`).
pub(super) fn from_args(cli: &Cli) -> Result<Option<FileOptions>, UsageError> {
    if cli.file.is_empty() {
        return Ok(None);
    }
    for path in &cli.file {
        if path.as_os_str().is_empty() {
            return Err(UsageError(
                "--file needs a path, not an empty value: expected a file or directory to wait for, such as /run/secrets/token".to_string(),
            ));
        }
        path_arg(
            "--file",
            path,
            "a file or directory to wait for, such as /run/secrets/token",
        )?;
    }
    Ok(Some(FileOptions {
        paths: cli.file.clone(),
        wanted: Wanted {
            non_empty: cli.non_empty,
            directory: cli.directory,
        },
    }))
}
