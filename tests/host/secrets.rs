//! Secrets across tenants and roles (issue 13, items 1–5): a secret named in an agent is resolved only in
//! the workspace that owns the agent, and only an admin names one; credentials an agent fetched never
//! land in events, indexes or the audit log; one redaction rule; one rule for every URL a tenant supplies.

use crate::support::{runner_request, Account, TestApp};
use agentsky::cx::{Config, Outbound};
use agentsky::http::HttpResponse;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

const MASTER: &str = "test-master-key";

fn config() -> Config {
    Config { admin_token: Some("adm".into()), secrets_key: Some(MASTER.into()), ..TestApp::config() }
}

fn app() -> TestApp {
    TestApp::with_config(config())
}

fn credit(app: &TestApp, slug: &str) {
    let r =
        app.request("POST", &format!("/v1/workspaces/{slug}/credit"), Some("adm"), Some(json!({"amount_cents": 1000})));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
}

fn put_secret(app: &TestApp, who: &Account, workspace: &str, name: &str, value: &str) -> HttpResponse {
    app.request(
        "PUT",
        &format!("/v1/secrets/{name}"),
        Some(&who.key),
        Some(json!({"value": value, "workspace": workspace})),
    )
}

fn set_secrets(app: &TestApp, who: &Account, workspace: &str, secrets: &[(&str, &str)]) {
    for (name, value) in secrets {
        let r = put_secret(app, who, workspace, name, value);
        assert_eq!(r.status, 200, "{name}: {:?}", r.json_body());
    }
}

fn create_agent(app: &TestApp, who: &Account, body: Value) -> HttpResponse {
    app.request("POST", "/v1/agents", Some(&who.key), Some(body))
}

fn agent_id(r: &HttpResponse) -> String {
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    r.json_body()["agent_id"].as_str().unwrap().to_owned()
}

/// Makes `who` a member of `slug` with `role`, as an accepted invitation does.
fn join(app: &TestApp, slug: &str, who: &Account, role: &str) {
    let conn = &app.db.0;
    let account: String =
        conn.query_row("SELECT account_id FROM account WHERE email = ?1", [&who.email], |r| r.get(0)).unwrap();
    conn.execute(
        "INSERT INTO membership (workspace_id, account_id, role, created_ms)
         SELECT workspace_id, ?2, ?3, 0 FROM workspace WHERE slug = ?1",
        rusqlite::params![slug, account, role],
    )
    .unwrap();
}

fn completion(message: Value) -> HttpResponse {
    HttpResponse::json(
        200,
        &json!({"choices": [{"message": message}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
    )
}

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

fn body(req: &Outbound) -> Value {
    serde_json::from_slice(&req.body).unwrap()
}

fn auth(req: &Outbound) -> Option<String> {
    req.headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.clone())
}

/// A remote MCP server with one tool, `ping`.
fn mcp_server(req: &Outbound) -> HttpResponse {
    let rpc = body(req);
    let result = match rpc["method"].as_str().unwrap() {
        "notifications/initialized" => return HttpResponse::new(202),
        "initialize" => {
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "t", "version": "1"}})
        }
        "tools/list" => json!({"tools": [{"name": "ping", "description": "Ping", "inputSchema": {"type": "object"}}]}),
        "tools/call" => json!({"content": [{"type": "text", "text": "pong"}]}),
        other => panic!("unexpected {other}"),
    };
    HttpResponse::json(200, &json!({"jsonrpc": "2.0", "id": rpc["id"], "result": result}))
}

/// Starts a session of `agent` as `who` and lets it run; its whole transcript.
fn run(app: &TestApp, who: &Account, workspace: &str, agent: &str, key: &str) -> (String, Vec<Value>) {
    let args = json!({"agent_id": agent, "message": "go", "idempotency_key": key, "workspace": workspace});
    let started = app.ok(&who.key, "start_session", args);
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    (sid.clone(), events(app, who, &sid))
}

