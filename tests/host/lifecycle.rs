//! A request's whole life: it ends when its session ends (the waiting agent hears "session ended" and
//! a late answer is refused), it expires after the workspace's time, identical asks are one, the agent
//! can withdraw it, a denial's reason reaches the agent, and every step is in the audit log. Also what a
//! runner's agent reads: a peer's message marked as a peer's, and a long session's whole history.

use crate::support::{runner_request, Account, HostSessions, TestApp};
use serde_json::{json, Value};
use std::rc::Rc;

/// An account, an echo agent's session with a connected target, and the session's token.
fn setup(app: &TestApp) -> (Account, String, String) {
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "m"}));
    let s =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "ship it", "idempotency_key": "s1"}));
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let r = app.request(
        "POST",
        "/v1/connectors",
        Some(&ada.key),
        Some(json!({"name": "web-prod", "provider": "vercel", "env": "prod",
            "credentials": {"env": {"VERCEL_TOKEN": "vt-secret-1"}}})),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let token = app.session_token(&ada.key, &sid);
    (ada, sid, token)
}

fn ask(app: &TestApp, token: &str) -> Value {
    app.agent_ok(
        token,
        "request_access",
        json!({"target": "web-prod", "scope": ["deploy"], "reason": "deploy the fix",
            "command": "vercel deploy --prod --yes --name web"}),
    )
}

fn open_requests(app: &TestApp, key: &str) -> Vec<Value> {
    app.ok(key, "list_requests", json!({}))["requests"].as_array().unwrap().clone()
}

fn answer(app: &TestApp, key: &str, r: &Value, body: Value) -> agentsky::http::HttpResponse {
    let path =
        format!("/v1/tasks/{}/requests/{}/answer", r["task_id"].as_str().unwrap(), r["request_id"].as_str().unwrap());
    app.request("POST", &path, Some(key), Some(body))
}

fn audit_actions(app: &TestApp, key: &str, request_id: &str) -> Vec<String> {
    let log = app.request("GET", "/v1/audit", Some(key), None).json_body();
    let mut out: Vec<String> = log["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["subject"] == request_id)
        .map(|e| e["action"].as_str().unwrap().to_owned())
        .collect();
    out.reverse();
    out
}

/// Runs `f` as the agent's wait begins, with the REST face of the app.
fn during_wait(app: &TestApp, f: impl Fn(HostSessions) -> futures::future::LocalBoxFuture<'static, ()> + 'static) {
    let f = Rc::new(f);
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, key: String| {
        let f = f.clone();
        Box::pin(async move {
            if key.starts_with("req_") {
                f(sessions).await;
            }
        })
    }));
}

fn rest(key: &str, method: &str, path: &str, body: Value) -> agentsky::http::HttpRequest {
    agentsky::http::HttpRequest {
        stream: None,
        method: method.into(),
        path: path.into(),
        query: String::new(),
        headers: vec![
            ("host".into(), "127.0.0.1:8787".into()),
            ("authorization".into(), format!("Bearer {key}")),
            ("content-type".into(), "application/json".into()),
        ],
        body: if body.is_null() { vec![] } else { serde_json::to_vec(&body).unwrap() },
        client_ip: "203.0.113.7".into(),
    }
}

#[test]
fn stopping_a_session_mid_wait_releases_its_agent_and_refuses_a_late_answer() {
    let app = TestApp::with_secrets();
    let (ada, sid, token) = setup(&app);
    let (key, s) = (ada.key.clone(), sid.clone());
    during_wait(&app, move |sessions| {
        let (key, s) = (key.clone(), s.clone());
        Box::pin(async move {
            let r = sessions.handle(rest(&key, "POST", &format!("/v1/sessions/{s}/stop"), json!(null))).await;
            assert_eq!(r.status, 200, "{:?}", r.json_body());
        })
    });
    let err =
        app.agent_err(&token, "request_access", json!({"target": "web-prod", "scope": ["deploy"], "reason": "x"}));
    assert!(err.contains("session ended"), "{err}");
    *app.sessions.on_wait.borrow_mut() = None;
    assert!(open_requests(&app, &ada.key).is_empty(), "closed, no longer open");

    // The closed request cannot be approved, and no grant comes of trying.
    let log = app.request("GET", "/v1/audit", Some(&ada.key), None).json_body();
    let opened = log["entries"].as_array().unwrap().iter().find(|e| e["action"] == "request_opened").unwrap().clone();
    let request_id = opened["subject"].as_str().unwrap().to_owned();
    let r = json!({"task_id": sid, "request_id": request_id});
    let late = answer(&app, &ada.key, &r, json!({"answer": "approve"}));
    assert_eq!(late.status, 409, "{:?}", late.json_body());
    assert!(late.json_body()["error"]["message"].as_str().unwrap().contains("closed"));
    let grants = app.request("GET", "/v1/grants", Some(&ada.key), None).json_body();
    assert_eq!(grants["grants"], json!([]), "{grants}");
    assert_eq!(audit_actions(&app, &ada.key, &request_id), ["request_opened", "request_closed"]);
}

