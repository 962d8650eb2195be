//! What a person does from a chat client, over the operator's MCP tools alone: set up an agent and run
//! it, name agents by `@handle` anywhere an agent is named, record decisions, keep memory, and review and
//! revoke grants.

use crate::support::TestApp;
use serde_json::{json, Value};

/// The MCP annotations `tools/list` gives a tool of its own, or (for one reached through `manage`) the
/// same hints from its row.
fn annotations(name: &str) -> Value {
    let tools = agentsky::operator_mcp::operator_tools();
    if let Some(tool) = tools.iter().find(|t| t["name"] == name) {
        return tool["annotations"].clone();
    }
    let h = agentsky::ops::find(name).unwrap_or_else(|| panic!("`{name}` is no operation")).hints;
    json!({"readOnlyHint": h.read_only, "destructiveHint": h.destructive, "idempotentHint": h.idempotent})
}

#[test]
fn a_new_account_creates_an_agent_starts_it_and_reads_the_result_over_mcp_alone() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    assert_eq!(app.ok(&ada.key, "list_agents", json!({}))["agents"], json!([]));
    let agent = app.ok(
        &ada.key,
        "create_agent",
        json!({"name": "Echo", "handle": "echo", "harness": "echo", "model": "echo-1", "description": "says it back"}),
    );
    assert_eq!(agent["handle"], "echo");
    let listed = app.ok(&ada.key, "list_agents", json!({}))["agents"].clone();
    assert_eq!((listed[0]["id"].clone(), listed[0]["handle"].as_str()), (agent["agent_id"].clone(), Some("@echo")));
    let catalog = app.ok(&ada.key, "search_catalog", json!({}))["agents"].clone();
    assert_eq!(catalog[0]["handle"], "@echo");
    let s =
        app.ok(&ada.key, "start_session", json!({"agent_id": "@echo", "message": "hello", "idempotency_key": "k1"}));
    app.settle();
    let sid = s["session"]["session_id"].clone();
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"], "echo: hello");
    let changed = app.ok(&ada.key, "update_agent", json!({"agent_id": "@echo", "description": "repeats you"}));
    assert_eq!((changed["description"].as_str(), changed["name"].as_str()), (Some("repeats you"), Some("Echo")));
    assert_eq!(app.ok(&ada.key, "get_agent", json!({"agent_id": "@echo"}))["description"], "repeats you");
    // A handle taken is a conflict, as over REST.
    let again = json!({"name": "Other", "handle": "echo", "harness": "echo", "model": "m"});
    assert_eq!(app.err_code(&ada.key, "create_agent", again), "conflict");
    for (tool, hints) in [("create_agent", (false, false, false)), ("update_agent", (false, false, true))] {
        let a = annotations(tool);
        let got = (a["readOnlyHint"].as_bool(), a["destructiveHint"].as_bool(), a["idempotentHint"].as_bool());
        assert_eq!(got, (Some(hints.0), Some(hints.1), Some(hints.2)), "{tool}");
    }
    assert_eq!(annotations("get_agent")["readOnlyHint"], true);
}

#[test]
fn a_handle_names_an_agent_wherever_an_agent_id_is_taken() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let echo =
        app.ok(&ada.key, "create_agent", json!({"name": "Echo", "handle": "echo", "harness": "echo", "model": "m"}));
    let other = app.ok(&ada.key, "create_agent", json!({"name": "Other", "harness": "echo", "model": "m"}));
    for (agent, key) in [(echo["agent_id"].clone(), "a"), (other["agent_id"].clone(), "b")] {
        app.ok(&ada.key, "start_session", json!({"agent_id": agent, "message": "hi", "idempotency_key": key}));
    }
    let by_handle = app.ok(&ada.key, "list_sessions", json!({"agent_id": "@echo"}))["sessions"].clone();
    assert_eq!(by_handle.as_array().unwrap().len(), 1, "{by_handle}");
    assert_eq!(by_handle[0]["agent_id"], echo["agent_id"]);
    let by_id = app.ok(&ada.key, "list_sessions", json!({"agent_id": echo["agent_id"]}))["sessions"].clone();
    assert_eq!(by_handle, by_id);
    // An unknown handle is a clear not_found that names it, never an empty list.
    for tool in ["list_sessions", "get_agent", "update_agent"] {
        let error = TestApp::tool_error(&app.call(&ada.key, tool, json!({"agent_id": "@nobody"})));
        assert_eq!(error["code"], "not_found", "{tool}");
        assert!(error["message"].as_str().unwrap().contains("`@nobody`"), "{tool}: {error}");
    }
    let routine = app.ok(&ada.key, "create_routine", json!({"name": "r", "agent_id": "@echo", "message": "m"}));
    assert_eq!(routine["agent_id"], echo["agent_id"]);
    // Another account's private agent is not found by its handle; a public one may be listed by it.
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(app.err_code(&bo.key, "get_agent", json!({"agent_id": "@echo"})), "not_found");
    assert_eq!(app.err_code(&bo.key, "list_sessions", json!({"agent_id": "@echo"})), "not_found");
    app.ok(&ada.key, "update_agent", json!({"agent_id": "@echo", "is_public": true}));
    assert_eq!(app.ok(&bo.key, "list_sessions", json!({"agent_id": "@echo"}))["sessions"], json!([]));
    assert_eq!(app.err_code(&bo.key, "update_agent", json!({"agent_id": "@echo", "name": "mine"})), "not_found");
    // REST takes a handle in the path too.
    let got = app.request("GET", "/v1/agents/@echo", Some(&ada.key), None);
    assert_eq!((got.status, got.json_body()["agent_id"].clone()), (200, echo["agent_id"].clone()));
    assert_eq!(app.request("DELETE", "/v1/agents/@echo", Some(&ada.key), None).json_body()["deleted"], true);
}

