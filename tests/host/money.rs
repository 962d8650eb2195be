//! Money: every path that begins a turn is admitted by the budgets and the wallet in the session, model
//! calls hold before and settle after so the wallet never goes below zero, a paid public agent's price
//! moves between wallets once per run, and a share-link visitor's message is the link's, not the owner's.

use crate::support::{balance, credit, Account, TestApp};
use agentsky::cx::Config;
use agentsky::http::{HttpRequest, HttpResponse};
use agentsky::store::usage::{self, Entry, Hold};
use serde_json::{json, Value};

/// A cent a token, so holds and charges are easy to read.
fn app() -> TestApp {
    TestApp::with_config(Config {
        admin_token: Some("adm".into()),
        secrets_key: Some("test-master-key".into()),
        prices: agentsky::rules::prices::Prices::parse(r#"{"gpt-test": [1000000, 1000000]}"#).unwrap(),
        ..TestApp::config()
    })
}

fn workspace_id(app: &TestApp, slug: &str) -> String {
    app.db.0.query_row("SELECT workspace_id FROM workspace WHERE slug = ?1", [slug], |r| r.get(0)).unwrap()
}

/// What the ledger says left a workspace's wallet.
fn ledger_cents(app: &TestApp, slug: &str) -> i64 {
    app.db
        .0
        .query_row(
            "SELECT COALESCE(SUM(u.cents), 0) FROM usage_entry u JOIN workspace w USING (workspace_id) WHERE w.slug = ?1",
            [slug],
            |r| r.get(0),
        )
        .unwrap()
}

fn agent(app: &TestApp, who: &Account, body: Value) -> String {
    let r = app.request("POST", "/v1/agents", Some(&who.key), Some(body));
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    r.json_body()["agent_id"].as_str().unwrap().to_owned()
}

/// An openai agent whose model answers every call with `reply`, reporting the given usage.
fn openai_agent(app: &TestApp, who: &Account, input_tokens: i64) -> String {
    for (name, value) in [("OPENAI_BASE_URL", "https://model.example.com/v1"), ("OPENAI_API_KEY", "sk-test")] {
        let r = app.request("PUT", &format!("/v1/secrets/{name}"), Some(&who.key), Some(json!({"value": value})));
        assert_eq!(r.status, 200, "{:?}", r.json_body());
    }
    app.sessions.net.answer(move |_| {
        HttpResponse::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": "done"}}],
                    "usage": {"prompt_tokens": input_tokens, "completion_tokens": 0}}),
        )
    });
    agent(app, who, json!({"name": "G", "harness": "openai", "model": "gpt-test"}))
}

fn start(app: &TestApp, who: &Account, agent_id: &str, key: &str) -> Value {
    app.ok(&who.key, "start_session", json!({"agent_id": agent_id, "message": "go", "idempotency_key": key}))
}

fn events(app: &TestApp, who: &Account, sid: &str) -> Vec<Value> {
    app.ok(&who.key, "read_session", json!({"session_id": sid}))["events"].as_array().unwrap().clone()
}

fn share_post(app: &TestApp, url: &str, message: &str) -> HttpResponse {
    let path = &url[url.find("/s/").unwrap()..];
    app.send(HttpRequest {
        method: "POST".into(),
        path: path.into(),
        body: format!("message={message}").into_bytes(),
        ..Default::default()
    })
}

#[test]
fn holds_and_settlements_are_exact_and_replay_safe() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    credit(&app, &ada.slug, 1_000);
    let ws = workspace_id(&app, &ada.slug);
    let run = |f: std::pin::Pin<Box<dyn std::future::Future<Output = agentsky::store::DbResult<Hold>> + '_>>| {
        futures::executor::block_on(f).unwrap()
    };
    let hold = |id: &'static str, cents: i64| run(Box::pin(usage::hold(&app.db, id, &ws, cents, 0)));
    let settle = |id: &'static str, cents: i64| {
        let e = Entry {
            entry_id: id,
            workspace_id: &ws,
            session_id: None,
            key_id: None,
            agent_id: None,
            model: "gpt-test",
            cents,
            input_tokens: cents,
            output_tokens: 0,
            now_ms: 0,
        };
        futures::executor::block_on(usage::settle(&app.db, &e)).unwrap()
    };
    assert_eq!(hold("h1", 600), Hold::Held);
    assert_eq!(balance(&app, &ada), 400);
    assert_eq!(hold("h1", 600), Hold::Held, "the same step holds once");
    assert_eq!(balance(&app, &ada), 400);
    assert_eq!(hold("h2", 600), Hold::Short { balance_cents: 400 }, "a second call in flight cannot overdraw");
    assert_eq!(settle("h1", 250), 250);
    assert_eq!(balance(&app, &ada), 750, "the rest of the hold is back");
    assert_eq!(settle("h1", 999), 250, "settled once; a replay reads the first charge");
    assert_eq!(hold("h1", 600), Hold::Settled, "a replayed step is not held or charged again");
    assert_eq!(balance(&app, &ada), 750);
    assert_eq!(settle("h3", 5_000), 750, "past the wallet, a charge takes what is left and no more");
    assert_eq!(balance(&app, &ada), 0);
    assert_eq!(1_000 - ledger_cents(&app, &ada.slug), 0, "the ledger explains every cent");

    credit(&app, &ada.slug, 100);
    assert_eq!(hold("h4", 60), Hold::Held);
    futures::executor::block_on(usage::release_stale(&app.db, 1)).unwrap();
    assert_eq!(balance(&app, &ada), 100, "a hold whose step died goes back");
    let below = app.db.0.execute("UPDATE workspace SET balance_cents = -1 WHERE workspace_id = ?1", [&ws]);
    assert!(below.unwrap_err().to_string().contains("below zero"), "no statement moves a wallet below zero");
}

