//! `/v1/mcp` through the whole app: authentication, both eras reaching the tools, tool errors carrying
//! the API's codes. The transport's own error paths are unit-tested in `src/mcp/`.

use crate::support::TestApp;
use agentsky::http::HttpRequest;
use serde_json::{json, Value};

fn post(app: &TestApp, headers: &[(&str, &str)], body: Value) -> agentsky::http::HttpResponse {
    let mut all =
        vec![("host".to_owned(), "127.0.0.1:8787".to_owned()), ("content-type".into(), "application/json".into())];
    all.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    app.send(HttpRequest {
        method: "POST".into(),
        path: "/v1/mcp".into(),
        headers: all,
        body: serde_json::to_vec(&body).unwrap(),
        ..Default::default()
    })
}

#[test]
fn mcp_without_a_key_is_401_and_get_is_405() {
    let app = TestApp::new();
    let resp = post(&app, &[], json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}));
    assert_eq!(resp.status, 401);
    // Then `resource_metadata` and `scope` for OAuth discovery (tests/host/oauth.rs).
    assert!(resp.header("www-authenticate").unwrap().starts_with("Bearer realm=\"agentsky\""));
    let error = json_rpc_error(&resp, json!(1), UNAUTHORIZED);
    assert!(error["message"].as_str().unwrap().contains("API key is required"), "{error}");
    assert_eq!(error["data"]["code"], "unauthorized");
    let get = app.send(HttpRequest { method: "GET".into(), path: "/v1/mcp".into(), ..Default::default() });
    assert_eq!(get.status, 405);
}

/// JSON-RPC's number for a refused key, as MCP servers send it (the server-defined range).
const UNAUTHORIZED: i64 = -32001;

/// The JSON-RPC error of a refusal, checked for its envelope, `id` and code.
fn json_rpc_error(resp: &agentsky::http::HttpResponse, id: Value, code: i64) -> Value {
    assert_eq!(resp.header("content-type"), Some("application/json"));
    let body = resp.json_body();
    assert_eq!(body["jsonrpc"], "2.0", "a JSON-RPC envelope: {body}");
    assert_eq!(body.get("id"), Some(&id), "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert!(body["error"]["message"].as_str().is_some_and(|m| !m.is_empty()), "{body}");
    assert!(body.get("result").is_none());
    body["error"].clone()
}

/// One POST of raw bytes to `path`.
fn raw(app: &TestApp, path: &str, bearer: Option<&str>, body: Vec<u8>) -> agentsky::http::HttpResponse {
    let mut headers = vec![("host".to_owned(), "127.0.0.1:8787".to_owned())];
    headers.push(("content-type".into(), "application/json".into()));
    if let Some(b) = bearer {
        headers.push(("authorization".into(), b.to_owned()));
    }
    app.send(HttpRequest { method: "POST".into(), path: path.into(), headers, body, ..Default::default() })
}

fn tools_list(id: Value) -> Vec<u8> {
    serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"})).unwrap()
}

#[test]
fn every_mcp_endpoint_refuses_a_missing_or_bad_credential_with_a_json_rpc_error_and_a_challenge() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let revoked = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "t", "scopes": ["read"]})));
    let revoked = revoked.json_body();
    app.request("DELETE", &format!("/v1/keys/{}", revoked["key_id"].as_str().unwrap()), Some(&ada.key), None);
    let cases: [(&str, Option<String>, &str); 9] = [
        ("/v1/mcp", None, "API key is required"),
        ("/v1/mcp", Some("Basic YWRhOnB3".into()), "must be `Bearer"),
        ("/v1/mcp", Some("Bearer sst_not_an_api_key".into()), "not an agentsky API key"),
        ("/v1/mcp", Some(format!("Bearer ast_{}", "z".repeat(43))), "unknown or revoked"),
        ("/v1/mcp", Some(format!("Bearer {}", revoked["key"].as_str().unwrap())), "unknown or revoked"),
        ("/v1/mcp", Some("Bearer e2e-not-the-admin-token".into()), "not an agentsky API key"),
        ("/v1/session/mcp", None, "session token is required"),
        ("/v1/session/mcp", Some("Bearer sst_made-up-token".into()), "unknown session token"),
        ("/v1/session/mcp", Some(format!("Bearer {}", ada.key)), "not an agentsky session token"),
    ];
    for (n, (path, bearer, says)) in cases.into_iter().enumerate() {
        let id = if n % 2 == 0 { json!(n) } else { json!(format!("req-{n}")) };
        let resp = raw(&app, path, bearer.as_deref(), tools_list(id.clone()));
        assert_eq!(resp.status, 401, "{path} {bearer:?}");
        let error = json_rpc_error(&resp, id, UNAUTHORIZED);
        assert!(error["message"].as_str().unwrap().contains(says), "{path} {bearer:?}: {error}");
        assert_eq!(error["data"]["code"], "unauthorized", "the API's code rides along: {error}");
        let challenge = resp.header("www-authenticate").unwrap_or_default();
        assert!(challenge.starts_with("Bearer realm=\"agentsky\""), "{path} {bearer:?}: {challenge}");
        assert!(challenge.bytes().all(|b| (b' '..=b'~').contains(&b)), "a header value is visible ASCII: {challenge}");
        assert_eq!(challenge.contains("error=\"invalid_token\""), bearer.is_some(), "{challenge}");
    }
    // An id that cannot be read is null, as JSON-RPC 2.0 says; the refusal is the same.
    let unreadable = raw(&app, "/v1/mcp", None, b"{not json".to_vec());
    assert_eq!(unreadable.status, 401);
    json_rpc_error(&unreadable, Value::Null, UNAUTHORIZED);
    // REST keeps its own shape.
    let rest = app.request("GET", "/v1/agents", None, None);
    assert_eq!(rest.status, 401);
    assert_eq!(rest.json_body()["error"]["code"], "unauthorized");
    assert!(rest.json_body().get("jsonrpc").is_none());
    assert!(rest.header("www-authenticate").is_some());
}

