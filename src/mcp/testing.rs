//! Test-only helpers shared by the transport's unit tests: a tiny tool host and request builders.

use super::*;
use serde_json::json;

pub use futures::executor::block_on;

/// Two tools: `echo` answers its arguments as text; `fail` answers a business failure (`isError`).
pub struct TinyHost;

impl ToolHost for TinyHost {
    fn tools(&self) -> Vec<Value> {
        vec![
            json!({"name": "echo", "description": "Echoes its arguments", "inputSchema": {"type": "object"}}),
            json!({"name": "fail", "description": "Always fails", "inputSchema": {"type": "object"}}),
            json!({"name": "mirrored", "description": "Has a mirrored parameter", "inputSchema": {
                "type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
            }}),
        ]
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            match name {
                "echo" | "mirrored" => Some(json!({"content": [{"type": "text", "text": arguments.to_string()}]})),
                "fail" => Some(json!({"content": [{"type": "text", "text": "no"}], "isError": true})),
                _ => None,
            }
        })
    }
}

/// A host whose one tool refuses callers that did not declare `sampling`, as a tool that needs it must.
pub struct NeedsSampling;

impl ToolHost for NeedsSampling {
    fn tools(&self) -> Vec<Value> {
        vec![json!({"name": "ask_model", "description": "Needs sampling", "inputSchema": {"type": "object"}})]
    }

    fn call<'a>(&'a self, _name: &'a str, _arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Box::pin(async { None })
    }

    fn call_with<'a>(&'a self, call: ToolCall<'a>) -> LocalBoxFuture<'a, ToolReply> {
        Box::pin(async move {
            if call.client_capabilities.contains_key("sampling") {
                ToolReply::Done(json!({"content": [{"type": "text", "text": "ok"}]}))
            } else {
                let error =
                    RpcError::new(rpc::MISSING_REQUIRED_CLIENT_CAPABILITY, "Missing client capability: sampling")
                        .with_data(json!({"requiredCapabilities": {"sampling": {}}}));
                ToolReply::Refused(error)
            }
        })
    }
}

pub fn spec() -> ServerSpec {
    ServerSpec {
        name: "agentsky-test".into(),
        title: "agentsky test".into(),
        version: "0.0.1".into(),
        instructions: "Test tools.".into(),
        allowed_origins: vec!["http://localhost:8787".into()],
        allowed_hosts: vec![],
    }
}

pub fn send(req: HttpRequest) -> HttpResponse {
    send_with(&spec(), &TinyHost, req)
}

pub fn send_with(spec: &ServerSpec, host: &dyn ToolHost, req: HttpRequest) -> HttpResponse {
    block_on(serve(spec, host, &req))
}

/// A POST carrying `body` as JSON and no headers.
pub fn post(body: Value) -> HttpRequest {
    HttpRequest {
        method: "POST".into(),
        path: "/mcp".into(),
        headers: vec![("content-type".into(), "application/json".into())],
        body: serde_json::to_vec(&body).unwrap(),
        ..HttpRequest::default()
    }
}

pub fn with_header(mut req: HttpRequest, name: &str, value: &str) -> HttpRequest {
    req.headers.push((name.into(), value.into()));
    req
}

pub fn without_header(mut req: HttpRequest, name: &str) -> HttpRequest {
    req.headers.retain(|(k, _)| k != name);
    req
}

/// A legacy-era `ping`.
pub fn ping() -> HttpRequest {
    post(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
}

/// A legacy-era request with the `MCP-Protocol-Version` header a client sends after `initialize`.
pub fn legacy_request(method: &str, params: Value) -> HttpRequest {
    let req = post(json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}));
    with_header(req, "mcp-protocol-version", "2025-11-25")
}

/// The `_meta` a modern client sends on every request.
pub fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
        "io.modelcontextprotocol/clientInfo": {"name": "test-client", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

/// A POST with the modern era's headers mirrored from `body` (version, `Mcp-Method`, `Mcp-Name`).
pub fn modern_post(body: Value) -> HttpRequest {
    let mut req = with_header(post(body.clone()), "mcp-protocol-version", MODERN_VERSION);
    if let Some(method) = body["method"].as_str() {
        req = with_header(req, "mcp-method", method);
    }
    if let Some(name) = body["params"]["name"].as_str().or(body["params"]["uri"].as_str()) {
        req = with_header(req, "mcp-name", name);
    }
    req
}

/// A well-formed modern request: `_meta` added to `params`, headers mirrored.
pub fn modern_request(method: &str, mut params: Value) -> HttpRequest {
    params["_meta"] = meta();
    modern_post(json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
}
