//! MCP tasks on `/v1/mcp`: a turn-starting tool answered with a task handle in both eras, followed to the
//! turn's end with `tasks/get`, paid out by `tasks/result` (2025-11-25) or inline (2026-07-28), cancelled,
//! `input_required` while the agent waits on a person, and invisible to any other key.

use crate::support::{Account, HostSessions, TestApp};
use agentsky::http::{HttpRequest, HttpResponse};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn echo_agent(app: &TestApp, who: &Account) -> String {
    let body = json!({"name": "Echo", "harness": "echo", "model": "echo-1"});
    let resp = app.request("POST", "/v1/agents", Some(&who.key), Some(body));
    assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    resp.json_body()["agent_id"].as_str().unwrap().to_owned()
}

/// The JSON-RPC result of a legacy-era request, which must not be an error.
fn legacy(app: &TestApp, key: &str, method: &str, params: Value) -> Value {
    let body = app.rpc(key, method, params).json_body();
    assert!(body.get("error").is_none(), "{method}: {body}");
    body["result"].clone()
}

fn legacy_error(app: &TestApp, key: &str, method: &str, params: Value) -> Value {
    let body = app.rpc(key, method, params).json_body();
    assert!(body.get("result").is_none(), "{method} should fail: {body}");
    body["error"].clone()
}

/// A 2026-07-28 request to `/v1/mcp`, declaring the tasks extension, with the routing headers it needs.
fn modern_request(key: &str, method: &str, name: Option<&str>, mut params: Value) -> HttpRequest {
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}, "elicitation": {}},
    });
    let mut headers = vec![
        ("host".to_owned(), "127.0.0.1:8787".to_owned()),
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "application/json, text/event-stream".into()),
        ("authorization".into(), format!("Bearer {key}")),
        ("mcp-protocol-version".into(), "2026-07-28".into()),
        ("mcp-method".into(), method.into()),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name".into(), name.into()));
    }
    let body = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
    HttpRequest {
        method: "POST".into(),
        path: "/v1/mcp".into(),
        headers,
        body: serde_json::to_vec(&body).unwrap(),
        client_ip: "203.0.113.7".into(),
        ..Default::default()
    }
}

/// A 2025-era request to `/v1/mcp`, for a wait hook (which has no `TestApp`).
fn legacy_request(key: &str, method: &str, params: Value) -> HttpRequest {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params});
    HttpRequest {
        method: "POST".into(),
        path: "/v1/mcp".into(),
        headers: vec![
            ("host".into(), "127.0.0.1:8787".into()),
            ("content-type".into(), "application/json".into()),
            ("authorization".into(), format!("Bearer {key}")),
            ("mcp-protocol-version".into(), "2025-11-25".into()),
        ],
        body: serde_json::to_vec(&body).unwrap(),
        client_ip: "203.0.113.7".into(),
        ..Default::default()
    }
}

fn modern(app: &TestApp, key: &str, method: &str, name: Option<&str>, params: Value) -> Value {
    let resp = app.send(modern_request(key, method, name, params));
    let body = resp.json_body();
    assert_eq!(resp.status, 200, "{method}: {body}");
    body["result"].clone()
}

fn start_args(agent_id: &str, message: &str, key: &str) -> Value {
    json!({"name": "start_session", "arguments": {"agent_id": agent_id, "message": message, "idempotency_key": key}})
}

#[test]
fn the_four_turn_starting_tools_offer_tasks_and_initialize_declares_them() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let tools = legacy(&app, &ada.key, "tools/list", json!({}))["tools"].as_array().unwrap().clone();
    let optional: Vec<&str> = tools
        .iter()
        .filter(|t| t["execution"]["taskSupport"] == "optional")
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(optional, ["start_session", "send_message", "hand_off_session", "run_routine"]);
    let init = legacy(&app, &ada.key, "initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}}));
    assert_eq!(init["capabilities"]["tasks"], json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}));
    let discover = modern(&app, &ada.key, "server/discover", None, json!({}));
    assert_eq!(discover["capabilities"]["extensions"], json!({TASKS: {}}));
}