fn events(app: &TestApp, who: &Account, sid: &str) -> Vec<Value> {
    let page = app.ok(&who.key, "read_session", json!({"session_id": sid}));
    page["events"].as_array().unwrap().clone()
}

/// Every text value of every row of every D1 table, for "this string is stored nowhere".
fn everything_in_d1(app: &TestApp) -> String {
    let conn = &app.db.0;
    let mut tables = conn.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").unwrap();
    let names: Vec<String> = tables.query_map([], |r| r.get(0)).unwrap().map(Result::unwrap).collect();
    let mut out = String::new();
    for t in names {
        let Ok(mut s) = conn.prepare(&format!("SELECT * FROM \"{t}\"")) else { continue };
        let n = s.column_count();
        let mut rows = s.query([]).unwrap();
        while let Some(row) = rows.next().unwrap() {
            for i in 0..n {
                if let Ok(text) = row.get::<_, String>(i) {
                    out.push_str(&text);
                    out.push('\n');
                }
            }
        }
    }
    out
}

// Item 1 ------------------------------------------------------------------------------------------

/// A public agent of Ada's names `OPENAI_API_KEY` as its MCP server's bearer; Bob starts it by handle.
fn public_thief(app: &TestApp) -> (Account, Account) {
    let ada = app.signup("Ada", "ada@example.com");
    let bob = app.signup("Bob", "bob@example.com");
    credit(app, &bob.slug);
    set_secrets(app, &ada, &ada.slug, &[("OPENAI_API_KEY", "ada-own-token-for-tools")]);
    set_secrets(
        app,
        &bob,
        &bob.slug,
        &[("OPENAI_BASE_URL", "https://model.example.com/v1"), ("OPENAI_API_KEY", "sk-bob-model-key-0000000001")],
    );
    agent_id(&create_agent(
        app,
        &ada,
        json!({"name": "Helper", "handle": "helper", "harness": "openai", "model": "m", "is_public": true,
               "description": "Helps.",
               "mcpServers": [{"name": "tools", "url": "https://tools.example.com/mcp", "bearer_secret": "OPENAI_API_KEY"}]}),
    ));
    (ada, bob)
}

fn script_tools_then_done(app: &TestApp) -> Rc<RefCell<Vec<Option<String>>>> {
    let tool_auth = Rc::new(RefCell::new(Vec::new()));
    let seen = tool_auth.clone();
    app.sessions.net.answer(move |req| {
        if req.url.starts_with("https://tools.example.com") {
            seen.borrow_mut().push(auth(req));
            return mcp_server(req);
        }
        let last = body(req)["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "user" {
            completion(json!({"role": "assistant", "tool_calls": [call("p1", "tools__ping", json!({}))]}))
        } else {
            completion(json!({"role": "assistant", "content": "done"}))
        }
    });
    tool_auth
}

#[test]
fn a_public_agents_bearer_secret_is_resolved_in_its_owners_workspace_never_the_callers() {
    let app = app();
    let (ada, bob) = public_thief(&app);
    let tool_auth = script_tools_then_done(&app);
    let (_, events) = run(&app, &bob, &bob.slug, "@helper", "k1");
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    let sent = tool_auth.borrow().clone();
    assert!(!sent.is_empty(), "the MCP server was called");
    assert!(
        sent.iter().all(|a| a.as_deref() == Some("Bearer ada-own-token-for-tools")),
        "the owner's secret, never the caller's: {sent:?}"
    );

    // Without the secret in the owner's workspace nothing is sent: the caller's is never a fallback.
    app.request("DELETE", "/v1/secrets/OPENAI_API_KEY", Some(&ada.key), None);
    tool_auth.borrow_mut().clear();
    run(&app, &bob, &bob.slug, "@helper", "k2");
    let sent = tool_auth.borrow().clone();
    assert!(!sent.is_empty() && sent.iter().all(Option::is_none), "{sent:?}");
}

