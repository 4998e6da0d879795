//! HTTP mode's wiring: from the validated `--http` request to an exit status.
//!
//! Reads `--data @FILE`, builds the one client of the run, drives the same
//! retry loop as command mode, and delivers the accepted response's body to
//! stdout or `--output`. The body is written only once the run has succeeded,
//! so stdout never carries a failed or partial response.

use std::io::Write;
use std::time::Instant;

use crate::attempt::http::HttpAttempt;
use crate::exit;
use crate::policy::{Config, Data, HttpOptions};

pub fn main(
    config: &Config,
    request: &HttpOptions,
    started: Instant,
    seed: u64,
    rng: &mut crate::rng::JitterRng,
) -> u8 {
    let mut log = match crate::open_log(config, started) {
        Ok(l) => l,
        Err(code) => return code,
    };
    let body = match &request.data {
        None => None,
        Some(Data::Inline(b)) => Some(b.clone()),
        Some(Data::File(path)) => {
            let read = if path.as_os_str() == "-" {
                let mut buf = Vec::new();
                std::io::Read::read_to_end(&mut std::io::stdin().lock(), &mut buf).map(|_| buf)
            } else {
                std::fs::read(path)
            };
            match read {
                Ok(b) => Some(b),
                Err(e) => {
                    log.error(&format!(
                        "cannot read --data @{}: {e}; expected @FILE naming a readable file",
                        path.display()
                    ));
                    return exit::USAGE;
                }
            }
        }
    };
    let shown = request.display_words();
    let (finish, mut attempt) = match crate::drive(config, &mut log, &shown, seed, rng, || {
        HttpAttempt::new(request, body)
    }) {
        Ok(done) => done,
        Err(code) => return code,
    };
    if finish.exit_code != exit::SUCCESS {
        return finish.exit_code;
    }
    let body = attempt.take_body().unwrap_or_default();
    let written = match &request.output {
        Some(path) => std::fs::write(path, &body).map_err(|e| (path.display().to_string(), e)),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(&body)
                .and_then(|()| out.flush())
                .map_err(|e| ("stdout".to_string(), e))
        }
    };
    match written {
        Ok(()) => exit::SUCCESS,
        Err((to, e)) => {
            log.error(&format!("cannot write the response body to {to}: {e}"));
            exit::INTERNAL
        }
    }
}
