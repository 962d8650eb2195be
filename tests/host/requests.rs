//! `list_requests`: every open request of a workspace, with what a person needs to decide it, and the
//! loop an operator's own client runs: list, answer, wait for the next.

use crate::support::{HostSessions, TestApp};
use agentsky::http::HttpRequest;
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

fn rest(key: &str, method: &str, path: &str, body: Value) -> HttpRequest {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    HttpRequest {
        stream: None,
        method: method.into(),
        path: path.into(),
        query: query.into(),
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
fn an_operator_lists_open_requests_across_tasks_answers_one_and_waits_for_the_next() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "m"}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "build the site", "idempotency_key": "s1"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    let empty = app.ok(&ada.key, "list_requests", json!({}));
    assert_eq!(empty["requests"], json!([]));

    // While the agent waits for its answer, the operator's client lists the request and answers it.
    let seen: Rc<RefCell<Vec<Value>>> = Rc::default();
    let (key, log) = (ada.key.clone(), seen.clone());
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, wait_key: String| {
        let (key, log) = (key.clone(), log.clone());
        Box::pin(async move {
            if !wait_key.starts_with("req_") {
                return;
            }
            let listed = sessions.handle(rest(&key, "GET", "/v1/requests", json!(null))).await.json_body();
            let r = listed["requests"][0].clone();
            assert!(r.is_object(), "{listed}");
            log.borrow_mut().push(listed);
            let path = format!(
                "/v1/tasks/{}/requests/{}/answer",
                r["task_id"].as_str().unwrap(),
                r["request_id"].as_str().unwrap()
            );
            let answered = sessions.handle(rest(&key, "POST", &path, json!({"answer": "pg"}))).await;
            assert_eq!(answered.status, 200, "{:?}", answered.json_body());
        })
    }));
    let bumps = app.sessions.feeds.bumps();
    let answer = app.agent_ok(
        &token,
        "ask_user",
        json!({"kind": "decision", "payload": {"prompt": "Which db?", "options": ["pg", "sqlite"]}}),
    );
    assert_eq!(answer["resolution"], json!({"kind": "decision", "answer": "pg"}));
    assert!(app.sessions.feeds.bumps() >= bumps + 2, "opening and answering move the workspace's feed");
    let listed = seen.borrow()[0].clone();
    let r = &listed["requests"][0];
    assert_eq!(listed["requests"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(
        (r["kind"].as_str(), r["agent_name"].as_str(), r["session_title"].as_str(), r["task_title"].as_str()),
        (Some("decision"), Some("Dev"), Some("build the site"), Some("build the site"))
    );
    assert_eq!(r["payload"]["options"], json!(["pg", "sqlite"]));
    assert_eq!(r["session_id"], sid.as_str());
    *app.sessions.on_wait.borrow_mut() = None;

    // Answered: nothing open. A wait for the next one holds for the time asked, then answers empty with
    // the same cursor.
    let now = app.ok(&ada.key, "list_requests", json!({"cursor": listed["cursor"]}));
    assert_eq!(now["requests"], json!([]));
    let t0 = app.now_ms.get();
    let waited = app.ok(&ada.key, "list_requests", json!({"cursor": now["cursor"], "wait_seconds": 7}));
    assert_eq!((waited["requests"].clone(), waited["cursor"].clone()), (json!([]), now["cursor"].clone()));
    assert_eq!(app.now_ms.get() - t0, 7_000, "held for wait_seconds");
    for bad in [json!({"wait_seconds": 51}), json!({"wait_seconds": -1}), json!({"cursor": "nope"})] {
        assert_eq!(app.err_code(&ada.key, "list_requests", bad.clone()), "invalid_params", "{bad}");
    }

    // Another account sees none of it, and cannot name the workspace.
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(app.ok(&bo.key, "list_requests", json!({}))["requests"], json!([]));
    assert_eq!(app.err_code(&bo.key, "list_requests", json!({"workspace": ada.slug})), "not_found");
}
