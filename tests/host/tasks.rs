//! Tasks as the unit of work: two agents in one folder, threads, hand-offs, artifacts and share links,
//! the catalog, a task budget, and deleting a workspace.

use crate::support::{Account, TestApp};
use agentsky::http::HttpRequest;
use serde_json::{json, Value};

fn agent(app: &TestApp, who: &Account, body: Value) -> String {
    let resp = app.request("POST", "/v1/agents", Some(&who.key), Some(body));
    assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    resp.json_body()["agent_id"].as_str().unwrap().to_owned()
}

fn echo(app: &TestApp, who: &Account, name: &str) -> String {
    agent(app, who, json!({"name": name, "harness": "echo", "model": "echo-1"}))
}

fn get(app: &TestApp, url: &str) -> agentsky::http::HttpResponse {
    let path = url.split_once("://").map(|(_, rest)| &rest[rest.find('/').unwrap()..]).unwrap();
    app.send(HttpRequest { method: "GET".into(), path: path.into(), ..Default::default() })
}

#[test]
fn two_agents_in_one_task_share_one_folder_and_show_as_threads() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (a, b) = (echo(&app, &ada, "A"), echo(&app, &ada, "B"));
    let first = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": a, "message": "/write plan.md step one", "idempotency_key": "s1"}),
    );
    let task = first["session"]["task_id"].as_str().unwrap().to_owned();
    // One folder for both: the task's lanes turned off (new tasks give each session its own).
    app.ok(&ada.key, "set_task_settings", json!({"task_id": task, "lanes": false}));
    app.advance(1);
    let second = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": b, "message": "/write review.md looks good", "idempotency_key": "s2", "task_id": task}),
    );
    app.settle();
    let files = app.ok(&ada.key, "list_task_files", json!({"task_id": task}));
    let paths: Vec<&str> = files["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap()).collect();
    assert_eq!(paths, ["plan.md", "review.md"]);
    let by: Vec<&str> =
        files["files"].as_array().unwrap().iter().map(|f| f["writer_session_id"].as_str().unwrap()).collect();
    assert_eq!(
        by,
        [first["session"]["session_id"].as_str().unwrap(), second["session"]["session_id"].as_str().unwrap()]
    );

    let tasks = app.ok(&ada.key, "list_tasks", json!({}));
    assert_eq!(tasks["tasks"].as_array().unwrap().len(), 1, "one task, not two");
    assert_eq!(tasks["tasks"][0]["sessions"], 2);
    assert_eq!(tasks["tasks"][0]["waiting_on"], "you");
    let detail = app.ok(&ada.key, "get_task", json!({"task_id": task}));
    assert_eq!(detail["sessions"].as_array().unwrap().len(), 2);
    assert_eq!(detail["open_requests"], json!([]));

    let threads = app.ok(&ada.key, "read_session_threads", json!({"session_id": second["session"]["session_id"]}));
    let rel: Vec<&str> =
        threads["threads"].as_array().unwrap().iter().map(|t| t["relation"].as_str().unwrap()).collect();
    assert_eq!(rel, ["root", "helper"]);
    assert_eq!(threads["threads"][1]["agent_name"], "B");
}

