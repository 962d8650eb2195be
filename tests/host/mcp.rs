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
    assert!(resp.header("www-authenticate").unwrap().starts_with("Bearer realm=\"agentsky\""));
    assert_eq!(resp.json_body()["error"]["code"], "unauthorized");
    let get = app.send(HttpRequest { method: "GET".into(), path: "/v1/mcp".into(), ..Default::default() });
    assert_eq!(get.status, 405);
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
fn unknown_tools_are_protocol_errors_and_bad_arguments_are_tool_errors() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let resp = app.rpc(&ada.key, "tools/call", json!({"name": "create_key", "arguments": {}})).json_body();
    assert_eq!(resp["error"]["code"], -32602, "REST-only operations are unknown tools");
    let result = app.call(&ada.key, "list_agents", json!({"limit": "ten"}));
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["error"]["code"], "invalid_params");
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
