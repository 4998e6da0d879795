//! The command-line surface: clap derive structs and nothing else.
//!
//! Values that need validation (durations, code lists, counts) arrive here as
//! strings so that `policy` can reject them with one line that names the flag
//! and the accepted form. Only `policy` reads these types.

use std::ffi::OsString;
use std::path::PathBuf;

use clap::{ArgAction, Parser, ValueEnum};

mod http;
mod monitor;
mod sim;
mod state;
pub use http::HttpArgs;
pub use monitor::MonitorArgs;
pub use sim::{FormatArg, ModelArg, SimArgs};
pub use state::StateArgs;

/// What `-h` prints after the options: where the rest is, then five
/// examples, last, where a reader of a short help looks first.
const AFTER_HELP: &str = "\
'retry --help' explains every option and adds exit statuses and environment; 'man retry' has it all.

Examples:
  retry --max-time 2m -- curl -fsS http://localhost:8080/health   # wait for a service
  retry --max 3 --timeout 10m -- make integration-test            # a flaky CI step
  retry --hold-output -q --max-time 5m -- /usr/local/bin/sync     # cron: silent unless it fails
  retry --max-time 1m --tcp db:5432 && ./migrate.sh               # wait for a port, then go on
  retry --dry-run --max-time 1m --seed 7                          # the waits, without running";

/// What `--help` prints after the options: the exit statuses (drawn from
/// `exit::TABLE`, like the man page's) and the environment. Its examples
/// come before the options ([`EXAMPLES`]).
fn after_long_help() -> String {
    format!("{}\n{ENVIRONMENT}", crate::exit::help_section())
}

/// The help's layout: clap's own, with `--help`'s examples between the
/// usage and the options, where they are seen without scrolling.
const HELP_TEMPLATE: &str = "\
{about-with-newline}
{usage-heading} {usage}

{before-help}{all-args}{after-help}";

const EXAMPLES: &str = "\
Examples:
  Wait up to two minutes for a service in a shell script:
    retry --max-time 2m --cap 5s -- curl -fsS http://localhost:8080/health
  A flaky CI step, each attempt limited to 10 minutes:
    retry --max 3 --timeout 10m -- make integration-test
  A cron job that prints nothing unless it fails, and never retries a bad config (exit 78):
    retry --hold-output -q --max-time 5m --stop-on 78 -- /usr/local/bin/sync-mirror
  Wait up to a minute for a database port, then migrate:
    retry --max-time 1m --tcp db:5432 && ./migrate.sh
  Preview the delays a policy produces, without running anything:
    retry --dry-run --max 6 --base 500ms --jitter decorrelated --seed 7";

const ENVIRONMENT: &str = "\
Environment:
  Options marked [env: NAME] may be set by environment variables; a flag on the
  command line wins over the environment, and an empty variable counts as unset.
  COMMAND receives RETRY_ATTEMPT, RETRY_MAX_ATTEMPTS, RETRY_PREVIOUS_EXIT and
  RETRY_DEPTH; the hooks receive RETRY_ATTEMPT, RETRY_EXIT_CODE and
  RETRY_NEXT_DELAY_MS. --hold-output and --last-stdout hold output in $TMPDIR
  (default /tmp).
  NO_COLOR turns colour off; GITHUB_ACTIONS=true turns on annotations and
  the report's step outputs in GITHUB_OUTPUT.
  HTTP mode trusts the system's CA certificates, or those in SSL_CERT_FILE and
  SSL_CERT_DIR when set; proxies come from HTTP_PROXY, HTTPS_PROXY and NO_PROXY.";

