//! TCP mode (`--tcp HOST:PORT`): the loop over connection attempts.

use std::time::Instant;

use crate::attempt::tcp::{TcpAttempt, TcpOptions};
use crate::drive;
use crate::policy::Config;
use crate::rng;

pub fn main(config: &Config, probe: &TcpOptions, started: Instant, seed: u64) -> u8 {
    if let Err(code) = drive::check_outputs(config) {
        return code;
    }
    let (mut log, log_failed) = drive::open_log(config, started);
    let shown = probe.display_words();
    let probe = probe.clone();
    drive::drive(
        config,
        &mut log,
        &shown,
        seed,
        &mut rng::seeded(seed),
        || match log_failed {
            Some(why) => Err(why),
            None => Ok(TcpAttempt::new(probe)),
        },
        |finish, _, _| finish.exit_code,
    )
}
