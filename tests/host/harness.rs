//! Harnesses end to end on the host: the `openai` harness against a scripted OpenAI-compatible model
//! and a scripted remote MCP server, usage priced and charged, budgets, and the echo harness's file
//! writes.

use crate::support::{Account, TestApp};
use agentsky::cx::{Config, Outbound};
use agentsky::http::HttpResponse;
use serde_json::{json, Value};
use std::cell::Cell;
use std::rc::Rc;

fn app() -> TestApp {
    TestApp::with_config(Config {
        admin_token: Some("adm".into()),
        secrets_key: Some("test-master-key".into()),
        prices: agentsky::rules::prices::Prices::parse(r#"{"gpt-test": [1000000, 2000000]}"#).unwrap(),
        ..TestApp::config()
    })
}

/// Credit enough for a model call's hold at these prices (a cent a token): the request's bytes and the
/// output allowance.
const CREDIT: i64 = 1_000_000;

/// An account with credit, the model secrets set, and an openai agent.
fn setup(app: &TestApp, agent: Value) -> (Account, String) {
    let ada = app.signup("Ada", "ada@example.com");
    app.request(
        "POST",
        &format!("/v1/workspaces/{}/credit", ada.slug),
        Some("adm"),
        Some(json!({"amount_cents": CREDIT})),
    );
    for (name, value) in [
        ("OPENAI_BASE_URL", "https://model.example.com/v1"),
        ("OPENAI_API_KEY", "sk-test-123"),
        ("TOOLS_TOKEN", "tt-9"),
    ] {
        let r = app.request("PUT", &format!("/v1/secrets/{name}"), Some(&ada.key), Some(json!({"value": value})));
        assert_eq!(r.status, 200, "{:?}", r.json_body());
    }
    let mut body = json!({"name": "G", "harness": "openai", "model": "gpt-test", "instructions": "You are terse."});
    body.as_object_mut().unwrap().extend(agent.as_object().unwrap().clone());
    let agent_id = app.request("POST", "/v1/agents", Some(&ada.key), Some(body)).json_body()["agent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    (ada, agent_id)
}

fn json_response(v: Value) -> HttpResponse {
    HttpResponse::json(200, &v)
}

fn completion(message: Value, input: i64, output: i64) -> HttpResponse {
    json_response(
        json!({"choices": [{"message": message}], "usage": {"prompt_tokens": input, "completion_tokens": output}}),
    )
}

fn body(req: &Outbound) -> Value {
    serde_json::from_slice(&req.body).unwrap()
}

fn run_turn(app: &TestApp, ada: &Account, agent_id: &str, message: &str, budget: Option<i64>) -> (String, Vec<Value>) {
    let mut args = json!({"agent_id": agent_id, "message": message, "idempotency_key": format!("k-{message}")});
    if let Some(b) = budget {
        args["budget_cents"] = json!(b);
    }
    let started = app.ok(&ada.key, "start_session", args);
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let page = app.ok(
        &ada.key,
        "read_session",
        json!({"session_id": sid, "cursor": started["cursor"], "message_id": started["message_id"]}),
    );
    assert_eq!(page["turn_finished"], true, "{page}");
    (sid, page["events"].as_array().unwrap().clone())
}

#[test]
fn the_openai_harness_calls_the_model_runs_its_tools_and_charges_the_wallet() {
    let app = app();
    let (ada, agent_id) = setup(&app, json!({}));
    let calls = Rc::new(Cell::new(0));
    let seen = calls.clone();
    app.sessions.net.answer(move |req| {
        assert_eq!(req.url, "https://model.example.com/v1/chat/completions");
        seen.set(seen.get() + 1);
        if seen.get() == 1 {
            completion(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "write_task_file", "arguments": "{\"path\":\"out/answer.md\",\"content\":\"42\"}"}}]}), 100, 20)
        } else {
            let messages = body(req)["messages"].clone();
            assert_eq!(messages.as_array().unwrap().last().unwrap()["role"], "tool", "the tool's answer goes back to the model");
            completion(json!({"role": "assistant", "content": "Wrote out/answer.md."}), 150, 10)
        }
    });
    let (sid, events) = run_turn(&app, &ada, &agent_id, "answer into a file", None);
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["tool_call", "tool_result", "agent_message", "turn_end"]);
    assert_eq!(events[1]["is_error"], false);
    assert_eq!(events[2]["text"], "Wrote out/answer.md.");
    assert_eq!(calls.get(), 2);

    let first = body(&app.sessions.net.requests.borrow()[0]);
    assert_eq!(first["model"], "gpt-test");
    assert!(first["messages"][0]["content"].as_str().unwrap().starts_with("You are terse."));
    assert!(first["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "write_task_file"));
    let auth = app.sessions.net.requests.borrow()[0].headers.iter().find(|(k, _)| k == "authorization").cloned();
    assert_eq!(auth.unwrap().1, "Bearer sk-test-123", "the sealed secret is opened for the call");

    let task = app.ok(&ada.key, "read_task_file", json!({"task_id": sid, "path": "out/answer.md", "session_id": sid}));
    assert_eq!((task["content"].as_str(), task["writer_session_id"].as_str()), (Some("42"), Some(sid.as_str())));
    let result = app.ok(&ada.key, "collect_result", json!({"session_id": sid}));
    assert_eq!(result["files"][0]["path"], "out/answer.md");
    assert_eq!(result["last_reply"], "Wrote out/answer.md.");

    // 100 + 150 input tokens at 1,000,000 c/Mtok and 30 output at 2,000,000: 100+40 and 150+20 cents.
    let usage = app.ok(&ada.key, "get_usage", json!({"session_id": sid}));
    assert_eq!(usage["session"]["spent_cents"], 310);
    assert_eq!(usage["session"]["input_tokens"], 250);
    assert_eq!(usage["session"]["entries"].as_array().unwrap().len(), 2);
    assert_eq!(usage["balance_cents"], CREDIT - 310, "holds released, charges taken");
    let by_model = app.ok(&ada.key, "get_usage", json!({"group_by": "model"}));
    assert_eq!(by_model["groups"][0]["key"], "gpt-test");
    assert_eq!(by_model["total_cents"], 310);
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["spent_cents"], 310);
}

