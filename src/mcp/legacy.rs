//! The legacy era: protocol revisions 2025-03-26 … 2025-11-25, opened with `initialize`.
//!
//! Served statelessly: `initialize` is answered as a pure function of its params, no session is minted,
//! and any later request is served on its own. Protocol errors are answered with HTTP 200 and the JSON-RPC
//! error body, because legacy clients (TS SDK 1.x, Codex) turn any non-2xx into a transport failure and
//! never show the JSON-RPC error. The one 400 is the unsupported `MCP-Protocol-Version` header, which the
//! 2025-06-18 transport requires and whose body must NOT look like a modern error: a 400 without one is
//! what makes dual-era clients (Claude Code, Python SDK, TS SDK v2 in auto mode) fall back to `initialize`.

use super::rpc::{self, Request, RpcError};
use super::{
    call_tool, capabilities, headers, other_method, progress, server_info, tools_result, Era, Progress, ServerSpec,
    ToolHost, Written, LEGACY_VERSIONS,
};
use crate::http::{HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};

pub async fn serve(spec: &ServerSpec, host: &dyn ToolHost, req: &HttpRequest, request: &Request) -> HttpResponse {
    let id = &request.id;
    let version_header = req.header(headers::PROTOCOL_VERSION).map(str::trim).filter(|v| !v.is_empty());
    if let Some(version) = version_header {
        if !LEGACY_VERSIONS.contains(&version) && request.method != "initialize" {
            let message = format!(
                "Bad Request: unsupported MCP-Protocol-Version {}; this endpoint serves {} after \
                 initialize, and 2026-07-28 with per-request _meta",
                crate::rules::params::quoted(version),
                LEGACY_VERSIONS.join(", ")
            );
            return rpc::error(400, Some(id), &RpcError::new(rpc::INVALID_REQUEST, message));
        }
    }
    // Only a tool call may stream, and only when the client both gave a token and accepts a stream.
    let accepts_stream = progress::accepts_stream(req.header("accept"));
    let progress = (request.method == "tools/call")
        .then(|| Progress::for_request(&request.params, accepts_stream, req.stream.as_ref()))
        .flatten();
    let answer = match request.method.as_str() {
        "initialize" => Ok(Written::Value(initialize(spec, host, &request.params))),
        "ping" => Ok(Written::Value(json!({}))),
        "tools/list" => Ok(tools_result(host, json!({}))),
        "tools/call" => {
            call_tool(host, Era::Legacy, &request.params, &Map::new(), progress.as_ref(), || json!({})).await
        }
        other => match other_method(host, Era::Legacy, other, &request.params).await {
            Some(answer) => answer.map(Written::Value),
            None => Err(RpcError::new(rpc::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        },
    };
    let response = match answer {
        Ok(Written::Value(result)) => rpc::result(id, result),
        Ok(Written::Text(text)) => rpc::result_text(id, &text),
        Err(error) => rpc::error(200, Some(id), &error),
    };
    // A tool that reported progress has opened the stream: the response is its last event.
    match progress.and_then(|p| p.finish(&response.json_body())) {
        Some(streamed) => streamed,
        None => response,
    }
}

/// Answers with the client's version when it is one we serve, else the newest legacy one (the client then
/// decides whether it can speak it).
fn initialize(spec: &ServerSpec, host: &dyn ToolHost, params: &Map<String, Value>) -> Value {
    let requested = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let newest = LEGACY_VERSIONS[LEGACY_VERSIONS.len() - 1];
    let version = LEGACY_VERSIONS.iter().find(|v| **v == requested).copied().unwrap_or(newest);
    let mut result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(Era::Legacy, host),
        "serverInfo": server_info(spec),
    });
    if !spec.instructions.is_empty() {
        result["instructions"] = json!(spec.instructions);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::super::MODERN_VERSION;
    use super::*;

    fn initialize_with(version: &str) -> Value {
        let params =
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
        let response = send(post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})));
        assert_eq!(response.status, 200);
        response.json_body()["result"].clone()
    }

    #[test]
    fn initialize_answers_with_the_clients_version_when_it_is_served() {
        for version in LEGACY_VERSIONS {
            assert_eq!(initialize_with(version)["protocolVersion"], json!(version));
        }
    }

    #[test]
    fn initialize_answers_with_the_newest_legacy_version_otherwise() {
        assert_eq!(initialize_with("2024-11-05")["protocolVersion"], json!("2025-11-25"));
        assert_eq!(initialize_with(MODERN_VERSION)["protocolVersion"], json!("2025-11-25"));
    }

    #[test]
    fn initialize_declares_tools_only_and_names_the_server() {
        let result = initialize_with("2025-06-18");
        assert_eq!(result["capabilities"], json!({"tools": {"listChanged": false}}));
        assert_eq!(result["serverInfo"]["name"], json!("agentsky-test"));
        assert_eq!(result["serverInfo"]["title"], json!("agentsky test"));
        assert_eq!(result["instructions"], json!("Test tools."));
    }

    #[test]
    fn ping_answers_an_empty_object() {
        assert_eq!(send(ping()).json_body()["result"], json!({}));
    }

    #[test]
    fn tools_list_answers_the_hosts_tools_without_modern_fields() {
        let result = send(legacy_request("tools/list", json!({}))).json_body()["result"].clone();
        assert_eq!(result["tools"][0]["name"], json!("echo"));
        assert!(result.get("resultType").is_none() && result.get("ttlMs").is_none());
    }

    #[test]
    fn tools_call_answers_the_hosts_result_and_defaults_arguments_to_an_empty_object() {
        let response = send(legacy_request("tools/call", json!({"name": "echo"})));
        assert_eq!(response.status, 200);
        assert_eq!(response.json_body()["result"]["content"][0]["text"], json!("{}"));
        let failed = send(legacy_request("tools/call", json!({"name": "fail", "arguments": {}})));
        assert_eq!(failed.json_body()["result"]["isError"], json!(true));
    }

    #[test]
    fn protocol_errors_are_200_with_the_json_rpc_error() {
        let cases = [
            (legacy_request("tools/call", json!({"name": "nope"})), rpc::INVALID_PARAMS),
            (legacy_request("tools/call", json!({"arguments": {}})), rpc::INVALID_PARAMS),
            (legacy_request("tools/call", json!({"name": "echo", "arguments": [1]})), rpc::INVALID_PARAMS),
            (legacy_request("resources/list", json!({})), rpc::METHOD_NOT_FOUND),
        ];
        for (req, code) in cases {
            let response = send(req);
            assert_eq!(response.status, 200);
            assert_eq!(response.json_body()["error"]["code"], json!(code));
            assert_eq!(response.json_body()["id"], json!(1));
        }
    }

    #[test]
    fn a_header_naming_an_unknown_version_is_a_400_without_a_modern_error() {
        let req = with_header(ping(), "mcp-protocol-version", "2099-01-01");
        let response = send(req);
        assert_eq!(response.status, 400);
        let code = response.json_body()["error"]["code"].as_i64().unwrap();
        assert!(![rpc::UNSUPPORTED_PROTOCOL_VERSION, rpc::HEADER_MISMATCH].contains(&code));
        assert!(response.json_body()["error"].get("data").is_none());
    }

    #[test]
    fn initialize_is_answered_whatever_version_header_came_with_it() {
        let params =
            json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
        let req = post(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}));
        assert_eq!(send(with_header(req, "mcp-protocol-version", "2099-01-01")).status, 200);
    }

    #[test]
    fn a_tool_that_reports_progress_answers_a_stream_only_to_a_client_that_takes_one() {
        let fixtures = super::super::fixtures::Fixtures;
        let params = json!({"name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "p-1"}});
        let call = || legacy_request("tools/call", params.clone());
        let streamed =
            send_with(&spec(), &fixtures, with_header(call(), "accept", "application/json, text/event-stream"));
        assert_eq!(streamed.header("content-type"), Some("text/event-stream"));
        assert_eq!(streamed.header("mcp-session-id"), None);
        let body = String::from_utf8(streamed.body).unwrap();
        let datas: Vec<Value> =
            body.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect();
        let progress: Vec<&Value> = datas.iter().map(|d| &d["params"]["progress"]).take(3).collect();
        assert_eq!(progress, [&json!(0.0), &json!(50.0), &json!(100.0)]);
        assert_eq!(datas[3]["id"], json!(1), "the response comes last: {body}");
        assert!(datas[3]["result"]["content"].is_array());
        let plain = send_with(&spec(), &fixtures, with_header(call(), "accept", "application/json"));
        assert_eq!(plain.header("content-type"), Some("application/json"));
        let modern = send_with(&spec(), &fixtures, modern_request("tools/call", params.clone()));
        assert_eq!(modern.header("content-type"), Some("application/json"), "the 2026 wire answers one body");
    }

    #[test]
    fn a_request_without_a_version_header_is_served_as_legacy() {
        let response = send(post(json!({"jsonrpc": "2.0", "id": "x", "method": "tools/list"})));
        assert_eq!(response.status, 200);
        assert_eq!(response.json_body()["id"], json!("x"));
        assert!(response.json_body()["result"]["tools"].is_array());
    }
}
