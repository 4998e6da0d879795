//! The monitoring flags: `--metrics-file`, `--metrics-push` (with
//! `--metrics-push-password-file`), `--metrics-job`, `--metrics-label`,
//! `--ping` (or `--ping-file`), `--ping-log`, `--report` and
//! `--github-output` (with `GITHUB_ACTIONS` and `GITHUB_OUTPUT`), validated into the
//! end-of-run options. URLs are masked in messages: a heartbeat URL's path
//! and a gateway's password are secrets. The file forms are read here, so
//! that a file that cannot be read is a usage error before anything runs.

use std::ffi::OsStr;
use std::path::Path;

use reqwest::Url;

use super::modes::Chosen;
use super::values::{self, Names, UsageError, path_arg};
use crate::cli::{Cli, WhenArg};
use crate::finish::FinishOptions;
use crate::finish::metrics::{MetricsOptions, is_label_name};
use crate::finish::ping::PingOptions;
use crate::finish::report::ReportOptions;
use crate::mask;

const PUSH_FORM: &str = "the http:// or https:// URL of a Pushgateway, such as http://pushgateway:9091 (retry adds /metrics/job/...)";
const PING_FORM: &str =
    "an http:// or https:// URL of a heartbeat check, such as https://hc-ping.com/UUID";
const LABEL_FORM: &str = "KEY=VALUE, KEY a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*, not starting with __), VALUE not empty";
const PING_FILE_FORM: &str = "a file whose first line is the heartbeat check's URL";
const PASSWORD_FILE_FORM: &str = "a file whose first line is the Pushgateway's password";
/// The most of a secret file that is read: a URL or a password is a line.
const SECRET_FILE_MAX: u64 = 64 * 1024;

/// The monitoring options for the mode chosen.
pub(super) fn options(
    cli: &Cli,
    names: &Names,
    chosen: Chosen,
) -> Result<FinishOptions, UsageError> {
    if chosen.dry_run || !chosen.kind.runs() {
        // `modes` has refused the flags; RETRY_PING, set for the user's
        // real runs, is left alone.
        return Ok(FinishOptions::default());
    }
    Ok(FinishOptions {
        metrics: metrics(cli, names, chosen)?,
        ping: ping(cli, names)?,
        report: report(cli, &|k| std::env::var_os(k))?,
        ..FinishOptions::default()
    })
}

/// `--report` and `--github-output`; `var` reads the environment
/// (`GITHUB_ACTIONS`, `GITHUB_OUTPUT`).
fn report(
    cli: &Cli,
    var: &dyn Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<ReportOptions, UsageError> {
    let m = &cli.monitor;
    if let Some(file) = &m.report {
        path_arg(
            "--report",
            file,
            "a file for the run's JSON report, such as report.json",
        )?;
    }
    let output = var("GITHUB_OUTPUT").filter(|v| !v.is_empty());
    let in_actions = var("GITHUB_ACTIONS").is_some_and(|v| v == "true");
    let github_output = match m.github_output.unwrap_or(WhenArg::Auto) {
        WhenArg::Never => None,
        WhenArg::Always => output,
        WhenArg::Auto => output.filter(|_| in_actions),
    };
    Ok(ReportOptions {
        file: m.report.clone(),
        github_output: github_output.map(std::path::PathBuf::from),
    })
}

fn metrics(cli: &Cli, names: &Names, chosen: Chosen) -> Result<Option<MetricsOptions>, UsageError> {
    let m = &cli.monitor;
    // Every value is judged first: a flag that took the next word as its
    // value is named as such, whatever else is missing.
    if let Some(file) = &m.metrics_file {
        path_arg(
            "--metrics-file",
            file,
            "a file for node_exporter's textfile collector, such as /var/lib/prometheus/node-exporter/backup.prom",
        )?;
    }
    if let Some(f) = m.metrics_push_password_file.as_deref()
        && !names.came_from_env("metrics_push_password_file")
    {
        path_arg("--metrics-push-password-file", f, PASSWORD_FILE_FORM)?;
    }
    let push_flag = names.of("metrics_push", "--metrics-push");
    let push = match m.metrics_push.as_deref() {
        Some(s) => Some(push_password(push_url(s, &push_flag)?, cli, names)?),
        None => {
            if m.metrics_push_password_file.is_some()
                && !names.came_from_env("metrics_push_password_file")
            {
                return Err(UsageError(
                    "--metrics-push-password-file gives the password of --metrics-push URL: give the URL too"
                        .to_string(),
                ));
            }
            None
        }
    };
    let job = m.metrics_job.as_deref().map(job_name).transpose()?;
    let mut labels: Vec<(String, String)> = Vec::with_capacity(m.metrics_label.len());
    for pair in &m.metrics_label {
        let (key, value) = label(pair)?;
        if labels.iter().any(|(k, _)| *k == key) {
            return Err(UsageError(format!(
                "--metrics-label {key} is given twice: each label takes one value"
            )));
        }
        labels.push((key, value));
    }
    if m.metrics_file.is_none() && push.is_none() {
        let unused = [
            ("--metrics-job", job.is_some()),
            ("--metrics-label", !labels.is_empty()),
        ];
        if let Some((flag, _)) = unused.iter().find(|(_, on)| *on) {
            return Err(UsageError(format!(
                "{flag} applies to the metrics of --metrics-file or --metrics-push: give one of them"
            )));
        }
        return Ok(None);
    }
    Ok(Some(MetricsOptions {
        file: m.metrics_file.clone(),
        push,
        job: job.unwrap_or_else(|| default_job(cli, chosen)),
        labels,
    }))
}

/// `--metrics-job`'s value: not empty, and not starting with '-' (most
/// likely the next option, taken as the value).
fn job_name(j: &str) -> Result<String, UsageError> {
    const FORM: &str = "a job name, such as backup (not empty, not starting with '-')";
    if j.trim().is_empty() || j.starts_with('-') {
        return Err(values::invalid("--metrics-job", j, FORM));
    }
    Ok(j.to_string())
}

/// The job when `--metrics-job` is not given: the group, else the
/// mode's (`http`, `tcp`), or the command's name (`backup` for
/// `/usr/local/bin/backup`).
fn default_job(cli: &Cli, chosen: Chosen) -> String {
    if let Some(g) = cli.state.group.as_deref().filter(|g| !g.is_empty()) {
        return g.to_string();
    }
    match chosen.kind.default_job() {
        Some(job) => job.to_string(),
        None => cli
            .command
            .first()
            .map(|c| {
                let name = Path::new(c).file_name().unwrap_or(OsStr::new(c));
                name.to_string_lossy().into_owned()
            })
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "retry".to_string()),
    }
}

