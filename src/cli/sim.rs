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

    /// The simulated server admits RATE requests a second (burst: 100ms worth), rejecting the rest
    #[arg(
        long,
        value_name = "RATE/s",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub capacity: Option<String>,

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
    #[arg(
        long,
        value_name = "FORMAT",
        allow_hyphen_values = true,
        help_heading = "Simulation"
    )]
    pub format: Option<FormatArg>,

    /// Also draw the requests over time as an SVG picture in FILE
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
