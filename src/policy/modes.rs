//! Which flags each mode takes: one table, [`FLAGS`], from which every
//! refusal of a flag in a mode that does not take it is derived.
//!
//! The modes are chosen by a few flags (COMMAND, `--http`, `--tcp`,
//! `--simulate`, `--state-show`, and `--dry-run`, which previews command,
//! HTTP or TCP mode). Every other flag has a row: the modes that take it,
//! and where it belongs, which words its refusal ("applies only to HTTP
//! mode", "--simulate runs nothing real", "reports on a run"). A value
//! that came from the environment never causes a refusal: a variable set
//! for a whole session must not stand in the way of a preview or another
//! mode; the flag given does. A mode is a row of [`MODES`] (its choosing
//! flag, bit, precedence, usage, default metrics job, whether it runs
//! something), from which the choice, the conflicts and the job name are
//! derived, and a bit in the flags' rows; a new flag is a row (a test fails
//! on a flag without one).

use super::values::{Names, UsageError};
use crate::cli::Cli;

/// A mode, as the table knows it: its row in [`MODES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Command,
    Http,
    Tcp,
    File,
    Grpc,
    Simulate,
    StateShow,
}

/// One mode's row: all the table knows of it besides the flags it takes.
struct ModeRow {
    kind: Kind,
    /// clap's id of what chooses it (its row in [`FLAGS`]).
    id: &'static str,
    /// How messages name it.
    flag: &'static str,
    /// Its bit in a [`Takes`] set.
    bit: Takes,
    /// Which of two modes given together is named first: the lower. The
    /// modes that run nothing come first, as they refuse any other.
    precedence: u8,
    /// Its usage, in the message for an invocation that chooses no mode.
    usage: &'static str,
    /// The metrics job when neither `--metrics-job` nor `--group` names
    /// one; `None`: COMMAND's name.
    job: Option<&'static str>,
    /// What it does with every other mode's flags: run something (and be
    /// refused the flags of other runs in its own words), or not.
    runs: Runs,
}

/// Whether a mode runs something, and if not, how it says so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Runs {
    /// It runs attempts: a flag of another run "applies only to ...".
    Yes,
    /// It only prints: any other mode with it is refused in these words.
    Prints(&'static str),
    /// It runs only in virtual time: "runs nothing real".
    Simulated,
}

/// Every mode, in the order its messages list them.
const MODES: &[ModeRow] = &[
    ModeRow {
        kind: Kind::Command,
        id: "command",
        flag: "COMMAND",
        bit: COMMAND,
        precedence: 6,
        usage: "'retry [OPTIONS] -- COMMAND [ARG]...'",
        job: None,
        runs: Runs::Yes,
    },
    ModeRow {
        kind: Kind::Http,
        id: "url",
        flag: "--http",
        bit: HTTP,
        precedence: 5,
        usage: "'retry [OPTIONS] --http URL'",
        job: Some("http"),
        runs: Runs::Yes,
    },
    ModeRow {
        kind: Kind::Tcp,
        id: "tcp",
        flag: "--tcp",
        bit: TCP,
        precedence: 2,
        usage: "'retry [OPTIONS] --tcp HOST:PORT'",
        job: Some("tcp"),
        runs: Runs::Yes,
    },
    ModeRow {
        kind: Kind::File,
        id: "file",
        flag: "--file",
        bit: FILE,
        precedence: 3,
        usage: "'retry [OPTIONS] --file PATH'",
        job: Some("file"),
        runs: Runs::Yes,
    },
    ModeRow {
        kind: Kind::Grpc,
        id: "grpc",
        flag: "--grpc",
        bit: GRPC,
        precedence: 4,
        usage: "'retry [OPTIONS] --grpc HOST:PORT'",
        job: Some("grpc"),
        runs: Runs::Yes,
    },
    ModeRow {
        kind: Kind::Simulate,
        id: "simulate",
        flag: "--simulate",
        bit: SIMULATE,
        precedence: 0,
        usage: "'retry [OPTIONS] --simulate N'",
        job: None,
        runs: Runs::Simulated,
    },
    ModeRow {
        kind: Kind::StateShow,
        id: "state_show",
        flag: "--state-show",
        bit: STATE_SHOW,
        precedence: 1,
        usage: "'retry --group NAME --state-show'",
        job: None,
        runs: Runs::Prints("only prints the group's state"),
    },
];