fn label(pair: &str) -> Result<(String, String), UsageError> {
    let Some((key, value)) = pair.split_once('=') else {
        return Err(values::invalid("--metrics-label", pair, LABEL_FORM));
    };
    if key == "job" {
        return Err(UsageError(
            "--metrics-label cannot set job: use --metrics-job NAME".to_string(),
        ));
    }
    if !is_label_name(key) || value.is_empty() {
        return Err(values::invalid("--metrics-label", pair, LABEL_FORM));
    }
    Ok((key.to_string(), value.to_string()))
}

/// Whether `s` names a host between its `scheme://` and its path, as
/// written: the URL parser reads `http:///x` and `http:x` as the host `x`,
/// which would make a secret path a host name, shown in every message.
fn names_a_host(s: &str) -> bool {
    let Some((_, rest)) = s.split_once("://") else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    !host.is_empty() && !host.starts_with(':')
}

/// An http(s) URL with a host; `shown` is how a message may show `s`.
pub(super) fn web_url(s: &str, shown: &str, flag: &str, form: &str) -> Result<Url, UsageError> {
    if values::looks_like_an_option(s) {
        return Err(values::missing_value(flag, s, form));
    }
    // Not a URL, and no secret either: shown as it is.
    let shown = if s.trim_start().starts_with('-') {
        s
    } else {
        shown
    };
    let url = Url::parse(s.trim()).map_err(|_| values::invalid(flag, shown, form))?;
    if !matches!(url.scheme(), "http" | "https") || !names_a_host(s.trim()) {
        return Err(values::invalid(flag, shown, form));
    }
    Ok(url)
}

fn push_url(s: &str, flag: &str) -> Result<Url, UsageError> {
    let url = web_url(s, &mask::address(s), flag, PUSH_FORM)?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(values::invalid(flag, &mask::address(s), PUSH_FORM));
    }
    Ok(url)
}

/// The first line of a file that holds a secret (`--ping-file`,
/// `--metrics-push-password-file`), its line ending removed; a few
/// kilobytes of it at most are read. `flag` names the setting.
fn first_line(flag: &str, path: &Path, form: &str) -> Result<String, UsageError> {
    let fail = |why: String| {
        UsageError(format!(
            "cannot read {flag} {}: {why}; expected {form}",
            path.display()
        ))
    };
    let bytes = crate::fsutil::read_regular(path, SECRET_FILE_MAX)
        .map_err(|e| fail(crate::fsutil::secret_error(&e, path)))?;
    let text = String::from_utf8(bytes).map_err(|_| fail("it is not UTF-8 text".into()))?;
    match text.lines().next() {
        Some(line) if !line.trim().is_empty() => Ok(line.to_string()),
        _ => Err(fail("its first line is empty".into())),
    }
}