#[test]
fn a_handoffs_new_session_gets_a_short_title() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    app.ok(&ada.key, "create_agent", json!({"name": "A", "handle": "first", "harness": "echo", "model": "m"}));
    app.ok(&ada.key, "create_agent", json!({"name": "B", "handle": "second", "harness": "echo", "model": "m"}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": "@first", "message": "Fix the login page", "idempotency_key": "k"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].clone();
    let title = |h: &Value| {
        let target = h["target_session"]["session"]["session_id"].clone();
        app.ok(&ada.key, "get_session", json!({"session_id": target}))["title"].as_str().unwrap().to_owned()
    };
    let plain = app.ok(
        &ada.key,
        "hand_off_session",
        json!({"session_id": sid, "agent_id": "@second", "idempotency_key": "h1"}),
    );
    assert_eq!(title(&plain), "Fix the login page", "the session it continues");
    let note = "Please finish the form validation and the error messages, then run every test\nand report";
    let noted = app.ok(
        &ada.key,
        "hand_off_session",
        json!({"session_id": sid, "agent_id": "@second", "message": note, "idempotency_key": "h2"}),
    );
    assert_eq!(title(&noted), "Please finish the form validation and the error messages,…");
}

#[test]
fn decisions_memory_and_grants_are_tools_with_truthful_annotations() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    app.ok(&ada.key, "create_agent", json!({"name": "E", "handle": "ed", "harness": "echo", "model": "m"}));
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": "@ed", "message": "ship it", "idempotency_key": "k"}));
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();

    let recorded = app.ok(&ada.key, "record_session", json!({"session_id": sid, "name": "adopted", "note": "good"}));
    assert_eq!(recorded["record"]["name"], "adopted");
    let read = app.ok(&ada.key, "read_session_record", json!({"session_id": sid}));
    assert!(read.to_string().contains("adopted"), "{read}");

    let saved = app.ok(&ada.key, "save_memory", json!({"text": "Ada prefers short answers"}));
    let id = saved["memory_id"].clone();
    assert_eq!(app.ok(&ada.key, "list_memory", json!({}))["entries"][0]["memory_id"], id);
    assert_eq!(app.ok(&ada.key, "delete_memory", json!({"memory_id": id}))["deleted"], true);
    assert_eq!(app.ok(&ada.key, "list_memory", json!({}))["entries"], json!([]));

    // A grant, approved by a person, listed and revoked over MCP.
    let r = app.request(
        "POST",
        "/v1/connectors",
        Some(&ada.key),
        Some(json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": "vt-1"}}})),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let token = app.session_token(&ada.key, &sid);
    let pending = app.agent_ok(&token, "request_access", json!({"target": "web", "scope": ["read"], "reason": "look"}));
    let req = app.ok(&ada.key, "get_task", json!({"task_id": sid}))["open_requests"][0]["request_id"].clone();
    app.ok(&ada.key, "answer_request", json!({"task_id": sid, "request_id": req, "answer": "approve"}));
    let grants = app.ok(&ada.key, "list_grants", json!({}))["grants"].clone();
    assert_eq!(grants[0]["grant_id"], pending["grantId"]);
    let revoked = app.ok(&ada.key, "revoke_grant", json!({"grant_id": pending["grantId"]}));
    assert_eq!(revoked["revoked"], true);
    assert_eq!(app.agent_ok(&token, "check_grant", json!({"grantId": pending["grantId"]}))["status"], "denied");
    assert_eq!(app.ok(&ada.key, "list_grants", json!({}))["grants"], json!([]));

    for (tool, read_only, destructive, idempotent) in [
        ("record_session", false, false, false),
        ("save_memory", false, false, true),
        ("list_memory", true, false, true),
        ("delete_memory", false, true, true),
        ("list_grants", true, false, true),
        ("revoke_grant", false, true, true),
    ] {
        let a = annotations(tool);
        assert_eq!(
            (a["readOnlyHint"].as_bool(), a["destructiveHint"].as_bool(), a["idempotentHint"].as_bool()),
            (Some(read_only), Some(destructive), Some(idempotent)),
            "{tool}"
        );
    }
    // A read-only key sees them but may not change anything.
    let read_only = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "ro", "scopes": ["read"]})));
    let ro = read_only.json_body()["key"].as_str().unwrap().to_owned();
    assert_eq!(app.err_code(&ro, "save_memory", json!({"text": "x"})), "insufficient_scope");
    assert_eq!(
        app.err_code(&ro, "create_agent", json!({"name": "x", "harness": "echo", "model": "m"})),
        "insufficient_scope"
    );
}