impl Kind {
    fn row(self) -> &'static ModeRow {
        MODES
            .iter()
            .find(|m| m.kind == self)
            .expect("every mode has a row")
    }

    fn bit(self) -> u8 {
        self.row().bit
    }

    /// The mode's flag, as refusals name it.
    fn flag(self) -> &'static str {
        self.row().flag
    }

    /// Whether it runs attempts (and so reports on them).
    pub(super) fn runs(self) -> bool {
        self.row().runs == Runs::Yes
    }

    /// The metrics job when no flag names one; `None`: COMMAND's name.
    pub(super) fn default_job(self) -> Option<&'static str> {
        self.row().job
    }
}

/// The modes that take a flag, as bits.
type Takes = u8;
const COMMAND: Takes = 1;
const HTTP: Takes = 2;
const TCP: Takes = 4;
const SIMULATE: Takes = 8;
const STATE_SHOW: Takes = 16;
/// A dry run takes the flag (of the mode it previews).
const DRY_RUN: Takes = 32;
const FILE: Takes = 64;
const GRPC: Takes = 128;
/// The modes that run something.
const REAL: Takes = COMMAND | HTTP | TCP | FILE | GRPC;
const ALL: Takes = REAL | SIMULATE | STATE_SHOW | DRY_RUN;
/// What shapes or describes a run, previewed by a dry run and accepted
/// (and ignored) by `--state-show`.
const ANY_RUN: Takes = REAL | DRY_RUN | STATE_SHOW;

/// Where a flag belongs: what its refusal says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Home {
    /// Chooses the mode (checked first, on its own).
    Mode,
    /// The retry policy, the log, shared state's rules: every mode takes them.
    Policy,
    /// The request HTTP mode makes.
    Http,
    /// The connection the network probes make (`--connect-timeout`).
    Connect,
    /// What a path must be in file mode.
    File,
    /// How gRPC mode asks.
    Grpc,
    /// The exit codes of a COMMAND.
    ExitCodes,
    /// How a COMMAND's processes run.
    Process,
    /// A command run between attempts or at the end (`--on-retry`, `--on-give-up`).
    Hook,
    /// A report on the run (metrics, heartbeat pings).
    Report,
    /// The simulated server.
    Simulation,
    /// Where shared state lives.
    Store,
    /// `--breaker`: a simulation's clients all start before any run can fail.
    Breaker,
}

/// One flag's row.
struct Flag {
    /// clap's id of the argument.
    id: &'static str,
    /// How messages name it.
    name: &'static str,
    home: Home,
    takes: Takes,
    /// Whether it was given (a value from the environment counts too: the
    /// caller excuses those).
    given: fn(&Cli) -> bool,
}

macro_rules! row {
    ($id:literal, $name:literal, $home:ident, $takes:expr, |$c:ident| $given:expr) => {
        Flag {
            id: $id,
            name: $name,
            home: Home::$home,
            takes: $takes,
            given: |$c: &Cli| $given,
        }
    };
}

