//! From parsed flags to a validated configuration.
//!
//! Every usage error comes from here, before anything runs: one line naming the
//! flag, the rejected value and the accepted form. Nothing below this module
//! knows about clap.

use std::ffi::OsString;
use std::time::Duration;

use crate::attempt::file::FileOptions;
use crate::attempt::grpc::GrpcOptions;
use crate::attempt::hook::Hook;
use crate::attempt::http::HttpOptions;
use crate::attempt::process::ProcessOptions;
use crate::attempt::tcp::TcpOptions;
use crate::cli::{Cli, NestedArg};
use crate::finish::FinishOptions;
use crate::log::LogOptions;
use crate::retry_policy::Policy;

mod duration;
mod file;
mod grpc;
mod http;
mod log;
mod modes;
mod monitor;
mod process;
mod retries;
mod sim;
mod size;
mod state;
mod tcp;
mod trace;
mod values;
pub use http::{parse_header, parse_statuses};
pub use sim::SimOptions;
pub use state::StateOptions;
use values::Names;
pub use values::{UsageError, accepted_form, parse_duration};

/// What the invocation asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// Run COMMAND, retrying.
    Run { command: Vec<OsString> },
    /// Probe a URL over HTTP(S), retrying.
    Http { request: Box<HttpOptions> },
    /// Wait until every TCP target accepts a connection.
    Tcp { probe: TcpOptions },
    /// Wait until every path exists.
    File { probe: FileOptions },
    /// Wait until a gRPC server's health check says SERVING.
    Grpc { probe: Box<GrpcOptions> },
    /// Print the schedule; COMMAND (or the HTTP request), if given, is only shown.
    DryRun { command: Vec<OsString> },
    /// Simulate N clients against a model server and report.
    Simulate { sim: SimOptions },
    /// Print the group's shared state; run nothing.
    StateShow,
}

/// Where this invocation sits inside other `retry` processes, read from the
/// environment by the caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Nesting {
    /// RETRY_DEPTH as inherited: 0 when not run by another retry.
    pub outer_depth: u32,
    /// RETRY_MAX_ATTEMPTS as inherited, when known.
    pub outer_max: Option<u32>,
}

/// Everything an invocation needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub mode: Mode,
    pub policy: Policy,
    pub process: ProcessOptions,
    pub log: LogOptions,
    pub nesting: Nesting,
    /// Inside another retry, with the default `--nested multiply`: warn once.
    pub warn_nested: bool,
    /// Pace, budget and breaker shared by a group of invocations.
    pub state: StateOptions,
    /// What happens when the run ends, besides its exit status.
    pub finish: FinishOptions,
    /// `--on-retry`: run between a failed attempt and the wait.
    pub on_retry: Option<Hook>,
}

impl Config {
    /// Validate the flags concern by concern, in a fixed order: the first
    /// mistake found is the one reported.
    pub fn from_cli(mut cli: Cli, nesting: Nesting) -> Result<Config, UsageError> {
        let names = Names(&cli.from_env);
        let (mut policy, jitter_max) = retries::policy(&cli, &names)?;
        let stop_signal = process::stop_signal(&cli)?;
        let nested_single = cli.nested == Some(NestedArg::Single);
        let nested = nesting.outer_depth >= 1;
        if nested && nested_single {
            policy.max_attempts = Some(1);
        }
        let (state, fleet) = if cli.sim.simulate.is_some() {
            let rules = state::rules(&cli.state)?;
            let show = cli.state.state_show;
            (StateOptions { shared: None, show }, rules)
        } else {
            (
                state::from_args(&cli.state, &names)?,
                state::Rules::default(),
            )
        };
        let tcp = tcp::from_args(&cli)?;
        let grpc = grpc::from_args(&cli)?;
        // --connect-timeout is TCP and gRPC mode's too.
        let http = if tcp.is_some() || grpc.is_some() {
            None
        } else {
            http::from_args(&cli.http)?
        };
        let file = file::from_args(&cli)?;
        let output = process::output(&cli)?;
        let request = http.map(|(request, rules)| {
            policy.rules.http = rules;
            request
        });
        if cli.sim.simulate.is_some() {
            // The simulated clients spread after a server's wait as HTTP
            // mode's do.
            policy.rules.http.retry_after_spread = values::opt_duration(
                "--retry-after-spread",
                cli.http.retry_after_spread.as_deref(),
            )?;
        }
        let sim = sim::from_args(&cli.sim)?.map(|s| SimOptions {
            additive_max: jitter_max.unwrap_or(Duration::from_secs(1)),
            pace: fleet.pace,
            budget: fleet.budget,
            ..s
        });
        let process = process::options(
            &cli,
            &names,
            stop_signal,
            output,
            policy.idle_timeout,
            &policy.rules.success_on,
        )?;
        let (on_retry, on_give_up) = process::hooks(&cli, &process)?;
        // Each value is valid alone: which mode takes which flag.
        let chosen = modes::check(&cli, &names)?;
        let finish = FinishOptions {
            hold: process.hold.clone(),
            on_give_up,
            trace: trace::options(
                &cli,
                !matches!(chosen.kind, modes::Kind::Simulate | modes::Kind::StateShow),
                &|name| std::env::var(name).ok(),
            )?,
            ..monitor::options(&cli, &names, chosen)?
        };
        let command = std::mem::take(&mut cli.command);
        let mode = mode(
            chosen,
            command,
            Probe {
                request,
                tcp,
                file,
                grpc,
            },
            sim,
        )?;
        Ok(Config {
            mode,
            policy,
            process,
            log: log::options(&cli, &names)?,
            nesting,
            warn_nested: nested && !nested_single,
            state,
            finish,
            on_retry,
        })
    }
}

/// The probe modes' validated options, when one was asked for.
struct Probe {
    request: Option<HttpOptions>,
    tcp: Option<TcpOptions>,
    file: Option<FileOptions>,
    grpc: Option<GrpcOptions>,
}

/// The mode `modes` chose, with its validated options.
fn mode(
    chosen: modes::Chosen,
    command: Vec<OsString>,
    probe: Probe,
    sim: Option<SimOptions>,
) -> Result<Mode, UsageError> {
    use modes::Kind;
    let Probe {
        request,
        tcp,
        file,
        grpc,
    } = probe;
    // Each value was validated by its concern when its flag was given.
    let missing = || UsageError(modes::missing_command());
    Ok(match chosen.kind {
        Kind::StateShow => Mode::StateShow,
        Kind::Simulate => Mode::Simulate {
            sim: sim.ok_or_else(missing)?,
        },
        _ if chosen.dry_run => Mode::DryRun {
            command: match (request, tcp, file, grpc) {
                (Some(request), ..) => request.display_words(),
                (None, Some(tcp), ..) => tcp.display_words(),
                (None, None, Some(file), _) => file.display_words(),
                (None, None, None, Some(grpc)) => grpc.display_words(),
                (None, None, None, None) => command,
            },
        },
        Kind::Http => Mode::Http {
            request: Box::new(request.ok_or_else(missing)?),
        },
        Kind::Tcp => Mode::Tcp {
            probe: tcp.ok_or_else(missing)?,
        },
        Kind::Grpc => Mode::Grpc {
            probe: Box::new(grpc.ok_or_else(missing)?),
        },
        Kind::File => Mode::File {
            probe: file.ok_or_else(missing)?,
        },
        Kind::Command if command.is_empty() => return Err(missing()),
        Kind::Command => Mode::Run { command },
    })
}

#[cfg(test)]
mod tests;
