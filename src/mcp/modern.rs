//! The modern era: protocol revision 2026-07-28, stateless by design (SEP-2575). Every request carries its
//! protocol version and client capabilities in `params._meta`, and on HTTP mirrors its version, method and
//! name into headers (SEP-2243), which a server that reads the body must cross-check.
//!
//! Checks run in the order the spec and the observed clients agree on, first failure wins:
//! required `_meta` keys (400 −32602) → `MCP-Protocol-Version` equals `_meta`'s version (400 −32020,
//! before version support, so a client that disagrees with itself is told so) → version served (400
//! −32022 with `data: {supported, requested}`) → `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` equal the body
//! (400 −32020) → dispatch (`server/discover`, `tools/list`, `tools/call`, and the resource, prompt and
//! completion methods of a host with [`features`](super::features), and `subscriptions/listen` as a stream
//! ([`listen`](super::listen)); anything else, including the removed `initialize`/`ping`/`logging/setLevel`,
//! is 404 −32601).
//!
//! HTTP status follows one table for every error, wherever it was raised ([`status`]): the spec fixes 400
//! for its three new codes and 404 for an unknown method; −32602 is 400 as in the reference Python SDK.
//! Dual-era clients read the JSON-RPC error from a 400 body (TS SDK v2 only when the request id matches,
//! which it always does here).

use super::rpc::{self, Request, RpcError};
use super::{
    call_target, call_tool, capabilities, headers, listen, other_method, server_info, tools_result, Era, ServerSpec,
    ToolHost, Written, CACHE_SCOPE, LEGACY_VERSIONS, LIST_TTL_MS, MODERN_VERSION,
};
use crate::http::{HttpRequest, HttpResponse};
use serde_json::{json, Map, Value};

const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Whether this request speaks the modern era: its header names 2026-07-28, its `_meta` carries a protocol
/// version, or it is `server/discover` (a method only the modern era has).
pub fn claims(req: &HttpRequest, request: &Request) -> bool {
    req.header(headers::PROTOCOL_VERSION).map(str::trim) == Some(MODERN_VERSION)
        || request.params.get("_meta").and_then(Value::as_object).is_some_and(|m| m.contains_key(META_PROTOCOL_VERSION))
        || request.method == "server/discover"
}

pub async fn serve(spec: &ServerSpec, host: &dyn ToolHost, req: &HttpRequest, request: &Request) -> HttpResponse {
    match answer(spec, host, req, request).await {
        Ok(Answer::Text(text)) => rpc::result_text(&request.id, &text),
        Ok(Answer::Value(result)) => rpc::result(&request.id, complete(spec, result)),
        Ok(Answer::Stream(response)) => response,
        Err(error) => rpc::error(status(&error), Some(&request.id), &error),
    }
}

/// The HTTP status of a modern-era error, one table for checks and handlers alike.
fn status(error: &RpcError) -> u16 {
    match error.code {
        rpc::METHOD_NOT_FOUND => 404,
        rpc::PARSE_ERROR
        | rpc::INVALID_REQUEST
        | rpc::INVALID_PARAMS
        | rpc::HEADER_MISMATCH
        | rpc::MISSING_REQUIRED_CLIENT_CAPABILITY
        | rpc::UNSUPPORTED_PROTOCOL_VERSION => 400,
        _ => 200,
    }
}