/// Every flag, and the modes that take it.
const FLAGS: &[Flag] = &[
    // The modes themselves.
    row!("command", "COMMAND", Mode, COMMAND | DRY_RUN, |c| !c
        .command
        .is_empty()),
    row!("url", "--http", Mode, HTTP | DRY_RUN, |c| c
        .http
        .url
        .is_some()),
    row!("tcp", "--tcp", Mode, TCP | DRY_RUN, |c| !c.tcp.is_empty()),
    row!("file", "--file", Mode, FILE | DRY_RUN, |c| !c
        .file
        .is_empty()),
    row!("grpc", "--grpc", Mode, GRPC | DRY_RUN, |c| c.grpc.is_some()),
    row!("simulate", "--simulate", Mode, SIMULATE, |c| c
        .sim
        .simulate
        .is_some()),
    row!("state_show", "--state-show", Mode, STATE_SHOW, |c| c
        .state
        .state_show),
    row!("dry_run", "--dry-run", Mode, DRY_RUN, |c| c.dry_run),
    // The retry policy and the log: every mode.
    row!("max", "--max", Policy, ALL, |c| c.max.is_some()),
    row!("forever", "--forever", Policy, ALL, |c| c.forever),
    row!("backoff", "--backoff", Policy, ALL, |c| c.backoff.is_some()),
    row!("base", "--base", Policy, ALL, |c| c.base.is_some()),
    row!("cap", "--cap", Policy, ALL, |c| c.cap.is_some()),
    row!("multiplier", "--multiplier", Policy, ALL, |c| c
        .multiplier
        .is_some()),
    row!("jitter", "--jitter", Policy, ALL, |c| c.jitter.is_some()),
    row!("jitter_max", "--jitter-max", Policy, ALL, |c| c
        .jitter_max
        .is_some()),
    row!("max_time", "--max-time", Policy, ALL, |c| c
        .max_time
        .is_some()),
    row!("reset_after", "--reset-after", Policy, ALL, |c| c
        .reset_after
        .is_some()),
    row!("stagger", "--stagger", Policy, ALL, |c| c.stagger.is_some()),
    row!("seed", "--seed", Policy, ALL, |c| c.seed.is_some()),
    row!(
        "no_retry_on_timeout",
        "--no-retry-on-timeout",
        Policy,
        ALL,
        |c| c.no_retry_on_timeout
    ),
    row!("nested", "--nested", Policy, ALL, |c| c.nested.is_some()),
    row!("quiet", "--quiet", Policy, ALL, |c| c.quiet > 0),
    row!("verbose", "--verbose", Policy, ALL, |c| c.verbose > 0),
    row!("log_format", "--log-format", Policy, ALL, |c| c
        .log_format
        .is_some()),
    row!("log_file", "--log-file", Policy, ALL, |c| c
        .log_file
        .is_some()),
    row!("color", "--color", Policy, ALL, |c| c.color.is_some()),
    row!("ci_annotations", "--ci-annotations", Policy, ALL, |c| c
        .ci_annotations
        .is_some()),
    // The attempts' limits.
    row!("timeout", "--timeout", Process, ANY_RUN, |c| c
        .timeout
        .is_some()),
    row!(
        "idle_timeout",
        "--idle-timeout",
        Process,
        COMMAND | HTTP,
        |c| c.idle_timeout.is_some()
    ),
    row!(
        "restart_on_success",
        "--restart-on-success",
        Process,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.restart_on_success
    ),
    // A COMMAND's exit codes and processes.
    row!(
        "retry_on",
        "--retry-on",
        ExitCodes,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.retry_on.is_some()
    ),
    row!(
        "stop_on",
        "--stop-on",
        ExitCodes,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.stop_on.is_some()
    ),
    row!(
        "success_on",
        "--success-on",
        ExitCodes,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.success_on.is_some()
    ),
    row!(
        "retry_if_output",
        "--retry-if-output",
        Process,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| !c.retry_if_output.is_empty()
    ),
    row!(
        "stop_if_output",
        "--stop-if-output",
        Process,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| !c.stop_if_output.is_empty()
    ),
    row!(
        "stop_signal",
        "--stop-signal",
        Process,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.stop_signal.is_some()
    ),
    row!(
        "kill_after",
        "--kill-after",
        Process,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.kill_after.is_some()
    ),
    row!(
        "foreground",
        "--foreground",
        Process,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.foreground
    ),
    row!(
        "replay_stdin",
        "--replay-stdin",
        Process,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.replay_stdin
    ),
    row!(
        "replay_stdin_max",
        "--replay-stdin-max",
        Process,
        COMMAND | DRY_RUN | STATE_SHOW,
        |c| c.replay_stdin_max.is_some()
    ),
    row!("hold_output", "--hold-output", Process, COMMAND, |c| c
        .hold_output),
    row!("last_stdout", "--last-stdout", Process, COMMAND, |c| c
        .last_stdout),
    row!("hold_max", "--hold-max", Process, COMMAND, |c| c
        .hold_max
        .is_some()),
    // Commands run by every mode that runs something.
    row!("on_retry", "--on-retry", Hook, REAL, |c| c
        .on_retry
        .is_some()),
    row!("on_give_up", "--on-give-up", Hook, REAL, |c| c
        .on_give_up
        .is_some()),
    // HTTP mode's request; TCP mode shares the connection timeout.
    row!("method", "--method", Http, HTTP | DRY_RUN, |c| c
        .http
        .method
        .is_some()),
    row!("headers", "--header", Http, HTTP | DRY_RUN, |c| !c
        .http
        .headers
        .is_empty()),
    row!("data", "--data", Http, HTTP | DRY_RUN, |c| !c
        .http
        .data
        .is_empty()),
    row!("data_binary", "--data-binary", Http, HTTP | DRY_RUN, |c| !c
        .http
        .data_binary
        .is_empty()),
    row!("max_redirs", "--max-redirs", Http, HTTP | DRY_RUN, |c| c
        .http
        .max_redirs
        .is_some()),
    row!("json", "--json", Http, HTTP | DRY_RUN, |c| c
        .http
        .json
        .is_some()),
    row!(
        "retry_after_max",
        "--retry-after-max",
        Http,
        HTTP | DRY_RUN,
        |c| c.http.retry_after_max.is_some()
    ),
    row!(
        "retry_after_spread",
        "--retry-after-spread",
        Http,
        HTTP | DRY_RUN | SIMULATE,
        |c| c.http.retry_after_spread.is_some()
    ),
    row!("cacert", "--cacert", Http, HTTP | GRPC | DRY_RUN, |c| c
        .http
        .cacert
        .is_some()),
    row!("unix_socket", "--unix-socket", Http, HTTP | DRY_RUN, |c| c
        .http
        .unix_socket
        .is_some()),
    row!("insecure", "--insecure", Http, HTTP | GRPC | DRY_RUN, |c| c
        .http
        .insecure),
    row!("output", "--output", Http, HTTP | DRY_RUN, |c| c
        .http
        .output
        .is_some()),
    row!("expect", "--expect", Http, HTTP | DRY_RUN, |c| c
        .http
        .expect
        .is_some()),
    row!(
        "retry_status",
        "--retry-status",
        Http,
        HTTP | DRY_RUN,
        |c| c.http.retry_status.is_some()
    ),
    row!(
        "idempotency_key",
        "--idempotency-key",
        Http,
        HTTP | DRY_RUN,
        |c| c.http.idempotency_key.is_some()
    ),
    row!(
        "retry_non_idempotent",
        "--retry-non-idempotent",
        Http,
        HTTP | DRY_RUN,
        |c| c.http.retry_non_idempotent
    ),
    row!(
        "connect_timeout",
        "--connect-timeout",
        Connect,
        HTTP | TCP | GRPC | DRY_RUN,
        |c| c.http.connect_timeout.is_some()
    ),
    // How gRPC mode asks.
    row!(
        "grpc_service",
        "--grpc-service",
        Grpc,
        GRPC | DRY_RUN,
        |c| c.grpc_service.is_some()
    ),
    row!("grpc_tls", "--grpc-tls", Grpc, GRPC | DRY_RUN, |c| c
        .grpc_tls),
    row!(
        "grpc_authority",
        "--grpc-authority",
        Grpc,
        GRPC | DRY_RUN,
        |c| c.grpc_authority.is_some()
    ),
    // What file mode waits for.
    row!("non_empty", "--non-empty", File, FILE | DRY_RUN, |c| c
        .non_empty),
    row!("directory", "--directory", File, FILE | DRY_RUN, |c| c
        .directory),
    // The simulated server and report.
    row!("outage", "--outage", Simulation, SIMULATE, |c| c
        .sim
        .outage
        .is_some()),
    row!("capacity", "--capacity", Simulation, SIMULATE, |c| c
        .sim
        .capacity
        .is_some()),
    row!(
        "capacity_burst",
        "--capacity-burst",
        Simulation,
        SIMULATE,
        |c| c.sim.capacity_burst.is_some()
    ),
    row!(
        "fixed_window",
        "--fixed-window",
        Simulation,
        SIMULATE,
        |c| c.sim.fixed_window.is_some()
    ),
    row!("model", "--model", Simulation, SIMULATE, |c| c
        .sim
        .model
        .is_some()),
    row!("compare", "--compare", Simulation, SIMULATE, |c| c
        .sim
        .compare),
    row!("format", "--format", Simulation, SIMULATE, |c| c
        .sim
        .format
        .is_some()),
    row!("plot", "--plot", Simulation, SIMULATE, |c| c
        .sim
        .plot
        .is_some()),
    // Shared state: the rules serve a simulated fleet too, the store does not.
    row!("group", "--group", Policy, ALL, |c| c.state.group.is_some()),
    row!("pace", "--pace", Policy, ALL, |c| c.state.pace.is_some()),
    row!("pace_burst", "--pace-burst", Policy, ALL, |c| c
        .state
        .pace_burst
        .is_some()),
    row!("budget", "--budget", Policy, ALL, |c| c
        .state
        .budget
        .is_some()),
    row!("breaker", "--breaker", Breaker, ANY_RUN, |c| c
        .state
        .breaker
        .is_some()),
    row!("state", "--state", Store, ANY_RUN, |c| c
        .state
        .state
        .is_some()),
    row!("state_required", "--state-required", Store, ANY_RUN, |c| c
        .state
        .state_required),
    row!(
        "state_password_file",
        "--state-password-file",
        Store,
        ANY_RUN,
        |c| c.state.state_password_file.is_some()
    ),
    row!("state_cacert", "--state-cacert", Store, ANY_RUN, |c| c
        .state
        .state_cacert
        .is_some()),
    // Reports on a run.
    row!("metrics_file", "--metrics-file", Report, REAL, |c| c
        .monitor
        .metrics_file
        .is_some()),
    row!("metrics_push", "--metrics-push", Report, REAL, |c| c
        .monitor
        .metrics_push
        .is_some()),
    row!(
        "metrics_push_password_file",
        "--metrics-push-password-file",
        Report,
        REAL,
        |c| c.monitor.metrics_push_password_file.is_some()
    ),
    row!("ping_file", "--ping-file", Report, REAL, |c| c
        .monitor
        .ping_file
        .is_some()),
    row!("metrics_job", "--metrics-job", Report, REAL, |c| c
        .monitor
        .metrics_job
        .is_some()),
    row!("metrics_label", "--metrics-label", Report, REAL, |c| !c
        .monitor
        .metrics_label
        .is_empty()),
    row!("ping", "--ping", Report, REAL, |c| c.monitor.ping.is_some()),
    row!("ping_log", "--ping-log", Report, REAL, |c| c
        .monitor
        .ping_log),
    row!("report", "--report", Report, REAL, |c| c
        .monitor
        .report
        .is_some()),
    row!("github_output", "--github-output", Report, REAL, |c| c
        .monitor
        .github_output
        .is_some()),
    // Tracing: a dry run shows the trace it would start.
    row!(
        "otlp_endpoint",
        "--otlp-endpoint",
        Report,
        REAL | DRY_RUN,
        |c| c.monitor.otlp_endpoint.is_some()
    ),
    row!(
        "trace_context",
        "--trace-context",
        Report,
        REAL | DRY_RUN,
        |c| c.monitor.trace_context.is_some()
    ),
];

