//! HTTP headers the MCP transport reads: Origin/Host (DNS-rebinding protection) and the 2026-07-28
//! mirrored headers (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`, SEP-2243).
//!
//! Header names arrive lower-case. Values are compared after trimming optional whitespace (RFC 9110 §5.5);
//! values themselves are case-sensitive. This module only judges headers; it never reads a tool's arguments
//! beyond the properties a tool's schema marks with `x-mcp-header`.

use super::rpc::RpcError;
use super::ServerSpec;
use crate::http::HttpRequest;
use base64::Engine as _;
use serde_json::{Map, Value};

pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
pub const METHOD: &str = "mcp-method";
pub const NAME: &str = "mcp-name";
const PARAM_PREFIX: &str = "mcp-param-";

/// The one value of a header, trimmed; `Err` when the header was sent more than once (first-copy and
/// last-copy readers would disagree, so a routing header must be unique).
pub fn single<'r>(req: &'r HttpRequest, name: &str) -> Result<Option<&'r str>, RpcError> {
    let mut values = req.headers.iter().filter(|(k, _)| k == name).map(|(_, v)| v.trim());
    let first = values.next();
    if values.next().is_some() {
        return Err(RpcError::header_mismatch(format!("Header mismatch: {name} header appears more than once")));
    }
    Ok(first)
}

/// Why a request from a browser page or through a rebinding DNS name is refused, if it is.
///
/// An absent `Origin` is accepted (non-browser clients send none). A present one must be listed exactly
/// (scheme, host, port; ASCII case-insensitive). `Host` is checked only when `allowed_hosts` is non-empty.
pub fn refusal(spec: &ServerSpec, req: &HttpRequest) -> Option<String> {
    if let Some(origin) = req.header("origin").map(str::trim) {
        let origin = origin.trim_end_matches('/');
        let allowed = spec.allowed_origins.iter().any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin));
        if !allowed {
            return Some(format!("Forbidden: Origin {origin} is not allowed to call this MCP endpoint"));
        }
    }
    if !spec.allowed_hosts.is_empty() {
        let host = req.header("host").map(str::trim).unwrap_or("");
        if !spec.allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return Some(format!(
                "Forbidden: Host {} is not served by this MCP endpoint",
                crate::rules::params::quoted(host)
            ));
        }
    }
    None
}

/// Decodes a header value that may carry the `=?base64?…?=` sentinel. `None` for a malformed sentinel
/// (bad or non-canonical base64, bad UTF-8) or characters a header value may not hold, so a corrupt header
/// never matches a body value by accident.
pub fn decode(value: &str) -> Option<String> {
    if !value.chars().all(|c| c == '\t' || (' '..='~').contains(&c)) {
        return None;
    }
    let Some(payload) = value.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) else {
        return Some(value.to_owned());
    };
    let engine = base64::engine::general_purpose::STANDARD;
    let bytes = engine.decode(payload).ok()?;
    // The standard engine already refuses non-zero trailing bits; re-encoding guards canonical form anyway.
    if engine.encode(&bytes) != payload {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// SEP-2243 server validation of `Mcp-Param-{Name}` headers for a `tools/call`: every argument the tool's
/// `inputSchema` marks with `x-mcp-header` and the header mirroring it must be present together and agree.
pub fn check_params(req: &HttpRequest, input_schema: &Value, arguments: &Map<String, Value>) -> Result<(), RpcError> {
    let mut marked = Vec::new();
    collect_marked(input_schema, &mut Vec::new(), &mut marked);
    for (path, token, kind) in marked {
        let header = format!("{PARAM_PREFIX}{}", token.to_ascii_lowercase());
        let shown = format!("Mcp-Param-{token}");
        let raw = single(req, &header)?;
        let argument = path.join(".");
        let value = value_at(arguments, &path).filter(|v| !v.is_null());
        let (value, raw) = match (value, raw) {
            (None, None) => continue,
            (None, Some(_)) => {
                let message = format!("Header mismatch: {shown} is present but argument {argument:?} is absent");
                return Err(RpcError::header_mismatch(message));
            }
            (Some(_), None) => {
                let message = format!("Header mismatch: {shown} is missing but argument {argument:?} is present");
                return Err(RpcError::header_mismatch(message));
            }
            (Some(value), Some(raw)) => (value, raw),
        };
        let Some(decoded) = decode(raw) else {
            let message = format!("Header mismatch: {shown} carries invalid characters or malformed base64");
            return Err(RpcError::header_mismatch(message));
        };
        if !param_matches(kind.as_deref(), value, &decoded) {
            let message = format!("Header mismatch: {shown} does not match argument {argument:?}");
            return Err(RpcError::header_mismatch(message));
        }
    }
    Ok(())
}

/// Properties reachable from the schema root through `properties` keys only (the spec's "statically
/// reachable"), that carry `x-mcp-header`: (path, header token, declared type).
fn collect_marked(schema: &Value, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String, Option<String>)>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(token) = property.get("x-mcp-header").and_then(Value::as_str) {
            let kind = property.get("type").and_then(Value::as_str).map(str::to_owned);
            out.push((path.clone(), token.to_owned(), kind));
        }
        collect_marked(property, path, out);
        path.pop();
    }
}

