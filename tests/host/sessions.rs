//! Sessions and turns through the tools: the contract's "A task, start to finish", idempotency, waiting,
//! paging, busy and stopped sessions, money.

use crate::support::{Account, TestApp};
use serde_json::{json, Value};

fn agent(app: &TestApp, who: &Account, body: Value) -> String {
    let resp = app.request("POST", "/v1/agents", Some(&who.key), Some(body));
    assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    resp.json_body()["agent_id"].as_str().unwrap().to_owned()
}

fn echo(app: &TestApp, who: &Account) -> String {
    agent(app, who, json!({"name": "Echo", "harness": "echo", "model": "echo-1"}))
}

fn start(app: &TestApp, who: &Account, agent_id: &str, message: &str, key: &str) -> Value {
    app.ok(&who.key, "start_session", json!({"agent_id": agent_id, "message": message, "idempotency_key": key}))
}

/// Reads a message's turn to its end, following `has_more` at once and waiting otherwise.
fn read_turn(
    app: &TestApp,
    who: &Account,
    session_id: &str,
    message_id: &str,
    mut cursor: String,
) -> (Vec<Value>, String) {
    let mut events = Vec::new();
    for _ in 0..100 {
        let page = app.ok(
            &who.key,
            "read_session",
            json!({"session_id": session_id, "cursor": cursor, "message_id": message_id, "wait_seconds": 50}),
        );
        events.extend(page["events"].as_array().unwrap().iter().cloned());
        cursor = page["cursor"].as_str().unwrap().to_owned();
        if page["turn_finished"] == true {
            return (events, cursor);
        }
    }
    panic!("the turn never finished: {events:?}");
}

#[test]
fn a_task_start_to_finish() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let started = start(&app, &ada, &agent_id, "write a haiku", "k-1");
    let session = &started["session"];
    let session_id = session["session_id"].as_str().unwrap();
    assert_eq!(session["task_id"], session_id, "a new session's task id is its own id");
    assert_eq!(session["agent_id"], agent_id.as_str());
    let message_id = started["message_id"].as_str().unwrap();

    let (events, cursor) = read_turn(&app, &ada, session_id, message_id, started["cursor"].as_str().unwrap().into());
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["agent_message", "turn_end"]);
    assert_eq!(events[0]["text"], "echo: write a haiku");
    assert_eq!(events[1]["reason"], "completed");
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": session_id}))["status"], "idle");

    let sent = app.ok(
        &ada.key,
        "send_message",
        json!({"session_id": session_id, "message": "again", "idempotency_key": "k-2"}),
    );
    let (events, _) = read_turn(
        &app,
        &ada,
        session_id,
        sent["message_id"].as_str().unwrap(),
        sent["cursor"].as_str().unwrap().into(),
    );
    assert_eq!(events[0]["text"], "echo: again");
    // Reading again from the old cursor without a message filter shows both the message and the reply.
    let all = app.ok(&ada.key, "read_session", json!({"session_id": session_id, "cursor": cursor}));
    let texts: Vec<&str> = all["events"].as_array().unwrap().iter().filter_map(|e| e["text"].as_str()).collect();
    assert_eq!(texts, ["again", "echo: again"]);

    let result = app.ok(&ada.key, "collect_result", json!({"session_id": session_id}));
    assert_eq!(result["last_reply"], "echo: again");
    assert_eq!(result["task_id"], session_id);

    assert_eq!(app.ok(&ada.key, "stop_session", json!({"session_id": session_id}))["status"], "terminated");
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": session_id}))["status"], "terminated");
    assert_eq!(
        app.err_code(
            &ada.key,
            "send_message",
            json!({"session_id": session_id, "message": "more", "idempotency_key": "k-3"})
        ),
        "session_terminated"
    );
    let transcript = app.ok(&ada.key, "read_session", json!({"session_id": session_id}));
    assert_eq!(transcript["events"].as_array().unwrap().len(), 6, "the transcript stays");
}