/// The mode the flags choose, and whether it is only previewed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Chosen {
    pub(super) kind: Kind,
    pub(super) dry_run: bool,
}

/// Refuse the first flag (in the table's order) that the chosen mode does
/// not take, after refusing modes chosen together; the mode chosen.
pub(super) fn check(cli: &Cli, names: &Names) -> Result<Chosen, UsageError> {
    let chosen = choose(cli)?;
    let given = |f: &&Flag| (f.given)(cli) && !names.came_from_env(f.id);
    for flag in FLAGS.iter().filter(|f| f.home != Home::Mode).filter(given) {
        let by_kind = flag.takes & chosen.kind.bit() != 0;
        let by_preview = !chosen.dry_run || flag.takes & DRY_RUN != 0;
        if !by_kind {
            return Err(UsageError(refusal(flag, chosen.kind)));
        }
        if !by_preview {
            return Err(UsageError(runs_nothing(flag, "--dry-run")));
        }
    }
    Ok(chosen)
}

/// The mode the flags choose (COMMAND when none does); two modes together
/// are refused, the one first by precedence naming the other.
fn choose(cli: &Cli) -> Result<Chosen, UsageError> {
    let on = |id: &str| FLAGS.iter().any(|f| f.id == id && (f.given)(cli));
    let dry_run = on("dry_run");
    let mut given: Vec<&ModeRow> = MODES.iter().filter(|m| on(m.id)).collect();
    given.sort_by_key(|m| m.precedence);
    let Some(first) = given.first() else {
        return Ok(Chosen {
            kind: Kind::Command,
            dry_run,
        });
    };
    // A mode that runs nothing real takes no other, nor a preview.
    let others = given[1..]
        .iter()
        .map(|m| m.flag)
        .chain(dry_run.then_some("--dry-run"));
    match first.runs {
        Runs::Simulated => {
            if let Some(other) = others.into_iter().next() {
                return Err(UsageError(simulate_real(other)));
            }
        }
        Runs::Prints(what) => {
            if others.into_iter().next().is_some() {
                let mut flags: Vec<&str> = MODES
                    .iter()
                    .filter(|m| m.runs == Runs::Yes)
                    .map(|m| m.flag)
                    .collect();
                flags.push("--dry-run");
                let last = flags.pop().unwrap_or_default();
                return Err(UsageError(format!(
                    "{} {what}: give it no {} or {last}",
                    first.flag,
                    flags.join(", ")
                )));
            }
        }
        Runs::Yes => {
            if let Some(second) = given.get(1) {
                return Err(UsageError(both(first.kind, second.flag)));
            }
        }
    }
    Ok(Chosen {
        kind: first.kind,
        dry_run,
    })
}

/// The message for an invocation that chooses no mode and gives no COMMAND.
pub(super) fn missing_command() -> String {
    let usages: Vec<&str> = MODES
        .iter()
        .filter(|m| m.runs == Runs::Yes)
        .map(|m| m.usage)
        .chain(["'retry [OPTIONS] --dry-run'"])
        .collect();
    let (last, rest) = usages.split_last().expect("modes");
    format!("missing COMMAND: usage is {} or {last}", rest.join(", "))
}

fn both(kind: Kind, other: &str) -> String {
    format!(
        "{} and {other} are mutually exclusive: give one or the other",
        kind.flag()
    )
}

mod refusal;
use refusal::{refusal, runs_nothing, simulate_real};

#[cfg(test)]
mod tests;