#[test]
fn a_start_session_task_runs_to_the_turns_end_on_the_2025_wire() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo_agent(&app, &ada);
    let mut call = start_args(&agent_id, "/sleep 5", "t-1");
    call["task"] = json!({"ttl": 120_000});
    let created = legacy(&app, &ada.key, "tools/call", call);
    let task = &created["task"];
    let task_id = task["taskId"].as_str().unwrap().to_owned();
    assert_eq!((task["status"].as_str(), task["ttl"].as_i64()), (Some("working"), Some(120_000)), "{created}");
    assert!(task["pollInterval"].as_i64().unwrap() > 0 && task["createdAt"].as_str().unwrap().ends_with('Z'));
    assert!(created.get("content").is_none(), "a task handle, not the tool's result");

    // Durable before the answer: the next request finds it, still working until the turn runs.
    let got = legacy(&app, &ada.key, "tasks/get", json!({"taskId": task_id}));
    assert_eq!(got["status"], "working", "{got}");

    // tasks/result waits for the turn's end (up to 45 s), then pays out the result.
    let t0 = app.now_ms.get();
    let result = legacy(&app, &ada.key, "tasks/result", json!({"taskId": task_id}));
    assert_eq!(app.now_ms.get() - t0, 5_000, "held until the turn ended");
    let got = legacy(&app, &ada.key, "tasks/get", json!({"taskId": task_id}));
    assert_eq!(got["status"], "completed", "{got}");
    assert_eq!(result["isError"], false, "{result}");
    assert_eq!(result["_meta"]["io.modelcontextprotocol/related-task"]["taskId"], task_id.as_str());
    let out = &result["structuredContent"];
    // What the SDKs check a task's result against: the tool's own outputSchema.
    let listed = agentsky::operator_mcp::operator_tools().iter().find(|t| t["name"] == "start_session").unwrap();
    let errors = crate::schemas::validate(out, &listed["outputSchema"]);
    assert!(errors.is_empty(), "the task's result matches start_session's outputSchema: {errors:?}");
    let session_id = out["session"]["session_id"].as_str().unwrap();
    assert_eq!(out["turn"]["final_reply"], "echo: /sleep 5");
    assert_eq!(out["turn"]["end_reason"], "completed");
    assert_eq!(out["turn"]["files"], json!([]), "{out}");
    // The cursor is where a read_session loop would stand: nothing of that turn is left after it.
    let page = app.ok(&ada.key, "read_session", json!({"session_id": session_id, "cursor": out["turn"]["cursor"]}));
    assert_eq!(page["events"], json!([]), "{page}");

    // The files the turn wrote come with the result.
    let mut call = start_args(&agent_id, "/write notes.md hello", "t-1b");
    call["task"] = json!({});
    let writer = legacy(&app, &ada.key, "tools/call", call)["task"]["taskId"].as_str().unwrap().to_owned();
    app.settle();
    let written = legacy(&app, &ada.key, "tasks/result", json!({"taskId": writer}));
    assert_eq!(written["structuredContent"]["turn"]["files"][0]["path"], "notes.md", "{written}");
    assert_eq!(written["structuredContent"]["turn"]["final_reply"], "echo: /write notes.md hello");

    let listed = legacy(&app, &ada.key, "tasks/list", json!({}));
    assert_eq!(listed["tasks"][1]["taskId"], task_id.as_str(), "newest first: {listed}");
    assert_eq!(listed["tasks"][0]["taskId"], writer.as_str());
    assert_eq!(listed["tasks"][1]["status"], "completed");
    // An ended task cannot be cancelled on this wire.
    let error = legacy_error(&app, &ada.key, "tasks/cancel", json!({"taskId": task_id}));
    assert_eq!(error["code"], -32602, "{error}");
}

