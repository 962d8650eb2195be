//! Standing goals: the session keeps working until the goal is met or a limit stops it, each check an
//! event in the transcript.

use crate::support::{Account, TestApp};
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
fn command_criteria_without_a_runner_are_not_checkable() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let sid = session(&app, &ada, "hello");
    app.ok(&ada.key, "set_goal", json!({"session_id": sid, "objective": "green tests", "criteria": [{"text": "tests pass", "command": "make test"}], "idempotency_key": "g1"}));
    app.settle();
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!(g["status"], "not_checkable");
    assert!(g["last_verdicts"][0]["met"].is_null());
    assert!(g["last_verdicts"][0]["reason"].as_str().unwrap().contains("runner"));
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
