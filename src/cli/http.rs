//! The flags of HTTP mode (`--http URL`), flattened into [`super::Cli`].
//!
//! Kept apart from the command-mode flags so each group reads as one unit.
//! Like the rest of `cli`, values arrive as strings and `policy` validates
//! them.

use std::path::PathBuf;

use clap::Args;

#[derive(Debug, Args)]
pub struct HttpArgs {
    /// Probe URL over HTTP(S) instead of running a command
    #[arg(
        long = "http",
        value_name = "URL",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub url: Option<String>,

    /// Request method [default: GET, or POST with --data or --json]
    #[arg(
        short = 'X',
        long,
        value_name = "M",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub method: Option<String>,

    /// Request header 'Name: value', or @FILE of header lines (repeatable)
    #[arg(
        short = 'H',
        long = "header",
        value_name = "'K: V'",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub headers: Vec<String>,

    /// Form body: the string, or @FILE for a file's contents without CR and LF (as curl);
    /// repeatable, joined with '&'
    #[arg(
        short = 'd',
        long,
        value_name = "STR|@FILE",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub data: Vec<String>,

    /// As --data, but @FILE is sent byte for byte
    #[arg(
        long,
        value_name = "STR|@FILE",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub data_binary: Vec<String>,

    /// Where each --data and --data-binary value stood on the command line
    /// (true: --data-binary), so the pieces are joined in that order. Filled
    /// in by the parser; empty when built otherwise.
    #[arg(skip)]
    pub data_order: Vec<bool>,

    /// JSON request body: the string, or @FILE; sent with JSON Content-Type and Accept
    #[arg(
        long,
        value_name = "STR|@FILE",
        conflicts_with_all = ["data", "data_binary"],
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub json: Option<String>,

    /// Time limit for establishing each connection, with --http or --tcp [default: 10s]
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub connect_timeout: Option<String>,

    /// Redirects to follow in one attempt; more exits 47 (0: do not follow) [default: 10]
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub max_redirs: Option<String>,

    /// Longest wait a server may ask for (Retry-After or a rate-limit field); asking more ends the run [default: 10m]
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub retry_after_max: Option<String>,

    /// After a wait the server asked for (Retry-After or a rate-limit field), spread the next attempt over DUR by the jitter (0: exactly at it) [default: the backoff delay]
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub retry_after_spread: Option<String>,

    /// Connect through this unix socket instead of to the URL's host (as curl's
    /// --unix-socket; Docker's API, say)
    #[arg(
        long,
        value_name = "PATH",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub unix_socket: Option<PathBuf>,

    /// Also trust the CA certificates in this PEM file
    #[arg(
        long,
        value_name = "FILE",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub cacert: Option<PathBuf>,

    /// Do not verify the server's certificate (warned about on every run)
    #[arg(long, help_heading = "HTTP")]
    pub insecure: bool,

    /// Write the accepted response's body to FILE instead of stdout
    #[arg(
        short = 'o',
        long,
        value_name = "FILE",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub output: Option<PathBuf>,

    /// Statuses that count as success (e.g. 200,204 or 2xx) [default: 2xx]
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub expect: Option<String>,

    /// Statuses worth retrying, replacing the default 408,429,500,502-504
    #[arg(
        long,
        value_name = "LIST",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub retry_status: Option<String>,

    /// Send this Idempotency-Key on every attempt ('auto': a random UUID), so POST and PATCH may be retried
    #[arg(
        long,
        value_name = "KEY|auto",
        allow_hyphen_values = true,
        help_heading = "HTTP"
    )]
    pub idempotency_key: Option<String>,

    /// Retry POST and PATCH even without an idempotency key
    #[arg(long, help_heading = "HTTP")]
    pub retry_non_idempotent: bool,
}
