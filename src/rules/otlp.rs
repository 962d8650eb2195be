//! Spans as OpenTelemetry's OTLP/HTTP JSON encoding (`ExportTraceServiceRequest`): what a workspace's
//! trace endpoint receives for each turn step.

use serde_json::{json, Value};

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    Str(String),
    Int(i64),
    Float(f64),
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct Span {
    pub trace_id: String,
    pub span_id: String,
    /// Empty for a root span.
    pub parent_span_id: String,
    pub name: String,
    /// OTLP's `SpanKind`: 1 internal, 2 server, 3 client.
    pub kind: u8,
    pub start_ms: i64,
    pub end_ms: i64,
    pub attributes: Vec<(String, Attr)>,
    /// Set when the span failed: its status message.
    pub error: Option<String>,
}

impl Span {
    pub fn attr(mut self, key: &str, value: Attr) -> Self {
        self.attributes.push((key.to_owned(), value));
        self
    }
}

fn attr(key: &str, value: &Attr) -> Value {
    let value = match value {
        Attr::Str(s) => json!({ "stringValue": s }),
        // OTLP/JSON writes 64-bit integers as strings.
        Attr::Int(i) => json!({ "intValue": i.to_string() }),
        Attr::Float(f) => json!({ "doubleValue": f }),
    };
    json!({ "key": key, "value": value })
}

fn nanos(ms: i64) -> String {
    (i128::from(ms) * 1_000_000).to_string()
}

/// The export request for `spans`, from service `service` at `version`.
pub fn export(service: &str, version: &str, spans: &[Span]) -> Value {
    let spans: Vec<Value> = spans
        .iter()
        .map(|s| {
            let mut span = json!({
                "traceId": s.trace_id,
                "spanId": s.span_id,
                "name": s.name,
                "kind": s.kind,
                "startTimeUnixNano": nanos(s.start_ms),
                "endTimeUnixNano": nanos(s.end_ms.max(s.start_ms)),
                "attributes": s.attributes.iter().map(|(k, v)| attr(k, v)).collect::<Vec<_>>(),
                "status": match &s.error {
                    Some(message) => json!({ "code": 2, "message": message }),
                    None => json!({ "code": 1 }),
                },
            });
            if !s.parent_span_id.is_empty() {
                span["parentSpanId"] = json!(s.parent_span_id);
            }
            span
        })
        .collect();
    json!({
        "resourceSpans": [{
            "resource": { "attributes": [attr("service.name", &Attr::Str(service.into())), attr("service.version", &Attr::Str(version.into()))] },
            "scopeSpans": [{ "scope": { "name": service, "version": version }, "spans": spans }],
        }]
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_ids_times_and_attributes_as_otlp_json() {
        let s = Span {
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
            span_id: "00f067aa0ba902b7".into(),
            parent_span_id: String::new(),
            name: "turn".into(),
            kind: 1,
            start_ms: 1_700_000_000_000,
            end_ms: 1_700_000_000_250,
            attributes: vec![],
            error: None,
        }
        .attr("gen_ai.usage.input_tokens", Attr::Int(12))
        .attr("agentsky.cost_usd", Attr::Float(0.5));
        let child = Span {
            span_id: "1111111111111111".into(),
            parent_span_id: s.span_id.clone(),
            name: "chat gpt".into(),
            error: Some("HTTP 500".into()),
            ..s.clone()
        };
        let v = export("agentsky", "1.0.0", &[s, child]);
        let spans = &v["resourceSpans"][0]["scopeSpans"][0]["spans"];
        assert_eq!(spans[0]["startTimeUnixNano"], "1700000000000000000");
        assert_eq!(spans[0]["endTimeUnixNano"], "1700000000250000000");
        assert!(spans[0].get("parentSpanId").is_none());
        assert_eq!(spans[0]["attributes"][0], json!({"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}}));
        assert_eq!(spans[0]["attributes"][1]["value"]["doubleValue"], 0.5);
        assert_eq!(spans[1]["parentSpanId"], "00f067aa0ba902b7");
        assert_eq!(spans[1]["status"], json!({"code": 2, "message": "HTTP 500"}));
        assert_eq!(v["resourceSpans"][0]["resource"]["attributes"][0]["value"]["stringValue"], "agentsky");
    }
}
