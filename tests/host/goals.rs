//! Standing goals: the session keeps working until the goal is met or a limit stops it, each check an
//! event in the transcript.

use crate::support::{runner_request, Account, TestApp};
use serde_json::{json, Value};

fn session(app: &TestApp, who: &Account, first: &str) -> String {
    let r =
        app.request("POST", "/v1/agents", Some(&who.key), Some(json!({"name": "E", "harness": "echo", "model": "m"})));
    let agent = r.json_body()["agent_id"].as_str().unwrap().to_owned();
    let s = app.ok(
        &who.key,
        "start_session",
        json!({"agent_id": agent, "message": first, "idempotency_key": format!("s-{first}")}),
    );
    app.settle();
    s["session"]["session_id"].as_str().unwrap().to_owned()
}

fn checks(app: &TestApp, who: &Account, sid: &str) -> Vec<Value> {
    let all = app.ok(&who.key, "read_session", json!({"session_id": sid}));
    all["events"].as_array().unwrap().iter().filter(|e| e["type"] == "goal_check").cloned().collect()
}

#[test]
fn a_goal_with_a_text_criterion_iterates_until_met() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let sid = session(&app, &ada, "hello");
    let set = app.ok(&ada.key, "set_goal", json!({"session_id": sid, "objective": "count to three", "criteria": ["iteration 3"], "max_iterations": 5, "idempotency_key": "g1"}));
    assert_eq!((set["goal"]["status"].as_str(), set["goal"]["iterations"].as_i64()), (Some("active"), Some(1)));
    app.settle();
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!((g["status"].as_str(), g["iterations"].as_i64()), (Some("met"), Some(3)), "{g}");
    assert_eq!(g["last_verdicts"][0]["met"], true);
    assert!(g["stopped_reason"].as_str().unwrap().contains("met"));
    let c = checks(&app, &ada, &sid);
    assert_eq!(c.len(), 3, "each check is an event");
    assert_eq!((c[0]["status"].as_str(), c[2]["status"].as_str()), (Some("active"), Some("met")));
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "idle");
    let last =
        app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"].as_str().unwrap().to_owned();
    assert!(last.contains("iteration 3 of 5"), "{last}");
}

#[test]
fn a_low_max_iterations_stops_at_the_limit() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let sid = session(&app, &ada, "hello");
    app.ok(&ada.key, "set_goal", json!({"session_id": sid, "objective": "never", "criteria": ["unreachable words"], "max_iterations": 2, "idempotency_key": "g1"}));
    app.settle();
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!((g["status"].as_str(), g["iterations"].as_i64()), (Some("limit_reached"), Some(2)));
    assert!(g["stopped_reason"].as_str().unwrap().contains("max_iterations"));
    assert_eq!(checks(&app, &ada, &sid).len(), 2);
}

#[test]
fn command_criteria_with_no_runner_online_are_not_checked_and_never_met() {
    let app = TestApp::new();
    // A deployment without hosted sandboxes (with them, the session's sandbox runs the criteria).
    *app.sessions.sandboxes.unavailable.borrow_mut() = Some("no container runtime".into());
    let ada = app.signup("Ada", "ada@example.com");
    let sid = session(&app, &ada, "hello");
    // The text criterion is met by the first reply; the command one cannot be checked: the goal is not met.
    app.ok(&ada.key, "set_goal", json!({"session_id": sid, "objective": "green tests", "criteria": ["keep working", {"text": "tests pass", "command": "make test"}], "idempotency_key": "g1"}));
    app.settle();
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!(g["status"], "not_checkable", "{g}");
    assert_eq!(g["last_verdicts"][0]["met"], true, "{g}");
    assert!(g["last_verdicts"][1]["met"].is_null());
    let reason = g["last_verdicts"][1]["reason"].as_str().unwrap();
    assert!(reason.contains("not checked: no runner of the workspace is online to run `make test`"), "{reason}");
    assert!(g["stopped_reason"].as_str().unwrap().contains("\"tests pass\" could not be checked"), "{g}");
    let none: i64 = app.db.0.query_row("SELECT COUNT(*) FROM runner_checkout", [], |r| r.get(0)).unwrap();
    assert_eq!(none, 0, "nothing queued for runners that are not there");
}

