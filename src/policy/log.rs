//! The logging flags: `--log-format`, `-q`/`-v`, `--log-file`, `--color`
//! and `--ci-annotations`.

use super::values::{Names, UsageError, path_arg};
use crate::cli::{Cli, LogFormatArg, WhenArg};
use crate::log::{LogFormat, LogOptions, When};

impl From<WhenArg> for When {
    fn from(w: WhenArg) -> When {
        match w {
            WhenArg::Auto => When::Auto,
            WhenArg::Always => When::Always,
            WhenArg::Never => When::Never,
        }
    }
}

pub(super) fn options(cli: &Cli, names: &Names) -> Result<LogOptions, UsageError> {
    if let Some(file) = &cli.log_file {
        path_arg(
            &names.of("log_file", "--log-file"),
            file,
            "a file to append the log to",
        )?;
    }
    Ok(LogOptions {
        format: match cli.log_format.unwrap_or(LogFormatArg::Text) {
            LogFormatArg::Text => LogFormat::Text,
            LogFormatArg::Json => LogFormat::Json,
        },
        verbosity: if cli.quiet > 0 {
            -(cli.quiet.min(2) as i8)
        } else {
            cli.verbose.min(3) as i8
        },
        file: cli.log_file.clone(),
        color: cli.color.map(When::from).unwrap_or_default(),
        annotations: cli.ci_annotations.map(When::from).unwrap_or_default(),
    })
}
