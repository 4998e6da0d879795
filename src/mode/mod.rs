//! One module per mode, each putting its mode together from the validated
//! configuration: `command` (run COMMAND), `http` (`--http`), `tcp`
//! (`--tcp`), `grpc` (`--grpc`), `file` (`--file`), `dry_run`
//! (`--dry-run`), `simulate` (`--simulate`) and `state_show`
//! (`--state-show`). The modes that run something hand their attempts to
//! `drive`, the one lifecycle of a run (a probe through `probe`); the others
//! print a report on stdout. A new kind of probe is a module here and an arm
//! of the `match` in `lib`.

use std::ffi::OsString;
use std::io::Write;
use std::time::Instant;

use rand::TryRng;
use rand::rngs::SysRng;

use crate::attempt::Attempt;
use crate::drive;
use crate::event::Event;
use crate::exit;
use crate::finish;
use crate::log::{LogFormat, Logger};
use crate::policy::Config;
use crate::rng;

pub mod command;
pub mod dry_run;
pub mod file;
pub mod grpc;
pub mod http;
pub mod simulate;
pub mod state_show;
pub mod tcp;

/// A probe's run, once its own inputs are read: the outputs checked, the
/// log opened (`prepare` may say something in it first), then the loop over
/// the attempts `make` gives; the exit status is the ending's.
fn probe<A: Attempt>(
    config: &Config,
    started: Instant,
    seed: u64,
    shown: &[OsString],
    prepare: impl FnOnce(&mut drive::Log),
    make: impl FnOnce() -> Result<A, String>,
) -> u8 {
    if let Err(code) = drive::check_outputs(config) {
        return code;
    }
    let mut log = drive::open_log(config, started);
    prepare(&mut log);
    drive::drive(config, log, shown, seed, make, |ending, _, _| {
        ending.exit_code
    })
}

/// `--insecure`'s warning, every run: in the log, and on stderr too when
/// the log goes to `--log-file` in text (stderr then carries only the
/// give-up line, and this must reach a person).
fn warn_insecure(config: &Config, log: &mut drive::Log) {
    let message = "--insecure: the server's certificate is not verified; \
                   anyone on the path can read and change this exchange";
    log.logger.emit(&Event::Warning { message });
    if config.log.file.is_some() && config.log.format == LogFormat::Text {
        Logger::stderr().emit(&Event::Warning { message });
    }
}

/// The reports' variables ([`finish::REPORTS_ENV`]) taken out of the
/// environment before anything runs: the heartbeat check and the gateway's
/// job belong to this run, so no child (COMMAND, or an `--on-retry` or
/// `--on-give-up` hook in any mode) may see their secrets, nor, as a retry
/// inside it, report to them too. Called before any thread exists.
fn forget_reports_env() {
    for var in finish::REPORTS_ENV {
        if std::env::var_os(var).is_some() {
            // SAFETY: no other thread exists yet (the runtime and the log
            // start later), so nothing reads the environment meanwhile.
            unsafe { std::env::remove_var(var) };
        }
    }
}

/// A report on stdout (what a dry run, a simulation or `--state-show` was
/// asked for): 0 once written, retry's own failure if it cannot be.
fn print(report: &str) -> u8 {
    let mut out = std::io::stdout().lock();
    match out.write_all(report.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => exit::SUCCESS,
        Err(_) => exit::INTERNAL,
    }
}

/// A seed from the OS, never from the clock: processes started in the same
/// instant must not share a schedule. Kept below 2^53 so that the seed in a
/// JSON log reads back exactly anywhere; 53 bits are plenty to keep a fleet's
/// schedules apart.
pub fn os_seed() -> u64 {
    rng::mask_seed(SysRng.try_next_u64().unwrap_or_else(|_| {
        // No OS entropy at all: fall back to per-process addresses, which ASLR
        // still varies between processes.
        let local = 0u8;
        (&local as *const u8 as u64) ^ u64::from(std::process::id()).rotate_left(32)
    }))
}