#[test]
fn the_catalog_shows_a_public_agents_remote_mcp_hosts_and_never_its_secret_names() {
    let app = app();
    let (_, bob) = public_thief(&app);
    let found = app.ok(&bob.key, "search_catalog", json!({"query": "helper"}));
    let entry = found["agents"].as_array().unwrap().iter().find(|a| a["handle"] == "@helper").unwrap().clone();
    assert_eq!(entry["source"], "public");
    assert_eq!(entry["remote_mcp_hosts"], json!(["tools.example.com"]), "{entry}");
    let text = entry.to_string();
    assert!(!text.contains("bearer") && !text.contains("/mcp") && !text.contains("ada-own-token"), "{text}");
}

// Item 2 ------------------------------------------------------------------------------------------

#[test]
fn naming_a_secret_in_an_agent_needs_the_admin_role() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let bob = app.signup("Bob", "bob@example.com");
    let cy = app.signup("Cy", "cy@example.com");
    let r = app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Acme", "slug": "acme"})));
    assert_eq!(r.status, 201);
    join(&app, "acme", &bob, "member");
    join(&app, "acme", &cy, "admin");
    let named = |url: &str| json!([{"name": "tools", "url": url, "bearer_secret": "OPENAI_API_KEY"}]);
    let agent = |servers: Value| json!({"workspace": "acme", "name": "A", "harness": "echo", "model": "m", "mcpServers": servers});

    let refused = create_agent(&app, &bob, agent(named("https://bob.example.com/mcp")));
    assert_eq!(refused.status, 403, "{:?}", refused.json_body());
    let message = refused.json_body()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("bearer_secret") && message.contains("admin"), "{message}");

    // Without a secret a member creates agents as before, but cannot add one later.
    let plain =
        agent_id(&create_agent(&app, &bob, agent(json!([{"name": "tools", "url": "https://bob.example.com/mcp"}]))));
    let patch = |who: &Account, id: &str, body: Value| {
        app.request("PATCH", &format!("/v1/agents/{id}"), Some(&who.key), Some(body))
    };
    assert_eq!(patch(&bob, &plain, json!({"mcpServers": named("https://bob.example.com/mcp")})).status, 403);

    // An admin's definition that names a secret stays an admin's: a member may not point it elsewhere.
    let admins = agent_id(&create_agent(&app, &cy, agent(named("https://tools.example.com/mcp"))));
    assert_eq!(patch(&bob, &admins, json!({"mcpServers": named("https://bob.example.com/mcp")})).status, 403);
    assert_eq!(patch(&bob, &admins, json!({"name": "Renamed"})).status, 403);
    assert_eq!(patch(&cy, &admins, json!({"name": "Renamed"})).status, 200);
    assert_eq!(patch(&ada, &plain, json!({"mcpServers": named("https://tools.example.com/mcp")})).status, 200);
}

// Item 3 ------------------------------------------------------------------------------------------

const CREDENTIAL: &str = "vt-live-credential-9f8e7d6c";

