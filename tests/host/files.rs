//! A task's shared folder through the operator tools: versions, limits, paths, sharing across sessions.

use crate::support::TestApp;
use serde_json::json;

fn setup(app: &TestApp) -> (crate::support::Account, String) {
    let ada = app.signup("Ada", "ada@example.com");
    let agent =
        app.request("POST", "/v1/agents", Some(&ada.key), Some(json!({"name": "E", "harness": "echo", "model": "m"})));
    let agent_id = agent.json_body()["agent_id"].as_str().unwrap().to_owned();
    let started =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "hi", "idempotency_key": "k"}));
    (ada, started["session"]["task_id"].as_str().unwrap().to_owned())
}

#[test]
fn writes_are_versioned_and_readable_by_version() {
    let app = TestApp::new();
    let (ada, task) = setup(&app);
    let v1 =
        app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": "./notes//plan.md", "content": "one"}));
    assert_eq!((v1["path"].as_str(), v1["version"].as_i64()), (Some("notes/plan.md"), Some(1)));
    assert!(v1["writer_key_id"].as_str().unwrap().starts_with("key_"));
    let same = app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": "notes/plan.md", "content": "one"}));
    assert_eq!(same["version"], 1, "rewriting the same text adds no version");
    app.advance(1);
    let v2 =
        app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": "task/notes/plan.md", "content": "two"}));
    assert_eq!(v2["version"], 2);
    assert_eq!(app.ok(&ada.key, "read_task_file", json!({"task_id": task, "path": "notes/plan.md"}))["content"], "two");
    assert_eq!(
        app.ok(&ada.key, "read_task_file", json!({"task_id": task, "path": "notes/plan.md", "version": 1}))["content"],
        "one"
    );
    let list = app.ok(&ada.key, "list_task_files", json!({"task_id": task}));
    assert_eq!(list["files"].as_array().unwrap().len(), 1);
    assert_eq!(list["files"][0]["version"], 2);
}

#[test]
fn bad_paths_big_files_and_foreign_tasks_get_clear_errors() {
    let app = TestApp::new();
    let (ada, task) = setup(&app);
    for path in ["../secret", "/etc/passwd", "a/../../b", "dir/", ""] {
        assert_eq!(
            app.err_code(&ada.key, "write_task_file", json!({"task_id": task, "path": path, "content": "x"})),
            "invalid_params",
            "{path}"
        );
    }
    let big = "x".repeat(256 * 1024 + 1);
    assert_eq!(
        app.err_code(&ada.key, "write_task_file", json!({"task_id": task, "path": "big.txt", "content": big})),
        "payload_too_large"
    );
    let fits = "x".repeat(256 * 1024);
    app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": "fits.txt", "content": fits}));
    assert_eq!(app.err_code(&ada.key, "read_task_file", json!({"task_id": task, "path": "missing.md"})), "not_found");
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(app.err_code(&bo.key, "list_task_files", json!({"task_id": task})), "not_found");
    assert_eq!(
        app.err_code(&bo.key, "write_task_file", json!({"task_id": task, "path": "x", "content": "x"})),
        "not_found"
    );
}

#[test]
fn listing_pages_by_path() {
    let app = TestApp::new();
    let (ada, task) = setup(&app);
    for name in ["c", "a", "e", "b", "d"] {
        app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": format!("{name}.md"), "content": name}));
    }
    let mut seen = Vec::new();
    let mut cursor = serde_json::Value::Null;
    loop {
        let page = app.ok(&ada.key, "list_task_files", json!({"task_id": task, "limit": 2, "cursor": cursor}));
        seen.extend(page["files"].as_array().unwrap().iter().map(|f| f["path"].as_str().unwrap().to_owned()));
        match page.get("next_cursor") {
            Some(c) => cursor = c.clone(),
            None => break,
        }
    }
    assert_eq!(seen, ["a.md", "b.md", "c.md", "d.md", "e.md"]);
}

/// One name is one file whatever the Unicode spelling; names Windows reads differently, and names with
/// invisible direction or zero-width characters, are refused with the rule.
#[test]
fn a_name_has_one_spelling_and_no_hidden_characters() {
    let app = TestApp::new();
    let (ada, task) = setup(&app);
    let nfd = "cafe\u{0301}.md";
    let v1 = app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": nfd, "content": "one"}));
    assert_eq!(v1["path"], "caf\u{e9}.md");
    let v2 = app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": "caf\u{e9}.md", "content": "two"}));
    assert_eq!(v2["version"], 2, "the NFC spelling is the same file");
    for (bad, rule) in [
        ("c:x/y", "must not contain `:`"),
        ("invoice\u{202E}dm.txt", "invisible characters"),
        ("a\u{200B}b.md", "invisible characters"),
        ("docs/nul.txt", "Windows device name"),
        ("notes./a.md", "ending in `.`"),
    ] {
        let r = app.call(&ada.key, "write_task_file", json!({"task_id": task, "path": bad, "content": "x"}));
        let err = &TestApp::tool_error(&r);
        assert_eq!(err["code"], "invalid_params", "{bad:?}: {r}");
        assert!(err["message"].as_str().unwrap().contains(rule), "{bad:?}: {err}");
    }
}