#[test]
fn requests_expire_after_the_workspace_time_and_check_grant_says_expired() {
    let app = TestApp::with_secrets();
    let (ada, _sid, token) = setup(&app);
    let bad = app.request("PUT", "/v1/requests/expiry", Some(&ada.key), Some(json!({"minutes": 0})));
    assert_eq!(bad.status, 400);
    assert!(bad.json_body()["error"]["message"].as_str().unwrap().contains("`minutes`"));
    let set = app.request("PUT", "/v1/requests/expiry", Some(&ada.key), Some(json!({"minutes": 1})));
    assert_eq!(set.status, 200, "{:?}", set.json_body());
    assert_eq!(set.json_body()["minutes"], 1);

    let pending = ask(&app, &token);
    assert_eq!(pending["status"], "pending");
    let listed = open_requests(&app, &ada.key);
    assert_eq!(listed.len(), 1);
    let r = listed[0].clone();
    assert!(r["expires_ms"].as_i64().is_some(), "{r}");
    app.advance(61_000);
    let g = app.agent_ok(&token, "check_grant", json!({"grantId": pending["grantId"]}));
    assert_eq!(g["status"], "expired", "{g}");
    assert!(open_requests(&app, &ada.key).is_empty());
    assert_eq!(answer(&app, &ada.key, &r, json!({"answer": "approve"})).status, 409);
    let rid = r["request_id"].as_str().unwrap();
    assert_eq!(audit_actions(&app, &ada.key, rid), ["request_opened", "request_expired"]);

    // A grant past its time is expired too, not denied.
    let again = ask(&app, &token);
    let r = open_requests(&app, &ada.key)[0].clone();
    assert_eq!(answer(&app, &ada.key, &r, json!({"answer": "approve", "expires_in_minutes": 1})).status, 200);
    assert_eq!(app.agent_ok(&token, "check_grant", json!({"grantId": again["grantId"]}))["status"], "active");
    app.advance(61_000);
    assert_eq!(app.agent_ok(&token, "check_grant", json!({"grantId": again["grantId"]}))["status"], "expired");
}

#[test]
fn identical_requests_are_one_and_an_agent_withdraws_its_own() {
    let app = TestApp::with_secrets();
    let (ada, _sid, token) = setup(&app);
    let first = ask(&app, &token);
    let second = ask(&app, &token);
    assert_eq!(first["grantId"], second["grantId"], "the same request");
    let listed = open_requests(&app, &ada.key);
    assert_eq!(listed.len(), 1, "one request for the person");
    // Everything a person needs to decide: who asks, in which session and task, the whole command, and
    // what approving would allow.
    let r = &listed[0];
    assert_eq!((r["agent_name"].as_str(), r["session_title"].as_str()), (Some("Dev"), Some("ship it")));
    assert_eq!(r["payload"]["command"], "vercel deploy --prod --yes --name web");
    assert!(r["would_allow"].as_str().unwrap().contains("deploy on `web-prod`"), "{r}");
    // Other scopes are another request.
    app.agent_ok(&token, "request_access", json!({"target": "web-prod", "scope": ["read"], "reason": "look"}));
    assert_eq!(open_requests(&app, &ada.key).len(), 2);

    let rid = r["request_id"].as_str().unwrap();
    let unknown = json!({"requestId": "req_00000000000000000000000000"});
    assert!(app.agent_err(&token, "withdraw_request", unknown).contains("-32001"));
    let malformed = app.agent_err(&token, "withdraw_request", json!({"requestId": "req_nope"}));
    assert!(
        malformed.contains("-32602") && malformed.contains("`requestId` must be a request id like req_…"),
        "{malformed}"
    );
    let w = app.agent_ok(&token, "withdraw_request", json!({"requestId": rid}));
    assert_eq!(w["status"], "withdrawn");
    assert!(app.agent_err(&token, "withdraw_request", json!({"requestId": rid})).contains("already withdrawn"));
    let err = app.agent_err(&token, "check_grant", json!({"grantId": first["grantId"]}));
    assert!(err.contains("withdrawn"), "{err}");
    assert_eq!(open_requests(&app, &ada.key).len(), 1);
    assert_eq!(answer(&app, &ada.key, r, json!({"answer": "approve"})).status, 409);
    assert_eq!(audit_actions(&app, &ada.key, rid), ["request_opened", "request_withdrawn"]);
}