/// Ada's workspace with a model, a target whose credential is [`CREDENTIAL`], a policy that grants
/// deploys on it, and an openai agent.
fn with_target(app: &TestApp) -> (Account, String) {
    let ada = app.signup("Ada", "ada@example.com");
    credit(app, &ada.slug);
    set_secrets(
        app,
        &ada,
        &ada.slug,
        &[("OPENAI_BASE_URL", "https://model.example.com/v1"), ("OPENAI_API_KEY", "sk-ada-model-key-00000001")],
    );
    let r = app.request(
        "POST",
        "/v1/connectors",
        Some(&ada.key),
        Some(json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": CREDENTIAL}}})),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let con = r.json_body()["connector_id"].as_str().unwrap().to_owned();
    let p = app.request(
        "PUT",
        "/v1/policies",
        Some(&ada.key),
        Some(json!({"connector_id": con, "scope": "deploy", "decision": "allow"})),
    );
    assert_eq!(p.status, 200, "{:?}", p.json_body());
    let agent = agent_id(&create_agent(app, &ada, json!({"name": "Dep", "harness": "openai", "model": "m"})));
    (ada, agent)
}

#[test]
fn a_credential_reaches_the_model_in_its_step_but_is_persisted_redacted() {
    let app = app();
    let (ada, agent) = with_target(&app);
    let saw_live = Rc::new(RefCell::new(false));
    let later = Rc::new(RefCell::new(Vec::<String>::new()));
    let (live, rebuilt) = (saw_live.clone(), later.clone());
    app.sessions.net.answer(move |req| {
        let messages = body(req)["messages"].as_array().unwrap().clone();
        let last = messages.last().unwrap().clone();
        let text = last["content"].as_str().unwrap_or_default().to_owned();
        match (last["role"].as_str().unwrap(), last["tool_call_id"].as_str()) {
            ("user", _) if text == "go" => completion(json!({"role": "assistant", "tool_calls": [
                call("a1", "request_access", json!({"target": "web", "scope": ["deploy"], "reason": "ship"}))]})),
            ("tool", Some("a1")) => {
                let grant: Value = serde_json::from_str(&text).unwrap();
                completion(json!({"role": "assistant", "tool_calls": [
                    call("c1", "get_credential", json!({"grantId": grant["grantId"]}))]}))
            }
            ("tool", Some("c1")) => {
                // The model has the real value in the same step, to use at once.
                *live.borrow_mut() = text.contains(CREDENTIAL);
                completion(json!({"role": "assistant", "content": format!("Using {CREDENTIAL}."), "tool_calls": [
                    call("u1", "list_task_files", json!({"token": CREDENTIAL}))]}))
            }
            ("tool", Some("u1")) => {
                completion(json!({"role": "assistant", "content": format!("Deployed with {CREDENTIAL}.")}))
            }
            _ => {
                rebuilt.borrow_mut().push(serde_json::to_string(&messages).unwrap());
                completion(json!({"role": "assistant", "content": "ok"}))
            }
        }
    });
    let (sid, events) = run(&app, &ada, &ada.slug, &agent, "k");
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:#?}");
    assert!(*saw_live.borrow(), "the model received the credential in the step that fetched it");

    let transcript = serde_json::to_string(&events).unwrap();
    assert!(!transcript.contains(CREDENTIAL), "{transcript}");
    let result = events.iter().find(|e| e["type"] == "tool_result" && e["call_id"] == "c1").unwrap();
    let stored = result["content"].as_str().unwrap();
    assert!(stored.contains("VERCEL_TOKEN") && stored.contains("[redacted]"), "{stored}");
    let reply = events.iter().rev().find(|e| e["type"] == "agent_message").unwrap();
    assert_eq!(reply["text"], "Deployed with [redacted].");

    assert!(!everything_in_d1(&app).contains(CREDENTIAL), "no D1 row (index, audit, records) holds it");
    let hits = app.ok(&ada.key, "search_context", json!({"query": "vt-live-credential"}));
    assert_eq!(hits["hits"], json!([]));

    // The next turn's conversation is rebuilt from the log: it has only the placeholder.
    app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "again", "idempotency_key": "k2"}));
    app.settle();
    let rebuilt = later.borrow().clone();
    assert_eq!(rebuilt.len(), 1);
    assert!(!rebuilt[0].contains(CREDENTIAL) && rebuilt[0].contains("[redacted]"), "{}", rebuilt[0]);
}