/// Run a command and retry it on failure, with capped exponential backoff and jitter.
///
/// COMMAND runs directly (no shell). Exit 0 is success; any other exit is
/// retried after a randomised, growing delay, except 126 and 127 (COMMAND
/// cannot run) and codes named by --stop-on. The log goes to stderr; stdout
/// belongs to COMMAND.
#[derive(Debug, Parser)]
#[command(
    name = "retry",
    version,
    about,
    long_about,
    help_template = HELP_TEMPLATE,
    after_help = AFTER_HELP,
    before_long_help = EXAMPLES,
    after_long_help = after_long_help(),
    // Wide enough for the option table, narrow enough to read; help on a
    // smaller terminal still wraps to fit.
    max_term_width = 100,
    override_usage = "retry [OPTIONS] -- COMMAND [ARG]...\n       retry [OPTIONS] --http URL\n       retry [OPTIONS] --tcp HOST:PORT [--tcp HOST:PORT]...\n       retry [OPTIONS] --file PATH [--file PATH]...\n       retry [OPTIONS] --grpc HOST:PORT\n       retry [OPTIONS] --dry-run\n       retry [OPTIONS] --simulate N (--outage DUR | --capacity RATE/s | --model occ)"
)]
pub struct Cli {
    /// Attempts in total, the first included, N >= 1 [default: 5; none with --max-time alone]
    #[arg(
        short = 'n',
        long = "max",
        value_name = "N",
        env = "RETRY_MAX",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub max: Option<String>,

    /// No attempt limit (still bounded by --max-time)
    // No `conflicts_with = "max"`: clap would count RETRY_MAX from the
    // environment as a conflict, but a flag must win over the environment.
    // `main_entry` rejects --max and --forever given together on the command line.
    #[arg(long, help_heading = "Policy")]
    pub forever: bool,

    /// How the delay ceiling grows: exponential, linear or fixed [default: exponential]
    #[arg(
        long,
        value_name = "KIND",
        env = "RETRY_BACKOFF",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub backoff: Option<BackoffArg>,

    /// First delay ceiling; above 30s it also raises the default cap [default: 1s]
    #[arg(
        short = 'b',
        long,
        value_name = "DUR",
        env = "RETRY_BASE",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub base: Option<String>,

    /// Largest single delay, at least --base [default: 30s, or --base if longer]
    #[arg(
        short = 'c',
        long,
        value_name = "DUR",
        env = "RETRY_CAP",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub cap: Option<String>,

    /// Growth factor of --backoff exponential, X >= 1 [default: 2]
    #[arg(
        short = 'm',
        long,
        value_name = "X",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub multiplier: Option<String>,

    /// Randomisation of each delay [default: full]
    ///
    /// Decorrelated jitter caps the range it draws from, not the draw:
    /// U(base, min(cap, 3 x previous)). Capping the draw instead would put every
    /// client whose draw passed the cap exactly on the cap, retrying in step.
    /// Additive jitter keeps its window below the cap for the same reason:
    /// min(v, cap - J) + U(0, J), with J = --jitter-max.
    #[arg(
        short = 'j',
        long,
        value_name = "KIND",
        env = "RETRY_JITTER",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub jitter: Option<JitterArg>,

    /// Largest random addition for --jitter additive, at most --cap [default: 1s]
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub jitter_max: Option<String>,

    /// Overall deadline from start: no sleep or attempt runs past it; without --max, no attempt limit
    /// (0 or inf: none)
    ///
    /// A wait that would pass the deadline is drawn again, with the same jitter, inside the time
    /// left, to end min(v, D)/60 before it (v: the top of the range the wait was drawn from, 30s
    /// once the default cap is reached; D: the deadline), so a last attempt starts shortly before
    /// the deadline, however short. With less than min(v/6, D/12) left (5s under a 30s cap and a
    /// deadline of 1m or more), such a wait ends the run instead.
    #[arg(
        long,
        value_name = "DUR",
        env = "RETRY_MAX_TIME",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub max_time: Option<String>,

    /// Per-attempt time limit; the attempt's process group is then stopped (0 or inf: none)
    #[arg(
        short = 't',
        long,
        value_name = "DUR",
        env = "RETRY_TIMEOUT",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub timeout: Option<String>,

    /// Stop an attempt after DUR without progress: no byte received (HTTP mode), or nothing
    /// written to stdout or stderr by COMMAND (0 or inf: none) [default: 30s in HTTP mode, none
    /// for a COMMAND]
    ///
    /// The attempt is stopped as --timeout stops one. A command that keeps talking (a long
    /// build) is never stopped by it; its output then passes through retry, unchanged and as it
    /// comes, as with the output patterns.
    #[arg(
        long,
        value_name = "DUR",
        env = "RETRY_IDLE_TIMEOUT",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub idle_timeout: Option<String>,