#[test]
fn a_denial_reason_reaches_the_agent_and_the_audit_trail_follows_one_request() {
    let app = TestApp::with_secrets();
    let (ada, _sid, token) = setup(&app);
    let key = ada.key.clone();
    during_wait(&app, move |sessions| {
        let key = key.clone();
        Box::pin(async move {
            let listed = sessions.handle(rest(&key, "GET", "/v1/requests", json!(null))).await.json_body();
            let r = &listed["requests"][0];
            let path = format!(
                "/v1/tasks/{}/requests/{}/answer",
                r["task_id"].as_str().unwrap(),
                r["request_id"].as_str().unwrap()
            );
            let body = json!({"answer": "deny", "note": "not on a Friday"});
            assert_eq!(sessions.handle(rest(&key, "POST", &path, body)).await.status, 200);
        })
    });
    let denied = ask(&app, &token);
    assert_eq!((denied["status"].as_str(), denied["reason"].as_str()), (Some("denied"), Some("not on a Friday")));

    // Another request, approved: opened, answered (by whom) and approved, in that order.
    let key = ada.key.clone();
    during_wait(&app, move |sessions| {
        let key = key.clone();
        Box::pin(async move {
            let listed = sessions.handle(rest(&key, "GET", "/v1/requests", json!(null))).await.json_body();
            let r = &listed["requests"][0];
            let path = format!(
                "/v1/tasks/{}/requests/{}/answer",
                r["task_id"].as_str().unwrap(),
                r["request_id"].as_str().unwrap()
            );
            assert_eq!(sessions.handle(rest(&key, "POST", &path, json!({"answer": "approve"}))).await.status, 200);
        })
    });
    let approved = ask(&app, &token);
    assert_eq!(approved["status"], "active");
    *app.sessions.on_wait.borrow_mut() = None;
    let log = app.request("GET", "/v1/audit", Some(&ada.key), None).json_body();
    let entries = log["entries"].as_array().unwrap();
    let grant = entries.iter().find(|e| e["action"] == "access_approved").unwrap();
    let rid = grant["subject"].as_str().unwrap();
    assert_eq!(audit_actions(&app, &ada.key, rid), ["request_opened", "request_answered", "access_approved"]);
    let answered = entries.iter().find(|e| e["action"] == "request_answered" && e["subject"] == rid).unwrap();
    assert!(answered["actor_account_id"].as_str().is_some(), "{answered}");
    assert!(answered["detail"].as_str().unwrap().contains("by key key_"), "{answered}");

    // A policy's decision is recorded too, naming the rule.
    let r = app.request("PUT", "/v1/policies", Some(&ada.key), Some(json!({"scope": "read", "decision": "allow"})));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let g = app.agent_ok(&token, "request_access", json!({"target": "web-prod", "scope": ["read"], "reason": "look"}));
    assert_eq!(g["status"], "active");
    let log = app.request("GET", "/v1/audit", Some(&ada.key), None).json_body();
    let policy = log["entries"].as_array().unwrap().iter().find(|e| e["action"] == "policy_decided").unwrap().clone();
    assert!(policy["detail"].as_str().unwrap().contains("read: allowed by"), "{policy}");
}

#[test]
fn a_runners_agent_reads_a_long_history_whole_with_a_peers_message_marked() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    let runner = r.json_body()["token"].as_str().unwrap().to_owned();
    let mk = |name: &str, harness: &str| {
        let a = app.request(
            "POST",
            "/v1/agents",
            Some(&ada.key),
            Some(json!({"name": name, "harness": harness, "model": "m"})),
        );
        a.json_body()["agent_id"].as_str().unwrap().to_owned()
    };
    let (coder, echo) = (mk("Coder", "runner"), mk("Peer", "echo"));
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": coder, "message": "go", "idempotency_key": "k"}));
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let turn = app.send(runner_request(&runner, "POST", "/v1/runner/claim", json!({}))).json_body();
    let lease = turn["lease_id"].as_str().unwrap().to_owned();
    for batch in 0..5 {
        let events: Vec<Value> = (0..50)
            .map(|i| json!({"key": format!("e{batch}-{i}"), "type": "agent_message", "text": format!("line {batch}-{i}")}))
            .collect();
        let r = app.send(runner_request(
            &runner,
            "POST",
            "/v1/runner/events",
            json!({"lease_id": lease, "events": events}),
        ));
        assert_eq!(r.status, 200, "{:?}", r.json_body());
    }
    let done = json!({"lease_id": lease, "events": [], "done": "completed"});
    assert_eq!(app.send(runner_request(&runner, "POST", "/v1/runner/events", done)).status, 200);
    app.settle();

    // A peer in the same task writes to it (a note in its log), then the user asks for the next turn: the
    // runner's history has the peer's message as a peer's, and everything before it.
    let p = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": echo, "message": "review", "idempotency_key": "p", "task_id": sid}),
    );
    app.settle();
    let peer = p["session"]["session_id"].as_str().unwrap().to_owned();
    let peer_token = app.session_token(&ada.key, &peer);
    app.agent_ok(&peer_token, "send_message", json!({"to": sid, "body": "I took app.rs"}));
    app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "carry on", "idempotency_key": "m2"}));
    app.settle();
    let next = app.send(runner_request(&runner, "POST", "/v1/runner/claim", json!({})));
    assert_eq!(next.status, 200, "{:?}", next.json_body());
    let next = next.json_body();
    let history = next["history"].as_array().unwrap();
    assert!(history.len() > 250, "the whole history: {}", history.len());
    let note = history.iter().find(|h| h["text"] == "I took app.rs").unwrap();
    assert_eq!((note["role"].as_str(), note["from_session_id"].as_str()), (Some("peer"), Some(peer.as_str())));
    let last = history.last().unwrap();
    assert_eq!((last["role"].as_str(), last["text"].as_str()), (Some("user"), Some("carry on")));
    assert_eq!(next["message"], "carry on", "the new message arrives, not empty");
}
