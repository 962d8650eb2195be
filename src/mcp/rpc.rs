//! The JSON-RPC 2.0 envelope: what one POST body is, and how an answer is written back.
//!
//! Knows nothing of eras or tools. It never decides an HTTP status for a protocol error on its own: the era
//! modules pass the status in, because the same code (−32602) is a 200 in the legacy era and a 400 in the
//! modern one.

use crate::http::HttpResponse;
use serde_json::{json, Map, Value};

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
/// 2026-07-28: HTTP headers disagree with the body, or a required header is missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28: the request needs a client capability the client did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// 2026-07-28: the requested protocol version is not served; `data: {supported, requested}`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
pub const INTERNAL_ERROR: i64 = -32603;
/// JSON-RPC's server-defined range (−32000 … −32099), for refusals made before any method runs. MCP names
/// none; −32001 for a refused credential is the number MCP servers conventionally send, and −32003 for a
/// rate limit is the one the session server's contract uses in its tools.
pub const SERVER_ERROR: i64 = -32000;
pub const UNAUTHORIZED: i64 = -32001;
pub const RATE_LIMITED: i64 = -32003;

/// A protocol failure, answered as a JSON-RPC error object. Business failures never take this shape: they
/// are tool results with `isError: true`.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), data: None }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(INVALID_PARAMS, message)
    }

    pub fn header_mismatch(message: impl Into<String>) -> Self {
        Self::new(HEADER_MISMATCH, message)
    }

    pub(super) fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let Some(data) = &self.data {
            error["data"] = data.clone();
        }
        error
    }
}

/// One JSON-RPC request that is owed an answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// A string or an integer, echoed as sent.
    pub id: Value,
    pub method: String,
    /// `params`, or an empty object when absent or `null`.
    pub params: Map<String, Value>,
}

/// What a POST body turned out to be.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A request: answer it.
    Request(Request),
    /// A notification, or a response the client sent back: acknowledge with 202 and no body.
    Accepted,
    /// Not something this endpoint accepts: answer with this error (and the request's id when one could be read).
    Invalid { id: Option<Value>, error: RpcError },
}

/// Reads one POST body. JSON-RPC batches (arrays) were removed from MCP in 2025-06-18, and a stateless
/// endpoint answering one JSON body per POST has no way to answer a batch either, so an array is −32600.
pub fn parse(body: &[u8]) -> Body {
    let value: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return Body::Invalid { id: None, error: RpcError::new(PARSE_ERROR, format!("Parse error: {e}")) },
    };
    let Value::Object(mut object) = value else {
        let what = if value.is_array() { "a batch array (batches are not supported)" } else { "not an object" };
        let message = format!("Invalid Request: the body must be one JSON-RPC request object, got {what}");
        return Body::Invalid { id: None, error: RpcError::new(INVALID_REQUEST, message) };
    };
    let invalid = |id: Option<Value>, message: &str| Body::Invalid {
        id,
        error: RpcError::new(INVALID_REQUEST, format!("Invalid Request: {message}")),
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        let id = object.get("id").filter(|id| valid_id(id)).cloned();
        return invalid(id, "\"jsonrpc\" must be \"2.0\"");
    }
    let method = object.get("method").and_then(Value::as_str).map(str::to_owned);
    let Some(id) = object.remove("id") else {
        // No id: a notification, or an error response whose id could not be read. Neither gets an answer.
        return match (&method, object.contains_key("result") || object.contains_key("error")) {
            (Some(_), _) | (None, true) => Body::Accepted,
            (None, false) => invalid(None, "a message needs a \"method\" or an \"id\""),
        };
    };
    if !valid_id(&id) {
        return invalid(None, "\"id\" must be a string or an integer");
    }
    let Some(method) = method else {
        if object.contains_key("result") || object.contains_key("error") {
            return Body::Accepted;
        }
        return invalid(Some(id), "\"method\" must be a string");
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return invalid(Some(id), "\"params\" must be an object"),
    };
    Body::Request(Request { id, method, params })
}

/// MCP narrows JSON-RPC ids to strings and integers (never `null`).
fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// The id of the request in `body`, when the body is a JSON object with a valid one. Only the `id` member
/// is kept; the rest is skipped over unbuilt.
pub fn request_id(body: &[u8]) -> Option<Value> {
    #[derive(serde::Deserialize)]
    struct IdOnly {
        id: Option<Value>,
    }
    // serde would also read a struct from an array (`[1]`); a request is an object.
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    serde_json::from_slice::<IdOnly>(body).ok()?.id.filter(valid_id)
}

/// The JSON-RPC number of a refusal made before any method runs, from its HTTP status.
pub fn code_for_status(status: u16) -> i64 {
    match status {
        401 => UNAUTHORIZED,
        429 => RATE_LIMITED,
        400..=499 => INVALID_REQUEST,
        500..=599 => INTERNAL_ERROR,
        _ => SERVER_ERROR,
    }
}