#[test]
fn events_a_runner_reports_are_stored_redacted() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let token = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"}))).json_body()
        ["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let agent = agent_id(&create_agent(&app, &ada, json!({"name": "C", "harness": "runner", "model": "m"})));
    let started =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent, "message": "go", "idempotency_key": "k"}));
    app.settle();
    let sid = started["session"]["session_id"].as_str().unwrap();
    let turn = app.send(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).json_body();
    let credential = json!({"kind": "env", "env": {"VERCEL_TOKEN": CREDENTIAL}}).to_string();
    let posted = app.send(runner_request(
        &token,
        "POST",
        "/v1/runner/events",
        json!({"lease_id": turn["lease_id"], "events": [
            {"key": "1", "type": "tool_result", "name": "get_credential", "content": credential},
            {"key": "2", "type": "agent_message", "text": "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwx; done"},
        ], "done": "completed"}),
    ));
    assert_eq!(posted.status, 200, "{:?}", posted.json_body());
    let events = events(&app, &ada, sid);
    let text = serde_json::to_string(&events).unwrap();
    assert!(!text.contains(CREDENTIAL) && !text.contains("ghp_abc"), "{text}");
    let message = events.iter().find(|e| e["type"] == "agent_message").unwrap();
    assert_eq!(message["text"], "export GITHUB_TOKEN=[redacted]; done");
}

// Item 4 ------------------------------------------------------------------------------------------

// Item 5 ------------------------------------------------------------------------------------------

#[test]
fn mcp_server_urls_follow_the_outbound_rule() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    for bad in [
        "http://tools.example.com/mcp",
        "https://user:pass@tools.example.com/mcp",
        "http://127.0.0.1:80@example.com/",
        "https://169.254.169.254/latest",
        "https://10.0.0.8/mcp",
        "https://[fd00:ec2::254]/",
        "https://[::ffff:127.0.0.1]/",
        "https://2130706433/",
        "https://0x7f.1/",
        "https://metadata.google.internal/",
        "http://127.0.0.1:8788/mcp",
        "http://localhost:8788/mcp",
    ] {
        let r = create_agent(
            &app,
            &ada,
            json!({"name": "A", "harness": "echo", "model": "m", "mcpServers": [{"name": "t", "url": bad}]}),
        );
        assert_eq!(r.status, 400, "{bad}: {:?}", r.json_body());
        assert!(r.json_body()["error"]["message"].as_str().unwrap().contains("mcpServers[].url"), "{bad}");
    }

    // A local development deployment opts in to plain http on loopback, and to nothing else.
    let dev = TestApp::with_config(Config { allow_loopback_http: true, ..config() });
    let ada = dev.signup("Ada", "ada@example.com");
    for (url, status) in [
        ("http://127.0.0.1:8788/mcp", 201),
        ("http://localhost:8788/mcp", 201),
        ("http://[::1]:8788/mcp", 201),
        ("http://10.0.0.8/mcp", 400),
        ("https://169.254.169.254/", 400),
    ] {
        let r = create_agent(
            &dev,
            &ada,
            json!({"name": "A", "harness": "echo", "model": "m", "mcpServers": [{"name": "t", "url": url}]}),
        );
        assert_eq!(r.status, status, "{url}: {:?}", r.json_body());
    }
}

#[test]
fn the_model_endpoint_is_checked_when_its_secret_is_set_and_when_it_is_used() {
    let app = app();
    let (ada, agent) = with_target(&app);
    for bad in [
        "http://model.example.com/v1",
        "https://169.254.169.254/v1",
        "https://u:p@model.example.com/",
        "ftp://x.example/",
    ] {
        let r = put_secret(&app, &ada, &ada.slug, "OPENAI_BASE_URL", bad);
        assert_eq!(r.status, 400, "{bad}: {:?}", r.json_body());
        assert!(r.json_body()["error"]["message"].as_str().unwrap().contains("OPENAI_BASE_URL"), "{bad}");
    }

    // A value stored before the rule existed is refused when used, and nothing is sent.
    let workspace_id: String =
        app.db.0.query_row("SELECT workspace_id FROM workspace WHERE slug = ?1", [&ada.slug], |r| r.get(0)).unwrap();
    let sealed = agentsky::rules::seal::seal(
        MASTER,
        &agentsky::rules::seal::secret_aad(&workspace_id, "OPENAI_BASE_URL"),
        "https://169.254.169.254/v1",
    );
    app.db.0.execute("UPDATE secret SET sealed = ?1 WHERE name = 'OPENAI_BASE_URL'", [&sealed]).unwrap();
    app.sessions.net.answer(|_| completion(json!({"role": "assistant", "content": "leaked"})));
    let (_, events) = run(&app, &ada, &ada.slug, &agent, "k");
    let error = events.iter().find(|e| e["type"] == "error").unwrap()["message"].as_str().unwrap().to_owned();
    assert!(error.contains("OPENAI_BASE_URL") && error.contains("link-local"), "{error}");
    assert!(app.sessions.net.requests.borrow().is_empty(), "nothing was sent");
}