async fn answer(
    spec: &ServerSpec,
    host: &dyn ToolHost,
    req: &HttpRequest,
    request: &Request,
) -> Result<Answer, RpcError> {
    let (version, client_capabilities) = envelope(&request.params)?;
    let header = headers::single(req, headers::PROTOCOL_VERSION)?;
    if header != Some(version) {
        let message = match header {
            None => "Header mismatch: the MCP-Protocol-Version header is missing".to_owned(),
            Some(h) => format!(
                "Header mismatch: MCP-Protocol-Version {} does not match _meta's {}",
                crate::rules::params::quoted(h),
                crate::rules::params::quoted(version)
            ),
        };
        return Err(RpcError::header_mismatch(message));
    }
    if version != MODERN_VERSION {
        let message = if LEGACY_VERSIONS.contains(&version) {
            format!("Unsupported protocol version {version:?} with per-request _meta; it is served through initialize")
        } else {
            format!("Unsupported protocol version {}", crate::rules::params::quoted(version))
        };
        let data = json!({"supported": supported_versions(), "requested": version});
        return Err(RpcError::new(rpc::UNSUPPORTED_PROTOCOL_VERSION, message).with_data(data));
    }
    check_routing_headers(req, request)?;
    match request.method.as_str() {
        "server/discover" => Ok(Answer::Value(discover(spec, host))),
        "tools/list" => {
            let rest = complete(spec, json!({"ttlMs": LIST_TTL_MS, "cacheScope": CACHE_SCOPE}));
            Ok(Answer::from(tools_result(host, rest)))
        }
        "tools/call" => {
            if let Ok((name, arguments)) = call_target(&request.params) {
                if let Some(schema) = host.input_schema(name) {
                    headers::check_params(req, &schema, &arguments)?;
                }
            }
            let rest = || complete(spec, json!({}));
            call_tool(host, Era::Modern, &request.params, client_capabilities, None, rest).await.map(Answer::from)
        }
        // The extension's methods answer only a client that declared it (SEP-2575 missing capability).
        "tasks/get" | "tasks/update" | "tasks/cancel"
            if host.task_support() && !super::tasks::declared(client_capabilities) =>
        {
            Err(super::tasks::extension_required(&request.method))
        }
        "subscriptions/listen" => {
            let stream = req.stream.as_ref();
            listen::serve(host, request, stream, |result| complete(spec, result)).await.map(Answer::Stream)
        }
        other => match other_method(host, Era::Modern, other, &request.params).await {
            Some(answer) => answer.map(Answer::Value),
            None => Err(RpcError::new(rpc::METHOD_NOT_FOUND, format!("Method not found: {other}"))),
        },
    }
}

/// A modern result: a value still to be completed, or one already written out in full (a `tools/list`, a
/// tool's success).
enum Answer {
    Value(Value),
    Text(String),
    /// An answer streamed as it is made (`subscriptions/listen`).
    Stream(HttpResponse),
}

impl From<Written> for Answer {
    fn from(written: Written) -> Self {
        match written {
            Written::Value(result) => Answer::Value(result),
            Written::Text(text) => Answer::Text(text),
        }
    }
}

/// The two `_meta` keys every modern request must carry (client info is a SHOULD, so never required).
fn envelope(params: &Map<String, Value>) -> Result<(&str, &Map<String, Value>), RpcError> {
    let Some(meta) = params.get("_meta").and_then(Value::as_object) else {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: params._meta must be an object carrying {META_PROTOCOL_VERSION} and {META_CLIENT_CAPABILITIES}"
        )));
    };
    let missing: Vec<&str> =
        [META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES].into_iter().filter(|k| !meta.contains_key(*k)).collect();
    if !missing.is_empty() {
        return Err(RpcError::invalid_params(format!(
            "Invalid params: params._meta is missing {}",
            missing.join(", ")
        )));
    }
    let Some(version) = meta[META_PROTOCOL_VERSION].as_str() else {
        return Err(RpcError::invalid_params(format!("Invalid params: {META_PROTOCOL_VERSION} must be a string")));
    };
    let Some(client_capabilities) = meta[META_CLIENT_CAPABILITIES].as_object() else {
        return Err(RpcError::invalid_params(format!("Invalid params: {META_CLIENT_CAPABILITIES} must be an object")));
    };
    Ok((version, client_capabilities))
}