#[test]
fn a_body_over_four_mebibytes_is_refused_in_each_faces_own_shape() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let huge = |id: Value| {
        let text = "x".repeat(agentsky::app::MAX_BODY_BYTES);
        let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": "help", "arguments": {"topic": text}}});
        serde_json::to_vec(&call).unwrap()
    };
    let bearer = format!("Bearer {}", ada.key);
    for (path, auth) in
        [("/v1/mcp", Some(bearer.as_str())), ("/v1/mcp", None), ("/v1/session/mcp", None), ("/v1/help/mcp", None)]
    {
        let resp = raw(&app, path, auth, huge(json!(9)));
        assert_eq!(resp.status, 413, "{path}");
        // The body is refused unread, so its id is unknown: null.
        let error = json_rpc_error(&resp, Value::Null, -32600);
        assert!(error["message"].as_str().unwrap().contains("4194304 bytes"), "{error}");
        assert_eq!(error["data"]["code"], "payload_too_large");
    }
    let rest = raw(&app, "/v1/agents", Some(&bearer), huge(json!(9)));
    assert_eq!(rest.status, 413);
    assert_eq!(rest.json_body()["error"]["code"], "payload_too_large");
    assert!(rest.json_body().get("jsonrpc").is_none());
}

#[test]
fn a_body_of_too_many_json_values_is_refused_before_it_is_parsed_in_each_faces_own_shape() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    // 1.2 MB of zeros: within the byte limit, but parsed into values it would take tens of megabytes.
    let zeros = |n: usize| Value::Array(vec![json!(0); n]);
    let call = |n: usize| {
        let call = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "help", "arguments": {"topic": zeros(n)}}});
        serde_json::to_vec(&call).unwrap()
    };
    let bearer = format!("Bearer {}", ada.key);
    for (path, auth) in [("/v1/mcp", Some(bearer.as_str())), ("/v1/help/mcp", None)] {
        let resp = raw(&app, path, auth, call(600_000));
        assert_eq!(resp.status, 413, "{path}");
        let error = json_rpc_error(&resp, json!(7), -32600);
        assert!(error["message"].as_str().unwrap().contains("100000 JSON values"), "{error}");
        assert_eq!(error["data"]["code"], "payload_too_large");
        // Within the bound, the call is read and answered as any other.
        assert_eq!(raw(&app, path, auth, call(1_000)).status, 200, "{path}");
    }
    let rest = raw(&app, "/v1/agents", Some(&bearer), serde_json::to_vec(&json!({"name": zeros(600_000)})).unwrap());
    assert_eq!(rest.status, 413);
    assert_eq!(rest.json_body()["error"]["code"], "payload_too_large");
}