/// A waiting `read_session` is woken the moment a step's reply is stored, not after the D1 index, the
/// webhooks and the trace that the step writes next (the wake-up latency the performance issue measures).
#[test]
fn a_step_wakes_its_readers_before_its_d1_writes() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let started = start(&app, &ada, &agent_id, "hello", "k-wake");
    let (session_id, message_id) =
        (started["session"]["session_id"].as_str().unwrap(), started["message_id"].as_str().unwrap());
    read_turn(&app, &ada, session_id, message_id, started["cursor"].as_str().unwrap().into());
    let woken = app.sessions.woken_after_trips.borrow().clone();
    assert!(!woken.is_empty(), "the turn's steps woke no reader");
    assert!(woken.iter().all(|&trips| trips == 0), "readers woken only after D1 round trips: {woken:?}");
    // The same step did write to D1 afterwards: the turn's metrics.
    let turns: i64 = app.db.0.query_row("SELECT SUM(turns) FROM metric_minute", [], |r| r.get(0)).unwrap();
    assert_eq!(turns, 1);
}

#[test]
fn a_retry_with_the_same_key_replays_and_changed_inputs_conflict() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let first = start(&app, &ada, &agent_id, "hello", "same-key");
    // Key order and a later time do not matter; the answer is the original one.
    app.advance(5_000);
    let again = app.ok(
        &ada.key,
        "start_session",
        json!({"idempotency_key": "same-key", "message": "hello", "agent_id": agent_id}),
    );
    assert_eq!(first, again);
    let count: i64 = app.db.0.query_row("SELECT COUNT(*) FROM session", [], |r| r.get(0)).unwrap();
    assert_eq!(count, 1, "no second session");
    let agents = app.ok(&ada.key, "list_agents", json!({}));
    assert_eq!(agents["agents"][0]["session_count"], 1);
    assert_eq!(
        app.err_code(
            &ada.key,
            "start_session",
            json!({"agent_id": agent_id, "message": "hello!", "idempotency_key": "same-key"})
        ),
        "idempotency_conflict"
    );
    // The same key on another tool is another receipt.
    let sid = first["session"]["session_id"].as_str().unwrap();
    app.settle();
    let sent =
        app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "x", "idempotency_key": "same-key"}));
    let sent_again =
        app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "x", "idempotency_key": "same-key"}));
    assert_eq!(sent, sent_again);
}

#[test]
fn nothing_is_stored_for_a_call_refused_before_it_ran() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let bad = json!({"agent_id": "ag_00000000000000000000000000", "message": "hi", "idempotency_key": "k"});
    assert_eq!(app.err_code(&ada.key, "start_session", bad), "not_found");
    // The same key now works for a valid call: the failure left no receipt.
    start(&app, &ada, &agent_id, "hi", "k");
    let receipts: i64 = app.db.0.query_row("SELECT COUNT(*) FROM receipt", [], |r| r.get(0)).unwrap();
    assert_eq!(receipts, 1);
}

#[test]
fn a_running_turn_makes_the_session_busy_until_it_ends() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let started = start(&app, &ada, &agent_id, "/sleep 5 then answer", "k");
    let sid = started["session"]["session_id"].as_str().unwrap();
    app.settle();
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "running");
    let busy = json!({"session_id": sid, "message": "next", "idempotency_key": "k2"});
    assert_eq!(app.err_code(&ada.key, "send_message", busy.clone()), "session_busy");
    // A short wait returns the status event and the turn still running.
    let page = app.ok(
        &ada.key,
        "read_session",
        json!({"session_id": sid, "cursor": started["cursor"], "message_id": started["message_id"], "wait_seconds": 1}),
    );
    assert_eq!(page["turn_finished"], false);
    assert_eq!(page["events"][0]["type"], "status");
    read_turn(&app, &ada, sid, started["message_id"].as_str().unwrap(), page["cursor"].as_str().unwrap().into());
    // The same key works once the turn is over: busy stored nothing.
    app.ok(&ada.key, "send_message", busy);
}

#[test]
fn stopping_a_running_turn_ends_it_visibly() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let started = start(&app, &ada, &agent_id, "/sleep 30", "k");
    let sid = started["session"]["session_id"].as_str().unwrap();
    app.settle();
    app.ok(&ada.key, "stop_session", json!({"session_id": sid}));
    let (events, _) =
        read_turn(&app, &ada, sid, started["message_id"].as_str().unwrap(), started["cursor"].as_str().unwrap().into());
    let last = events.last().unwrap();
    assert_eq!((last["type"].as_str(), last["reason"].as_str()), (Some("turn_end"), Some("stopped")));
    assert!(!events.iter().any(|e| e["type"] == "agent_message"), "the stopped step's reply never lands");
    app.ok(&ada.key, "stop_session", json!({"session_id": sid}));
}