#[test]
fn a_model_call_that_costs_more_than_the_wallet_leaves_it_at_zero_never_below() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    credit(&app, &ada.slug, 50_000);
    let a = openai_agent(&app, &ada, 10_000_000);
    let s = start(&app, &ada, &a, "k1");
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap();
    assert_eq!(balance(&app, &ada), 0);
    assert_eq!(ledger_cents(&app, &ada.slug), 50_000, "charged what the wallet held, recorded exactly");
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["spent_cents"], 50_000);
    let more = json!({"session_id": sid, "message": "again", "idempotency_key": "k2"});
    assert_eq!(app.err_code(&ada.key, "send_message", more), "insufficient_credits");
}

#[test]
fn a_model_call_is_not_made_when_the_wallet_cannot_hold_what_it_may_cost() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    credit(&app, &ada.slug, 100);
    let a = openai_agent(&app, &ada, 10);
    let s = start(&app, &ada, &a, "k1");
    app.settle();
    assert!(app.sessions.net.requests.borrow().is_empty(), "no model call");
    let sid = s["session"]["session_id"].as_str().unwrap();
    let ev = events(&app, &ada, sid);
    let end = ev.last().unwrap();
    assert_eq!((end["type"].as_str(), end["reason"].as_str()), (Some("turn_end"), Some("insufficient_credits")));
    let status = &ev[ev.len() - 2]["text"];
    assert!(status.as_str().unwrap().contains("the wallet holds 100 cents"), "{status}");
    assert_eq!(balance(&app, &ada), 100, "nothing held is kept");
}

#[test]
fn every_path_that_begins_a_turn_is_refused_by_an_empty_wallet() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    credit(&app, &ada.slug, 1_000_000);
    let a = openai_agent(&app, &ada, 10);
    let s = start(&app, &ada, &a, "k1");
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let url = app.ok(&ada.key, "share_session", json!({"session_id": sid}))["share_url"].as_str().unwrap().to_owned();
    let to_session =
        app.ok(&ada.key, "create_routine", json!({"name": "nudge", "session_id": sid, "message": "any news?"}));
    let new_session = app.ok(&ada.key, "create_routine", json!({"name": "daily", "agent_id": a, "message": "go"}));
    let spent = ledger_cents(&app, &ada.slug);
    app.db.0.execute("UPDATE workspace SET balance_cents = 0", []).unwrap();
    let calls = app.sessions.net.requests.borrow().len();

    let refused = |code: String, path: &str| assert_eq!(code, "insufficient_credits", "{path}");
    refused(
        app.err_code(&ada.key, "start_session", json!({"agent_id": a, "message": "go", "idempotency_key": "k2"})),
        "start",
    );
    refused(
        app.err_code(&ada.key, "send_message", json!({"session_id": sid, "message": "more", "idempotency_key": "k3"})),
        "send",
    );
    let post = share_post(&app, &url, "from+a+visitor");
    assert_eq!(post.status, 402, "share link: {}", String::from_utf8_lossy(&post.body));
    assert!(String::from_utf8_lossy(&post.body).contains("holds 0 cents"));
    for (routine, key) in [(&to_session, "r1"), (&new_session, "r2")] {
        // A failed fire is an error with its reason (and recorded as failed).
        let result =
            app.call(&ada.key, "run_routine", json!({"routine_id": routine["routine_id"], "idempotency_key": key}));
        let error = TestApp::tool_error(&result);
        assert_eq!(error["code"], "insufficient_credits", "{error}");
        assert!(error["message"].as_str().unwrap().contains("holds 0 cents"), "{error}");
    }
    refused(
        app.err_code(&ada.key, "hand_off_session", json!({"session_id": sid, "agent_id": a, "idempotency_key": "k4"})),
        "hand-off",
    );
    refused(
        app.err_code(&ada.key, "set_goal", json!({"session_id": sid, "objective": "more", "idempotency_key": "k5"})),
        "goal",
    );
    app.settle();
    assert_eq!(app.sessions.net.requests.borrow().len(), calls, "no model was called");
    assert_eq!(ledger_cents(&app, &ada.slug), spent, "nothing was charged");
    assert_eq!(balance(&app, &ada), 0);
    let user_messages = events(&app, &ada, &sid).iter().filter(|e| e["type"] == "user_message").count();
    assert_eq!(user_messages, 1, "the refused messages are not in the transcript");
    let listed = app.ok(&ada.key, "list_sessions", json!({}))["sessions"].as_array().unwrap().len();
    assert_eq!(listed, 1, "refused starts leave no session behind");
    let counted = app.ok(&ada.key, "list_agents", json!({}))["agents"][0]["session_count"].clone();
    assert_eq!(counted, 1);
}

