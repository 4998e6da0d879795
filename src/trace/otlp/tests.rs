use super::*;
use crate::trace::context::{SpanContext, SpanId, TraceId};
use crate::trace::span::SpanEvent;
use std::time::Duration;

fn sample() -> Span {
    Span {
        ctx: SpanContext {
            trace_id: TraceId([0xab; 16]),
            span_id: SpanId([0xcd; 8]),
            flags: 1,
        },
        parent: Some(SpanId([0xef; 8])),
        tracestate: Some("a=1".into()),
        name: "attempt 1".into(),
        kind: Kind::Client,
        start: UNIX_EPOCH + Duration::from_nanos(1_000_000_001),
        end: UNIX_EPOCH + Duration::from_nanos(2_000_000_002),
        attrs: vec![
            ("retry.attempt", Value::Int(1)),
            ("retry.wait", Value::Double(0.5)),
            ("process.command_args", Value::StrList(vec!["sh".into()])),
        ],
        events: vec![SpanEvent {
            name: "retry.wait",
            at: UNIX_EPOCH + Duration::from_nanos(3),
            attrs: vec![],
        }],
        status: SpanStatus::Error("exit 1".into()),
    }
}

#[test]
fn spans_decode_back_as_sent() {
    let origin = Origin {
        service: "deploy",
        resource: &[("deployment.environment".into(), "prod".into())],
    };
    let body = encode(&[sample()], &origin);
    let request = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
    let rs = &request.resource_spans[0];
    let resource = &rs.resource.as_ref().unwrap().attributes;
    assert_eq!(resource[0].key, "service.name");
    assert_eq!(
        resource[0].value,
        Some(AnyValue {
            value: Some(AnyKind::String("deploy".into()))
        })
    );
    assert_eq!(resource[1].key, "deployment.environment");
    let span = &rs.scope_spans[0].spans[0];
    assert_eq!(span.trace_id, vec![0xab; 16]);
    assert_eq!(span.parent_span_id, vec![0xef; 8]);
    assert_eq!(span.trace_state, "a=1");
    assert_eq!(span.kind, 3);
    assert_eq!(span.start_time_unix_nano, 1_000_000_001);
    assert_eq!(span.end_time_unix_nano, 2_000_000_002);
    assert_eq!(span.status.as_ref().unwrap().code, 2);
    assert_eq!(span.events[0].time_unix_nano, 3);
    assert_eq!(span.flags, 1);
    assert_eq!(span.attributes.len(), 3);
}

#[test]
fn field_numbers_are_the_proto_files() {
    // Checked on the wire, not through the same declarations: fixed64
    // start time is field 7 (key 0x39), the span's flags fixed32 field 16
    // (key 0x85 0x01), the trace id bytes field 1 of 16 bytes (0x0a 0x10).
    let span = span(&sample());
    let bytes = span.encode_to_vec();
    let find = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    assert!(find(&[0x0a, 0x10, 0xab, 0xab]));
    assert!(find(&[0x39, 0x01, 0xca, 0x9a, 0x3b, 0, 0, 0, 0]));
    assert!(find(&[0x85, 0x01, 1, 0, 0, 0]));
    assert!(find(&[0x22, 0x08, 0xef]));
}

#[test]
fn the_json_form_has_hex_ids_and_integers_as_strings() {
    let origin = Origin {
        service: "deploy",
        resource: &[],
    };
    let body = encode_json(&[sample()], &origin);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    let rs = &v["resourceSpans"][0];
    assert_eq!(
        rs["resource"]["attributes"][0],
        serde_json::json!({"key": "service.name", "value": {"stringValue": "deploy"}})
    );
    let span = &rs["scopeSpans"][0]["spans"][0];
    assert_eq!(span["traceId"], "ab".repeat(16));
    assert_eq!(span["spanId"], "cd".repeat(8));
    assert_eq!(span["parentSpanId"], "ef".repeat(8));
    assert_eq!(span["startTimeUnixNano"], "1000000001");
    assert_eq!(span["kind"], 3);
    assert_eq!(span["flags"], 1);
    assert_eq!(span["status"]["code"], 2);
    assert_eq!(
        span["attributes"][0]["value"],
        serde_json::json!({"intValue": "1"})
    );
    assert_eq!(
        span["attributes"][1]["value"],
        serde_json::json!({"doubleValue": 0.5})
    );
    assert_eq!(
        span["attributes"][2]["value"],
        serde_json::json!({"arrayValue": {"values": [{"stringValue": "sh"}]}})
    );
    assert_eq!(span["events"][0]["timeUnixNano"], "3");
}
