//! File mode (`--file PATH`): the loop over looks at the paths.

use std::time::Instant;

use crate::attempt::file::{FileAttempt, FileOptions};
use crate::policy::Config;

pub fn main(config: &Config, probe: &FileOptions, started: Instant, seed: u64) -> u8 {
    super::forget_reports_env();
    let shown = probe.display_words();
    let probe = probe.clone();
    super::probe(
        config,
        started,
        seed,
        &shown,
        |_| {},
        || Ok(FileAttempt::new(probe)),
    )
}
