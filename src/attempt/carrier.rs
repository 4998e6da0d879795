//! The trace context an attempt hands on: to a command (and the hooks that
//! follow it) as `TRACEPARENT`, `TRACESTATE` and `BAGGAGE` in its
//! environment, to an HTTP probe's server as the `traceparent`,
//! `tracestate` and `baggage` headers.
//!
//! The run's tracing sets it as each attempt starts (each attempt has its
//! own span) and it stays until the next one, so a hook sees the attempt it
//! follows. Unset (no context to hand on, or `--trace-context off`), the
//! children get retry's environment as it is and requests no header.
//! One thread runs the attempts; the context is that thread's.

use std::cell::RefCell;

use reqwest::header::{HeaderMap, HeaderValue};

/// What one attempt hands on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Carrier {
    /// The attempt's span, as a version 00 `traceparent`.
    pub traceparent: String,
    /// Passed on unchanged; None when there is none to pass on.
    pub tracestate: Option<String>,
    pub baggage: Option<String>,
}

thread_local! {
    static CURRENT: RefCell<Option<Carrier>> = const { RefCell::new(None) };
}

/// Sets the context the next children get.
pub fn set(carrier: Option<Carrier>) {
    CURRENT.with(|c| *c.borrow_mut() = carrier);
}

/// The variables a child gets on top of retry's environment. A value
/// retry does not pass on, but was given, is handed on empty (which the
/// carrier reads as unset), so that it cannot be taken for the new
/// parent's.
pub fn env() -> Vec<(&'static str, String)> {
    CURRENT.with(|c| {
        let Some(carrier) = &*c.borrow() else {
            return Vec::new();
        };
        let mut env = vec![("TRACEPARENT", carrier.traceparent.clone())];
        for (name, value) in [
            ("TRACESTATE", &carrier.tracestate),
            ("BAGGAGE", &carrier.baggage),
        ] {
            match value {
                Some(v) => env.push((name, v.clone())),
                None if std::env::var_os(name).is_some() => env.push((name, String::new())),
                None => {}
            }
        }
        env
    })
}

/// Adds the headers to a request's, unless the request sets them itself
/// (`-H traceparent: ...` is the user's choice).
pub fn add_headers(headers: &mut HeaderMap) {
    CURRENT.with(|c| {
        let Some(carrier) = &*c.borrow() else {
            return;
        };
        for (name, value) in [
            ("traceparent", Some(&carrier.traceparent)),
            ("tracestate", carrier.tracestate.as_ref()),
            ("baggage", carrier.baggage.as_ref()),
        ] {
            // The values were checked to be printable ASCII.
            if let Some(v) = value.and_then(|v| HeaderValue::from_str(v).ok())
                && !headers.contains_key(name)
            {
                headers.insert(name, v);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_handed_on_until_a_context_is_set() {
        set(None);
        assert!(env().is_empty());
        let mut headers = HeaderMap::new();
        add_headers(&mut headers);
        assert!(headers.is_empty());
        set(Some(Carrier {
            traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into(),
            tracestate: Some("a=1".into()),
            baggage: None,
        }));
        let env = env();
        assert_eq!(env[0].0, "TRACEPARENT");
        assert_eq!(env[1], ("TRACESTATE", "a=1".to_string()));
        let mut headers = HeaderMap::new();
        headers.insert("tracestate", HeaderValue::from_static("mine=1"));
        add_headers(&mut headers);
        assert_eq!(headers["traceparent"], env[0].1.as_str());
        assert_eq!(headers["tracestate"], "mine=1");
        assert!(!headers.contains_key("baggage"));
        set(None);
    }
}