#[test]
fn a_spent_task_budget_refuses_a_share_link_message_and_a_routine_message_too() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let a = agent(&app, &ada, json!({"name": "E", "harness": "echo", "model": "m"}));
    let s = start(&app, &ada, &a, "k1");
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let url = app.ok(&ada.key, "share_session", json!({"session_id": sid}))["share_url"].as_str().unwrap().to_owned();
    let routine = app.ok(&ada.key, "create_routine", json!({"name": "nudge", "session_id": sid, "message": "hi"}));
    let r = app.request("PUT", &format!("/v1/tasks/{sid}/budget"), Some(&ada.key), Some(json!({"budget_cents": 50})));
    assert_eq!(r.status, 200);
    app.db.0.execute("UPDATE session SET spent_cents = 50", []).unwrap();
    let post = share_post(&app, &url, "hello");
    assert_eq!(post.status, 402);
    assert!(String::from_utf8_lossy(&post.body).contains("50 cents budget"));
    let result =
        app.call(&ada.key, "run_routine", json!({"routine_id": routine["routine_id"], "idempotency_key": "r1"}));
    let error = TestApp::tool_error(&result);
    assert_eq!(error["code"], "insufficient_credits", "{error}");
    assert!(error["message"].as_str().unwrap().contains("budget"), "{error}");
    let listed = app.ok(&ada.key, "list_routines", json!({}));
    assert_eq!(listed["routines"][0]["recent_fires"][0]["status"], "failed");
    app.request("PUT", &format!("/v1/tasks/{sid}/budget"), Some(&ada.key), Some(json!({"budget_cents": null})));
    assert_eq!(share_post(&app, &url, "hello").status, 303);
}

#[test]
fn a_goal_stops_when_the_wallet_cannot_pay_its_next_turn() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    credit(&app, &ada.slug, 1_000_000);
    let a = openai_agent(&app, &ada, 10);
    let s = start(&app, &ada, &a, "k1");
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    // The turn the goal starts costs more than the wallet holds: its next iteration may not begin.
    app.sessions.net.answer(|_| {
        HttpResponse::json(
            200,
            &json!({"choices": [{"message": {"role": "assistant", "content": "{\"met\": false, \"reason\": \"no\"}"}}],
                    "usage": {"prompt_tokens": 1_000_000_000, "completion_tokens": 0}}),
        )
    });
    app.ok(
        &ada.key,
        "set_goal",
        json!({"session_id": sid, "objective": "never", "max_iterations": 5, "idempotency_key": "g1"}),
    );
    app.settle();
    let g = app.ok(&ada.key, "get_goal", json!({"session_id": sid}))["goal"].clone();
    assert_eq!((g["status"].as_str(), g["iterations"].as_i64()), (Some("limit_reached"), Some(1)), "{g}");
    assert!(g["stopped_reason"].as_str().unwrap().contains("holds 0 cents"), "{g}");
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "idle");
    assert_eq!(balance(&app, &ada), 0);
}