#[test]
fn another_key_or_tenant_cannot_see_a_task() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    let agent_id = echo_agent(&app, &ada);
    let mut call = start_args(&agent_id, "hi", "t-2");
    call["task"] = json!({});
    let task_id = legacy(&app, &ada.key, "tools/call", call)["task"]["taskId"].as_str().unwrap().to_owned();
    let ada_read_only = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "r", "scopes": ["read"]})));
    let ada_read_only = ada_read_only.json_body()["key"].as_str().unwrap().to_owned();
    // Past its time the task is not found, and the cron's sweep deletes it.
    app.advance(24 * 3_600_000);
    let error = legacy_error(&app, &ada.key, "tasks/get", json!({"taskId": task_id}));
    assert!(error["message"].as_str().unwrap().contains("not found"), "{error}");
    let forgotten = app.system(|cx| Box::pin(agentsky::ops::mcp_tasks::forget_expired(cx))).unwrap();
    assert_eq!(forgotten, 1);
    let mut call = start_args(&agent_id, "again", "t-2b");
    call["task"] = json!({});
    let task_id = legacy(&app, &ada.key, "tools/call", call)["task"]["taskId"].as_str().unwrap().to_owned();
    for key in [&bo.key, &ada_read_only] {
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let error = legacy_error(&app, key, method, json!({"taskId": task_id}));
            assert_eq!(error["code"], -32602, "{method}: {error}");
            assert!(error["message"].as_str().unwrap().contains("not found"), "{error}");
        }
        assert_eq!(legacy(&app, key, "tasks/list", json!({}))["tasks"], json!([]));
    }
    let error = legacy_error(&app, &ada.key, "tasks/get", json!({}));
    assert!(error["message"].as_str().unwrap().contains("taskId"), "{error}");
}

#[test]
fn cancelling_a_task_cancels_its_turn_and_the_session_lives_on() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo_agent(&app, &ada);
    let mut call = start_args(&agent_id, "/sleep 30", "t-3");
    call["task"] = json!({});
    let created = legacy(&app, &ada.key, "tools/call", call);
    let task_id = created["task"]["taskId"].as_str().unwrap().to_owned();
    app.settle();
    assert_eq!(legacy(&app, &ada.key, "tasks/get", json!({"taskId": task_id}))["status"], "working");
    let cancelled = legacy(&app, &ada.key, "tasks/cancel", json!({"taskId": task_id}));
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert_eq!(legacy(&app, &ada.key, "tasks/get", json!({"taskId": task_id}))["status"], "cancelled");
    let session = &app.ok(&ada.key, "list_sessions", json!({}))["sessions"][0];
    assert_eq!(session["status"], "idle", "only the turn ended: {session}");
    let session_id = session["session_id"].as_str().unwrap().to_owned();

    // The same session takes the next message, here as a task on the 2026 wire, cancelled there too.
    let send = json!({"name": "send_message", "arguments": {"session_id": session_id, "message": "/sleep 30", "idempotency_key": "t-4"}});
    let created = modern(&app, &ada.key, "tools/call", Some("send_message"), send);
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    app.settle();
    let ack = modern(&app, &ada.key, "tasks/cancel", Some(&task_id), json!({"taskId": task_id}));
    assert_eq!(ack["resultType"], "complete", "{ack}");
    let got = modern(&app, &ada.key, "tasks/get", Some(&task_id), json!({"taskId": task_id}));
    assert_eq!(got["status"], "cancelled", "{got}");
    assert_eq!(
        modern(&app, &ada.key, "tasks/cancel", Some(&task_id), json!({"taskId": task_id}))["resultType"],
        "complete"
    );
    // A turn cancelled from elsewhere (REST, the console) ends its task cancelled too.
    let send = json!({"name": "send_message", "arguments": {"session_id": session_id, "message": "/sleep 30", "idempotency_key": "t-6"}});
    let created = modern(&app, &ada.key, "tools/call", Some("send_message"), send);
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    app.settle();
    let rest = app.request("POST", &format!("/v1/sessions/{session_id}/cancel-turn"), Some(&ada.key), Some(json!({})));
    assert_eq!(rest.status, 200, "{:?}", rest.json_body());
    let got = modern(&app, &ada.key, "tasks/get", Some(&task_id), json!({"taskId": task_id}));
    assert_eq!((got["status"].as_str(), got.get("result")), (Some("cancelled"), None), "{got}");
    let sent =
        app.ok(&ada.key, "send_message", json!({"session_id": session_id, "message": "hi", "idempotency_key": "t-5"}));
    app.settle();
    let page = app.ok(&ada.key, "read_session", json!({"session_id": session_id, "message_id": sent["message_id"]}));
    assert_eq!(page["turn_finished"], true, "{page}");
    assert!(page["events"].as_array().unwrap().iter().any(|e| e["text"] == "echo: hi"), "{page}");
}

