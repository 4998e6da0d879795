//! `--dry-run`: the delay schedule this policy produces, on stdout; nothing
//! runs. COMMAND (or the probe), if given, is only shown.

use std::ffi::OsString;

use crate::policy::Config;
use crate::{rng, schedule};

pub fn main(config: &Config, command: &[OsString], seed: u64) -> u8 {
    let sched = schedule::schedule(&config.policy, &mut rng::seeded(seed));
    super::print(&schedule::render(&config.policy, seed, command, &sched))
}