#[test]
fn a_failure_before_dispatch_is_a_json_rpc_internal_error_with_the_request_id() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    app.db.0.execute_batch("ALTER TABLE api_key RENAME TO api_key_gone").unwrap();
    let resp = raw(&app, "/v1/mcp", Some(&format!("Bearer {}", ada.key)), tools_list(json!(3)));
    assert_eq!(resp.status, 500);
    let error = json_rpc_error(&resp, json!(3), -32603);
    assert_eq!(error["message"], "internal error; request id req_test");
    assert_eq!(error["data"]["code"], "internal");
    let rest = app.request("GET", "/v1/agents", Some(&ada.key), None);
    assert_eq!(rest.status, 500);
    assert_eq!(rest.json_body()["error"]["code"], "internal");
}

#[test]
fn a_storage_failure_inside_an_operation_answers_internal_with_the_request_id_and_never_its_cause() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    // The key still resolves; only the operation's own statement fails.
    app.db.0.execute_batch("ALTER TABLE agent RENAME TO agent_gone").unwrap();
    let rest = app.request("GET", "/v1/agents", Some(&ada.key), None);
    assert_eq!(rest.status, 500);
    let body = rest.json_body();
    assert_eq!(body, json!({"error": {"code": "internal", "message": "internal error; request id req_test"}}));
    let tool = app.call(&ada.key, "list_agents", json!({}));
    let error = TestApp::tool_error(&tool);
    assert_eq!(error, json!({"code": "internal", "message": "internal error; request id req_test"}));
    for text in [body.to_string(), tool.to_string()] {
        assert!(!text.contains("no such table"), "the cause leaked: {text}");
    }
}

#[test]
fn legacy_initialize_then_list_and_call() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let auth = format!("Bearer {}", ada.key);
    let init = post(
        &app,
        &[("authorization", &auth)],
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    assert_eq!(init.status, 200);
    let result = &init.json_body()["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(result["serverInfo"]["name"], "agentsky");
    assert!(result["instructions"].as_str().unwrap().contains("start_session"));
    assert!(result["capabilities"]["tools"].is_object());

    let tools = app.rpc(&ada.key, "tools/list", json!({})).json_body();
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    for t in ["list_workspaces", "describe_workspace", "help", "list_agents"] {
        assert!(names.contains(&t), "{t}");
    }
    assert!(!names.contains(&"create_key"), "REST-only operations are not tools");
    let listed = app.ok(&ada.key, "list_workspaces", json!({}));
    assert_eq!(listed["workspaces"][0]["slug"], ada.slug.as_str());
}

#[test]
fn modern_era_calls_reach_the_same_tools() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let auth = format!("Bearer {}", ada.key);
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let resp = post(
        &app,
        &[
            ("authorization", &auth),
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "list_agents"),
        ],
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "list_agents", "arguments": {}, "_meta": meta}}),
    );
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    let body = resp.json_body();
    assert_eq!(body["id"], 7);
    assert_eq!(body["result"]["isError"], false);
    assert_eq!(body["result"]["structuredContent"]["agents"], json!([]));
}