#[test]
fn the_2026_extension_makes_the_task_itself_and_inlines_the_result() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo_agent(&app, &ada);
    let created = modern(&app, &ada.key, "tools/call", Some("start_session"), start_args(&agent_id, "/sleep 3", "m-1"));
    assert_eq!(created["resultType"], "task", "{created}");
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    assert!(created["ttlMs"].as_i64().unwrap() > 0 && created["pollIntervalMs"].as_i64().unwrap() > 0);
    assert!(created.get("task").is_none());

    let got = modern(&app, &ada.key, "tasks/get", Some(&task_id), json!({"taskId": task_id}));
    assert_eq!((got["resultType"].as_str(), got["status"].as_str()), (Some("complete"), Some("working")));
    assert!(got.get("result").is_none());
    app.advance(3_000);
    app.settle();
    let got = modern(&app, &ada.key, "tasks/get", Some(&task_id), json!({"taskId": task_id}));
    assert_eq!(got["status"], "completed", "{got}");
    assert_eq!(got["result"]["structuredContent"]["turn"]["final_reply"], "echo: /sleep 3");
    let ack = modern(&app, &ada.key, "tasks/cancel", Some(&task_id), json!({"taskId": task_id}));
    assert_eq!(ack["resultType"], "complete");
    assert!(ack.get("status").is_none(), "an empty acknowledgement: {ack}");
    // The routing header must name the task.
    let resp = app.send(modern_request(&ada.key, "tasks/get", Some("mtk_other"), json!({"taskId": task_id})));
    assert_eq!((resp.status, resp.json_body()["error"]["code"].as_i64()), (400, Some(-32020)));

    // A client that did not declare the extension gets the plain result.
    let mut req = modern_request(&ada.key, "tools/call", Some("start_session"), start_args(&agent_id, "plain", "m-2"));
    let mut body: Value = serde_json::from_slice(&req.body).unwrap();
    body["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    req.body = serde_json::to_vec(&body).unwrap();
    let plain = app.send(req).json_body()["result"].clone();
    assert_eq!((plain["resultType"].as_str(), plain["isError"].as_bool()), (Some("complete"), Some(false)), "{plain}");
}

#[test]
fn a_task_whose_agent_asks_a_person_is_input_required_and_answered_through_tasks_update() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo_agent(&app, &ada);
    let created =
        modern(&app, &ada.key, "tools/call", Some("start_session"), start_args(&agent_id, "/sleep 30", "q-1"));
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    let sessions = app.ok(&ada.key, "list_sessions", json!({}));
    let session_id = sessions["sessions"][0]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &session_id);

    let seen: Rc<RefCell<Vec<Value>>> = Rc::default();
    let (key, log, id) = (ada.key.clone(), seen.clone(), task_id.clone());
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, wait_key: String| {
        let (key, log, id) = (key.clone(), log.clone(), id.clone());
        Box::pin(async move {
            if !wait_key.starts_with("req_") {
                return;
            }
            let get = modern_request(&key, "tasks/get", Some(&id), json!({"taskId": id}));
            let got = sessions.handle(get).await.json_body()["result"].clone();
            log.borrow_mut().push(got.clone());
            let old_wire = sessions.handle(legacy_request(&key, "tasks/get", json!({"taskId": id}))).await;
            log.borrow_mut().push(old_wire.json_body()["result"].clone());
            let request_id =
                got["inputRequests"].as_object().and_then(|r| r.keys().next().cloned()).unwrap_or_default();
            let answer = json!({"taskId": id, "inputResponses": {request_id: {"action": "accept", "content": {"answer": "pg"}}}});
            let update = modern_request(&key, "tasks/update", Some(&id), answer);
            let ack: HttpResponse = sessions.handle(update).await;
            log.borrow_mut().push(ack.json_body());
        })
    }));
    let answer = app.agent_ok(
        &token,
        "ask_user",
        json!({"kind": "decision", "payload": {"prompt": "Which db?", "options": ["pg", "sqlite"]}}),
    );
    *app.sessions.on_wait.borrow_mut() = None;
    let seen = seen.borrow();
    assert_eq!(seen[0]["status"], "input_required", "{}", seen[0]);
    let (request_id, asked) = seen[0]["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert!(request_id.starts_with("req_"));
    assert_eq!(asked["method"], "elicitation/create");
    assert_eq!(asked["params"]["requestedSchema"]["properties"]["answer"]["enum"], json!(["pg", "sqlite"]));
    assert!(seen[0]["statusMessage"].as_str().unwrap().contains("Which db?"));
    // The 2025 wire cannot ask statelessly: it stays working and says what to answer.
    assert_eq!(seen[1]["status"], "working", "{}", seen[1]);
    assert!(seen[1]["statusMessage"].as_str().unwrap().contains("answer_request"), "{}", seen[1]);
    assert!(seen[1].get("inputRequests").is_none());
    assert_eq!(seen[2]["result"]["resultType"], "complete", "{}", seen[2]);
    assert_eq!(answer["resolution"], json!({"kind": "decision", "answer": "pg"}));
    // Answered: the task works on.
    let got = modern(&app, &ada.key, "tasks/get", Some(&task_id), json!({"taskId": task_id}));
    assert_eq!(got["status"], "working", "{got}");
}

