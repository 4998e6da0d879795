//! gRPC mode (`--grpc HOST:PORT`): `--cacert` read before the first call,
//! then the loop over health checks.

use std::time::Instant;

use crate::attempt::grpc::{GrpcAttempt, GrpcOptions};
use crate::log::Logger;
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
    let shown = probe.display_words();
    let insecure = probe.insecure;
    let probe = probe.clone();
    super::probe(
        config,
        started,
        seed,
        &shown,
        |log| {
            if insecure {
                super::warn_insecure(config, log);
            }
        },
        || GrpcAttempt::new(probe, extra_roots),
    )
}
