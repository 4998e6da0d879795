//! gRPC mode (`--grpc HOST:PORT`): `--cacert` read before the first call,
//! then the loop over health checks.

use std::time::Instant;

use crate::attempt::grpc::{GrpcAttempt, GrpcOptions};
use crate::drive;
use crate::event::Event;
use crate::log::{LogFormat, Logger};
use crate::policy::Config;

pub fn main(config: &Config, probe: &GrpcOptions, started: Instant, seed: u64) -> u8 {
    super::forget_reports_env();
    // A file given is read before anything is sent, as in HTTP mode.
    let extra_roots = match &probe.cacert {
        Some(file) => match super::http::certificates(file) {
            Ok(certs) => certs,
            Err(e) => {
                Logger::stderr().error(&crate::human::escape_controls(&e));
                return crate::exit::USAGE;
            }
        },
        None => Vec::new(),
    };
    if let Err(code) = drive::check_outputs(config) {
        return code;
    }
    let mut log = drive::open_log(config, started);
    if probe.insecure {
        let message = "--insecure: the server's certificate is not verified; \
                       anyone on the path can read and change this exchange";
        log.logger.emit(&Event::Warning { message });
        if config.log.file.is_some() && config.log.format == LogFormat::Text {
            // With --log-file, stderr carries only the give-up line; this
            // must reach a person too.
            Logger::stderr().emit(&Event::Warning { message });
        }
    }
    let shown = probe.display_words();
    let probe = probe.clone();
    drive::drive(
        config,
        log,
        &shown,
        seed,
        || GrpcAttempt::new(probe, extra_roots),
        |ending, _, _| ending.exit_code,
    )
}
