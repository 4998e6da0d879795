//! Tracing's settings: the context retry was handed (`TRACEPARENT`,
//! `TRACESTATE`, `BAGGAGE`), `--trace-context`, and the export, from
//! `--otlp-endpoint` or OpenTelemetry's own variables, read as its SDKs
//! read them.
//!
//! A flag's bad value is a usage error. A bad `OTEL_*` value or incoming
//! context is what an SDK would make of it: a warning (logged once the
//! run starts) and no export, never an error, since those variables are
//! set for every program in a pipeline and retry is only one of them.

use reqwest::Url;

use super::values::UsageError;
use crate::cli::Cli;
use crate::finish::trace::{ExportOptions, TraceOptions};
use crate::mask;
use crate::trace::context;

const ENDPOINT_FORM: &str = "the http:// or https:// URL of an OTLP/HTTP receiver, such as http://localhost:4318 (retry adds /v1/traces)";
const CONTEXT_FORM: &str = "on or off";
/// OTLP's default for a receiver over HTTP.
const DEFAULT_ENDPOINT: &str = "http://localhost:4318/v1/traces";
/// The longest `OTEL_EXPORTER_OTLP_TIMEOUT` honoured is the reports' bound.
const DEFAULT_TIMEOUT_MS: u64 = 10_000;

