//! Validation of gRPC mode's flags: `--grpc HOST:PORT`, `--grpc-service`,
//! `--grpc-tls`, `--grpc-authority`, and the `--cacert`, `--insecure` and
//! `--connect-timeout` it shares with HTTP mode.

use super::tcp::target;
use super::values::{UsageError, invalid, opt_positive_duration};
use crate::attempt::grpc::GrpcOptions;
use crate::attempt::http::CONNECT_TIMEOUT;
use crate::cli::Cli;

const TARGET_FORM: &str =
    "HOST:PORT with a port from 1 to 65535, such as api:50051, 127.0.0.1:50051 or [::1]:50051";
const NAME_FORM: &str = "a name of letters, digits, '.', '-' and '_', such as api.internal";

/// Validate `--grpc`. `Ok(None)` when it was not given (its companions
/// without it are refused by `modes`).
pub(super) fn from_args(cli: &Cli) -> Result<Option<GrpcOptions>, UsageError> {
    let Some(given) = cli.grpc.as_deref() else {
        return Ok(None);
    };
    let target = target(given).ok_or_else(|| invalid("--grpc", given, TARGET_FORM))?;
    let service = match cli.grpc_service.as_deref() {
        Some(s) if s.starts_with('-') || s.chars().any(char::is_control) => {
            return Err(invalid(
                "--grpc-service",
                s,
                "a service name such as grpc.health.v1.Health or app.Api",
            ));
        }
        Some(s) => s.to_string(),
        None => String::new(),
    };
    let authority = match cli.grpc_authority.as_deref() {
        Some(a)
            if a.is_empty()
                || a.starts_with('-')
                || !a
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_')) =>
        {
            return Err(invalid("--grpc-authority", a, NAME_FORM));
        }
        other => other.map(str::to_string),
    };
    if !cli.grpc_tls {
        let tls_only = [
            ("--cacert", cli.http.cacert.is_some()),
            ("--insecure", cli.http.insecure),
        ];
        if let Some((flag, _)) = tls_only.iter().find(|(_, on)| *on) {
            return Err(UsageError(format!(
                "{flag} applies to TLS: with --grpc add --grpc-tls"
            )));
        }
    }
    Ok(Some(GrpcOptions {
        target,
        service,
        tls: cli.grpc_tls,
        authority,
        cacert: cli.http.cacert.clone(),
        insecure: cli.http.insecure,
        connect_timeout: opt_positive_duration(
            "--connect-timeout",
            cli.http.connect_timeout.as_deref(),
        )?
        .unwrap_or(CONNECT_TIMEOUT),
    }))
}
