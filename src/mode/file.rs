//! File mode (`--file PATH`): the loop over looks at the paths.

use std::time::Instant;

use crate::attempt::file::{FileAttempt, FileOptions};
use crate::drive;
use crate::policy::Config;

pub fn main(config: &Config, probe: &FileOptions, started: Instant, seed: u64) -> u8 {
    super::forget_reports_env();
    if let Err(code) = drive::check_outputs(config) {
        return code;
    }
    let log = drive::open_log(config, started);
    let shown = probe.display_words();
    let probe = probe.clone();
    drive::drive(
        config,
        log,
        &shown,
        seed,
        || Ok(FileAttempt::new(probe)),
        |ending, _, _| ending.exit_code,
    )
}