/// The tracing options, the environment read through `env`; none for a
/// mode that runs nothing (`runs` false: --simulate, --state-show).
pub(super) fn options(
    cli: &Cli,
    runs: bool,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<TraceOptions, UsageError> {
    let hand_on = match cli.monitor.trace_context.as_deref() {
        None | Some("on") => true,
        Some("off") => false,
        Some(other) => {
            return Err(super::values::invalid(
                "--trace-context",
                other,
                CONTEXT_FORM,
            ));
        }
    };
    let flag_url = cli
        .monitor
        .otlp_endpoint
        .as_deref()
        .map(|s| {
            let url = super::monitor::web_url(s, &mask::url(s), "--otlp-endpoint", ENDPOINT_FORM)?;
            Ok::<_, UsageError>(traces_url(url, true))
        })
        .transpose()?;
    if !runs {
        return Ok(TraceOptions::default());
    }
    let got = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let incoming = context::incoming(
        got("TRACEPARENT").as_deref(),
        got("TRACESTATE").as_deref(),
        got("BAGGAGE").as_deref(),
    );
    let mut warnings = incoming.warnings.clone();
    let export = export(flag_url, &got, &mut warnings);
    Ok(TraceOptions {
        incoming,
        hand_on,
        export,
        warnings,
    })
}

/// An endpoint's traces URL: `/v1/traces` added to a base (a flag's URL
/// with no path of its own, or `OTEL_EXPORTER_OTLP_ENDPOINT`).
fn traces_url(mut url: Url, only_if_bare: bool) -> Url {
    if only_if_bare && !matches!(url.path(), "" | "/") {
        return url;
    }
    let path = format!("{}/v1/traces", url.path().trim_end_matches('/'));
    url.set_path(&path);
    url
}

/// The export the flag or the variables ask for, if any.
fn export(
    flag_url: Option<Url>,
    env: &dyn Fn(&str) -> Option<String>,
    warnings: &mut Vec<String>,
) -> Option<ExportOptions> {
    let is_true = |name: &str| env(name).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    if is_true("OTEL_SDK_DISABLED") {
        return None;
    }
    let exporters = env("OTEL_TRACES_EXPORTER").map(|v| v.to_ascii_lowercase());
    let named_otlp = match exporters.as_deref() {
        None => false,
        Some(list) => {
            let list: Vec<&str> = list.split(',').map(str::trim).collect();
            if list.contains(&"none") {
                return None;
            }
            if !list.contains(&"otlp") {
                warnings.push(format!(
                    "OTEL_TRACES_EXPORTER={}: retry exports only otlp; no spans are exported",
                    crate::human::escape_controls(&list.join(","))
                ));
                return None;
            }
            true
        }
    };
    let url = if let Some(url) = flag_url {
        url
    } else if let Some(v) = env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
        env_url(&v, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", warnings)?
    } else if let Some(v) = env("OTEL_EXPORTER_OTLP_ENDPOINT") {
        traces_url(env_url(&v, "OTEL_EXPORTER_OTLP_ENDPOINT", warnings)?, false)
    } else if named_otlp {
        Url::parse(DEFAULT_ENDPOINT).ok()?
    } else {
        // Nothing asks for an export: the variables that only tune one
        // are left alone.
        return None;
    };
    let protocol = env("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        .or_else(|| env("OTEL_EXPORTER_OTLP_PROTOCOL"))
        .map(|p| p.trim().to_ascii_lowercase());
    let json = match protocol.as_deref() {
        None | Some("http/protobuf") => false,
        Some("http/json") => true,
        Some(other) => {
            warnings.push(format!(
                "OTLP protocol {}: retry sends http/protobuf or http/json; no spans are exported",
                crate::human::escape_controls(other)
            ));
            return None;
        }
    };
    let mut headers = Vec::new();
    for name in [
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    ] {
        if let Some(v) = env(name) {
            match pairs(&v) {
                Ok(list) if list.iter().all(|(k, v)| is_header(k, v)) => headers.extend(list),
                Ok(_) => warnings.push(format!(
                    "{name} holds a name or value a header cannot carry: its headers are not sent"
                )),
                Err(()) => warnings.push(format!(
                    "{name} is not a list of key=value pairs: its headers are not sent"
                )),
            }
        }
    }
    let mut resource = match env("OTEL_RESOURCE_ATTRIBUTES").map(|v| pairs(&v)) {
        Some(Ok(list)) => list,
        Some(Err(())) => {
            warnings.push(
                "OTEL_RESOURCE_ATTRIBUTES is not a list of key=value pairs: ignored".to_string(),
            );
            Vec::new()
        }
        None => Vec::new(),
    };
    let service = env("OTEL_SERVICE_NAME")
        .filter(|s| !s.trim().is_empty())
        .or_else(|| {
            resource
                .iter()
                .find(|(k, _)| k == "service.name")
                .map(|(_, v)| v.clone())
        })
        .unwrap_or_else(|| "retry".to_string());
    resource.retain(|(k, _)| k != "service.name");
    let timeout_ms = env("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT")
        .or_else(|| env("OTEL_EXPORTER_OTLP_TIMEOUT"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .unwrap_or(DEFAULT_TIMEOUT_MS);
    // The CA of a receiver with a private certificate, read when the
    // export's client is made.
    let certificate = [
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
    ]
    .into_iter()
    .find_map(|name| env(name).map(|v| (name, std::path::PathBuf::from(v.trim()))));
    Some(ExportOptions {
        certificate,
        shown: mask::url(url.as_str()),
        url,
        headers,
        service,
        resource,
        timeout: std::time::Duration::from_millis(timeout_ms),
        json,
    })
}

/// A URL from an `OTEL_*` variable; a warning and no export when it is not
/// one retry can send to.
fn env_url(value: &str, name: &str, warnings: &mut Vec<String>) -> Option<Url> {
    match Url::parse(value.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host_str().is_some() => {
            Some(url)
        }
        _ => {
            warnings.push(format!(
                "{name} is not an http:// or https:// URL: no spans are exported"
            ));
            None
        }
    }
}

fn is_header(name: &str, value: &str) -> bool {
    reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
        && reqwest::header::HeaderValue::from_str(value).is_ok()
}

/// `key=value,key2=value2` as the OpenTelemetry variables write them:
/// values percent-decoded, spaces around each part dropped.
fn pairs(list: &str) -> Result<Vec<(String, String)>, ()> {
    let mut out = Vec::new();
    for item in list.split(',') {
        if item.trim().is_empty() {
            continue;
        }
        let (k, v) = item.split_once('=').ok_or(())?;
        let key = k.trim();
        if key.is_empty() {
            return Err(());
        }
        let value = percent_encoding::percent_decode_str(v.trim())
            .decode_utf8()
            .map_err(|_| ())?;
        out.push((key.to_string(), value.into_owned()));
    }
    Ok(out)
}

#[cfg(test)]
#[path = "trace/tests.rs"]
mod tests;