#[test]
fn a_budget_stops_the_turn_at_the_cap_and_refuses_more_work() {
    let app = app();
    let (ada, agent_id) = setup(&app, json!({}));
    app.sessions.net.answer(|_| {
        completion(
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function",
            "function": {"name": "list_task_files", "arguments": "{}"}}]}),
            100,
            0,
        )
    });
    let (sid, events) = run_turn(&app, &ada, &agent_id, "loop forever", Some(150));
    let last = events.last().unwrap();
    assert_eq!(last["reason"], "budget_reached");
    assert!(events
        .iter()
        .any(|e| e["type"] == "status" && e["text"].as_str().unwrap().contains("budget of 150 cents")));
    assert_eq!(
        app.ok(&ada.key, "get_session", json!({"session_id": sid}))["spent_cents"],
        200,
        "two calls of 100 reach the cap"
    );
    let more = json!({"session_id": sid, "message": "continue", "idempotency_key": "k-more"});
    assert_eq!(app.err_code(&ada.key, "send_message", more), "insufficient_credits");
}

#[test]
fn a_model_error_or_missing_secret_fails_the_turn_visibly() {
    let app = app();
    let (ada, agent_id) = setup(&app, json!({}));
    app.sessions.net.answer(|_| HttpResponse::json(500, &json!({"error": "boom"})));
    let (_, events) = run_turn(&app, &ada, &agent_id, "hi", None);
    assert_eq!(events[0]["type"], "error");
    assert!(events[0]["message"].as_str().unwrap().contains("HTTP 500"));
    assert_eq!(events[1]["reason"], "failed");

    app.request("DELETE", "/v1/secrets/OPENAI_BASE_URL", Some(&ada.key), None);
    let (_, events) = run_turn(&app, &ada, &agent_id, "again", None);
    assert!(events[0]["message"].as_str().unwrap().contains("OPENAI_BASE_URL"));
}