#[test]
fn long_turns_page_completely_without_duplicates() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let started = start(&app, &ada, &agent_id, "/burst 450", "k");
    let sid = started["session"]["session_id"].as_str().unwrap();
    app.settle();
    let mut cursor = started["cursor"].clone();
    let mut sizes = Vec::new();
    let mut texts = Vec::new();
    loop {
        let page = app.ok(
            &ada.key,
            "read_session",
            json!({"session_id": sid, "cursor": cursor, "message_id": started["message_id"]}),
        );
        let events = page["events"].as_array().unwrap();
        sizes.push(events.len());
        texts.extend(events.iter().filter_map(|e| e["text"].as_str().map(str::to_owned)));
        cursor = page["cursor"].clone();
        assert_eq!(page["turn_finished"], !page["has_more"].as_bool().unwrap());
        if page["has_more"] == false {
            break;
        }
    }
    assert_eq!(sizes, [200, 200, 52]);
    assert_eq!(texts.len(), 451);
    assert_eq!(texts[0], "burst 1 of 450");
    assert_eq!(texts[449], "burst 450 of 450");
    let unique: std::collections::HashSet<_> = texts.iter().collect();
    assert_eq!(unique.len(), 451);
}

#[test]
fn read_session_inputs_are_checked() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let sid = start(&app, &ada, &agent_id, "hi", "k")["session"]["session_id"].as_str().unwrap().to_owned();
    for (args, code) in [
        (json!({"session_id": sid, "wait_seconds": 51}), "invalid_params"),
        (json!({"session_id": sid, "cursor": "42"}), "invalid_params"),
        (json!({"session_id": sid, "limit": 201}), "invalid_params"),
        (json!({"session_id": sid, "message_id": "nope"}), "invalid_params"),
        (json!({"session_id": "ses_00000000000000000000000000"}), "not_found"),
        (json!({"session_id": "../../etc"}), "invalid_params"),
    ] {
        assert_eq!(app.err_code(&ada.key, "read_session", args.clone()), code, "{args}");
    }
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(
        app.err_code(&bo.key, "read_session", json!({"session_id": sid})),
        "not_found",
        "another account's session"
    );
    assert_eq!(app.err_code(&bo.key, "stop_session", json!({"session_id": sid})), "not_found");
}

#[test]
fn a_read_key_cannot_start_or_send() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let read =
        app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "r", "scopes": ["read"]}))).json_body();
    let read = read["key"].as_str().unwrap();
    let args = json!({"agent_id": agent_id, "message": "hi", "idempotency_key": "k"});
    assert_eq!(app.err_code(read, "start_session", args), "insufficient_scope");
}

#[test]
fn sessions_join_tasks_and_list_newest_first() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let a = agent(&app, &ada, json!({"name": "A", "handle": "alpha", "harness": "echo", "model": "m"}));
    let b = echo(&app, &ada);
    let first = start(&app, &ada, &a, "one", "k1");
    let task = first["session"]["task_id"].as_str().unwrap();
    app.advance(1);
    let joined = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": b, "message": "two", "idempotency_key": "k2", "task_id": task}),
    );
    assert_eq!(joined["session"]["task_id"], task);
    assert_eq!(
        app.err_code(
            &ada.key,
            "start_session",
            json!({"agent_id": b, "message": "x", "idempotency_key": "k3", "task_id": task, "workspace": ada.slug})
        ),
        "invalid_params"
    );
    app.advance(1);
    let by_handle =
        app.ok(&ada.key, "start_session", json!({"agent_id": "@alpha", "message": "three", "idempotency_key": "k4"}));
    assert_eq!(by_handle["session"]["agent_id"], a.as_str());

    let page1 = app.ok(&ada.key, "list_sessions", json!({"limit": 2}));
    let titles: Vec<&str> =
        page1["sessions"].as_array().unwrap().iter().map(|s| s["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["three", "two"]);
    let page2 = app.ok(&ada.key, "list_sessions", json!({"limit": 2, "cursor": page1["next_cursor"]}));
    assert_eq!(page2["sessions"][0]["title"], "one");
    assert!(page2.get("next_cursor").is_none());
    let only_a = app.ok(&ada.key, "list_sessions", json!({"agent_id": a}));
    assert_eq!(only_a["sessions"].as_array().unwrap().len(), 2);
}

#[test]
fn switch_model_applies_to_the_next_turn() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = echo(&app, &ada);
    let sid = start(&app, &ada, &agent_id, "hi", "k")["session"]["session_id"].as_str().unwrap().to_owned();
    let switched = app.ok(&ada.key, "switch_model", json!({"session_id": sid, "model": "echo-2", "thinking": "high"}));
    assert_eq!((switched["model"].as_str(), switched["thinking"].as_str()), (Some("echo-2"), Some("high")));
    let s = app.ok(&ada.key, "get_session", json!({"session_id": sid}));
    assert_eq!((s["model"].as_str(), s["thinking"].as_str()), (Some("echo-2"), Some("high")));
    assert_eq!(app.err_code(&ada.key, "switch_model", json!({"session_id": sid, "thinking": "max"})), "invalid_params");
    assert_eq!(app.err_code(&ada.key, "switch_model", json!({"session_id": sid})), "invalid_params");
}

