//! The flags of shared state (pace, budget, breaker across invocations),
//! flattened into [`super::Cli`]. Values arrive as strings; `policy`
//! validates them.

use clap::Args;

const HEADING: &str = "Shared state";

#[derive(Debug, Args)]
pub struct StateArgs {
    /// Share pace, budget and breaker with every invocation naming GROUP
    #[arg(long, value_name = "NAME", env = "RETRY_GROUP", help_heading = HEADING)]
    pub group: Option<String>,

    /// Where the group's state lives: a directory, or redis://, rediss://, unix:// [default: ~/.local/state/retry]
    #[arg(long, value_name = "DIR|URL", env = "RETRY_STATE", help_heading = HEADING)]
    pub state: Option<String>,

    /// Exit 125 when the state store cannot be used, instead of running without it
    #[arg(long, help_heading = HEADING)]
    pub state_required: bool,

    /// Print the group's pace schedule, budget count and breaker state, and exit
    #[arg(long, help_heading = HEADING)]
    pub state_show: bool,

    /// Start the group's retries at most RATE apart, e.g. 20/s or 600/m
    #[arg(long, value_name = "RATE", help_heading = HEADING)]
    pub pace: Option<String>,

    /// Retries of the group that may start at once under --pace [default: 1]
    #[arg(long, value_name = "N", help_heading = HEADING)]
    pub pace_burst: Option<String>,

    /// Group retry budget: TOKENS, each failure takes 1, each success gives back RATIO; retries need more than TOKENS/2 [default: 100:0.1]
    #[arg(long, value_name = "TOKENS[:RATIO]", num_args = 0..=1, default_missing_value = "100:0.1", help_heading = HEADING)]
    pub budget: Option<String>,

    /// Circuit breaker: after THRESHOLD failed runs in a row, refuse to run (exit 75) for COOLDOWN [default: 5:30s]
    #[arg(long, value_name = "THRESHOLD[:COOLDOWN]", num_args = 0..=1, default_missing_value = "5:30s", help_heading = HEADING)]
    pub breaker: Option<String>,
}