#[test]
fn declared_mcp_servers_are_offered_and_called() {
    let app = app();
    let server = json!({"mcpServers": [{"name": "weather", "url": "https://tools.example.com/mcp", "bearer_secret": "TOOLS_TOKEN"}]});
    let (ada, agent_id) = setup(&app, server);
    let model_calls = Rc::new(Cell::new(0));
    let seen = model_calls.clone();
    app.sessions.net.answer(move |req| {
        if req.url.starts_with("https://tools.example.com") {
            let auth = req.headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.clone());
            assert_eq!(auth.as_deref(), Some("Bearer tt-9"));
            let rpc = body(req);
            return match rpc["method"].as_str().unwrap() {
                "initialize" => json_response(json!({"jsonrpc": "2.0", "id": rpc["id"], "result": {"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "w", "version": "1"}}})),
                "notifications/initialized" => HttpResponse::new(202),
                "tools/list" => json_response(json!({"jsonrpc": "2.0", "id": rpc["id"], "result": {"tools": [{"name": "forecast", "description": "Weather", "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}]}})),
                "tools/call" => {
                    assert_eq!(rpc["params"]["arguments"]["city"], "Oslo");
                    // Answered as an SSE stream, as many servers do.
                    let data = json!({"jsonrpc": "2.0", "id": rpc["id"], "result": {"content": [{"type": "text", "text": "snow"}]}});
                    HttpResponse::text(200, "text/event-stream", format!("event: message\ndata: {data}\n\n"))
                }
                other => panic!("unexpected {other}"),
            };
        }
        seen.set(seen.get() + 1);
        if seen.get() == 1 {
            assert!(body(req)["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "weather__forecast"));
            completion(json!({"role": "assistant", "tool_calls": [{"id": "w1", "type": "function",
                "function": {"name": "weather__forecast", "arguments": "{\"city\":\"Oslo\"}"}}]}), 10, 10)
        } else {
            completion(json!({"role": "assistant", "content": "Snow in Oslo."}), 10, 10)
        }
    });
    let (_, events) = run_turn(&app, &ada, &agent_id, "weather?", None);
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    assert_eq!((result["content"].as_str(), result["is_error"].as_bool()), (Some("snow"), Some(false)));
    assert_eq!(events.iter().rev().nth(1).unwrap()["text"], "Snow in Oslo.");
}

#[test]
fn secrets_are_sealed_names_only_listed_and_admin_only() {
    let app = app();
    let (ada, _) = setup(&app, json!({}));
    let stored: String =
        app.db.0.query_row("SELECT sealed FROM secret WHERE name = 'OPENAI_API_KEY'", [], |r| r.get(0)).unwrap();
    assert!(!stored.contains("sk-test-123"));
    let list = app.request("GET", "/v1/secrets", Some(&ada.key), None).json_body();
    assert!(!list.to_string().contains("sk-test"));
    assert_eq!(list["secrets"].as_array().unwrap().len(), 3);
    assert_eq!(app.request("PUT", "/v1/secrets/bad-name", Some(&ada.key), Some(json!({"value": "x"}))).status, 400);
}

#[test]
fn the_echo_harness_writes_files_through_the_agents_file_tool() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app
        .request("POST", "/v1/agents", Some(&ada.key), Some(json!({"name": "E", "harness": "echo", "model": "m"})))
        .json_body()["agent_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (sid, events) = run_turn(&app, &ada, &agent_id, "/write notes/hello.md Hello, task!", None);
    assert_eq!(events[0]["type"], "tool_call");
    // A new task gives the session its own lane: the file is there until it lands, and reading the base says so.
    let base = app.call(&ada.key, "read_task_file", json!({"task_id": sid, "path": "notes/hello.md"}));
    let why = TestApp::tool_error(&base)["message"].as_str().unwrap().to_owned();
    assert!(why.contains(&format!("in the lane of session `{sid}`, not landed yet; pass `session_id`")), "{why}");
    let file = app.ok(&ada.key, "read_task_file", json!({"task_id": sid, "path": "notes/hello.md", "session_id": sid}));
    assert_eq!(file["content"], "Hello, task!");
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["files"][0]["path"], "notes/hello.md");
}

#[test]
fn the_openai_harness_offers_the_session_tools_and_pauses_durably_on_ask_user() {
    let app = app();
    let (ada, agent_id) = setup(&app, json!({}));
    let calls = Rc::new(Cell::new(0));
    let seen = calls.clone();
    app.sessions.net.answer(move |req| {
        seen.set(seen.get() + 1);
        let b = body(req);
        if seen.get() == 1 {
            let names: Vec<String> = b["tools"].as_array().unwrap().iter().map(|t| t["function"]["name"].as_str().unwrap().to_owned()).collect();
            assert!(names.contains(&"ask_user".to_owned()) && names.contains(&"land".to_owned()), "{names:?}");
            completion(json!({"role": "assistant", "content": "Let me check.", "tool_calls": [
                {"id": "s1", "type": "function", "function": {"name": "report_status", "arguments": "{\"note\":\"asking\"}"}},
                {"id": "q1", "type": "function", "function": {"name": "ask_user", "arguments": "{\"kind\":\"question\",\"payload\":{\"prompt\":\"Which colour?\"}}"}}
            ]}), 10, 10)
        } else {
            let messages = b["messages"].as_array().unwrap();
            let answer = messages.iter().find(|m| m["tool_call_id"] == "q1").unwrap()["content"].as_str().unwrap().to_owned();
            assert!(answer.contains("teal"), "{answer}");
            completion(json!({"role": "assistant", "content": "Teal it is."}), 10, 10)
        }
    });
    let started = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "pick a colour", "idempotency_key": "k"}),
    );
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    assert_eq!(calls.get(), 1, "paused: no second model call until the user answers");
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["note"], "asking");
    let task = app.ok(&ada.key, "get_task", json!({"task_id": sid}));
    let req = task["open_requests"][0].clone();
    assert_eq!(req["payload"]["prompt"], "Which colour?");
    app.ok(&ada.key, "answer_request", json!({"task_id": sid, "request_id": req["request_id"], "answer": "teal"}));
    app.settle();
    assert_eq!(calls.get(), 2);
    let page = app.ok(&ada.key, "read_session", json!({"session_id": sid, "message_id": started["message_id"]}));
    assert_eq!(page["turn_finished"], true);
    let result = page["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "tool_result" && e["call_id"] == "q1")
        .unwrap()
        .clone();
    assert!(result["content"].as_str().unwrap().contains("\"answer\":\"teal\""));
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"], "Teal it is.");
}

#[test]
fn a_harness_asking_a_question_it_just_had_answered_gets_that_answer_without_pausing_again() {
    let app = app();
    let (ada, agent_id) = setup(&app, json!({}));
    let calls = Rc::new(Cell::new(0));
    let seen = calls.clone();
    let ask = |id: &str| {
        json!({"role": "assistant", "content": null, "tool_calls": [
            {"id": id, "type": "function", "function": {"name": "ask_user", "arguments": "{\"kind\":\"question\",\"payload\":{\"prompt\":\"Which colour?\"}}"}}
        ]})
    };
    app.sessions.net.answer(move |req| {
        seen.set(seen.get() + 1);
        let b = body(req);
        match seen.get() {
            1 => completion(ask("q1"), 10, 10),
            2 => completion(ask("q2"), 10, 10),
            _ => {
                let messages = b["messages"].as_array().unwrap();
                let again = messages.iter().find(|m| m["tool_call_id"] == "q2").unwrap()["content"].clone();
                assert!(again.as_str().unwrap().contains("\"answer\":\"teal\""), "{again}");
                completion(json!({"role": "assistant", "content": "Teal it is."}), 10, 10)
            }
        }
    });
    let started = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "pick a colour", "idempotency_key": "k"}),
    );
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let req = app.ok(&ada.key, "get_task", json!({"task_id": sid}))["open_requests"][0].clone();
    app.ok(&ada.key, "answer_request", json!({"task_id": sid, "request_id": req["request_id"], "answer": "teal"}));
    app.settle();
    assert_eq!(calls.get(), 3, "the same question again is answered at once, with no second pause");
    let requests: i64 = app.db.0.query_row("SELECT COUNT(*) FROM request", [], |r| r.get(0)).unwrap();
    assert_eq!(requests, 1, "the person was asked once");
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"], "Teal it is.");
}

#[test]
fn cancelling_a_turn_paused_on_ask_user_withdraws_the_request_and_the_next_turn_runs() {
    let app = app();
    let (ada, agent_id) = setup(&app, json!({}));
    let calls = Rc::new(Cell::new(0));
    let seen = calls.clone();
    app.sessions.net.answer(move |req| {
        seen.set(seen.get() + 1);
        if seen.get() == 1 {
            return completion(json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "q1", "type": "function", "function": {"name": "ask_user", "arguments": "{\"kind\":\"question\",\"payload\":{\"prompt\":\"Which colour?\"}}"}}
            ]}), 10, 10);
        }
        // The next turn's conversation answers the call the cancel left open, so the model accepts it.
        let messages = body(req)["messages"].as_array().unwrap().clone();
        let answered = messages.iter().find(|m| m["tool_call_id"] == "q1").expect("q1 is answered");
        assert!(answered["content"].as_str().unwrap().contains("cancelled"), "{answered}");
        completion(json!({"role": "assistant", "content": "Fine."}), 10, 10)
    });
    let started = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "pick a colour", "idempotency_key": "k"}),
    );
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let request_id = app.ok(&ada.key, "get_task", json!({"task_id": sid}))["open_requests"][0]["request_id"].clone();
    assert!(request_id.is_string());
    let spent = app.ok(&ada.key, "get_session", json!({"session_id": sid}))["spent_cents"].as_i64().unwrap();
    assert!(spent > 0, "the first model call was charged");

    let cancelled = app.request("POST", &format!("/v1/sessions/{sid}/cancel-turn"), Some(&ada.key), Some(json!({})));
    assert_eq!(cancelled.status, 200, "{:?}", cancelled.json_body());
    let task = app.ok(&ada.key, "get_task", json!({"task_id": sid}));
    assert_eq!(task["open_requests"], json!([]), "the request is withdrawn: {task}");
    let late = app.request(
        "POST",
        &format!("/v1/tasks/{sid}/requests/{}/answer", request_id.as_str().unwrap()),
        Some(&ada.key),
        Some(json!({"answer": "teal"})),
    );
    assert!(late.status >= 400, "a withdrawn request takes no answer: {:?}", late.json_body());
    let session = app.ok(&ada.key, "get_session", json!({"session_id": sid}));
    assert_eq!((session["status"].as_str(), session["spent_cents"].as_i64()), (Some("idle"), Some(spent)));
    app.settle();
    assert_eq!(calls.get(), 1, "no model call after the cancel");

    let next =
        app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "never mind", "idempotency_key": "n"}));
    app.settle();
    assert_eq!(calls.get(), 2);
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"], "Fine.");
    let page = app.ok(&ada.key, "read_session", json!({"session_id": sid, "message_id": next["message_id"]}));
    assert_eq!(page["turn_finished"], true, "{page}");
}