/// `Mcp-Method` must equal the body's method, and `Mcp-Name` the body's `params.name` (`params.uri` for
/// `resources/read`, `params.taskId` for the task methods) on the methods that carry one. Missing counts as different.
fn check_routing_headers(req: &HttpRequest, request: &Request) -> Result<(), RpcError> {
    match headers::single(req, headers::METHOD)? {
        Some(method) if method == request.method => {}
        Some(method) => {
            let message = format!(
                "Header mismatch: Mcp-Method {} does not match the body's {}",
                crate::rules::params::quoted(method),
                crate::rules::params::quoted(&request.method)
            );
            return Err(RpcError::header_mismatch(message));
        }
        None => return Err(RpcError::header_mismatch("Header mismatch: the Mcp-Method header is missing")),
    }
    let name_key = match request.method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        "tasks/get" | "tasks/update" | "tasks/cancel" => "taskId",
        _ => return Ok(()),
    };
    let Some(body_name) = request.params.get(name_key).and_then(Value::as_str) else {
        return Ok(());
    };
    match headers::single(req, headers::NAME)? {
        None => Err(RpcError::header_mismatch("Header mismatch: the Mcp-Name header is missing")),
        Some(raw) if headers::decode(raw).as_deref() == Some(body_name) => Ok(()),
        Some(raw) => Err(RpcError::header_mismatch(format!(
            "Header mismatch: Mcp-Name {} does not match the body's {name_key} {}",
            crate::rules::params::quoted(raw),
            crate::rules::params::quoted(body_name)
        ))),
    }
}

/// Modern first, then the legacy versions a client can reach through `initialize`, newest first.
fn supported_versions() -> Vec<&'static str> {
    std::iter::once(MODERN_VERSION).chain(LEGACY_VERSIONS.iter().rev().copied()).collect()
}

fn discover(spec: &ServerSpec, host: &dyn ToolHost) -> Value {
    let mut result = json!({
        "supportedVersions": supported_versions(),
        "capabilities": capabilities(Era::Modern, host),
        "ttlMs": LIST_TTL_MS,
        "cacheScope": CACHE_SCOPE,
    });
    if !spec.instructions.is_empty() {
        result["instructions"] = json!(spec.instructions);
    }
    result
}

