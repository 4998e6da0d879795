//! Spans as OTLP's `ExportTraceServiceRequest`, in protobuf (the
//! `http/protobuf` protocol): the few messages of
//! `opentelemetry/proto/collector/trace/v1` and what they use, declared
//! with prost's derive, field numbers as the `.proto` files give them. The
//! same request in OTLP's JSON (`http/json`): field names in lower camel
//! case, ids in hex, 64-bit integers as strings.
//!
//! Pure: spans in, bytes out.

use std::time::{SystemTime, UNIX_EPOCH};

use prost::Message;

use super::span::{Kind, Span, SpanStatus, Value};

#[derive(Clone, PartialEq, Message)]
pub struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    pub resource_spans: Vec<ResourceSpans>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    pub scope_spans: Vec<ScopeSpans>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Resource {
    #[prost(message, repeated, tag = "1")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ScopeSpans {
    #[prost(message, optional, tag = "1")]
    pub scope: Option<InstrumentationScope>,
    #[prost(message, repeated, tag = "2")]
    pub spans: Vec<OtlpSpan>,
}

#[derive(Clone, PartialEq, Message)]
pub struct InstrumentationScope {
    #[prost(string, tag = "1")]
    pub name: String,
    #[prost(string, tag = "2")]
    pub version: String,
}

#[derive(Clone, PartialEq, Message)]
pub struct OtlpSpan {
    #[prost(bytes = "vec", tag = "1")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    pub span_id: Vec<u8>,
    #[prost(string, tag = "3")]
    pub trace_state: String,
    #[prost(bytes = "vec", tag = "4")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    pub name: String,
    /// 1 internal, 3 client.
    #[prost(int32, tag = "6")]
    pub kind: i32,
    #[prost(fixed64, tag = "7")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    pub attributes: Vec<KeyValue>,
    #[prost(message, repeated, tag = "11")]
    pub events: Vec<Event>,
    #[prost(message, optional, tag = "15")]
    pub status: Option<Status>,
    /// The W3C trace flags in the low byte.
    #[prost(fixed32, tag = "16")]
    pub flags: u32,
}

#[derive(Clone, PartialEq, Message)]
pub struct Event {
    #[prost(fixed64, tag = "1")]
    pub time_unix_nano: u64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(message, repeated, tag = "3")]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct Status {
    #[prost(string, tag = "2")]
    pub message: String,
    /// 0 unset, 1 ok, 2 error.
    #[prost(int32, tag = "3")]
    pub code: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct KeyValue {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    pub value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, Message)]
pub struct AnyValue {
    #[prost(oneof = "AnyKind", tags = "1, 3, 4, 5")]
    pub value: Option<AnyKind>,
}

#[derive(Clone, PartialEq, prost::Oneof)]
pub enum AnyKind {
    #[prost(string, tag = "1")]
    String(String),
    #[prost(int64, tag = "3")]
    Int(i64),
    #[prost(double, tag = "4")]
    Double(f64),
    #[prost(message, tag = "5")]
    Array(ArrayValue),
}

#[derive(Clone, PartialEq, Message)]
pub struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    pub values: Vec<AnyValue>,
}

/// The resource and scope the spans are sent under.
pub struct Origin<'a> {
    pub service: &'a str,
    pub resource: &'a [(String, String)],
}

/// The request body for `spans`.
pub fn encode(spans: &[Span], origin: &Origin<'_>) -> Vec<u8> {
    request(spans, origin).encode_to_vec()
}

fn request(spans: &[Span], origin: &Origin<'_>) -> ExportTraceServiceRequest {
    let mut resource = vec![string("service.name", origin.service)];
    resource.extend(origin.resource.iter().map(|(k, v)| string(k, v)));
    resource.push(string("telemetry.sdk.name", "retry"));
    resource.push(string("telemetry.sdk.language", "rust"));
    resource.push(string("telemetry.sdk.version", env!("CARGO_PKG_VERSION")));
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: resource,
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: "retry".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans: spans.iter().map(span).collect(),
            }],
        }],
    }
}

