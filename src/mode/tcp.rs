//! TCP mode (`--tcp HOST:PORT`): the loop over connection attempts.

use std::time::Instant;

use crate::attempt::tcp::{TcpAttempt, TcpOptions};
use crate::policy::Config;

pub fn main(config: &Config, probe: &TcpOptions, started: Instant, seed: u64) -> u8 {
    super::forget_reports_env();
    let shown = probe.display_words();
    let probe = probe.clone();
    super::probe(
        config,
        started,
        seed,
        &shown,
        |_| {},
        || Ok(TcpAttempt::new(probe)),
    )
}
