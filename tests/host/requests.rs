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

/// A session-server `tools/call`, for a wait hook (which has no `TestApp`).
fn session_tool(token: &str, tool: &str, args: Value) -> HttpRequest {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": args}});
    HttpRequest {
        method: "POST".into(),
        path: "/v1/session/mcp".into(),
        headers: vec![
            ("host".into(), "127.0.0.1:8787".into()),
            ("content-type".into(), "application/json".into()),
            ("accept".into(), "application/json, text/event-stream".into()),
            ("mcp-protocol-version".into(), "2025-06-18".into()),
            ("authorization".into(), format!("Bearer {token}")),
        ],
        body: serde_json::to_vec(&body).unwrap(),
        client_ip: "203.0.113.7".into(),
        ..Default::default()
    }
}

/// An echo session and its session token: (app, account key, session id, token).
fn asking_session() -> (TestApp, String, String, String) {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "m"}));
    let s =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "build", "idempotency_key": "s"}));
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    (app, ada.key, sid, token)
}

/// While a call waits on a request, a person answers it with `answer` through REST.
fn answer_on_wait(app: &TestApp, key: &str, answer: &'static str, waits: Rc<RefCell<Vec<String>>>) {
    let key = key.to_owned();
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, wait_key: String| {
        let (key, waits) = (key.clone(), waits.clone());
        Box::pin(async move {
            if !wait_key.starts_with("req_") {
                return;
            }
            waits.borrow_mut().push(wait_key.clone());
            let listed = sessions.handle(rest(&key, "GET", "/v1/requests", json!(null))).await.json_body();
            let r = &listed["requests"][0];
            let path = format!("/v1/tasks/{}/requests/{wait_key}/answer", r["task_id"].as_str().unwrap());
            let answered = sessions.handle(rest(&key, "POST", &path, json!({"answer": answer}))).await;
            assert_eq!(answered.status, 200, "{:?}", answered.json_body());
        })
    }));
}

fn requests_in(app: &TestApp) -> i64 {
    app.db.0.query_row("SELECT COUNT(*) FROM request", [], |r| r.get(0)).unwrap()
}

fn tool_json(result: &Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
}

#[test]
fn an_ask_user_retried_while_the_first_is_open_waits_on_the_same_request_and_both_get_the_answer() {
    let (app, key, sid, token) = asking_session();
    let question = json!({"kind": "decision", "payload": {"prompt": "Which db?", "options": ["pg", "sqlite"]}});
    // The first call's connection was cut (no request id came back); the agent retries it while the
    // person has not answered yet. The person then sees one request, answers it, and both calls get it.
    let seen: Rc<RefCell<Vec<Value>>> = Rc::default();
    let waits: Rc<RefCell<Vec<String>>> = Rc::default();
    let (k, t, q, log, w) = (key.clone(), token.clone(), question.clone(), seen.clone(), waits.clone());
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, wait_key: String| {
        let (key, token, question, log, waits) = (k.clone(), t.clone(), q.clone(), log.clone(), w.clone());
        Box::pin(async move {
            if !wait_key.starts_with("req_") {
                return;
            }
            waits.borrow_mut().push(wait_key.clone());
            if waits.borrow().len() == 1 {
                let retry = sessions.handle(session_tool(&token, "ask_user", question)).await;
                log.borrow_mut().push(retry.json_body()["result"].clone());
                return;
            }
            let listed = sessions.handle(rest(&key, "GET", "/v1/requests", json!(null))).await.json_body();
            log.borrow_mut().push(listed.clone());
            let task_id = listed["requests"][0]["task_id"].as_str().unwrap().to_owned();
            let task = sessions.handle(rest(&key, "GET", &format!("/v1/tasks/{task_id}"), json!(null))).await;
            log.borrow_mut().push(task.json_body());
            let path = format!("/v1/tasks/{task_id}/requests/{wait_key}/answer");
            let answered = sessions.handle(rest(&key, "POST", &path, json!({"answer": "pg"}))).await;
            assert_eq!(answered.status, 200, "{:?}", answered.json_body());
        })
    }));
    let first = app.agent_ok(&token, "ask_user", question);
    *app.sessions.on_wait.borrow_mut() = None;
    let seen = seen.borrow();
    let waits = waits.borrow();
    assert_eq!(waits.len(), 2, "both calls waited: {waits:?}");
    assert_eq!(waits[0], waits[1], "on the same request");
    let resolution = json!({"kind": "decision", "answer": "pg"});
    assert_eq!(first["resolution"], resolution);
    // What the person saw while both calls waited, then what the retry got.
    let listed = &seen[0]["requests"];
    assert_eq!(listed.as_array().unwrap().len(), 1, "the person sees one request: {listed}");
    assert_eq!(listed[0]["session_id"], sid.as_str());
    assert_eq!(seen[1]["open_requests"].as_array().map(Vec::len), Some(1), "{}", seen[1]);
    assert_eq!(tool_json(&seen[2])["resolution"], resolution, "the retry got the answer too");
    assert_eq!(requests_in(&app), 1);
}

#[test]
fn an_ask_user_retried_after_the_answer_gets_that_answer_without_asking_again() {
    let (app, key, _, token) = asking_session();
    let question = json!({"kind": "question", "payload": {"prompt": "Which region?"}});
    let waits: Rc<RefCell<Vec<String>>> = Rc::default();
    answer_on_wait(&app, &key, "eu", waits.clone());
    let first = app.agent_ok(&token, "ask_user", question.clone());
    assert_eq!(first["resolution"], json!({"kind": "question", "answer": "eu"}));
    // The answer went into a connection the crash had cut: the agent asks again, and gets it at once.
    app.advance(9 * 60_000);
    answer_on_wait(&app, &key, "us", waits.clone());
    let retry = app.agent_ok(&token, "ask_user", question.clone());
    assert_eq!(retry, first, "the same answer");
    assert_eq!((waits.borrow().len(), requests_in(&app)), (1, 1), "no second request, no wait");
    assert_eq!(app.ok(&key, "list_requests", json!({}))["requests"], json!([]));
    // Longer after the answer, the same words are a new question.
    app.advance(2 * 60_000);
    let later = app.agent_ok(&token, "ask_user", question);
    assert_eq!(later["resolution"], json!({"kind": "question", "answer": "us"}));
    assert_eq!((waits.borrow().len(), requests_in(&app)), (2, 2));
}

#[test]
fn a_different_question_from_the_same_session_opens_its_own_request() {
    let (app, key, _, token) = asking_session();
    let waits: Rc<RefCell<Vec<String>>> = Rc::default();
    answer_on_wait(&app, &key, "Yes", waits.clone());
    let asked = [
        json!({"kind": "decision", "payload": {"prompt": "Ship it?"}}),
        json!({"kind": "decision", "payload": {"prompt": "Ship it now?"}}),
        json!({"kind": "decision", "payload": {"prompt": "Ship it?", "options": ["Yes", "Later"]}}),
        json!({"kind": "question", "payload": {"prompt": "Ship it?"}}),
    ];
    for (i, question) in asked.into_iter().enumerate() {
        let answer = app.agent_ok(&token, "ask_user", question.clone());
        assert_eq!(answer["resolution"]["answer"], "Yes", "{question}");
        assert_eq!(requests_in(&app), i as i64 + 1, "{question} is a new request");
    }
    assert_eq!(waits.borrow().len(), 4);
}