#[test]
fn read_session_streams_its_events_as_progress_when_asked_on_the_2025_wire() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo_agent(&app, &ada);
    let started = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "/burst 2", "idempotency_key": "p-1"}),
    );
    app.settle();
    let args =
        json!({"session_id": started["session"]["session_id"], "message_id": started["message_id"], "wait_seconds": 5});
    let params = json!({"name": "read_session", "arguments": args, "_meta": {"progressToken": "tok-1"}});
    let resp = app.rpc(&ada.key, "tools/call", params);
    assert_eq!(resp.header("content-type"), Some("text/event-stream"));
    assert!(resp.header("mcp-session-id").is_none());
    let body = String::from_utf8(resp.body.clone()).unwrap();
    let messages: Vec<Value> = body
        .split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    let (notes, last) = messages.split_at(messages.len() - 1);
    assert_eq!(notes.len(), 5, "the message, burst 1, burst 2, the echo, turn_end: {body}");
    assert!(notes.iter().all(|n| n["method"] == "notifications/progress" && n["params"]["progressToken"] == "tok-1"));
    assert_eq!(notes[1]["params"]["message"], "agent_message: burst 1 of 2");
    assert_eq!(notes[4]["params"]["progress"], 5.0);
    assert_eq!(last[0]["result"]["structuredContent"]["turn_finished"], true, "{}", last[0]);
    // Without a token the answer stays one JSON body.
    let plain = app.rpc(&ada.key, "tools/call", json!({"name": "read_session", "arguments": args}));
    assert_eq!(plain.header("content-type"), Some("application/json"));
}

#[test]
fn send_message_hand_off_session_and_run_routine_follow_the_turn_they_start() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo_agent(&app, &ada);
    let started =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "one", "idempotency_key": "s"}));
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let routine = json!({"name": "by hand", "agent_id": agent_id, "message": "routine says hi"});
    let routine_id = app.ok(&ada.key, "create_routine", routine)["routine_id"].clone();
    let calls = [
        ("send_message", json!({"session_id": sid, "message": "two", "idempotency_key": "m"}), "echo: two"),
        ("hand_off_session", json!({"session_id": sid, "agent_id": agent_id, "idempotency_key": "h"}), "echo: "),
        ("run_routine", json!({"routine_id": routine_id, "idempotency_key": "r"}), "echo: routine says hi"),
    ];
    for (tool, arguments, reply) in calls {
        let created = legacy(&app, &ada.key, "tools/call", json!({"name": tool, "arguments": arguments, "task": {}}));
        let task_id = created["task"]["taskId"].as_str().unwrap_or_else(|| panic!("{tool}: {created}")).to_owned();
        app.settle();
        let result = legacy(&app, &ada.key, "tasks/result", json!({"taskId": task_id}));
        let out = &result["structuredContent"];
        assert_eq!(out["turn"]["end_reason"], "completed", "{tool}: {result}");
        assert!(out["turn"]["final_reply"].as_str().unwrap().starts_with(reply), "{tool}: {out}");
        let listed = agentsky::operator_mcp::operator_tools().iter().find(|t| t["name"] == tool).unwrap();
        let errors = crate::schemas::validate(out, &listed["outputSchema"]);
        assert!(errors.is_empty(), "{tool}'s task result matches its outputSchema: {errors:?}");
    }
    // A tool that starts no turn ignores `task` and answers its result.
    let plain = legacy(&app, &ada.key, "tools/call", json!({"name": "list_sessions", "arguments": {}, "task": {}}));
    assert_eq!(plain["isError"], false, "{plain}");
    let bad = legacy_error(&app, &ada.key, "tools/call", json!({"name": "list_sessions", "arguments": {}, "task": 5}));
    assert!(bad["message"].as_str().unwrap().contains("task must be an object"), "{bad}");
}

