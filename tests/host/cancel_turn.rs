//! Cancelling one turn (`cancel_turn`, `POST /v1/sessions/{id}/cancel-turn`): the turn ends `cancelled`,
//! the session goes back to idle and takes the next message; a repeat is answered the same; an idle
//! session refuses it; a runner holding the turn is told by its lease; a turn waiting on a person has its
//! request withdrawn.

use crate::support::{runner_request, Account, TestApp};
use agentsky::http::HttpResponse;
use serde_json::{json, Value};

fn echo_session(app: &TestApp, who: &Account, message: &str) -> Value {
    let agent_id = app.create_agent(&who.key, json!({"name": "Echo", "harness": "echo", "model": "echo-1"}));
    let started =
        app.ok(&who.key, "start_session", json!({"agent_id": agent_id, "message": message, "idempotency_key": "s"}));
    app.settle();
    started
}

fn cancel(app: &TestApp, key: &str, session_id: &str, body: Value) -> HttpResponse {
    app.request("POST", &format!("/v1/sessions/{session_id}/cancel-turn"), Some(key), Some(body))
}

fn events_of(app: &TestApp, key: &str, session_id: &str, message_id: &Value) -> Vec<Value> {
    let page = app.ok(key, "read_session", json!({"session_id": session_id, "message_id": message_id}));
    assert_eq!(page["turn_finished"], true, "{page}");
    page["events"].as_array().unwrap().clone()
}

#[test]
fn a_cancelled_turn_ends_cancelled_and_the_session_takes_the_next_message() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let started = echo_session(&app, &ada, "/sleep 30");
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "running");

    let done = cancel(&app, &ada.key, &sid, json!({}));
    assert_eq!(done.status, 200, "{:?}", done.json_body());
    let done = done.json_body();
    assert_eq!(
        (done["message_id"].clone(), done["status"].as_str(), done["replayed"].as_bool()),
        (started["message_id"].clone(), Some("idle"), Some(false)),
        "{done}"
    );
    let events = events_of(&app, &ada.key, &sid, &started["message_id"]);
    let last = events.last().unwrap();
    assert_eq!((last["type"].as_str(), last["reason"].as_str()), (Some("turn_end"), Some("cancelled")), "{events:?}");
    assert!(events.iter().any(|e| e["text"] == "the turn was cancelled"), "{events:?}");
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "idle");

    // Idempotent for that turn; refused, saying why, for an idle session.
    let again = cancel(&app, &ada.key, &sid, json!({"message_id": started["message_id"]}));
    assert_eq!((again.status, again.json_body()["replayed"].as_bool()), (200, Some(true)), "{:?}", again.json_body());
    let idle = cancel(&app, &ada.key, &sid, json!({}));
    assert_eq!(idle.status, 409);
    let error = idle.json_body()["error"].clone();
    assert_eq!(error["code"], "conflict");
    assert!(error["message"].as_str().unwrap().contains("no turn is running"), "{error}");

    // The sleep's alarm, still due, adds nothing to a cancelled turn; the next message runs its own.
    app.advance(31_000);
    app.settle();
    let next = app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "hi", "idempotency_key": "n"}));
    app.settle();
    let events = events_of(&app, &ada.key, &sid, &next["message_id"]);
    let texts: Vec<&str> = events.iter().filter_map(|e| e["text"].as_str()).collect();
    assert!(texts.contains(&"echo: hi"), "{events:?}");
    assert_eq!(events.last().unwrap()["reason"], "completed");
    let first = events_of(&app, &ada.key, &sid, &started["message_id"]);
    assert!(!first.iter().any(|e| e["type"] == "agent_message"), "the cancelled turn never replied: {first:?}");

    // A turn that ended on its own is not cancelled after the fact.
    let ended = cancel(&app, &ada.key, &sid, json!({"message_id": next["message_id"]}));
    assert_eq!(ended.status, 409);
    assert!(ended.json_body()["error"]["message"].as_str().unwrap().contains("already ended (completed)"));
    // Another workspace cannot see the session at all.
    let eve = app.signup("Eve", "eve@example.com");
    assert_eq!(cancel(&app, &eve.key, &sid, json!({})).status, 404);
    // A stopped session runs no turn to cancel.
    app.ok(&ada.key, "stop_session", json!({"session_id": sid}));
    assert_eq!(cancel(&app, &ada.key, &sid, json!({})).json_body()["error"]["code"], "session_terminated");
}

