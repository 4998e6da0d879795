//! Validation of TCP mode's flags: `--tcp HOST:PORT` or `--tcp unix:PATH`
//! (repeatable) and the `--connect-timeout` it shares with HTTP mode.

use std::net::Ipv6Addr;
use std::path::PathBuf;

use super::values::{UsageError, invalid, opt_positive_duration};
use crate::attempt::http::CONNECT_TIMEOUT;
use crate::attempt::tcp::{Endpoint, Target, TcpOptions};
use crate::cli::Cli;

const TARGET_FORM: &str = "HOST:PORT with a port from 1 to 65535, such as db:5432, 127.0.0.1:6379 or [::1]:6379, or unix:PATH for a unix socket, such as unix:/run/app.sock";

/// Validate `--tcp`. `Ok(None)` when it was not given.
pub(super) fn from_args(cli: &Cli) -> Result<Option<TcpOptions>, UsageError> {
    if cli.tcp.is_empty() {
        return Ok(None);
    }
    let mut targets = Vec::with_capacity(cli.tcp.len());
    for given in &cli.tcp {
        let endpoint = match socket(given) {
            Some(path) => Some(Endpoint::Unix(path)),
            None => target(given).map(Endpoint::Inet),
        };
        targets.push(endpoint.ok_or_else(|| invalid("--tcp", given, TARGET_FORM))?);
    }
    Ok(Some(TcpOptions {
        targets,
        connect_timeout: opt_positive_duration(
            "--connect-timeout",
            cli.http.connect_timeout.as_deref(),
        )?
        .unwrap_or(CONNECT_TIMEOUT),
    }))
}

/// `unix:PATH` (or `unix://PATH`, as dockerize and wait4x write it); a
/// port after `unix:` is the host named unix.
fn socket(given: &str) -> Option<PathBuf> {
    let rest = given.trim().strip_prefix("unix:")?;
    let path = match rest.strip_prefix("//") {
        Some(path) if path.starts_with('/') => path,
        _ => rest,
    };
    let port = !path.is_empty() && path.bytes().all(|b| b.is_ascii_digit());
    (!port && !path.is_empty() && !path.starts_with('-')).then(|| PathBuf::from(path))
}

/// `HOST:PORT`, `[IPv6]:PORT`.
pub(super) fn target(given: &str) -> Option<Target> {
    let t = given.trim();
    let (host, port) = match t.strip_prefix('[') {
        Some(rest) => {
            let (host, after) = rest.split_once(']')?;
            host.parse::<Ipv6Addr>().ok()?;
            (host, after.strip_prefix(':')?)
        }
        None => {
            let (host, port) = t.rsplit_once(':')?;
            // A bare IPv6 address is ambiguous: it needs its brackets.
            if host.contains(':') {
                return None;
            }
            (host, port)
        }
    };
    let name_ok = !host.is_empty()
        && !host.starts_with('-')
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    let port = port
        .parse::<u16>()
        .ok()
        .filter(|p| *p > 0 && port.bytes().all(|b| b.is_ascii_digit()))?;
    name_ok.then(|| Target {
        host: host.to_string(),
        port,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_in_every_form() {
        let ok = |s: &str| {
            let t = target(s).unwrap_or_else(|| panic!("{s} should be valid"));
            (t.host, t.port)
        };
        assert_eq!(ok("db:5432"), ("db".into(), 5432));
        assert_eq!(ok(" 127.0.0.1:6379 "), ("127.0.0.1".into(), 6379));
        assert_eq!(ok("[::1]:6379"), ("::1".into(), 6379));
        assert_eq!(ok("[fe80::1]:1"), ("fe80::1".into(), 1));
        assert_eq!(
            ok("my-db.internal_x:65535"),
            ("my-db.internal_x".into(), 65535)
        );
        for bad in [
            "",
            "db",
            "db:",
            ":5432",
            "db:0",
            "db:65536",
            "db:+1",
            "db:-1",
            "::1:6379",
            "[::1]6379",
            "[db]:1",
            "[::1]:",
            "d b:1",
            "-db:1",
            "db:5432/x",
            "db:1e3",
        ] {
            assert!(target(bad).is_none(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn unix_sockets_as_curl_dockerize_and_wait4x_write_them() {
        let path = |s: &str| socket(s).map(|p| p.display().to_string());
        assert_eq!(path("unix:/run/app.sock").as_deref(), Some("/run/app.sock"));
        assert_eq!(
            path("unix:///run/app.sock").as_deref(),
            Some("/run/app.sock")
        );
        assert_eq!(path("unix:app.sock").as_deref(), Some("app.sock"));
        for not in ["unix:", "unix:80", "unix:-x", "db:5432", "/run/app.sock"] {
            assert_eq!(path(not), None, "{not}");
        }
        // The host named unix keeps its port.
        assert_eq!(target("unix:80").map(|t| t.port), Some(80));
    }
}