#[test]
fn a_key_with_a_hundred_live_tasks_gets_its_next_call_answered_without_one() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo_agent(&app, &ada);
    let mut call = start_args(&agent_id, "hi", "cap-0");
    call["task"] = json!({});
    let first = legacy(&app, &ada.key, "tools/call", call);
    let task_id = first["task"]["taskId"].as_str().unwrap().to_owned();
    // 99 more live tasks of this key, as 99 more calls would leave.
    for i in 1..100 {
        app.db
            .0
            .execute(
                "INSERT INTO mcp_task (task_id, workspace_id, key_id, tool, call_result, session_id, message_id, cursor,
                   status, status_message, outcome, ttl_ms, created_ms, updated_ms, expires_ms)
                 SELECT task_id || ?2, workspace_id, key_id, tool, call_result, session_id, message_id, cursor,
                   status, status_message, outcome, ttl_ms, created_ms, updated_ms, expires_ms FROM mcp_task WHERE task_id = ?1",
                rusqlite::params![task_id, format!("x{i}")],
            )
            .unwrap();
    }
    let mut call = start_args(&agent_id, "hi again", "cap-100");
    call["task"] = json!({});
    let plain = legacy(&app, &ada.key, "tools/call", call);
    assert!(plain.get("task").is_none(), "past the cap, no task: {plain}");
    assert_eq!(plain["isError"], false, "the call itself is answered: {plain}");
    assert!(plain["structuredContent"]["session"]["session_id"].is_string(), "{plain}");
    let count: i64 = app.db.0.query_row("SELECT COUNT(*) FROM mcp_task", [], |r| r.get(0)).unwrap();
    assert_eq!(count, 100);
    // Once they expire, tasks are offered again.
    app.advance(24 * 3_600_000);
    let mut call = start_args(&agent_id, "later", "cap-101");
    call["task"] = json!({});
    assert!(legacy(&app, &ada.key, "tools/call", call)["task"]["taskId"].is_string());
}

/// Polls `tasks/get` until the task ends (at most `polls` times); its last answer.
fn poll_until_ended(app: &TestApp, key: &str, task_id: &str, polls: usize) -> Value {
    let mut got = Value::Null;
    for _ in 0..polls {
        got = legacy(app, key, "tasks/get", json!({"taskId": task_id}));
        if got["status"] != "working" {
            break;
        }
    }
    got
}

#[test]
fn a_task_follows_a_turn_of_thousands_of_events_to_its_end_poll_by_poll() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo_agent(&app, &ada);
    // Past one poll's pages (10 × 200 events): 1999 is the first burst that did not fit (its first poll
    // reads up to the final reply, its second only the turn's end), 3000 needs two polls, 5000 three.
    for (n, polls) in [(1999, 2), (3000, 2), (5000, 3)] {
        let mut call = start_args(&agent_id, &format!("/burst {n}"), &format!("b-{n}"));
        call["task"] = json!({});
        let task_id = legacy(&app, &ada.key, "tools/call", call)["task"]["taskId"].as_str().unwrap().to_owned();
        app.settle();
        let got = poll_until_ended(&app, &ada.key, &task_id, polls);
        assert_eq!(got["status"], "completed", "/burst {n}: {got}");
        let result = legacy(&app, &ada.key, "tasks/result", json!({"taskId": task_id}));
        let turn = &result["structuredContent"]["turn"];
        assert_eq!(turn["end_reason"], "completed", "/burst {n}: {result}");
        assert_eq!(turn["final_reply"], format!("echo: /burst {n}"));
        // The cursor stands after the turn's last event, as a read_session loop's would.
        let session_id = result["structuredContent"]["session"]["session_id"].clone();
        let page = app.ok(&ada.key, "read_session", json!({"session_id": session_id, "cursor": turn["cursor"]}));
        assert_eq!(page["events"], json!([]), "/burst {n}: {page}");
    }
}