#[test]
fn cancelling_a_runner_turn_tells_the_runner_through_its_lease() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    let agent_id = app.create_agent(
        &ada.key,
        json!({"name": "Coder", "harness": "runner", "model": "claude", "instructions": "Write code."}),
    );
    let runner = |method: &str, path: &str, body: Value| app.send(runner_request(&token, method, path, body));
    let start = |message: &str, key: &str| {
        let started = app.ok(
            &ada.key,
            "start_session",
            json!({"agent_id": agent_id, "message": message, "idempotency_key": key}),
        );
        app.settle();
        started
    };

    // Claimed: the heartbeat, the job poll and an event post all say stop, cancelled.
    let started = start("add a README", "k1");
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    let claim = runner("POST", "/v1/runner/claim", json!({})).json_body();
    let lease = claim["lease_id"].as_str().unwrap().to_owned();
    assert_eq!(runner("POST", "/v1/runner/heartbeat", json!({"lease_id": lease})).json_body()["stop"], false);
    assert_eq!(cancel(&app, &ada.key, &sid, json!({})).status, 200);
    for (path, body) in [
        ("/v1/runner/heartbeat", json!({"lease_id": lease})),
        ("/v1/runner/jobs", json!({"lease_id": lease})),
        (
            "/v1/runner/events",
            json!({"lease_id": lease, "events": [{"key": "late", "type": "status", "text": "late"}]}),
        ),
    ] {
        let answer = runner("POST", path, body);
        assert_eq!(answer.status, 200, "{path}: {:?}", answer.json_body());
        let answer = answer.json_body();
        assert_eq!((answer["stop"].as_bool(), answer["reason"].as_str()), (Some(true), Some("cancelled")), "{path}");
    }
    let files = runner("GET", &format!("/v1/runner/files?lease_id={lease}"), json!({}));
    assert_eq!(files.status, 409);
    assert!(files.json_body()["error"]["message"].as_str().unwrap().contains("cancelled"));
    let agent_token = claim["session_token"].as_str().unwrap();
    let after = app.mcp_post("/v1/session/mcp", Some(agent_token), "203.0.113.7", "tools/list", json!({}));
    assert_eq!(after.status, 401, "the agent's session token went with its turn");
    let events = events_of(&app, &ada.key, &sid, &started["message_id"]);
    assert!(!events.iter().any(|e| e["text"] == "late"), "a cancelled turn takes no more events: {events:?}");
    assert_eq!(events.last().unwrap()["reason"], "cancelled");

    // The session's next turn is claimed as usual; a turn cancelled while still queued is never claimed.
    let next = app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "again", "idempotency_key": "n"}));
    app.settle();
    assert_eq!(cancel(&app, &ada.key, &sid, json!({"message_id": next["message_id"]})).status, 200);
    assert_eq!(runner("POST", "/v1/runner/claim", json!({})).status, 204, "the cancelled turn is not handed out");
    app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "third", "idempotency_key": "t"}));
    app.settle();
    let claim = runner("POST", "/v1/runner/claim", json!({}));
    assert_eq!((claim.status, claim.json_body()["message"].as_str()), (200, Some("third")));
}

/// A step still under way when its turn is cancelled lands on a session that moved on (here, to the next
/// turn): its events are dropped at the step boundary, and what it was charged still counts.
#[test]
fn a_step_that_finishes_after_the_cancel_is_dropped_but_its_charge_counts() {
    use agentsky::session::{Author, Charge, Core, EventKind, NewMessage, SessionConfig, StepOutcome, TurnState};
    let db = crate::support::ObjectDb(rusqlite::Connection::open_in_memory().unwrap());
    let core = Core::open(&db).unwrap();
    let config = SessionConfig {
        session_id: "ses_1".into(),
        workspace_id: "ws_1".into(),
        task_id: "ses_1".into(),
        agent_id: "ag_1".into(),
        harness: "openai".into(),
        model: "m".into(),
        thinking: "off".into(),
        instructions: String::new(),
        mcp_servers: vec![],
        agent_workspace_id: None,
        budget_cents: None,
        started_by_key_id: None,
        run_price: None,
        placement: agentsky::rules::placement::Placement::Runner,
        command: None,
        egress: vec![],
    };
    let message = |id: &str| NewMessage { message_id: id.into(), text: "go".into(), from: Author::User };
    core.init(&config, &message("msg_1"), 0).unwrap();
    let (cancelled, replayed, t) = core.cancel_turn(None, 10).unwrap();
    assert_eq!((cancelled.as_str(), replayed, t.turn.state), ("msg_1", false, TurnState::Idle));
    core.send(&message("msg_2"), 20).unwrap();
    let late = StepOutcome {
        events: vec![(EventKind::AgentMessage, json!({"text": "too late"}))],
        charge: Some(Charge { model: "m".into(), cents: 7, input_tokens: 1, output_tokens: 1 }),
        ..StepOutcome::default()
    };
    let t = core.apply("msg_1", late, 30).unwrap();
    assert!(t.index_changed, "the spend changed");
    assert_eq!(
        (t.turn.state, t.turn.message_id.as_deref(), t.turn.spent_cents),
        (TurnState::Running, Some("msg_2"), 7)
    );
    let log = core.history(100).unwrap();
    assert!(!log.iter().any(|e| e.body["text"] == "too late"), "{log:?}");
    assert_eq!(core.turn().unwrap().step, 0, "the next turn's steps are its own");
}