/// A 200 with the JSON-RPC result.
pub fn result(id: &Value, result: Value) -> HttpResponse {
    HttpResponse::json(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// A successful answer whose result is already JSON text.
pub fn result_text(id: &Value, result: &str) -> HttpResponse {
    let id = serde_json::to_string(id).unwrap_or_else(|_| "null".into());
    let mut body = String::with_capacity(result.len() + id.len() + 32);
    body.push_str(r#"{"jsonrpc":"2.0","id":"#);
    body.push_str(&id);
    body.push_str(r#","result":"#);
    body.push_str(result);
    body.push('}');
    HttpResponse::new(200).with_header("content-type", "application/json").with_body(body.into_bytes())
}

/// The object `rest` written out with `"key": raw` as its first member; `raw` must be valid JSON.
pub fn splice_first(key: &str, raw: &str, rest: &Value) -> String {
    let rest = rest.to_string();
    let tail = rest.strip_prefix('{').unwrap_or("}");
    let comma = if tail == "}" { "" } else { "," };
    format!("{{{}:{raw}{comma}{tail}", Value::from(key))
}

/// An error answer. `id: None` (the id could not be read) writes `"id": null`, as JSON-RPC 2.0 §5 requires
/// and both MCP schema eras accept; the Python SDK reads an error body only when its `id` member is there.
pub fn error(status: u16, id: Option<&Value>, error: &RpcError) -> HttpResponse {
    HttpResponse::json(status, &json!({"jsonrpc": "2.0", "id": id, "error": error.to_json()}))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid_code(body: &str) -> i64 {
        match parse(body.as_bytes()) {
            Body::Invalid { error, .. } => error.code,
            other => panic!("expected an invalid body, got {other:?}"),
        }
    }

    #[test]
    fn a_request_keeps_its_id_method_and_params() {
        let body = parse(br#"{"jsonrpc":"2.0","id":"a","method":"tools/list","params":{"cursor":"x"}}"#);
        let Body::Request(request) = body else { panic!("not a request") };
        assert_eq!(request.id, json!("a"));
        assert_eq!(request.method, "tools/list");
        assert_eq!(request.params["cursor"], json!("x"));
    }

    #[test]
    fn absent_or_null_params_read_as_an_empty_object() {
        for body in
            [r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":null}"#]
        {
            let Body::Request(request) = parse(body.as_bytes()) else { panic!("not a request") };
            assert!(request.params.is_empty());
        }
    }

    #[test]
    fn broken_json_is_a_parse_error() {
        assert_eq!(invalid_code("{\"jsonrpc\":"), PARSE_ERROR);
    }

    #[test]
    fn batches_and_scalars_are_invalid_requests() {
        assert_eq!(invalid_code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#), INVALID_REQUEST);
        assert_eq!(invalid_code("42"), INVALID_REQUEST);
    }

    #[test]
    fn a_wrong_jsonrpc_version_or_id_type_is_an_invalid_request() {
        assert_eq!(invalid_code(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(invalid_code(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(invalid_code(r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#), INVALID_REQUEST);
        assert_eq!(invalid_code(r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":[1]}"#), INVALID_REQUEST);
        assert_eq!(invalid_code(r#"{"jsonrpc":"2.0","id":1}"#), INVALID_REQUEST);
    }

    #[test]
    fn notifications_and_client_responses_are_accepted_without_an_answer() {
        assert_eq!(parse(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#), Body::Accepted);
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":7,"result":{}}"#), Body::Accepted);
        assert_eq!(parse(br#"{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"no"}}"#), Body::Accepted);
    }

    #[test]
    fn an_error_without_a_readable_id_has_a_null_id() {
        let response = error(400, None, &RpcError::new(PARSE_ERROR, "Parse error"));
        assert_eq!(response.json_body().get("id"), Some(&Value::Null));
        assert_eq!(response.json_body()["error"]["code"], json!(PARSE_ERROR));
    }

    #[test]
    fn the_request_id_is_read_from_any_object_body_that_has_a_valid_one() {
        assert_eq!(request_id(br#"{"method":"x","params":{"id":9},"jsonrpc":"2.0","id":"a"}"#), Some(json!("a")));
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call"}"#), Some(json!(7)));
        for unreadable in [&br#"{"id":null}"#[..], br#"{"id":1.5}"#, br#"{"method":"x"}"#, b"[1]", b"{nope", b""] {
            assert_eq!(request_id(unreadable), None, "{}", String::from_utf8_lossy(unreadable));
        }
    }

    #[test]
    fn a_refusal_is_numbered_by_its_status() {
        assert_eq!(code_for_status(401), UNAUTHORIZED);
        assert_eq!(code_for_status(429), RATE_LIMITED);
        assert_eq!(code_for_status(413), INVALID_REQUEST);
        assert_eq!(code_for_status(503), INTERNAL_ERROR);
    }
}