/// The goal's runner, seen by the server as online: claims the checkout waiting, fetches its files and
/// answers `exit`; the checkout it ran.
fn run_checkout(app: &TestApp, token: &str, exit: i64, output: &str) -> Value {
    let claim = app.send(runner_request(token, "POST", "/v1/runner/claim", json!({})));
    assert_eq!(claim.status, 200, "a checkout waits for a runner");
    let c = claim.json_body()["checkout"].clone();
    let lease = c["lease_id"].as_str().unwrap().to_owned();
    let files = app.send(runner_request(token, "GET", &format!("/v1/runner/files?lease_id={lease}"), json!({})));
    assert_eq!(files.status, 200);
    let result = json!({"exit_code": exit, "timed_out": false, "output": output});
    let post = json!({"lease_id": lease, "job_id": c["job_id"], "result": result});
    assert_eq!(app.send(runner_request(token, "POST", "/v1/runner/jobs/result", post)).status, 200);
    app.settle();
    c
}

#[test]
fn command_criteria_of_a_session_without_a_runner_run_on_a_runner_of_the_workspace() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let sid = session(&app, &ada, "hello");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "ci box"})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    assert_eq!(app.send(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).status, 204);
    app.ok(&ada.key, "set_goal", json!({"session_id": sid, "objective": "green tests", "criteria": [{"text": "tests pass", "command": "make test"}], "max_iterations": 3, "idempotency_key": "g1"}));
    app.settle();
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!(
        (g["status"].as_str(), g["last_verdicts"].as_array().map(Vec::len)),
        (Some("active"), Some(0)),
        "waits for the runner: {g}"
    );
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "running");

    // Exit 1: not met, and the goal goes on to its next turn, whose check runs the command again.
    let c = run_checkout(&app, &token, 1, "1 failed");
    assert_eq!(
        (c["kind"].as_str(), c["command"].as_str(), c["session_id"].as_str()),
        (Some("checks"), Some("make test"), Some(sid.as_str()))
    );
    let first = checks(&app, &ada, &sid)[0]["verdicts"][0].clone();
    assert_eq!(first["met"], false, "{first}");
    assert_eq!(
        first["reason"],
        "`make test` exited 1: 1 failed (on another runner of the workspace, in a fresh checkout of the lane)"
    );
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!((g["status"].as_str(), g["iterations"].as_i64()), (Some("active"), Some(2)), "{g}");

    // Exit 0: met.
    let again = run_checkout(&app, &token, 0, "ok");
    assert_ne!(again["job_id"], c["job_id"], "each check runs the command afresh");
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!((g["status"].as_str(), g["iterations"].as_i64()), (Some("met"), Some(2)), "{g}");
    assert!(g["last_verdicts"][0]["reason"].as_str().unwrap().starts_with("`make test` exited 0"), "{g}");
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "idle");
    assert_eq!(app.send(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).status, 204, "nothing left");
}

#[test]
fn a_goal_checkout_no_runner_takes_is_reported_not_checked() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let sid = session(&app, &ada, "hello");
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "asleep"})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    assert_eq!(app.send(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).status, 204);
    app.ok(&ada.key, "set_goal", json!({"session_id": sid, "objective": "green", "criteria": [{"text": "tests pass", "command": "make test"}], "idempotency_key": "g1"}));
    app.settle();
    // The runner never claims: after a minute the check gives up, saying so.
    app.sessions.run_until(&sid, app.now_ms.get() + 61_000);
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!(g["status"], "not_checkable", "{g}");
    let reason = g["last_verdicts"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("no runner of the workspace took the checkout within 60 s"), "{reason}");
    assert_eq!(
        app.send(runner_request(&token, "POST", "/v1/runner/claim", json!({}))).status,
        204,
        "given up: nobody takes it later"
    );
}

#[test]
fn clearing_a_goal_stops_the_continuations_and_writes_are_idempotent() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let sid = session(&app, &ada, "hello");
    let args = json!({"session_id": sid, "objective": "o", "criteria": ["never"], "idempotency_key": "g1"});
    let first = app.ok(&ada.key, "set_goal", args.clone());
    assert_eq!(app.ok(&ada.key, "set_goal", args), first, "a retry replays");
    let cleared = app.ok(&ada.key, "clear_goal", json!({"session_id": sid, "idempotency_key": "c1"}));
    assert_eq!(cleared["goal"]["status"], "cleared");
    app.settle();
    assert!(checks(&app, &ada, &sid).is_empty(), "the running turn ends without a check");
    assert_eq!(app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"]["iterations"], 1);
    assert_eq!(
        app.err_code(&ada.key, "set_goal", json!({"session_id": sid, "objective": "", "idempotency_key": "g2"})),
        "invalid_params"
    );
    assert!(app.ok(&ada.key, "get_goal", json!({"session_id": session(&app, &ada, "x")}))["goal"].is_null());
}