#[test]
fn tools_list_is_the_same_list_in_both_eras_served_from_bytes_written_once() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let auth = format!("Bearer {}", ada.key);
    let tools = Value::from(agentsky::operator_mcp::operator_tools().to_vec());
    let legacy = app.rpc(&ada.key, "tools/list", json!({}));
    assert_eq!(legacy.header("content-type"), Some("application/json"));
    assert_eq!(legacy.json_body(), json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}));
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}
    });
    let modern = post(
        &app,
        &[("authorization", &auth), ("mcp-protocol-version", "2026-07-28"), ("mcp-method", "tools/list")],
        json!({"jsonrpc": "2.0", "id": "l", "method": "tools/list", "params": {"_meta": meta}}),
    );
    let body = modern.json_body();
    assert_eq!(body["id"], "l");
    assert_eq!(body["result"]["tools"], tools);
    assert_eq!(body["result"]["resultType"], "complete");
    assert_eq!(body["result"]["ttlMs"], 60_000);
    assert_eq!(body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "agentsky");
    // What validators need of an outputSchema, without the annotations no validator reads.
    let text = legacy.body.len();
    let outputs: usize =
        agentsky::operator_mcp::operator_tools().iter().map(|t| t["outputSchema"].to_string().len()).sum();
    assert!(outputs * 2 < text, "outputSchema is {outputs} of the list's {text} bytes");
    for t in agentsky::operator_mcp::operator_tools() {
        assert!(
            !t["outputSchema"].to_string().contains("\"description\":\""),
            "{}: a described outputSchema",
            t["name"]
        );
    }
}

#[test]
fn unknown_tools_are_protocol_errors_and_bad_arguments_are_tool_errors() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let resp = app.rpc(&ada.key, "tools/call", json!({"name": "create_account", "arguments": {}})).json_body();
    assert_eq!(resp["error"]["code"], -32602, "REST-only operations are unknown tools");
    // One reached through `manage` still answers to its own name, for clients that learned it.
    assert_eq!(app.ok(&ada.key, "list_keys", json!({}))["keys"].as_array().map(Vec::len), Some(1));
    let result = app.call(&ada.key, "list_agents", json!({"limit": "ten"}));
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none(), "an error is no result of the outputSchema's shape");
    assert_eq!(TestApp::tool_error(&result)["code"], "invalid_params");
    assert!(result["content"][0]["text"].as_str().unwrap().contains("invalid_params"));
    assert_eq!(app.err_code(&ada.key, "list_agents", json!({"bogus": 1})), "invalid_params");
    assert_eq!(app.err_code(&ada.key, "list_agents", json!({"workspace": "not-mine"})), "not_found");
}

#[test]
fn a_revoked_key_is_refused_on_the_next_mcp_call() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let k =
        app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "tmp", "scopes": ["read"]}))).json_body();
    let key = k["key"].as_str().unwrap();
    app.ok(key, "list_agents", json!({}));
    app.request("DELETE", &format!("/v1/keys/{}", k["key_id"].as_str().unwrap()), Some(&ada.key), None);
    let resp = app.rpc(key, "tools/list", json!({}));
    assert_eq!(resp.status, 401);
    assert!(resp.header("www-authenticate").unwrap().contains("invalid_token"));
}

#[test]
fn any_refusal_before_dispatch_takes_the_faces_shape_rate_limits_included() {
    use agentsky::error::ApiError;
    let limited = ApiError::rate_limited("slow down; retry in 2 s", 1500);
    for path in ["/v1/mcp", "/v1/session/mcp", "/v1/help/mcp"] {
        let req = HttpRequest {
            method: "POST".into(),
            path: path.into(),
            body: tools_list(json!("r1")),
            ..Default::default()
        };
        let resp = agentsky::app::refuse(&req, &limited);
        assert_eq!(resp.status, 429, "{path}");
        let error = json_rpc_error(&resp, json!("r1"), -32003);
        assert_eq!(error["message"], "slow down; retry in 2 s");
        assert_eq!(
            error["data"],
            json!({"code": "rate_limited", "message": "slow down; retry in 2 s", "retry_after_ms": 1500})
        );
    }
    let req = HttpRequest { method: "GET".into(), path: "/v1/agents".into(), ..Default::default() };
    let rest = agentsky::app::refuse(&req, &limited);
    assert_eq!(rest.status, 429);
    assert_eq!(rest.json_body(), limited.body());
}