#[test]
fn a_hand_off_carries_the_conversation_and_files_once_under_retries() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (a, b) = (
        echo(&app, &ada, "A"),
        agent(&app, &ada, json!({"name": "B", "handle": "bee", "harness": "echo", "model": "m"})),
    );
    let first = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": a, "message": "/write notes.md the secret word is tangerine", "idempotency_key": "s1"}),
    );
    let source = first["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let args = json!({"session_id": source, "agent_id": "@bee", "model": "echo-9", "thinking": "high", "idempotency_key": "h1"});
    let h = app.ok(&ada.key, "hand_off_session", args.clone());
    assert_eq!(h["status"], "completed");
    let target = h["target_session"]["session"]["session_id"].as_str().unwrap().to_owned();
    assert_eq!(app.ok(&ada.key, "hand_off_session", args), h, "a retry returns the same hand-off");
    let count: i64 = app.db.0.query_row("SELECT COUNT(*) FROM session", [], |r| r.get(0)).unwrap();
    assert_eq!(count, 2);

    let target_row = app.ok(&ada.key, "get_session", json!({"session_id": target}));
    assert_eq!((target_row["model"].as_str(), target_row["thinking"].as_str()), (Some("echo-9"), Some("high")));
    assert_eq!(target_row["task_id"], source.as_str(), "same task, so same files");
    assert_eq!(target_row["agent_id"], b.as_str());
    let events = app.ok(&ada.key, "read_session", json!({"session_id": target}));
    let brief = events["events"][0]["text"].as_str().unwrap();
    assert!(brief.contains("tangerine") && brief.contains(&source), "{brief}");
    // The source's work was not landed: the new session continues in a copy of its lane.
    assert_eq!(
        app.ok(&ada.key, "read_task_file", json!({"task_id": source, "path": "notes.md", "session_id": target}))
            ["content"],
        "the secret word is tangerine"
    );
    let base = app.call(&ada.key, "read_task_file", json!({"task_id": source, "path": "notes.md"}));
    assert!(TestApp::tool_error(&base)["message"].as_str().unwrap().contains("the lanes of sessions"), "{base}");
    let same: i64 = app.db.0.query_row("SELECT COUNT(DISTINCT lane_base_seq) FROM session", [], |r| r.get(0)).unwrap();
    assert_eq!(same, 1, "the copy keeps the source's merge base");
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": source}))["status"], "idle", "the original stays");

    let status = app.ok(&ada.key, "get_handoff", json!({"handoff_id": h["handoff_id"]}));
    assert_eq!(status["target_session"]["session_id"], target.as_str());
    let threads = app.ok(&ada.key, "read_session_threads", json!({"session_id": source}));
    assert_eq!(threads["threads"][1]["relation"], "handoff");
    assert_eq!(threads["threads"][1]["parent_session_id"], source.as_str());
}

#[test]
fn artifacts_publish_share_and_unshare() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let a = echo(&app, &ada, "A");
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": a, "message": "hi", "idempotency_key": "s1"}));
    let task = s["session"]["task_id"].as_str().unwrap().to_owned();
    app.ok(
        &ada.key,
        "write_task_file",
        json!({"task_id": task, "path": "site/index.html", "content": "<h1>Report</h1>"}),
    );
    let art = app.ok(&ada.key, "publish_artifact", json!({"task_id": task, "path": "site/index.html"}));
    assert_eq!(
        (art["name"].as_str(), art["content_type"].as_str(), art["shared"].as_bool()),
        (Some("index.html"), Some("text/html; charset=utf-8"), Some(false))
    );
    let shared = app.ok(&ada.key, "share_artifact", json!({"artifact_id": art["artifact_id"]}));
    let url = shared["share_url"].as_str().unwrap().to_owned();
    let token = url.rsplit('/').next().unwrap();
    assert!(token.len() >= 43, "at least 256 bits");
    let page = get(&app, &url);
    assert_eq!(page.status, 200);
    assert_eq!(page.body, b"<h1>Report</h1>");
    assert_eq!(page.header("content-type"), Some("text/html; charset=utf-8"));
    assert_eq!(page.header("content-security-policy"), Some("sandbox; frame-ancestors 'none'"));
    // A later write does not change the published snapshot.
    app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": "site/index.html", "content": "<h1>v2</h1>"}));
    assert_eq!(get(&app, &url).body, b"<h1>Report</h1>");
    let listed = app.ok(&ada.key, "list_artifacts", json!({"task_id": task}));
    assert_eq!(listed["artifacts"][0]["shared"], true);
    app.ok(&ada.key, "share_artifact", json!({"artifact_id": art["artifact_id"], "enabled": false}));
    assert_eq!(get(&app, &url).status, 404);
    let again = app.ok(&ada.key, "share_artifact", json!({"artifact_id": art["artifact_id"]}));
    assert_ne!(again["share_url"], url.as_str());
    assert_eq!(get(&app, again["share_url"].as_str().unwrap()).status, 200);
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(app.err_code(&bo.key, "share_artifact", json!({"artifact_id": art["artifact_id"]})), "not_found");
}