fn value_at<'a>(arguments: &'a Map<String, Value>, path: &[String]) -> Option<&'a Value> {
    let (first, rest) = path.split_first()?;
    rest.iter().try_fold(arguments.get(first)?, |value, key| value.get(key))
}

/// Strings compare as written, booleans as `true`/`false`, integers numerically (`42.0` equals `42`).
fn param_matches(kind: Option<&str>, value: &Value, header: &str) -> bool {
    match value {
        Value::String(s) => s == header,
        Value::Bool(b) => header == if *b { "true" } else { "false" },
        Value::Number(n) if kind == Some("integer") || n.is_i64() || n.is_u64() => {
            let whole = header.strip_suffix(".0").unwrap_or(header);
            match (n.as_i64(), whole.parse::<i64>()) {
                (Some(body), Ok(head)) => body == head,
                _ => n.as_f64().is_some_and(|body| header.parse::<f64>().is_ok_and(|head| head == body)),
            }
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(headers: &[(&str, &str)]) -> HttpRequest {
        HttpRequest {
            method: "POST".into(),
            headers: headers.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            ..HttpRequest::default()
        }
    }

    fn spec(origins: &[&str], hosts: &[&str]) -> ServerSpec {
        ServerSpec {
            name: "t".into(),
            title: "T".into(),
            version: "1".into(),
            instructions: String::new(),
            allowed_origins: origins.iter().map(|s| s.to_string()).collect(),
            allowed_hosts: hosts.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn an_absent_origin_is_accepted_and_a_listed_one_in_any_case() {
        let spec = spec(&["http://localhost:3000"], &[]);
        assert_eq!(refusal(&spec, &request(&[])), None);
        assert_eq!(refusal(&spec, &request(&[("origin", "HTTP://LOCALHOST:3000")])), None);
    }

    #[test]
    fn an_unlisted_origin_or_host_is_refused() {
        let spec = spec(&["http://localhost:3000"], &["localhost:3000"]);
        assert!(refusal(&spec, &request(&[("origin", "http://evil.example.com")])).is_some());
        assert!(refusal(&spec, &request(&[("host", "evil.example.com")])).is_some());
        assert_eq!(refusal(&spec, &request(&[("host", "localhost:3000")])), None);
    }

    #[test]
    fn sentinel_values_decode_and_malformed_ones_do_not() {
        assert_eq!(decode("plain"), Some("plain".into()));
        assert_eq!(decode("=?base64?SGVsbG8=?="), Some("Hello".into()));
        assert_eq!(decode("=?base64?SGVsbG8?="), None, "missing padding");
        assert_eq!(decode("=?base64?SGVs!!!bG8=?="), None, "non-alphabet characters");
        assert_eq!(decode("=?base64?SGVsbG8="), Some("=?base64?SGVsbG8=".into()), "no suffix is literal");
        assert_eq!(decode("a\u{7f}b"), None, "control character");
    }

    #[test]
    fn a_routing_header_sent_twice_is_a_mismatch() {
        let req = request(&[("mcp-method", "tools/list"), ("mcp-method", "tools/call")]);
        assert_eq!(single(&req, METHOD).unwrap_err().code, super::super::rpc::HEADER_MISMATCH);
        assert_eq!(single(&request(&[("mcp-method", " tools/list ")]), METHOD).unwrap(), Some("tools/list"));
    }

    #[test]
    fn marked_parameters_must_be_mirrored_and_agree() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limits": {"type": "object", "properties": {"n": {"type": "integer", "x-mcp-header": "N"}}}
        }});
        let args = |v: Value| v.as_object().cloned().unwrap();
        let ok = request(&[("mcp-param-region", "=?base64?ZXU=?="), ("mcp-param-n", "42.0")]);
        assert!(check_params(&ok, &schema, &args(json!({"region": "eu", "limits": {"n": 42}}))).is_ok());
        assert!(check_params(&request(&[]), &schema, &args(json!({}))).is_ok());
        assert!(check_params(&request(&[]), &schema, &args(json!({"region": "eu"}))).is_err(), "missing header");
        let wrong = request(&[("mcp-param-region", "us")]);
        assert!(check_params(&wrong, &schema, &args(json!({"region": "eu"}))).is_err(), "different value");
        assert!(check_params(&wrong, &schema, &args(json!({}))).is_err(), "header without argument");
    }
}