#[test]
fn paid_harnesses_need_credit_and_admins_add_it() {
    let app = TestApp::with_config(agentsky::cx::Config { admin_token: Some("adm_test".into()), ..TestApp::config() });
    let ada = app.signup("Ada", "ada@example.com");
    let gpt = agent(&app, &ada, json!({"name": "G", "harness": "openai", "model": "gpt-test"}));
    let args = json!({"agent_id": gpt, "message": "hi", "idempotency_key": "k"});
    assert_eq!(app.err_code(&ada.key, "start_session", args.clone()), "insufficient_credits");
    let credit = json!({"amount_cents": 500});
    let path = format!("/v1/workspaces/{}/credit", ada.slug);
    assert_eq!(
        app.request("POST", &path, Some(&ada.key), Some(credit.clone())).status,
        403,
        "members cannot mint money"
    );
    let resp = app.request("POST", &path, Some("adm_test"), Some(credit));
    assert_eq!(resp.json_body()["balance_cents"], 500);
    let usage = app.ok(&ada.key, "get_usage", json!({}));
    assert_eq!(usage["balance_cents"], 500);
    assert_eq!(usage["card_saved"], false);
    app.ok(&ada.key, "start_session", args);
}

#[test]
fn get_usage_checks_its_dates_and_groups() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let u = app.ok(&ada.key, "get_usage", json!({"from": "2026-05-01", "to": "2026-05-28", "group_by": "model"}));
    assert_eq!(
        (u["from"].as_str(), u["to"].as_str(), u["total_cents"].as_i64()),
        (Some("2026-05-01"), Some("2026-05-28"), Some(0))
    );
    for bad in
        [json!({"from": "2026-02-30"}), json!({"group_by": "week"}), json!({"from": "2026-06-01", "to": "2026-05-01"})]
    {
        assert_eq!(app.err_code(&ada.key, "get_usage", bad.clone()), "invalid_params", "{bad}");
    }
}

/// A crash between the object's write and the index's leaves the index behind; the object keeps what the
/// index must say with its own state, so its next activation (any call, or its alarm) brings the index
/// level with it.
#[test]
fn the_index_converges_on_the_objects_state_after_a_crash_in_between() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent =
        app.request("POST", "/v1/agents", Some(&ada.key), Some(json!({"name": "E", "harness": "echo", "model": "m"})));
    let agent_id = agent.json_body()["agent_id"].as_str().unwrap().to_owned();
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "/burst 50 x", "idempotency_key": "k"}),
    );
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let status = |app: &TestApp| app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"].clone();
    assert_eq!(status(&app), "running");
    app.sessions.crash_before_index.set(true);
    app.settle();
    assert_eq!(status(&app), "running", "the index missed the turn's end (the crash)");
    app.sessions.crash_before_index.set(false);
    let page = app.ok(&ada.key, "read_session", json!({"session_id": sid, "message_id": s["message_id"]}));
    assert_eq!(page["status"], "idle", "the object is the truth");
    assert_eq!(status(&app), "idle", "its next activation told the index");
    // The same for a stop.
    app.sessions.crash_before_index.set(true);
    app.ok(&ada.key, "stop_session", json!({"session_id": sid}));
    app.sessions.crash_before_index.set(false);
    app.ok(&ada.key, "collect_result", json!({"session_id": sid}));
    assert_eq!(status(&app), "terminated");
}