/// A step whose turn is cancelled while the model answers is dropped, and says nothing: no
/// `turn.finished` (nor `session.failed`) with the step's own reason after the cancel's.
#[test]
fn a_step_dropped_by_a_cancel_sends_no_turn_events_of_its_own() {
    let app = app();
    let (ada, agent_id) = setup(&app, json!({}));
    app.ok(
        &ada.key,
        "create_webhook",
        json!({"url": "https://hooks.example.com/x", "events": ["turn.finished", "session.failed"]}),
    );
    let sessions = app.sessions.clone();
    app.sessions.net.answer(move |_| {
        // The cancel lands while the model call is under way.
        for sid in sessions.session_ids() {
            sessions.cancel_in_object(&sid);
        }
        completion(json!({"role": "assistant", "content": "done anyway"}), 10, 1)
    });
    let started =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "go", "idempotency_key": "k"}));
    app.settle();
    let sid = started["session"]["session_id"].as_str().unwrap();
    let page = app.ok(&ada.key, "read_session", json!({"session_id": sid, "message_id": started["message_id"]}));
    let events = page["events"].as_array().unwrap();
    assert_eq!(events.last().unwrap()["reason"], "cancelled", "{events:?}");
    assert!(!events.iter().any(|e| e["text"] == "done anyway"), "{events:?}");
    let mut st = app.db.0.prepare("SELECT event, payload FROM webhook_delivery").unwrap();
    let sent: Vec<(String, String)> =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect();
    assert!(sent.is_empty(), "the dropped step announced its own end: {sent:?}");
}