    /// An attempt that ran at least DUR before failing resets the backoff
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub reset_after: Option<String>,

    /// Start COMMAND again after a success too, as a service supervisor does; a quick exit
    /// still backs off, one up for --reset-after starts from the first step (not with
    /// --simulate, whose clients stop at their first success)
    #[arg(long, help_heading = "Policy")]
    pub restart_on_success: bool,

    /// Wait a random time from 0 to DUR before the first attempt, so that a fleet started
    /// at the same moment (one cron minute) does not start in step
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub stagger: Option<String>,

    /// Seed for the jitter RNG, 0 to 2^53-1: the same schedule on every platform and version
    /// [default: from the OS]
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Policy"
    )]
    pub seed: Option<String>,

    /// Only these exit codes are retryable (e.g. 1,75,100-110)
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        help_heading = "Classification"
    )]
    pub retry_on: Option<String>,

    /// These exit codes are permanent failures: stop at once
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        help_heading = "Classification"
    )]
    pub stop_on: Option<String>,

    /// These exit codes count as success
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        help_heading = "Classification"
    )]
    pub success_on: Option<String>,

    /// Retry a failure whose stdout or stderr has a line matching REGEX, whatever its exit code
    /// (repeatable)
    ///
    /// Output then passes through retry, unchanged and as it comes, to retry's own stdout and
    /// stderr (a pseudo-terminal when that is a terminal). Each line is matched, up to 64 KiB at a
    /// time; the verdict is taken when the attempt ends. A success stays a success.
    #[arg(
        long,
        value_name = "REGEX",
        allow_hyphen_values = true,
        help_heading = "Classification"
    )]
    pub retry_if_output: Vec<String>,

    /// Never retry a failure whose stdout or stderr has a line matching REGEX (repeatable;
    /// wins over --retry-if-output)
    #[arg(
        long,
        value_name = "REGEX",
        allow_hyphen_values = true,
        help_heading = "Classification"
    )]
    pub stop_if_output: Vec<String>,

    /// A timed-out attempt is a permanent failure (with a COMMAND: needs --timeout)
    #[arg(long, help_heading = "Classification")]
    pub no_retry_on_timeout: bool,

    /// Signal sent to the attempt's process group on timeout: a name or number as 'kill -l'
    /// lists, such as INT, SIGUSR1 or RTMIN+2 [default: TERM]
    #[arg(
        long,
        value_name = "SIG",
        allow_hyphen_values = true,
        help_heading = "Process"
    )]
    pub stop_signal: Option<String>,

    /// Grace period after the stop signal before KILL [default: 5s]
    #[arg(
        short = 'k',
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "Process"
    )]
    pub kill_after: Option<String>,

    /// Run COMMAND in retry's own process group (for programs that read the terminal)
    #[arg(long, help_heading = "Process")]
    pub foreground: bool,

    /// Read stdin once and give every attempt the same bytes
    #[arg(long, help_heading = "Process")]
    pub replay_stdin: bool,

    /// The most stdin --replay-stdin takes, such as 64M or 2G (inf: no limit) [default: 1G]
    #[arg(
        long,
        value_name = "SIZE",
        env = "RETRY_REPLAY_STDIN_MAX",
        allow_hyphen_values = true,
        help_heading = "Process"
    )]
    pub replay_stdin_max: Option<String>,

    /// Cron mode: hold each attempt's stdout and stderr in a temporary file, and write them out
    /// only if the run fails or is interrupted
    ///
    /// An attempt that is retried or succeeds leaves nothing on stdout or stderr; when the run
    /// gives up or a signal ends it, the last attempt's output comes out, each stream on its own,
    /// in the order it was written. The file is unnamed (or unlinked at once) in $TMPDIR or /tmp,
    /// so memory stays flat however much is printed; past --hold-max its first and last halves
    /// are kept, and what was dropped is said before the output, even with -q. COMMAND writes to
    /// pipes, not a terminal.
    #[arg(long, help_heading = "Process")]
    pub hold_output: bool,

    /// For pipelines and files: stdout carries only the last attempt's stdout (the success, or
    /// the attempt retry gave up on), never a retried attempt's
    ///
    /// Each attempt's stdout is held in a temporary file, as --hold-output holds output, and
    /// dropped when the attempt is retried; a success's comes out as soon as it ends, and on
    /// giving up the last attempt's comes out at the end. stderr and the log still stream.
    /// Nothing is ever dropped: past --hold-max (or on a full disk) the attempt's stdout is
    /// written out and passes through from then on, and retry says so.
    #[arg(long, help_heading = "Process")]
    pub last_stdout: bool,

    /// The most a held attempt's file may take (--hold-output, --last-stdout), such as 16M or
    /// 1G [default: 64M]
    #[arg(
        long,
        value_name = "SIZE",
        env = "RETRY_HOLD_MAX",
        allow_hyphen_values = true,
        help_heading = "Process"
    )]
    pub hold_max: Option<String>,

    /// After a failed attempt, before the wait, run CMD with /bin/sh -c (never after the last
    /// attempt)
    ///
    /// CMD gets RETRY_ATTEMPT (the attempt that failed), RETRY_EXIT_CODE (empty when it has
    /// none) and RETRY_NEXT_DELAY_MS. Its output goes to stderr; its failure is logged and
    /// changes nothing. It runs in its own process group, within --max-time, and a signal stops
    /// it as it stops an attempt.
    #[arg(
        long,
        value_name = "CMD",
        allow_hyphen_values = true,
        help_heading = "Hooks"
    )]
    pub on_retry: Option<String>,

    /// When the run gives up, run CMD with /bin/sh -c, once
    ///
    /// As --on-retry, with RETRY_ATTEMPT (attempts made), RETRY_EXIT_CODE (the status retry is
    /// about to exit with) and an empty RETRY_NEXT_DELAY_MS. Not run when a signal ended the run.
    #[arg(
        long,
        value_name = "CMD",
        allow_hyphen_values = true,
        help_heading = "Hooks"
    )]
    pub on_give_up: Option<String>,

    /// Inside another retry: multiply attempts (warn), or run COMMAND once
    #[arg(
        long,
        value_name = "MODE",
        env = "RETRY_NESTED",
        allow_hyphen_values = true,
        help_heading = "Process"
    )]
    pub nested: Option<NestedArg>,

    /// Fewer log lines: -q only the final give-up line (and what kept output from being held as
    /// asked), -qq nothing
    #[arg(short, long, action = ArgAction::Count, help_heading = "Logging")]
    pub quiet: u8,

    /// More log lines: attempt starts and the command line
    #[arg(short, long, action = ArgAction::Count, conflicts_with = "quiet", help_heading = "Logging")]
    pub verbose: u8,

    /// Log line format [default: text]
    #[arg(
        long,
        value_name = "FORMAT",
        env = "RETRY_LOG_FORMAT",
        allow_hyphen_values = true,
        help_heading = "Logging"
    )]
    pub log_format: Option<LogFormatArg>,

    /// Append the log to PATH instead of stderr
    #[arg(
        long,
        value_name = "PATH",
        env = "RETRY_LOG_FILE",
        allow_hyphen_values = true,
        help_heading = "Logging"
    )]
    pub log_file: Option<PathBuf>,

    #[command(flatten)]
    pub http: HttpArgs,

    #[command(flatten)]
    pub sim: SimArgs,

    #[command(flatten)]
    pub state: StateArgs,

    #[command(flatten)]
    pub monitor: MonitorArgs,

    /// Colour retry's own log prefix and outcome words [default: auto]
    ///
    /// auto colours only when stderr is a terminal, NO_COLOR is unset or empty
    /// and TERM is not "dumb". COMMAND's output is never touched.
    #[arg(
        long,
        value_name = "WHEN",
        allow_hyphen_values = true,
        help_heading = "Logging"
    )]
    pub color: Option<WhenArg>,

    /// GitHub Actions annotations for failed attempts and giving up [default: auto]
    ///
    /// Each failed attempt also writes a ::warning:: line and giving up an
    /// ::error:: line to stderr, where the runner turns them into annotations.
    /// auto does so when GITHUB_ACTIONS=true, unless the JSON log goes to
    /// stderr. Annotations follow -q and -qq like the log lines they mirror.
    #[arg(
        long,
        value_name = "WHEN",
        allow_hyphen_values = true,
        help_heading = "Logging"
    )]
    pub ci_annotations: Option<WhenArg>,

    /// Wait for a TCP port: connect to HOST:PORT (or a unix socket, unix:PATH) instead of
    /// running a command (repeatable: every target must accept once)
    #[arg(
        long = "tcp",
        value_name = "HOST:PORT",
        allow_hyphen_values = true,
        help_heading = "Modes"
    )]
    pub tcp: Vec<String>,

    /// Wait for a file: succeed once PATH exists instead of running a command (repeatable:
    /// every path must be there once; a path retry may not look at is permanent)
    #[arg(
        long = "file",
        value_name = "PATH",
        allow_hyphen_values = true,
        help_heading = "Modes"
    )]
    pub file: Vec<PathBuf>,

    /// With --file: the file must also be non-empty (a token written whole, say)
    #[arg(long, help_heading = "Modes")]
    pub non_empty: bool,

    /// With --file: the path must also be a directory
    #[arg(long, help_heading = "Modes")]
    pub directory: bool,

    /// Check a gRPC server's health (grpc.health.v1.Health/Check) at HOST:PORT instead of
    /// running a command: SERVING succeeds, NOT_SERVING is retried, no health service is
    /// permanent
    #[arg(
        long = "grpc",
        value_name = "HOST:PORT",
        allow_hyphen_values = true,
        help_heading = "Modes"
    )]
    pub grpc: Option<String>,

    /// With --grpc: the service to ask about [default: the server as a whole]
    #[arg(
        long,
        value_name = "NAME",
        allow_hyphen_values = true,
        help_heading = "gRPC"
    )]
    pub grpc_service: Option<String>,

    /// With --grpc: TLS, with HTTP mode's --cacert and --insecure
    #[arg(long, help_heading = "gRPC")]
    pub grpc_tls: bool,

    /// With --grpc: the server's name, for its :authority and its TLS certificate, where
    /// HOST is an address
    #[arg(
        long,
        value_name = "NAME",
        allow_hyphen_values = true,
        help_heading = "gRPC"
    )]
    pub grpc_authority: Option<String>,

    /// Print the delay schedule this policy produces and run nothing (what acts only on a
    /// run is refused with it: hooks, held output, --idle-timeout, the reports)
    #[arg(long, help_heading = "Modes")]
    pub dry_run: bool,

    /// The command to run, and its arguments
    #[arg(value_name = "COMMAND", trailing_var_arg = true)]
    pub command: Vec<OsString>,

    /// Settings whose value came from the environment, as (argument id,
    /// variable name), so that messages name the variable. Filled by the
    /// caller from clap's value sources.
    #[arg(skip)]
    pub from_env: Vec<(String, String)>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum BackoffArg {
    /// base * multiplier^(k-1), capped
    Exponential,
    /// base * k, capped
    Linear,
    /// base every time
    Fixed,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum JitterArg {
    /// exactly the ceiling
    None,
    /// uniform between 0 and the ceiling
    Full,
    /// half the ceiling plus uniform up to the other half
    Equal,
    /// uniform between base and min(cap, 3 * the previous delay); growth flags do not apply
    Decorrelated,
    /// the ceiling, kept --jitter-max below the cap, plus uniform up to --jitter-max
    Additive,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum NestedArg {
    /// run every attempt (and warn once that attempts multiply)
    Multiply,
    /// an inner retry runs COMMAND once
    Single,
}

/// `auto|always|never`, shared by `--color` and `--ci-annotations`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum WhenArg {
    /// decide from the surroundings
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormatArg {
    Text,
    Json,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}
