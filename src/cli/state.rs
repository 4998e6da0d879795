//! The flags of shared state (pace, budget, breaker across invocations),
//! flattened into [`super::Cli`]. Values arrive as strings; `policy`
//! validates them.

use clap::Args;

const HEADING: &str = "Shared state";

#[derive(Debug, Args)]
pub struct StateArgs {
    /// Share pace, budget and breaker with every invocation of the same group
    ///
    /// Needed by --pace, --budget, --breaker and --state-show. Invocations on
    /// one host share a group through a directory, across hosts through Redis.
    /// Not needed with --simulate: the simulated clients are one group.
    #[arg(long, value_name = "NAME", env = "RETRY_GROUP", allow_hyphen_values = true, help_heading = HEADING)]
    pub group: Option<String>,

    /// Where the group's state lives: a directory, or redis://, rediss://, unix://, redis+sentinel://, redis+cluster:// [default: ~/.local/state/retry]
    ///
    /// The default honours XDG_STATE_HOME, and finds the home directory in
    /// the password database when HOME is unset. A directory must be the
    /// caller's own and writable by nobody else. A master that sentinels
    /// watch: redis+sentinel://HOST:PORT,HOST:PORT/MASTER (then /DB, and
    /// ?sentinel_password=P for the sentinels' own password); a cluster, by
    /// some of its nodes: redis+cluster://HOST:PORT,HOST:PORT; USER:PASSWORD@
    /// before the hosts is the master's or the nodes'; rediss+sentinel://
    /// and rediss+cluster:// speak TLS. A failover is
    /// followed, and a name looked up again on every new connection. A store
    /// that cannot be used is reported once and the run goes on without it,
    /// trying it again before later retries. Passwords in URLs are never
    /// printed, and are left out of the RETRY_STATE that COMMAND receives.
    #[arg(long, value_name = "DIR|URL", env = "RETRY_STATE", allow_hyphen_values = true, help_heading = HEADING)]
    pub state: Option<String>,

    /// Read the Redis password from FILE (its first line), not from the URL
    ///
    /// The password of the server, of the master the sentinels name, or of
    /// the cluster's nodes (not the sentinels' own). Keeps the password off
    /// the command line and out of the environment, so that nested
    /// invocations, which inherit this setting, can use the store too.
    #[arg(long, value_name = "FILE", env = "RETRY_STATE_PASSWORD_FILE", allow_hyphen_values = true, help_heading = HEADING)]
    pub state_password_file: Option<std::path::PathBuf>,

    /// Trust the CA certificates (PEM) in FILE for a rediss:// store
    ///
    /// In place of the system's roots (and SSL_CERT_FILE): a private CA, or
    /// the server's own self-signed certificate (one that says it is no
    /// CA). For rediss://, rediss+sentinel:// and rediss+cluster://.
    #[arg(long, value_name = "FILE", env = "RETRY_STATE_CACERT", allow_hyphen_values = true, help_heading = HEADING)]
    pub state_cacert: Option<std::path::PathBuf>,

    /// Exit 125 when the state store cannot be used, instead of running without it
    ///
    /// The store is tried before COMMAND first runs, so a store that cannot
    /// be used ends the run before anything is run.
    #[arg(long, help_heading = HEADING)]
    pub state_required: bool,

    /// Print the group's pace schedule, budget count and breaker state, and exit
    #[arg(long, help_heading = HEADING)]
    pub state_show: bool,

    /// Start the group's retries at no more than RATE, e.g. 20/s or 600/m
    ///
    /// A retry waits for the later of its own delay and the group's next free
    /// slot; it gives up rather than take a slot past --max-time. First
    /// attempts are never paced. With --simulate, the simulated clients share
    /// the pace.
    #[arg(long, value_name = "RATE", allow_hyphen_values = true, help_heading = HEADING)]
    pub pace: Option<String>,

    /// Retries of the group that may start at once under --pace [default: 1]
    #[arg(long, value_name = "N", allow_hyphen_values = true, help_heading = HEADING)]
    pub pace_burst: Option<String>,

    /// Stop retrying while the whole group fails: a shared retry budget [default: 100:0.1]
    ///
    /// The count starts at TOKENS; each failed attempt takes one token, each
    /// success gives back RATIO. A retry is allowed only while more than
    /// TOKENS/2 remain; otherwise the run ends with the last attempt's code.
    /// First attempts always run. With --simulate, the simulated clients share
    /// the budget.
    #[arg(long, value_name = "TOKENS[:RATIO]", num_args = 0..=1, default_missing_value = "100:0.1", allow_negative_numbers = true, help_heading = HEADING)]
    pub budget: Option<String>,

    /// After THRESHOLD failed runs in a row, refuse to run for COOLDOWN (exit 75) [default: 5:30s]
    ///
    /// Then one trial run is let through (the others are still refused): its
    /// success closes the circuit, its failure opens it for another COOLDOWN.
    #[arg(long, value_name = "THRESHOLD[:COOLDOWN]", num_args = 0..=1, default_missing_value = "5:30s", allow_negative_numbers = true, help_heading = HEADING)]
    pub breaker: Option<String>,
}