/// A link holds a token; it is built from `PUBLIC_BASE_URL` or, in local development, the loopback address
/// the server answers on, never from a `Host` header anyone can forge.
#[test]
fn links_are_never_built_on_a_host_the_request_names() {
    let share = |app: &TestApp, key: &str, sid: &Value, host: &str| {
        let mut req = HttpRequest {
            method: "POST".into(),
            path: format!("/v1/sessions/{}/share", sid.as_str().unwrap()),
            headers: vec![
                ("host".into(), host.into()),
                ("authorization".into(), format!("Bearer {key}")),
                ("content-type".into(), "application/json".into()),
            ],
            body: b"{}".to_vec(),
            ..Default::default()
        };
        req.client_ip = "203.0.113.7".into();
        app.send(req).json_body()
    };
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let a = echo(&app, &ada, "A");
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": a, "message": "hi", "idempotency_key": "s1"}));
    let sid = s["session"]["session_id"].clone();
    let forged = share(&app, &ada.key, &sid, "evil.example");
    assert_eq!(forged["error"]["code"], "not_implemented", "{forged}");
    assert!(forged["error"]["message"].as_str().unwrap().contains("PUBLIC_BASE_URL"));
    let device = app.request("POST", "/v1/device/code", None, Some(json!({"device_name": "laptop"})));
    assert!(device.json_body()["verification_uri"].as_str().unwrap().starts_with("http://127.0.0.1:8787/"));
    let local = share(&app, &ada.key, &sid, "localhost:8787");
    assert!(local["share_url"].as_str().unwrap().starts_with("http://localhost:8787/s/"), "{local}");

    let app = TestApp::with_config(agentsky::cx::Config {
        public_base_url: "https://sky.example.com/".into(),
        ..TestApp::config()
    });
    let ada = app.signup("Ada", "ada@example.com");
    let a = echo(&app, &ada, "A");
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": a, "message": "hi", "idempotency_key": "s1"}));
    let url = share(&app, &ada.key, &s["session"]["session_id"], "evil.example")["share_url"].clone();
    assert!(url.as_str().unwrap().starts_with("https://sky.example.com/s/"), "{url}");
}

/// Share links, artifacts, help and the device page: a link turned off stops rendering at once (no
/// cache), no page can be framed, and the token in the URL is never sent on as a referrer.
#[test]
fn every_page_a_browser_shows_is_never_cached_framed_or_referred() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let a = echo(&app, &ada, "A");
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": a, "message": "hi", "idempotency_key": "s1"}));
    let (sid, task) = (s["session"]["session_id"].clone(), s["session"]["task_id"].clone());
    app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": "a.txt", "content": "x"}));
    let art = app.ok(&ada.key, "publish_artifact", json!({"task_id": task, "path": "a.txt"}));
    let art_url = app.ok(&ada.key, "share_artifact", json!({"artifact_id": art["artifact_id"]}))["share_url"].clone();
    let ses_url = app.ok(&ada.key, "share_session", json!({"session_id": sid}))["share_url"].clone();
    let base = art_url.as_str().unwrap().split("/a/").next().unwrap().to_owned();
    for url in [
        art_url.as_str().unwrap().to_owned(),
        ses_url.as_str().unwrap().to_owned(),
        format!("{base}/s/not-a-token"),
        format!("{base}/help"),
        format!("{base}/help/getting-started"),
        format!("{base}/device"),
    ] {
        let page = get(&app, &url);
        let csp = page.header("content-security-policy").unwrap_or_default();
        assert!(csp.contains("frame-ancestors 'none'"), "{url}: {csp}");
        assert_eq!(page.header("cache-control"), Some("no-store"), "{url}");
        assert_eq!(page.header("referrer-policy"), Some("no-referrer"), "{url}");
        assert_eq!(page.header("x-frame-options"), Some("DENY"), "{url}");
    }
}