/// A repeated cancel of a turn that already ended leaves the next turn's open requests alone.
#[test]
fn a_replayed_cancel_does_not_withdraw_the_next_turns_requests() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let started = echo_session(&app, &ada, "/sleep 30");
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    assert_eq!(cancel(&app, &ada.key, &sid, json!({})).status, 200);
    let next =
        app.ok(&ada.key, "send_message", json!({"session_id": sid, "message": "/sleep 30", "idempotency_key": "n"}));
    app.settle();
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "running");
    // The next turn's agent waits on a person.
    app.db
        .0
        .execute(
            "INSERT INTO request (request_id, workspace_id, task_id, session_id, kind, payload, status, created_ms,
               expires_ms)
             SELECT 'req_next', workspace_id, task_id, session_id, 'question', '{\"prompt\":\"ok?\"}', 'open', ?2, ?2 + 3600000
             FROM session WHERE session_id = ?1",
            rusqlite::params![sid, app.now_ms.get()],
        )
        .unwrap();
    let status = |app: &TestApp| -> String {
        app.db.0.query_row("SELECT status FROM request WHERE request_id = 'req_next'", [], |r| r.get(0)).unwrap()
    };
    let again = cancel(&app, &ada.key, &sid, json!({"message_id": started["message_id"]}));
    assert_eq!(again.json_body()["replayed"], true, "{:?}", again.json_body());
    assert_eq!(status(&app), "open", "a replayed cancel leaves the next turn's request open");
    // Cancelling the next turn itself withdraws it.
    let done = cancel(&app, &ada.key, &sid, json!({"message_id": next["message_id"]}));
    assert_eq!(done.json_body()["replayed"], false, "{:?}", done.json_body());
    assert_eq!(status(&app), "withdrawn");
}

/// A cancel that lands between a claim and its token: no token is stored for a lease that no longer holds
/// its turn, and a runner's token stops working once its turn is not leased, even before it is revoked.
#[test]
fn a_runner_token_lives_only_while_its_lease_holds_the_turn() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    let agent_id = app.create_agent(
        &ada.key,
        json!({"name": "Coder", "harness": "runner", "model": "claude", "instructions": "Write code."}),
    );
    app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "go", "idempotency_key": "k"}));
    app.settle();
    let claim = app.send(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).json_body();
    let (sid, lease) =
        (claim["session_id"].as_str().unwrap().to_owned(), claim["lease_id"].as_str().unwrap().to_owned());
    let agent_token = claim["session_token"].as_str().unwrap().to_owned();
    let tools = |t: &str| app.mcp_post("/v1/session/mcp", Some(t), "203.0.113.7", "tools/list", json!({})).status;
    assert_eq!(tools(&agent_token), 200);

    // The turn is cancelled in the store while nothing revoked the token yet (the race's other half).
    app.db.0.execute("UPDATE runner_turn SET status = 'cancelled' WHERE lease_id = ?1", [&lease]).unwrap();
    assert_eq!(tools(&agent_token), 401, "a token outlives no cancelled lease");

    // And a token for that lease is not stored at all.
    let ws: String =
        app.db.0.query_row("SELECT workspace_id FROM session WHERE session_id = ?1", [&sid], |r| r.get(0)).unwrap();
    let stored = app.system(move |cx| {
        Box::pin(async move {
            let db = cx.db();
            let late = agentsky::store::requests::insert_token(db, "h_late", &sid, &ws, Some(&lease), 1).await.unwrap();
            let plain = agentsky::store::requests::insert_token(db, "h_plain", &sid, &ws, None, 1).await.unwrap();
            (late, plain)
        })
    });
    assert_eq!(stored, (false, true), "no token for a lease that lost its turn; a plain session token is stored");
    let late: i64 =
        app.db.0.query_row("SELECT COUNT(*) FROM session_token WHERE token_hash = 'h_late'", [], |r| r.get(0)).unwrap();
    assert_eq!(late, 0);
}

/// A cancel that ended the session's turn but failed before its runner turn heard it: the runner's next
/// event post is refused as not running, and ends that runner turn, so it is not claimed again.
#[test]
fn a_half_failed_cancel_ends_the_runner_turn_at_the_runners_next_post() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    let agent_id = app.create_agent(
        &ada.key,
        json!({"name": "Coder", "harness": "runner", "model": "claude", "instructions": "Write code."}),
    );
    let started =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "go", "idempotency_key": "k"}));
    app.settle();
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    let runner = |method: &str, path: &str, body: Value| app.send(runner_request(&token, method, path, body));
    let claim = runner("POST", "/v1/runner/claim", json!({})).json_body();
    let lease = claim["lease_id"].as_str().unwrap().to_owned();

    // Only the object heard the cancel.
    app.sessions.cancel_in_object(&sid);
    let post = json!({"lease_id": lease, "events": [{"key": "e1", "type": "status", "text": "working"}]});
    let answer = runner("POST", "/v1/runner/events", post);
    assert_eq!(answer.status, 200, "{:?}", answer.json_body());
    let answer = answer.json_body();
    assert_eq!((answer["stop"].as_bool(), answer["reason"].as_str()), (Some(true), Some("cancelled")), "{answer}");
    let status: String =
        app.db.0.query_row("SELECT status FROM runner_turn WHERE lease_id = ?1", [&lease], |r| r.get(0)).unwrap();
    assert_eq!(status, "cancelled");
    // Long after its lease would have run out, nobody claims it again.
    app.advance(3_600_000);
    assert_eq!(runner("POST", "/v1/runner/claim", json!({})).status, 204);
}