/// The push URL with `--metrics-push-password-file`'s password, if given.
/// A password in the URL too is a mistake, unless one of the two comes
/// from the environment: the command line wins.
fn push_password(mut url: Url, cli: &Cli, names: &Names) -> Result<Url, UsageError> {
    let Some(file) = cli.monitor.metrics_push_password_file.as_deref() else {
        return Ok(url);
    };
    let flag = names.of("metrics_push_password_file", "--metrics-push-password-file");
    let file_from_env = names.came_from_env("metrics_push_password_file");
    if url.password().is_some() {
        if file_from_env && !names.came_from_env("metrics_push") {
            return Ok(url);
        }
        if !file_from_env && names.came_from_env("metrics_push") {
            url.set_password(None).ok();
        } else {
            return Err(UsageError(format!(
                "{flag} gives the Pushgateway's password, and the --metrics-push URL has one too: give it in one place"
            )));
        }
    }
    let password = first_line(&flag, file, PASSWORD_FILE_FORM)?;
    url.set_password(Some(&password)).map_err(|()| {
        UsageError(format!(
            "{flag}: the --metrics-push URL cannot carry a password"
        ))
    })?;
    Ok(url)
}

fn ping(cli: &Cli, names: &Names) -> Result<Option<PingOptions>, UsageError> {
    let m = &cli.monitor;
    // One of the two forms; from the command line, it wins over the other
    // from the environment.
    let (url, file) = match (m.ping.as_deref(), m.ping_file.as_deref()) {
        (Some(u), Some(f)) => match (
            names.came_from_env("ping"),
            names.came_from_env("ping_file"),
        ) {
            (true, false) => (None, Some(f)),
            (false, true) => (Some(u), None),
            _ => {
                return Err(UsageError(format!(
                    "{} and {} both give the heartbeat URL: give one of them",
                    names.of("ping", "--ping"),
                    names.of("ping_file", "--ping-file")
                )));
            }
        },
        given => given,
    };
    let url = match (url, file) {
        (Some(s), _) => {
            let flag = names.of("ping", "--ping");
            web_url(s, &mask::url_host_only(&mask::address(s)), &flag, PING_FORM)?
        }
        (None, Some(path)) => {
            let flag = names.of("ping_file", "--ping-file");
            if !names.came_from_env("ping_file") {
                values::path_arg(&flag, path, PING_FILE_FORM)?;
            }
            let s = first_line(&flag, path, PING_FILE_FORM)?;
            let s = s.trim();
            let from = format!("the first line of {flag} {}", path.display());
            web_url(s, &mask::url_host_only(&mask::address(s)), &from, PING_FORM)?
        }
        (None, None) => {
            if m.ping_log {
                return Err(UsageError(
                    "--ping-log sends the run's summary with the final ping: give --ping-file FILE or --ping URL (or RETRY_PING_FILE, RETRY_PING)"
                        .to_string(),
                ));
            }
            return Ok(None);
        }
    };
    Ok(Some(PingOptions {
        url,
        log: m.ping_log,
    }))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::cli::Cli;
    use crate::policy::{Config, Nesting};

    fn metrics(args: &[&str]) -> crate::finish::metrics::MetricsOptions {
        let mut argv = vec!["retry", "--metrics-file", "m.prom"];
        argv.extend_from_slice(args);
        let config = Config::from_cli(Cli::parse_from(argv), Nesting::default()).expect("valid");
        config.finish.metrics.expect("metrics options")
    }

    #[test]
    fn the_job_is_the_flag_the_group_the_command_or_http() {
        assert_eq!(
            metrics(&["--", "/usr/local/bin/backup", "-x"]).job,
            "backup"
        );
        assert_eq!(
            metrics(&["--group", "nightly", "--", "/usr/local/bin/backup"]).job,
            "nightly"
        );
        assert_eq!(
            metrics(&["--metrics-job", "db", "--group", "g", "--", "x"]).job,
            "db"
        );
        assert_eq!(metrics(&["--http", "http://127.0.0.1:1/"]).job, "http");
        assert_eq!(metrics(&["--tcp", "127.0.0.1:1"]).job, "tcp");
        // Each mode names its job by its row, never another mode's.
        assert_eq!(metrics(&["--file", "/run/token"]).job, "file");
        assert_eq!(metrics(&["--grpc", "127.0.0.1:50051"]).job, "grpc");
    }

    #[test]
    fn labels_keep_their_order_and_values_may_hold_anything() {
        let m = metrics(&[
            "--metrics-label",
            "instance=db-1",
            "--metrics-label",
            "path=/var/x=y \"q\"",
            "--",
            "true",
        ]);
        assert_eq!(
            m.labels,
            [
                ("instance".to_string(), "db-1".to_string()),
                ("path".to_string(), "/var/x=y \"q\"".to_string())
            ]
        );
    }
}