#[test]
fn a_shared_session_renders_its_transcript_until_turned_off() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let a = echo(&app, &ada, "A");
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": a, "message": "<script>alert(1)</script> hello", "idempotency_key": "s1"}),
    );
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let shared = app.ok(&ada.key, "share_session", json!({"session_id": sid, "view_only": true}));
    let url = shared["share_url"].as_str().unwrap().to_owned();
    let page = get(&app, &url);
    assert_eq!(page.status, 200);
    let html = String::from_utf8(page.body.clone()).unwrap();
    assert!(html.contains("echo: &lt;script&gt;alert(1)&lt;/script&gt; hello"), "{html}");
    assert!(!html.contains("<script>"));
    assert!(!html.contains("<form"), "a view-only link has no form");
    let post = |url: &str| {
        let path = &url[url.find("/s/").unwrap()..];
        app.send(HttpRequest {
            method: "POST".into(),
            path: path.into(),
            body: b"message=from+a+link".to_vec(),
            ..Default::default()
        })
    };
    assert_eq!(post(&url).status, 403);
    app.ok(&ada.key, "share_session", json!({"session_id": sid, "enabled": false}));
    assert_eq!(get(&app, &url).status, 404, "off means gone at once");
    let open = app.ok(&ada.key, "share_session", json!({"session_id": sid}));
    let open_url = open["share_url"].as_str().unwrap();
    assert!(String::from_utf8(get(&app, open_url).body).unwrap().contains("<form"));
    assert_eq!(post(open_url).status, 303);
    app.settle();
    assert_eq!(app.ok(&ada.key, "collect_result", json!({"session_id": sid}))["last_reply"], "echo: from a link");
}

#[test]
fn the_catalog_ranks_own_and_public_agents_by_the_words_given() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    agent(
        &app,
        &ada,
        json!({"name": "Writer", "handle": "writer", "harness": "echo", "model": "m", "description": "Writes blog posts", "categories": ["writing"]}),
    );
    agent(
        &app,
        &ada,
        json!({"name": "Reviewer", "handle": "reviewer", "harness": "echo", "model": "m", "description": "Reviews rust pull requests", "categories": ["code"]}),
    );
    agent(
        &app,
        &bo,
        json!({"name": "Rusty", "handle": "rusty", "harness": "openai", "model": "gpt", "description": "Rust refactoring", "categories": ["rust", "code"], "is_public": true, "price_cents_per_run": 25}),
    );
    agent(
        &app,
        &bo,
        json!({"name": "Private", "handle": "private", "harness": "echo", "model": "m", "description": "rust too"}),
    );
    let hits = app.ok(&ada.key, "search_catalog", json!({"query": "rust code"}));
    let handles: Vec<&str> = hits["agents"].as_array().unwrap().iter().map(|a| a["handle"].as_str().unwrap()).collect();
    assert_eq!(handles, ["@rusty", "@reviewer"], "ranked, and never another workspace's private agent");
    assert_eq!(hits["agents"][0]["source"], "public");
    assert_eq!(hits["agents"][0]["pricing"]["per_run_cents"], 25);
    assert!(!hits["agents"][0]["requirements"].as_array().unwrap().is_empty());
    let all = app.ok(&ada.key, "search_catalog", json!({}));
    assert_eq!(all["agents"].as_array().unwrap().len(), 3);
}

#[test]
fn a_task_budget_caps_new_work_in_the_task() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let a = echo(&app, &ada, "A");
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": a, "message": "hi", "idempotency_key": "s1"}));
    let task = s["session"]["task_id"].as_str().unwrap().to_owned();
    let resp =
        app.request("PUT", &format!("/v1/tasks/{task}/budget"), Some(&ada.key), Some(json!({"budget_cents": 50})));
    assert_eq!(resp.status, 200, "{:?}", resp.json_body());
    app.db.0.execute("UPDATE session SET spent_cents = 50", []).unwrap();
    let join = json!({"agent_id": a, "message": "more", "idempotency_key": "s2", "task_id": task});
    assert_eq!(app.err_code(&ada.key, "start_session", join.clone()), "insufficient_credits");
    assert_eq!(app.ok(&ada.key, "get_task", json!({"task_id": task}))["cost_cents"], 50);
    app.request("PUT", &format!("/v1/tasks/{task}/budget"), Some(&ada.key), Some(json!({"budget_cents": null})));
    app.ok(&ada.key, "start_session", join);
}

