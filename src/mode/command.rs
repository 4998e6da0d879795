//! Command mode (`retry -- COMMAND`): the loop over supervised processes.

use std::ffi::OsString;
use std::time::Instant;

use crate::attempt::process::ProcessAttempt;
use crate::drive;
use crate::mask;
use crate::policy::Config;

pub fn main(config: &Config, command: &[OsString], started: Instant, seed: u64) -> u8 {
    super::forget_reports_env();
    if let Err(code) = drive::check_outputs(config) {
        return code;
    }
    let log = drive::open_log(config, started);
    let depth = config.nesting.outer_depth.saturating_add(1);
    let process = config.process.clone();
    // Only the log sees this copy: secrets in the arguments become ***.
    let shown: Vec<OsString> = mask::command_line(command)
        .into_iter()
        .map(Into::into)
        .collect();
    let command = command.to_vec();
    drive::drive(
        config,
        log,
        &shown,
        seed,
        || Ok(ProcessAttempt::new(command, process, depth)),
        |ending, _, _| ending.exit_code,
    )
}