/// Every modern result says what it is (`resultType`, `complete` unless the host chose `input_required`)
/// and who answered (`_meta["io.modelcontextprotocol/serverInfo"]`, spec PR #3002).
fn complete(spec: &ServerSpec, mut result: Value) -> Value {
    let Some(object) = result.as_object_mut() else {
        return result;
    };
    object.entry("resultType").or_insert_with(|| json!("complete"));
    let meta = object.entry("_meta").or_insert_with(|| json!({}));
    if let Some(meta) = meta.as_object_mut() {
        meta.entry(META_SERVER_INFO).or_insert_with(|| server_info(spec));
    }
    result
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    fn code(response: &HttpResponse) -> i64 {
        response.json_body()["error"]["code"].as_i64().unwrap_or_default()
    }

    #[test]
    fn discover_lists_versions_capabilities_and_identity() {
        let response = send(modern_request("server/discover", json!({})));
        assert_eq!(response.status, 200);
        let result = response.json_body()["result"].clone();
        assert_eq!(result["supportedVersions"], json!(["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"]));
        assert_eq!(result["capabilities"], json!({"tools": {"listChanged": false}}));
        assert_eq!(result["resultType"], json!("complete"));
        assert_eq!(result["cacheScope"], json!("private"));
        assert!(result["ttlMs"].is_u64());
        assert_eq!(result["instructions"], json!("Test tools."));
        assert_eq!(result["_meta"][META_SERVER_INFO]["name"], json!("agentsky-test"));
    }

    #[test]
    fn tools_list_carries_result_type_and_caching_hints() {
        let result = send(modern_request("tools/list", json!({}))).json_body()["result"].clone();
        assert_eq!(result["tools"][0]["name"], json!("echo"));
        assert_eq!(result["resultType"], json!("complete"));
        assert_eq!(result["cacheScope"], json!("private"));
        assert_eq!(result["ttlMs"], json!(LIST_TTL_MS));
    }

    #[test]
    fn tools_call_adds_result_type_and_server_info_to_the_hosts_result() {
        let response = send(modern_request("tools/call", json!({"name": "echo", "arguments": {"a": 1}})));
        assert_eq!(response.status, 200);
        let result = response.json_body()["result"].clone();
        assert_eq!(result["content"][0]["text"], json!("{\"a\":1}"));
        assert_eq!(result["resultType"], json!("complete"));
        assert_eq!(result["_meta"][META_SERVER_INFO]["version"], json!("0.0.1"));
    }

    #[test]
    fn client_info_is_optional_in_meta() {
        let mut meta = meta();
        meta.as_object_mut().unwrap().remove("io.modelcontextprotocol/clientInfo");
        let req =
            modern_post(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}));
        assert_eq!(send(req).status, 200);
    }

    #[test]
    fn missing_meta_or_its_required_keys_is_400_invalid_params() {
        let mut without_version = meta();
        without_version.as_object_mut().unwrap().remove(META_PROTOCOL_VERSION);
        let mut without_capabilities = meta();
        without_capabilities.as_object_mut().unwrap().remove(META_CLIENT_CAPABILITIES);
        for params in [json!({}), json!({"_meta": without_version}), json!({"_meta": without_capabilities})] {
            let body = json!({"jsonrpc": "2.0", "id": 101, "method": "server/discover", "params": params});
            let response = send(modern_post(body));
            assert_eq!((response.status, code(&response)), (400, rpc::INVALID_PARAMS));
            assert_eq!(response.json_body()["id"], json!(101));
        }
    }

    #[test]
    fn a_version_header_that_disagrees_with_meta_is_400_header_mismatch_before_version_support() {
        let mut params = json!({"_meta": meta()});
        params["_meta"][META_PROTOCOL_VERSION] = json!("v999.0.0");
        let req = modern_post(json!({"jsonrpc": "2.0", "id": 302, "method": "server/discover", "params": params}));
        let response = send(req);
        assert_eq!((response.status, code(&response)), (400, rpc::HEADER_MISMATCH));
    }

    #[test]
    fn a_missing_version_header_is_400_header_mismatch() {
        let req = without_header(modern_request("tools/list", json!({})), headers::PROTOCOL_VERSION);
        let response = send(req);
        assert_eq!((response.status, code(&response)), (400, rpc::HEADER_MISMATCH));
    }

    #[test]
    fn an_unserved_version_is_400_with_supported_and_requested() {
        let mut params = json!({"_meta": meta()});
        params["_meta"][META_PROTOCOL_VERSION] = json!("v999.0.0");
        let req = post(json!({"jsonrpc": "2.0", "id": 301, "method": "server/discover", "params": params}));
        let req = with_header(with_header(req, "mcp-protocol-version", "v999.0.0"), "mcp-method", "server/discover");
        let response = send(req);
        assert_eq!((response.status, code(&response)), (400, rpc::UNSUPPORTED_PROTOCOL_VERSION));
        let data = response.json_body()["error"]["data"].clone();
        assert_eq!(data["requested"], json!("v999.0.0"));
        assert_eq!(data["supported"], json!(supported_versions()));
        assert_eq!(response.json_body()["id"], json!(301));
    }

    #[test]
    fn a_method_header_that_is_missing_or_differs_is_400_header_mismatch() {
        let missing = without_header(modern_request("tools/list", json!({})), headers::METHOD);
        let different = with_header(
            without_header(modern_request("tools/list", json!({})), headers::METHOD),
            "mcp-method",
            "prompts/list",
        );
        let case = with_header(
            without_header(modern_request("tools/list", json!({})), headers::METHOD),
            "mcp-method",
            "TOOLS/LIST",
        );
        for req in [missing, different, case] {
            let response = send(req);
            assert_eq!((response.status, code(&response)), (400, rpc::HEADER_MISMATCH));
        }
    }

    #[test]
    fn a_name_header_that_is_missing_or_differs_is_400_header_mismatch() {
        let call = || modern_request("tools/call", json!({"name": "echo", "arguments": {}}));
        let missing = without_header(call(), headers::NAME);
        let different = with_header(without_header(call(), headers::NAME), "mcp-name", "wrong_tool_name");
        for req in [missing, different] {
            let response = send(req);
            assert_eq!((response.status, code(&response)), (400, rpc::HEADER_MISMATCH));
        }
    }

    #[test]
    fn header_values_are_trimmed_and_may_be_base64_encoded() {
        let call = || modern_request("tools/call", json!({"name": "echo", "arguments": {}}));
        let padded = with_header(without_header(call(), headers::NAME), "mcp-name", "  echo  ");
        let encoded = with_header(without_header(call(), headers::NAME), "mcp-name", "=?base64?ZWNobw==?=");
        for req in [padded, encoded] {
            assert_eq!(send(req).status, 200);
        }
    }

    #[test]
    fn a_mirrored_tool_parameter_must_match_its_header() {
        let call = modern_request("tools/call", json!({"name": "mirrored", "arguments": {"region": "eu"}}));
        let response = send(call.clone());
        assert_eq!((response.status, code(&response)), (400, rpc::HEADER_MISMATCH));
        assert_eq!(send(with_header(call, "mcp-param-region", "eu")).status, 200);
    }

    #[test]
    fn removed_and_unknown_methods_are_404_method_not_found() {
        for method in
            ["initialize", "ping", "logging/setLevel", "resources/subscribe", "prompts/list", "unknown/method"]
        {
            let response = send(modern_request(method, json!({})));
            assert_eq!((response.status, code(&response)), (404, rpc::METHOD_NOT_FOUND), "{method}");
            assert_eq!(response.json_body()["id"], json!(7));
        }
    }

    #[test]
    fn an_unknown_tool_or_missing_name_is_400_invalid_params() {
        let unknown = send(modern_request("tools/call", json!({"name": "nope", "arguments": {}})));
        assert_eq!((unknown.status, code(&unknown)), (400, rpc::INVALID_PARAMS));
        let nameless = send(modern_request("tools/call", json!({"arguments": {}})));
        assert_eq!((nameless.status, code(&nameless)), (400, rpc::INVALID_PARAMS));
    }

    #[test]
    fn malformed_mrtr_retry_fields_are_400_invalid_params() {
        for extra in
            [json!({"inputResponses": null}), json!({"inputResponses": {"k": 12345}}), json!({"requestState": 5})]
        {
            let mut params = json!({"name": "echo", "arguments": {}});
            params.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            let response = send(modern_request("tools/call", params));
            assert_eq!((response.status, code(&response)), (400, rpc::INVALID_PARAMS));
        }
    }

    #[test]
    fn a_tools_own_protocol_error_keeps_its_code_data_and_modern_status() {
        let req = modern_request("tools/call", json!({"name": "ask_model", "arguments": {}}));
        let response = send_with(&spec(), &NeedsSampling, req);
        assert_eq!((response.status, code(&response)), (400, rpc::MISSING_REQUIRED_CLIENT_CAPABILITY));
        assert_eq!(response.json_body()["error"]["data"]["requiredCapabilities"], json!({"sampling": {}}));
    }

    #[test]
    fn the_client_capabilities_reach_the_tool() {
        let mut params = json!({"name": "ask_model", "arguments": {}, "_meta": meta()});
        params["_meta"][META_CLIENT_CAPABILITIES] = json!({"sampling": {}});
        let req = modern_post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}));
        assert_eq!(send_with(&spec(), &NeedsSampling, req).status, 200);
    }

    #[test]
    fn meta_naming_a_version_selects_the_modern_era_even_without_headers() {
        let req = post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta()}}));
        let response = send(req);
        assert_eq!((response.status, code(&response)), (400, rpc::HEADER_MISMATCH));
    }

    #[test]
    fn meta_naming_a_legacy_version_is_unsupported_here_and_points_at_initialize() {
        let mut params = json!({"_meta": meta()});
        params["_meta"][META_PROTOCOL_VERSION] = json!("2025-11-25");
        let req = post(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}));
        let response =
            send(with_header(with_header(req, "mcp-protocol-version", "2025-11-25"), "mcp-method", "tools/list"));
        assert_eq!((response.status, code(&response)), (400, rpc::UNSUPPORTED_PROTOCOL_VERSION));
        assert!(response.json_body()["error"]["message"].as_str().unwrap().contains("initialize"));
    }
}