#[test]
fn a_paid_public_agent_is_paid_once_per_run_from_the_callers_wallet_to_the_owners() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    credit(&app, &ada.slug, 60);
    let rusty = agent(
        &app,
        &bo,
        json!({"name": "Rusty", "handle": "rusty", "harness": "echo", "model": "m", "is_public": true, "price_cents_per_run": 25}),
    );
    let args = json!({"agent_id": "@rusty", "message": "refactor", "idempotency_key": "run-1"});
    let s = app.ok(&ada.key, "start_session", args.clone());
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    assert_eq!((balance(&app, &ada), balance(&app, &bo)), (35, 25));
    // A retried start, a start whose first attempt died (taken over: the object is asked again), and the
    // payment itself run again, pay nothing more.
    assert_eq!(app.ok(&ada.key, "start_session", args.clone())["session"]["session_id"], sid.as_str());
    app.db.0.execute("UPDATE receipt SET state = 'running', result = NULL, claimed_ms = 0", []).unwrap();
    assert_eq!(app.ok(&ada.key, "start_session", args)["session"]["session_id"], sid.as_str());
    let again = usage::RunPayment {
        session_id: &sid,
        payer_workspace_id: &workspace_id(&app, &ada.slug),
        payee_workspace_id: &workspace_id(&app, &bo.slug),
        key_id: None,
        agent_id: &rusty,
        cents: 25,
        now_ms: 0,
    };
    assert!(futures::executor::block_on(usage::pay_run(&app.db, &again)).unwrap(), "paid, once");
    assert_eq!((balance(&app, &ada), balance(&app, &bo)), (35, 25));
    let entries: Vec<(String, String, i64, Option<String>)> = app
        .db
        .0
        .prepare("SELECT entry_id, kind, cents, session_id FROM usage_entry ORDER BY cents DESC")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    assert_eq!(
        entries,
        vec![
            (format!("run_{sid}"), "run_price".into(), 25, Some(sid.clone())),
            (format!("run_{sid}_earned"), "run_earning".into(), -25, None),
        ],
        "one pair; the owner's side names neither the caller's session nor its key"
    );
    app.settle();
    let usage = app.ok(&ada.key, "get_usage", json!({"session_id": sid}));
    assert_eq!(usage["session"]["spent_cents"], 25, "the price is the run's spend");
    assert_eq!(usage["session"]["entries"][0]["kind"], "run_price");
    assert_eq!(app.ok(&bo.key, "get_usage", json!({}))["total_cents"], -25, "the owner's earning");

    // A budget below the price, then a wallet that cannot pay: refused, nothing moves, no session stays.
    let low = json!({"agent_id": "@rusty", "message": "x", "idempotency_key": "run-2", "budget_cents": 10});
    assert_eq!(app.err_code(&ada.key, "start_session", low), "insufficient_credits");
    app.ok(&ada.key, "start_session", json!({"agent_id": "@rusty", "message": "x", "idempotency_key": "run-3"}));
    assert_eq!((balance(&app, &ada), balance(&app, &bo)), (10, 50));
    let broke =
        app.call(&ada.key, "start_session", json!({"agent_id": "@rusty", "message": "x", "idempotency_key": "run-4"}));
    assert_eq!(TestApp::tool_error(&broke)["code"], "insufficient_credits");
    assert!(TestApp::tool_error(&broke)["message"].as_str().unwrap().contains("needs at least 25"));
    assert_eq!((balance(&app, &ada), balance(&app, &bo)), (10, 50));
    assert_eq!(app.ok(&ada.key, "list_sessions", json!({}))["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(ledger_cents(&app, &ada.slug) + ledger_cents(&app, &bo.slug), 0, "every pair nets to zero");

    // The owner starts their own agent for free.
    app.ok(&bo.key, "start_session", json!({"agent_id": rusty, "message": "x", "idempotency_key": "own"}));
    assert_eq!(balance(&app, &bo), 50);
}

#[test]
fn a_share_link_visitors_message_is_the_links_not_the_owners() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    credit(&app, &ada.slug, 1_000_000);
    let a = openai_agent(&app, &ada, 10);
    let s = start(&app, &ada, &a, "k1");
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let url = app.ok(&ada.key, "share_session", json!({"session_id": sid}))["share_url"].as_str().unwrap().to_owned();
    assert_eq!(share_post(&app, &url, "hello+from+outside").status, 303);
    app.settle();
    let ev = events(&app, &ada, &sid);
    let visitor = ev.iter().filter(|e| e["type"] == "user_message").nth(1).unwrap();
    assert_eq!((visitor["text"].as_str(), visitor["from"].as_str()), (Some("hello from outside"), Some("share_link")));
    let sent = app.sessions.net.requests.borrow().last().unwrap().body.clone();
    let messages: Value = serde_json::from_slice(&sent).unwrap();
    let last = messages["messages"].as_array().unwrap().last().unwrap()["content"].as_str().unwrap().to_owned();
    assert!(
        last.starts_with("[a message from a visitor through this session's share link, not from the user]"),
        "{last}"
    );
    let page = app.send(HttpRequest {
        method: "GET".into(),
        path: url[url.find("/s/").unwrap()..].into(),
        ..Default::default()
    });
    let html = String::from_utf8(page.body).unwrap();
    assert!(html.contains("<b>visitor</b><pre>hello from outside"), "{html}");
    assert!(html.contains("<b>user</b><pre>go"), "{html}");
}
