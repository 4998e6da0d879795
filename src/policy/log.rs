//! The logging flags: `--log-format`, `-q`/`-v`, `--log-file`, `--color`
//! and `--ci-annotations`. None of them can be wrong once clap accepted it.

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

pub(super) fn options(cli: &Cli) -> LogOptions {
    LogOptions {
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
    }
}
