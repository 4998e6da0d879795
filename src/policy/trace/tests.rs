use super::*;
use clap::Parser;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// The tracing options of `retry ARGS -- true` with `vars` as the environment.
fn opts(args: &[&str], vars: &[(&str, &str)]) -> Result<TraceOptions, UsageError> {
    let mut argv = vec!["retry"];
    argv.extend_from_slice(args);
    argv.extend(["--", "true"]);
    let cli = Cli::parse_from(argv);
    let env = |name: &str| {
        vars.iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.to_string())
    };
    options(&cli, true, &env)
}

fn url(o: &TraceOptions) -> Option<String> {
    o.export.as_ref().map(|e| e.url.to_string())
}

#[test]
fn nothing_set_keeps_no_trace() {
    let o = opts(&[], &[]).unwrap();
    assert!(!o.active());
    assert!(o.hand_on);
    assert!(o.warnings.is_empty());
}

#[test]
fn an_incoming_context_is_handed_on_without_an_export() {
    let o = opts(&[], &[("TRACEPARENT", TP)]).unwrap();
    assert!(o.active());
    assert_eq!(o.export, None);
    let off = opts(&["--trace-context", "off"], &[("TRACEPARENT", TP)]).unwrap();
    assert!(!off.active());
}

#[test]
fn the_endpoint_comes_from_the_flag_then_the_variables() {
    let base = [("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318/")];
    assert_eq!(
        url(&opts(&[], &base).unwrap()).as_deref(),
        Some("http://collector:4318/v1/traces")
    );
    let traces = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://collector:4318"),
        (
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://other:4318/custom",
        ),
    ];
    assert_eq!(
        url(&opts(&[], &traces).unwrap()).as_deref(),
        Some("http://other:4318/custom")
    );
    let flag = opts(&["--otlp-endpoint", "https://x:4318"], &traces).unwrap();
    assert_eq!(url(&flag).as_deref(), Some("https://x:4318/v1/traces"));
    let with_path = opts(&["--otlp-endpoint", "http://x/otlp/v1/traces"], &[]).unwrap();
    assert_eq!(url(&with_path).as_deref(), Some("http://x/otlp/v1/traces"));
    // OTEL_TRACES_EXPORTER=otlp alone: the OTLP default.
    let named = opts(&[], &[("OTEL_TRACES_EXPORTER", "otlp")]).unwrap();
    assert_eq!(
        url(&named).as_deref(),
        Some("http://localhost:4318/v1/traces")
    );
}

#[test]
fn the_sdk_switches_turn_the_export_off() {
    for off in [
        [
            ("OTEL_SDK_DISABLED", "TRUE"),
            ("OTEL_TRACES_EXPORTER", "otlp"),
        ],
        [
            ("OTEL_SDK_DISABLED", "false"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ],
    ] {
        let o = opts(&["--otlp-endpoint", "http://x"], &off).unwrap();
        assert_eq!(o.export, None, "{off:?}");
        assert!(o.warnings.is_empty());
    }
}

#[test]
fn what_an_sdk_would_ignore_is_one_warning_and_no_export() {
    for (vars, warning) in [
        (
            vec![
                ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://x"),
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ],
            "OTLP protocol grpc: retry sends http/protobuf or http/json; no spans are exported",
        ),
        (
            vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")],
            "OTEL_EXPORTER_OTLP_ENDPOINT is not an http:// or https:// URL: no spans are exported",
        ),
        (
            vec![("OTEL_TRACES_EXPORTER", "zipkin")],
            "OTEL_TRACES_EXPORTER=zipkin: retry exports only otlp; no spans are exported",
        ),
    ] {
        let o = opts(&[], &vars).unwrap();
        assert_eq!(o.export, None);
        assert_eq!(o.warnings, [warning]);
    }
}

#[test]
fn headers_resource_and_service_are_read_as_the_sdks_read_them() {
    let o = opts(
        &["--otlp-endpoint", "http://x"],
        &[
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20s3cret, x-tenant = a",
            ),
            (
                "OTEL_RESOURCE_ATTRIBUTES",
                "service.name=from-attrs,deployment.environment=prod",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "2500"),
        ],
    )
    .unwrap();
    let e = o.export.unwrap();
    assert_eq!(
        e.headers,
        [
            ("Authorization".to_string(), "Bearer s3cret".to_string()),
            ("x-tenant".to_string(), "a".to_string())
        ]
    );
    assert_eq!(e.service, "from-attrs");
    assert_eq!(
        e.resource,
        [("deployment.environment".to_string(), "prod".to_string())]
    );
    assert_eq!(e.timeout, std::time::Duration::from_millis(2500));
    assert!(!e.json);
    let json = opts(
        &["--otlp-endpoint", "http://x"],
        &[
            ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ],
    )
    .unwrap();
    assert!(json.export.unwrap().json);
    let named = opts(
        &["--otlp-endpoint", "http://x"],
        &[
            ("OTEL_SERVICE_NAME", "deploy"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "novalue"),
        ],
    )
    .unwrap();
    assert_eq!(named.export.as_ref().unwrap().service, "deploy");
    assert_eq!(
        named.warnings,
        ["OTEL_EXPORTER_OTLP_HEADERS is not a list of key=value pairs: its headers are not sent"]
    );
    let bad = opts(
        &["--otlp-endpoint", "http://x"],
        &[("OTEL_EXPORTER_OTLP_HEADERS", "a b=1")],
    )
    .unwrap();
    assert!(bad.export.unwrap().headers.is_empty());
    assert_eq!(bad.warnings.len(), 1);
    let default = opts(&["--otlp-endpoint", "http://x"], &[]).unwrap();
    assert_eq!(default.export.unwrap().service, "retry");
}

#[test]
fn a_bad_flag_is_a_usage_error_and_the_url_is_masked_in_it() {
    assert_eq!(
        opts(&["--trace-context", "maybe"], &[]).unwrap_err().0,
        "invalid value 'maybe' for --trace-context: expected on or off"
    );
    let e = opts(&["--otlp-endpoint", "ftp://u:hunter2@x"], &[])
        .unwrap_err()
        .0;
    assert!(
        e.starts_with("invalid value 'ftp://u:***@x' for --otlp-endpoint"),
        "{e}"
    );
    let shown = opts(&["--otlp-endpoint", "http://u:hunter2@x"], &[]).unwrap();
    assert!(!shown.export.unwrap().shown.contains("hunter2"));
}

#[test]
fn the_receivers_ca_comes_from_the_traces_variable_then_the_general_one() {
    let cert = |vars: &[(&str, &str)]| {
        let mut all = vec![("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318")];
        all.extend_from_slice(vars);
        opts(&[], &all)
            .unwrap()
            .export
            .and_then(|e| e.certificate)
            .map(|(name, file)| (name, file.display().to_string()))
    };
    assert_eq!(cert(&[]), None);
    assert_eq!(
        cert(&[("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem")]),
        Some(("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem".into()))
    );
    assert_eq!(
        cert(&[
            ("OTEL_EXPORTER_OTLP_CERTIFICATE", "/etc/ca.pem"),
            (
                "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
                "/etc/traces-ca.pem"
            ),
        ]),
        Some((
            "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
            "/etc/traces-ca.pem".into()
        ))
    );
}