#[test]
fn redirects_are_followed_only_within_the_same_origin() {
    let app = app();
    let (ada, agent) = with_target(&app);
    app.sessions.net.answer(|req| match req.url.as_str() {
        "https://model.example.com/v1/chat/completions" => {
            HttpResponse::text(307, "text/plain", "moved").with_header("location", "https://evil.example.com/steal")
        }
        other => panic!("followed a redirect to {other}"),
    });
    let (_, events) = run(&app, &ada, &ada.slug, &agent, "k1");
    let error = events.iter().find(|e| e["type"] == "error").unwrap()["message"].as_str().unwrap().to_owned();
    assert!(error.contains("redirect") && error.contains("evil.example.com"), "{error}");
    assert_eq!(app.sessions.net.requests.borrow().len(), 1);

    // The same origin (a moved path, a trailing slash) is followed with the same method and body.
    app.sessions.net.answer(|req| match req.url.as_str() {
        "https://model.example.com/v1/chat/completions" => {
            HttpResponse::text(308, "text/plain", "").with_header("location", "/v2/chat/completions")
        }
        "https://model.example.com/v2/chat/completions" => completion(json!({"role": "assistant", "content": "hi"})),
        other => panic!("unexpected {other}"),
    });
    let (_, events) = run(&app, &ada, &ada.slug, &agent, "k2");
    assert_eq!(events.last().unwrap()["reason"], "completed", "{events:?}");
    let requests = app.sessions.net.requests.borrow();
    let last = &requests[requests.len() - 1];
    assert_eq!(body(last)["model"], "m", "the body is sent again");
    assert_eq!(auth(last).as_deref(), Some("Bearer sk-ada-model-key-00000001"));
}

#[test]
fn an_error_body_from_a_tenant_url_is_summarized_not_echoed() {
    let app = app();
    let (ada, agent) = with_target(&app);
    let long = format!("{{\"error\": \"{}\", \"key\": \"sk-live1234567890abcdefXYZ\"}}", "x".repeat(2_000));
    app.sessions.net.answer(move |_| HttpResponse::text(500, "application/json", long.clone()));
    let (_, events) = run(&app, &ada, &ada.slug, &agent, "k");
    let error = events.iter().find(|e| e["type"] == "error").unwrap()["message"].as_str().unwrap().to_owned();
    assert!(error.contains("HTTP 500"), "{error}");
    assert!(error.chars().count() < 200, "{} characters: {error}", error.chars().count());
    assert!(!error.contains("sk-live"), "{error}");
}

#[test]
fn a_declared_mcp_server_stored_before_the_rule_is_refused_when_used() {
    let app = app();
    let (ada, agent) = with_target(&app);
    let servers = json!([{"name": "meta", "url": "https://169.254.169.254/latest"}]).to_string();
    app.db.0.execute("UPDATE agent SET mcp_servers = ?1", [&servers]).unwrap();
    app.sessions.net.answer(|req| {
        assert!(!req.url.contains("169.254"), "called {}", req.url);
        completion(json!({"role": "assistant", "content": "hi"}))
    });
    let (_, events) = run(&app, &ada, &ada.slug, &agent, "k");
    let error = events.iter().find(|e| e["type"] == "error").unwrap()["message"].as_str().unwrap().to_owned();
    assert!(error.contains("meta") && error.contains("link-local"), "{error}");
}