#[test]
fn deleting_a_workspace_leaves_nothing_readable_and_moves_the_credit() {
    let app = TestApp::with_config(agentsky::cx::Config { admin_token: Some("adm".into()), ..TestApp::config() });
    let ada = app.signup("Ada", "ada@example.com");
    app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Acme", "slug": "acme"})));
    app.request("POST", "/v1/workspaces/acme/credit", Some("adm"), Some(json!({"amount_cents": 700})));
    let a = agent(&app, &ada, json!({"name": "A", "harness": "echo", "model": "m", "workspace": "acme"}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": a, "message": "/sleep 30", "idempotency_key": "s1", "workspace": "acme"}),
    );
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    app.ok(&ada.key, "write_task_file", json!({"task_id": sid, "path": "x.md", "content": "x"}));

    assert_eq!(
        app.err_code(&ada.key, "delete_workspace", json!({"workspace": "acme", "confirm": "acm"})),
        "invalid_params"
    );
    assert_eq!(
        app.err_code(&ada.key, "delete_workspace", json!({"workspace": ada.slug, "confirm": ada.slug})),
        "forbidden"
    );
    let locked = app
        .request(
            "POST",
            "/v1/keys",
            Some(&ada.key),
            Some(json!({"name": "l", "scopes": ["write"], "workspace": "acme"})),
        )
        .json_body();
    assert_eq!(
        app.err_code(
            locked["key"].as_str().unwrap(),
            "delete_workspace",
            json!({"workspace": "acme", "confirm": "acme"})
        ),
        "forbidden"
    );

    let done = app.ok(&ada.key, "delete_workspace", json!({"workspace": "acme", "confirm": "acme"}));
    assert_eq!((done["sessions_stopped"].as_i64(), done["credit_moved_cents"].as_i64()), (Some(1), Some(700)));
    assert_eq!(app.ok(&ada.key, "get_usage", json!({}))["balance_cents"], 700, "the credit is home");
    for (tool, args) in [
        ("get_session", json!({"session_id": sid})),
        ("read_session", json!({"session_id": sid})),
        ("list_task_files", json!({"task_id": sid})),
        ("get_task", json!({"task_id": sid})),
        ("list_agents", json!({"workspace": "acme"})),
    ] {
        assert_eq!(app.err_code(&ada.key, tool, args), "not_found", "{tool}");
    }
    let left: i64 = app.db.0.query_row(
        "SELECT (SELECT COUNT(*) FROM session) + (SELECT COUNT(*) FROM task_file) + (SELECT COUNT(*) FROM agent) + (SELECT COUNT(*) FROM receipt) + (SELECT COUNT(*) FROM task)",
        [],
        |r| r.get(0),
    ).unwrap();
    assert_eq!(left, 0);
    assert_eq!(
        app.request("GET", "/v1/keys", Some(locked["key"].as_str().unwrap()), None).status,
        401,
        "its locked keys are gone"
    );

    // Its bytes go with the cron; the same text in another workspace is that workspace's own copy.
    let mine = agent(&app, &ada, json!({"name": "M", "harness": "echo", "model": "m"}));
    let home = app.ok(&ada.key, "start_session", json!({"agent_id": mine, "message": "hi", "idempotency_key": "s2"}));
    let home_task = home["session"]["task_id"].clone();
    app.ok(&ada.key, "write_task_file", json!({"task_id": home_task, "path": "x.md", "content": "x"}));
    assert_eq!(app.blobs.0.borrow().len(), 2, "one copy per workspace");
    app.cron();
    assert_eq!(app.blobs.0.borrow().len(), 1, "acme's bytes are purged");
    assert_eq!(app.ok(&ada.key, "read_task_file", json!({"task_id": home_task, "path": "x.md"}))["content"], "x");
    let queued =
        |app: &TestApp| app.db.0.query_row("SELECT COUNT(*) FROM blob_purge", [], |r| r.get::<_, i64>(0)).unwrap();
    assert_eq!(queued(&app), 1, "watched for late writes for an hour");
    app.advance(61 * 60_000);
    app.cron();
    assert_eq!(queued(&app), 0);
}

#[test]
fn bytes_written_before_the_per_workspace_layout_are_still_read() {
    let app = TestApp::new();
    app.blobs.0.borrow_mut().insert("blobs/abc".into(), b"old".to_vec());
    let got = futures::executor::block_on(agentsky::domain::blobs::get(&app.blobs, "ws_1", "abc")).unwrap();
    assert_eq!(got.as_deref(), Some(&b"old"[..]));
    app.blobs.0.borrow_mut().insert("w/ws_1/abc".into(), b"new".to_vec());
    let got = futures::executor::block_on(agentsky::domain::blobs::get(&app.blobs, "ws_1", "abc")).unwrap();
    assert_eq!(got.as_deref(), Some(&b"new"[..]));
}
