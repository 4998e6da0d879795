//! `--dry-run`: the delay schedule this policy produces, on stdout; nothing
//! runs. COMMAND (or the probe), if given, is only shown, its secrets
//! masked as the log masks them: a dry run's report ends up in CI output
//! as often as the log does.

use std::ffi::OsString;

use crate::policy::Config;
use crate::{rng, schedule};

pub fn main(config: &Config, command: &[OsString], seed: u64) -> u8 {
    let sched = schedule::schedule(&config.policy, &mut rng::seeded(seed));
    let shown: Vec<OsString> = crate::mask::command_line(command)
        .into_iter()
        .map(Into::into)
        .collect();
    super::print(&schedule::render(&config.policy, seed, &shown, &sched))
}
