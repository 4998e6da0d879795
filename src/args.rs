//! The invocation as retry reads it: the arguments and environment parsed
//! by clap into `cli::Cli`, validated by `policy` into a `Config`; clap's
//! own errors reshaped into one line naming the flag (or the environment
//! variable) and the accepted form; and where this invocation sits among
//! nested `retry` processes.

use clap::{CommandFactory, FromArgMatches};

use crate::cli;
use crate::exit;
use crate::human;
use crate::log::Logger;
use crate::policy::{self, Config, Nesting};

/// The validated configuration of this invocation, or the exit status of a
/// usage error (already reported: one line on stderr) or of `--help` and
/// `--version` (already printed).
pub fn config() -> Result<Config, u8> {
    let cli = parse_args().map_err(|e| clap_error(&e))?;
    Config::from_cli(cli, nesting_from_env()).map_err(|e| {
        // One line, whatever a value echoed in it holds.
        Logger::stderr().error(&human::escape_controls(&e.0));
        exit::USAGE
    })
}

/// The clap command, with an empty configuration variable (say `RETRY_MAX=`)
/// counting as unset, as shell scripts that pass through optional settings
/// expect, rather than as an invalid value.
fn command_without_empty_env() -> clap::Command {
    cli::Cli::command().mut_args(|arg| {
        let empty = arg
            .get_env()
            .and_then(std::env::var_os)
            .is_some_and(|v| v.is_empty());
        if empty { arg.env(None) } else { arg }
    })
}

/// Parse the command line and the environment. The result records which
/// settings came from environment variables, so messages can name them.
fn parse_args() -> Result<cli::Cli, clap::Error> {
    use clap::parser::ValueSource;
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let mut command = command_without_empty_env();
    let matches = match command.try_get_matches_from_mut(&args) {
        Ok(m) => m,
        Err(e) => return Err(blame_env(e, &args)),
    };
    let mut cli = cli::Cli::from_arg_matches(&matches)?;
    // `-d` and `--data-binary` pieces are joined in command-line order.
    let mut pieces: Vec<(usize, bool)> = ["data", "data_binary"]
        .into_iter()
        .enumerate()
        .flat_map(|(i, id)| {
            matches
                .indices_of(id)
                .into_iter()
                .flatten()
                .map(move |at| (at, i == 1))
        })
        .collect();
    pieces.sort_unstable();
    cli.http.data_order = pieces.into_iter().map(|(_, binary)| binary).collect();
    cli.from_env = command
        .get_arguments()
        .filter_map(|arg| {
            let var = arg.get_env()?;
            let id = arg.get_id().as_str();
            (matches.value_source(id) == Some(ValueSource::EnvVariable))
                .then(|| (id.to_string(), var.to_string_lossy().into_owned()))
        })
        .collect();
    Ok(cli)
}

/// The argument a clap error is about, from its `--long <VALUE>` rendering.
fn error_arg(command: &clap::Command, e: &clap::Error) -> Option<clap::Arg> {
    use clap::error::{ContextKind, ContextValue};
    let Some(ContextValue::String(shown)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let flag = shown.split([' ', '=']).next()?;
    command
        .get_arguments()
        .find(|a| {
            a.get_long().is_some_and(|l| flag == format!("--{l}"))
                || a.get_short().is_some_and(|c| flag == format!("-{c}"))
        })
        .cloned()
}

/// An invalid value that clap rejected (say `RETRY_JITTER=bogus`) may come
/// from the environment: then the message names the variable, since the
/// command line shows nothing wrong. Found by parsing again without it.
fn blame_env(e: clap::Error, args: &[std::ffi::OsString]) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if !matches!(
        e.kind(),
        ErrorKind::InvalidValue | ErrorKind::ValueValidation
    ) {
        return e;
    }
    let mut command = command_without_empty_env();
    let Some(arg) = error_arg(&command, &e) else {
        return e;
    };
    let Some(var) = arg.get_env().map(|v| v.to_string_lossy().into_owned()) else {
        return e;
    };
    let id = arg.get_id().clone();
    let without = command_without_empty_env().mut_arg(&id, |a| a.env(None));
    let still_bad = match without.try_get_matches_from(args) {
        Ok(_) => false,
        Err(again) => error_arg(&command, &again).is_some_and(|a| *a.get_id() == id),
    };
    if still_bad {
        return e;
    }
    let value = std::env::var_os(&var)
        .map(|v| v.to_string_lossy().into_owned())
        .unwrap_or_default();
    let accepted = match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            format!("accepted: {}", values.join(", "))
        }
        _ => "see --help".to_string(),
    };
    command.error(
        ErrorKind::InvalidValue,
        format!(
            "invalid value '{value}' for {var} (--{}); {accepted}",
            arg.get_long().unwrap_or(id.as_str())
        ),
    )
}

/// Help and version go to stdout with status 0; anything else is one line
/// on stderr with status 2.
fn clap_error(e: &clap::Error) -> u8 {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
            let _ = e.print();
            exit::SUCCESS
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            exit::USAGE
        }
        _ => {
            let rendered = e.render().to_string();
            let first = rendered.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            let hint = if first.contains("possible values")
                || first.contains("[possible")
                || first.contains("accepted:")
            {
                String::new()
            } else {
                accepted_hint(e)
            };
            Logger::stderr().error(&format!("{first}{hint} (see 'retry --help')"));
            exit::USAGE
        }
    }
}

/// clap lists the accepted values on a later line; keep them on the one
/// line. A missing value gets the accepted form of its flag; an unknown
/// flag, retry's name for it (another tool's name, or a near typo).
fn accepted_hint(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue};
    if e.kind() == clap::error::ErrorKind::UnknownArgument {
        let flag = match e.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(flag)) => flag.as_str(),
            _ => "",
        };
        if let Some(ours) = crate::hint::other_tools_flag(flag) {
            return format!("; did you mean {ours}?");
        }
        return match e.get(ContextKind::SuggestedArg) {
            Some(ContextValue::String(ours)) if crate::hint::near_enough(flag, ours) => {
                format!("; did you mean {ours}?")
            }
            _ => String::new(),
        };
    }
    match e.get(ContextKind::ValidValue) {
        Some(ContextValue::Strings(values)) if !values.is_empty() => {
            format!("; accepted: {}", values.join(", "))
        }
        _ if e.kind() != clap::error::ErrorKind::InvalidValue => String::new(),
        _ => error_arg(&cli::Cli::command(), e)
            .and_then(|arg| policy::accepted_form(arg.get_id().as_str()))
            .map(|form| format!("; expected {form}"))
            .unwrap_or_default(),
    }
}

fn nesting_from_env() -> Nesting {
    let read = |name| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.trim().parse::<u32>().ok())
    };
    Nesting {
        outer_depth: read("RETRY_DEPTH").unwrap_or(0),
        outer_max: read("RETRY_MAX_ATTEMPTS"),
    }
}