/// The request body for `spans` in OTLP/JSON.
pub fn encode_json(spans: &[Span], origin: &Origin<'_>) -> Vec<u8> {
    use serde_json::{Value as J, json};
    let attrs = |list: &[KeyValue]| -> J {
        list.iter()
            .map(|kv| json!({ "key": kv.key, "value": kv.value.as_ref().map(any_json) }))
            .collect()
    };
    let request = request(spans, origin);
    let hex = super::context::hex;
    let body: Vec<J> = request
        .resource_spans
        .iter()
        .map(|rs| {
            let scopes: Vec<J> = rs
                .scope_spans
                .iter()
                .map(|ss| {
                    let scope = ss.scope.clone().unwrap_or_default();
                    let spans: Vec<J> = ss
                        .spans
                        .iter()
                        .map(|s| {
                            json!({
                                "traceId": hex(&s.trace_id),
                                "spanId": hex(&s.span_id),
                                "traceState": s.trace_state,
                                "parentSpanId": hex(&s.parent_span_id),
                                "flags": s.flags,
                                "name": s.name,
                                "kind": s.kind,
                                "startTimeUnixNano": s.start_time_unix_nano.to_string(),
                                "endTimeUnixNano": s.end_time_unix_nano.to_string(),
                                "attributes": attrs(&s.attributes),
                                "events": s.events.iter().map(|e| json!({
                                    "timeUnixNano": e.time_unix_nano.to_string(),
                                    "name": e.name,
                                    "attributes": attrs(&e.attributes),
                                })).collect::<Vec<_>>(),
                                "status": s.status.as_ref().map_or(json!({}), |st| {
                                    json!({ "message": st.message, "code": st.code })
                                }),
                            })
                        })
                        .collect();
                    json!({ "scope": { "name": scope.name, "version": scope.version }, "spans": spans })
                })
                .collect();
            let resource = rs.resource.clone().unwrap_or_default();
            json!({ "resource": { "attributes": attrs(&resource.attributes) }, "scopeSpans": scopes })
        })
        .collect();
    serde_json::to_vec(&json!({ "resourceSpans": body })).unwrap_or_default()
}

/// An attribute's value in OTLP/JSON.
fn any_json(v: &AnyValue) -> serde_json::Value {
    use serde_json::json;
    match &v.value {
        Some(AnyKind::String(s)) => json!({ "stringValue": s }),
        Some(AnyKind::Int(i)) => json!({ "intValue": i.to_string() }),
        Some(AnyKind::Double(d)) => json!({ "doubleValue": d }),
        Some(AnyKind::Array(a)) => {
            json!({ "arrayValue": { "values": a.values.iter().map(any_json).collect::<Vec<_>>() } })
        }
        None => json!({}),
    }
}

fn span(s: &Span) -> OtlpSpan {
    OtlpSpan {
        trace_id: s.ctx.trace_id.0.to_vec(),
        span_id: s.ctx.span_id.0.to_vec(),
        trace_state: s.tracestate.clone().unwrap_or_default(),
        parent_span_id: s.parent.map(|p| p.0.to_vec()).unwrap_or_default(),
        name: s.name.clone(),
        kind: match s.kind {
            Kind::Internal => 1,
            Kind::Client => 3,
        },
        start_time_unix_nano: nanos(s.start),
        end_time_unix_nano: nanos(s.end),
        attributes: s.attrs.iter().map(|(k, v)| key_value(k, v)).collect(),
        events: s
            .events
            .iter()
            .map(|e| Event {
                time_unix_nano: nanos(e.at),
                name: e.name.into(),
                attributes: e.attrs.iter().map(|(k, v)| key_value(k, v)).collect(),
            })
            .collect(),
        status: match &s.status {
            SpanStatus::Unset => None,
            SpanStatus::Error(message) => Some(Status {
                message: message.clone(),
                code: 2,
            }),
        },
        flags: u32::from(s.ctx.flags),
    }
}

fn nanos(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

fn string(key: &str, value: &str) -> KeyValue {
    key_value(key, &Value::Str(value.to_string()))
}

fn key_value(key: &str, value: &Value) -> KeyValue {
    let kind = match value {
        Value::Str(s) => AnyKind::String(s.clone()),
        Value::Int(i) => AnyKind::Int(*i),
        Value::Double(d) => AnyKind::Double(*d),
        Value::StrList(list) => AnyKind::Array(ArrayValue {
            values: list
                .iter()
                .map(|s| AnyValue {
                    value: Some(AnyKind::String(s.clone())),
                })
                .collect(),
        }),
    };
    KeyValue {
        key: key.to_string(),
        value: Some(AnyValue { value: Some(kind) }),
    }
}

#[cfg(test)]
#[path = "otlp/tests.rs"]
mod tests;
