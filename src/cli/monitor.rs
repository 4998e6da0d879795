//! The monitoring flags (Prometheus metrics and heartbeat pings), flattened
//! into [`super::Cli`]. Values arrive as strings; `policy` validates them.

use std::path::PathBuf;

use clap::{ArgAction, Args};

const HEADING: &str = "Monitoring";
const TRACING: &str = "Tracing";

#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// Write the run's metrics to PATH for node_exporter's textfile collector
    ///
    /// Written whole when the run ends, however it ends (a signal included):
    /// to a temporary file beside PATH, renamed into place, mode 0644. The
    /// times of the last success and of the last failure are kept from the
    /// previous file. The directory must be writable, and writable by nobody
    /// but its owner (you or root), unless it is sticky, where a file another
    /// user made at PATH is refused; otherwise retry exits 2 before running
    /// anything. Name the file NAME.prom.
    #[arg(long, value_name = "PATH", allow_hyphen_values = true, help_heading = HEADING)]
    pub metrics_file: Option<PathBuf>,

    /// Push the run's metrics to a Prometheus Pushgateway at URL, e.g. http://pushgateway:9091
    ///
    /// Sent with POST to URL/metrics/job/NAME plus the --metrics-label
    /// pairs, so the time of the last success survives a failed run (and the
    /// other way round). At most 2 seconds; a gateway that cannot be reached
    /// costs a warning, never the exit status. A password in URL is never
    /// shown; give it with --metrics-push-password-file, or the whole URL in
    /// RETRY_METRICS_PUSH, to keep it out of ps.
    #[arg(
        long,
        value_name = "URL",
        env = "RETRY_METRICS_PUSH",
        // The URL may hold a password: --help must not print it.
        hide_env_values = true,
        allow_hyphen_values = true,
        help_heading = HEADING
    )]
    pub metrics_push: Option<String>,

    /// Read the Pushgateway's password from FILE (its first line), not from the URL
    ///
    /// Sent as HTTP basic authentication with the user of --metrics-push's
    /// URL (https://USER@pushgateway). Keeps the password off the command
    /// line, where every user of the host can read it.
    #[arg(
        long,
        value_name = "FILE",
        env = "RETRY_METRICS_PUSH_PASSWORD_FILE",
        allow_hyphen_values = true,
        help_heading = HEADING
    )]
    pub metrics_push_password_file: Option<PathBuf>,

    /// The metrics' job label (Pushgateway: grouping key) [default: --group, else COMMAND's name, or the mode: http, tcp, file, grpc]
    #[arg(long, value_name = "NAME", allow_hyphen_values = true, help_heading = HEADING)]
    pub metrics_job: Option<String>,

    /// Add a label to the metrics (Pushgateway: a grouping key), e.g. instance=$(hostname); repeatable
    #[arg(
        long,
        value_name = "KEY=VALUE",
        action = ArgAction::Append,
        allow_hyphen_values = true,
        help_heading = HEADING
    )]
    pub metrics_label: Vec<String>,

    /// Ping a heartbeat monitor at URL (healthchecks.io protocol)
    ///
    /// URL/start before the first attempt, then URL when the run succeeds or
    /// URL/STATUS (the exit status) when it gives up, is refused or is
    /// interrupted: never once per attempt, so a failure that recovered
    /// raises no alarm. Each ping is tried up to 3 times; the push and the
    /// pings share 8 seconds after the run (4 after a signal ended it). A
    /// ping that fails costs a warning, never the exit status. The URL is
    /// masked in every log line (its path is the secret); on the command
    /// line every user of the host can read it with ps: prefer --ping-file
    /// or RETRY_PING.
    #[arg(
        long,
        value_name = "URL",
        env = "RETRY_PING",
        // The URL is a secret: --help must not print the variable's value.
        hide_env_values = true,
        allow_hyphen_values = true,
        help_heading = HEADING
    )]
    pub ping: Option<String>,

    /// Read --ping's URL from FILE (its first line), so that it never shows in ps
    #[arg(
        long,
        value_name = "FILE",
        env = "RETRY_PING_FILE",
        allow_hyphen_values = true,
        help_heading = HEADING
    )]
    pub ping_file: Option<PathBuf>,

    /// Send a summary of the run (attempts, times, the log's last lines; masked, at most 10 KB) with the final ping
    #[arg(long, help_heading = HEADING)]
    pub ping_log: bool,

    /// Write a JSON report of the run to FILE when it ends (attempts, exit status, outcome, times, seed)
    ///
    /// Written whole when the run ends, however it ends (a signal
    /// included): to a temporary file beside FILE, renamed into place. One
    /// versioned document with the fields `version`, `run`, `outcome`
    /// (success, gave-up, permanent, interrupted, refused), `limit` (max or
    /// max-time when it gave up), `attempts`, `exit_code`, `http_status`,
    /// `signal`, `reason`, `started_at`, `elapsed_ms`, `waited_ms` and
    /// `seed`. The directory must be writable, and writable by nobody but
    /// its owner unless it is sticky; otherwise retry exits 2 before running
    /// anything.
    #[arg(long, value_name = "FILE", allow_hyphen_values = true, help_heading = HEADING)]
    pub report: Option<PathBuf>,

    /// Append the report as step outputs (key=value lines) to the file GITHUB_OUTPUT names [default: auto]
    ///
    /// auto does so when GITHUB_ACTIONS=true and GITHUB_OUTPUT is set, as
    /// in a GitHub Actions step; always whenever GITHUB_OUTPUT is set (other
    /// runners that read the same file); never turns it off. The keys are
    /// the report's field names.
    #[arg(
        long,
        value_name = "WHEN",
        allow_hyphen_values = true,
        help_heading = HEADING
    )]
    pub github_output: Option<super::WhenArg>,

    /// Export the run's span and one per attempt to the OTLP/HTTP receiver at URL, e.g. http://localhost:4318
    ///
    /// retry adds /v1/traces to a URL without a path, and uses any other
    /// as it is. Without this flag, the OpenTelemetry variables decide
    /// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
    /// OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME, ...); OTEL_SDK_DISABLED=true
    /// and OTEL_TRACES_EXPORTER=none turn the export off either way. Sent in
    /// protobuf (JSON with OTEL_EXPORTER_OTLP_PROTOCOL=http/json) when the
    /// run ends, within the 8 seconds the reports share (4 after a signal);
    /// a receiver that is down or slow costs a warning, never the exit
    /// status.
    #[arg(long, value_name = "URL", allow_hyphen_values = true, help_heading = TRACING)]
    pub otlp_endpoint: Option<String>,

    /// Whether each attempt gets a trace context of its own (TRACEPARENT; traceparent for --http): on (the default) or off
    ///
    /// With on, a command sees TRACEPARENT naming its attempt's span, with
    /// TRACESTATE and BAGGAGE passed on unchanged, and an --http probe sends
    /// the traceparent, tracestate and baggage headers, whenever the run
    /// keeps a trace: it exports one, or it was given a valid TRACEPARENT.
    /// With off, attempts get retry's own environment as it is, and no
    /// header.
    #[arg(long, value_name = "on|off", allow_hyphen_values = true, help_heading = TRACING)]
    pub trace_context: Option<String>,
}
