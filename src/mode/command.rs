//! Command mode (`retry -- COMMAND`): the loop over supervised processes.

use std::ffi::OsString;
use std::time::Instant;

use crate::attempt::process::ProcessAttempt;
use crate::drive;
use crate::finish;
use crate::mask;
use crate::policy::Config;

pub fn main(config: &Config, command: &[OsString], started: Instant, seed: u64) -> u8 {
    for var in finish::REPORTS_ENV {
        if std::env::var_os(var).is_some() {
            // The reports belong to this run: a retry inside COMMAND must
            // not ping or push them too, nor see their secrets.
            // SAFETY: no other thread exists yet (the runtime and the log
            // start later), so nothing reads the environment meanwhile.
            unsafe { std::env::remove_var(var) };
        }
    }
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