/// An `openai` session has the Help Center too: the model searches it and reads an article, as the
/// `agentsky_help` server gives other agents.
#[test]
fn the_openai_harness_offers_the_help_center() {
    let app = app();
    let (ada, agent_id) = setup(&app, json!({}));
    let calls = Rc::new(Cell::new(0));
    let seen = calls.clone();
    app.sessions.net.answer(move |req| {
        seen.set(seen.get() + 1);
        let sent = body(req);
        if seen.get() == 1 {
            let tools: Vec<&str> =
                sent["tools"].as_array().unwrap().iter().filter_map(|t| t["function"]["name"].as_str()).collect();
            assert!(tools.contains(&"help_search") && tools.contains(&"help_get"), "{tools:?}");
            return completion(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "h1", "type": "function",
                "function": {"name": "help_search", "arguments": "{\"query\":\"connect Codex\",\"limit\":1}"}}]}),
                10,
                5,
            );
        }
        if seen.get() == 2 {
            let answer = sent["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
            assert!(answer.contains("\"slug\":\"connect-codex\""), "{answer}");
            return completion(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "h2", "type": "function",
                "function": {"name": "help_get", "arguments": "{\"slug\":\"connect-codex\"}"}}]}),
                10,
                5,
            );
        }
        let article = sent["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
        assert!(article.contains("codex mcp add agentsky") && !article.contains("{{server}}"), "{article}");
        completion(json!({"role": "assistant", "content": "Run codex mcp add."}), 10, 5)
    });
    let (_, events) = run_turn(&app, &ada, &agent_id, "how do I connect Codex?", None);
    assert_eq!(events.iter().filter(|e| e["type"] == "tool_result" && e["is_error"] == false).count(), 2, "{events:?}");
    assert_eq!(calls.get(), 3);
}
