//! The flags of simulation mode (`--simulate N`), flattened into
//! [`super::Cli`]. Values arrive as strings; `policy` validates them.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

#[derive(Debug, Args)]
pub struct SimArgs {
    /// Simulate N clients that all fail at once under this policy, in virtual time, and report
    ///
    /// Nothing is run or sent: the clients retry against a model server
    /// (--outage, --capacity or --model occ) and the report shows the load
    /// they put on it. The same seed gives the same report.
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub simulate: Option<String>,

    /// The simulated server fails every request until DUR has passed
    #[arg(
        long,
        value_name = "DUR",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub outage: Option<String>,

    /// The simulated server admits RATE requests a second (a token bucket), rejecting the rest
    ///
    /// A token bucket: it refills at RATE and holds --capacity-burst requests
    /// (100ms worth by default, at least 1); a request finding it empty fails.
    /// With --outage, it opens full when the outage ends.
    #[arg(
        long,
        value_name = "RATE/s",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub capacity: Option<String>,

    /// Requests --capacity admits at once, its bucket's depth [default: 100ms worth]
    ///
    /// 1 spaces admitted requests exactly 1/RATE apart and banks nothing while
    /// the server is idle: nginx's limit_req without burst (limit_req with
    /// burst=B nodelay is B+1).
    #[arg(
        long,
        value_name = "N",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub capacity_burst: Option<String>,

    /// The simulated server is a fixed-window rate limiter: LIMIT requests per window of DUR, the rest refused with the time to its reset
    ///
    /// Each refusal says when the window resets, as a server's rate-limit
    /// field does, and the clients wait for it (spread after it by
    /// --retry-after-spread). The report adds the busiest 100ms after a
    /// reset and the requests rejected per request served.
    #[arg(
        long,
        value_name = "LIMIT/DUR",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub fixed_window: Option<String>,

    /// Another server model: occ (each client reads a version, then writes it back; a write fails if another came in between)
    #[arg(
        long,
        value_name = "MODEL",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub model: Option<ModelArg>,

    /// Simulate every jitter kind under the same policy and show them side by side
    #[arg(long, help_heading = "Simulation")]
    pub compare: bool,

    /// Report format of the simulation [default: text]
    ///
    /// json: one object with the server model and every policy parameter in
    /// numbers, and one entry of figures per run (each field is described in
    /// the user guide).
    #[arg(
        long,
        value_name = "FORMAT",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub format: Option<FormatArg>,

    /// Also draw the load and the clients through over time as an SVG picture in FILE
    ///
    /// One row per run (per jitter kind with --compare) on shared axes: the
    /// requests per 100ms on a log scale, and the share of clients through.
    /// FILE is checked before the simulation runs; it cannot be the report's
    /// own standard output.
    #[arg(
        long,
        value_name = "FILE.svg",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub plot: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ModelArg {
    /// optimistic concurrency on one row (the classic backoff simulation)
    Occ,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Text,
    Json,
}
