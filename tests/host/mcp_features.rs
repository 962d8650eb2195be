//! Resources, prompts and completions on `/v1/mcp` through the whole app: reads obey the tools' workspace
//! rules (another account's file is "not found"), prompts render with their arguments, completions offer
//! only the caller's own things.

use crate::support::{Account, TestApp};
use serde_json::{json, Value};

fn setup(app: &TestApp) -> (Account, String, String) {
    let ada = app.signup("Ada", "ada@example.com");
    let agent = app.request(
        "POST",
        "/v1/agents",
        Some(&ada.key),
        Some(json!({"name": "E", "harness": "echo", "model": "m", "handle": "adawriter"})),
    );
    let agent_id = agent.json_body()["agent_id"].as_str().unwrap().to_owned();
    let started =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "hi there", "idempotency_key": "k"}));
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    let task = started["session"]["task_id"].as_str().unwrap().to_owned();
    app.ok(&ada.key, "write_task_file", json!({"task_id": task, "path": "notes/plan.md", "content": "the plan"}));
    (ada, sid, task)
}

/// The JSON-RPC answer (`result` or `error`) of one legacy-era request.
fn rpc(app: &TestApp, key: &str, method: &str, params: Value) -> Value {
    let resp = app.rpc(key, method, params);
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    resp.json_body()
}

fn read(app: &TestApp, key: &str, uri: &str) -> Value {
    rpc(app, key, "resources/read", json!({"uri": uri}))
}

#[test]
fn initialize_declares_resources_prompts_and_completions_without_subscriptions() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let init = rpc(
        &app,
        &ada.key,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let caps = &init["result"]["capabilities"];
    assert_eq!(caps["resources"], json!({"subscribe": false, "listChanged": false}));
    assert_eq!(caps["prompts"], json!({"listChanged": false}));
    assert_eq!(caps["completions"], json!({}));
}

#[test]
fn task_files_artifacts_transcripts_and_results_read_as_the_tools_do() {
    let app = TestApp::new();
    let (ada, sid, task) = setup(&app);
    let file = read(&app, &ada.key, &format!("agentsky://tasks/{task}/files/notes/plan.md"));
    assert_eq!(file["result"]["contents"][0]["text"], "the plan");
    assert_eq!(file["result"]["contents"][0]["mimeType"], "text/markdown");
    let artifact = app.ok(&ada.key, "publish_artifact", json!({"task_id": task, "path": "notes/plan.md"}));
    let id = artifact["artifact_id"].as_str().unwrap();
    assert_eq!(
        read(&app, &ada.key, &format!("agentsky://artifacts/{id}"))["result"]["contents"][0]["text"],
        "the plan"
    );
    let transcript = read(&app, &ada.key, &format!("agentsky://sessions/{sid}/transcript"));
    let md = transcript["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(md.starts_with(&format!("# Session {sid}")) && md.contains("hi there"), "{md}");
    let result = read(&app, &ada.key, &format!("agentsky://sessions/{sid}/result"));
    let result: Value = serde_json::from_str(result["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(result["task_id"], json!(task));

    // Another account: every one of them is the 2025 wire's "not found", naming the URI.
    let bo = app.signup("Bo", "bo@example.com");
    for uri in [
        format!("agentsky://tasks/{task}/files/notes/plan.md"),
        format!("agentsky://artifacts/{id}"),
        format!("agentsky://sessions/{sid}/transcript"),
        format!("agentsky://sessions/{sid}/result"),
        format!("agentsky://tasks/{task}/files/../../etc/passwd"),
        "agentsky://help/en/no-such-article".to_owned(),
    ] {
        let answer = read(&app, &bo.key, &uri);
        assert_eq!(answer["error"]["code"], -32002, "{uri}: {answer}");
        assert_eq!(answer["error"]["data"]["uri"], json!(uri));
    }
}

#[test]
fn resources_list_is_the_help_center_and_every_entry_reads() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let listed = rpc(&app, &ada.key, "resources/list", json!({}));
    let resources = listed["result"]["resources"].as_array().unwrap().clone();
    assert_eq!(resources.len(), agentsky::ops::help_center::ARTICLES.len());
    for r in &resources {
        let uri = r["uri"].as_str().unwrap();
        let body = read(&app, &ada.key, uri);
        assert!(body["result"]["contents"][0]["text"].as_str().unwrap().starts_with("# "), "{uri}");
    }
    let templates = rpc(&app, &ada.key, "resources/templates/list", json!({}));
    assert_eq!(templates["result"]["resourceTemplates"].as_array().unwrap().len(), 5);
}

#[test]
fn prompts_render_and_refuse_missing_arguments_and_foreign_sessions() {
    let app = TestApp::new();
    let (ada, sid, _) = setup(&app);
    let names: Vec<Value> = rpc(&app, &ada.key, "prompts/list", json!({}))["result"]["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].clone())
        .collect();
    assert_eq!(
        names,
        vec![json!("delegate_task"), json!("split_work"), json!("review_result"), json!("whats_waiting")]
    );
    let review = rpc(&app, &ada.key, "prompts/get", json!({"name": "review_result", "arguments": {"session_id": sid}}));
    let messages = &review["result"]["messages"];
    assert_eq!(messages[0]["content"]["resource"]["uri"], json!(format!("agentsky://sessions/{sid}/result")));
    assert!(messages[1]["content"]["text"].as_str().unwrap().contains("record_session"));
    let missing = rpc(&app, &ada.key, "prompts/get", json!({"name": "delegate_task", "arguments": {"agent": "@x"}}));
    assert_eq!(missing["error"]["code"], -32602);
    assert!(missing["error"]["message"].as_str().unwrap().contains("\"task\""));
    let bo = app.signup("Bo", "bo@example.com");
    let foreign = rpc(&app, &bo.key, "prompts/get", json!({"name": "review_result", "arguments": {"session_id": sid}}));
    assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
}

#[test]
fn completions_offer_only_the_callers_own_agents_sessions_and_paths() {
    let app = TestApp::new();
    let (ada, sid, task) = setup(&app);
    let bo = app.signup("Bo", "bo@example.com");
    let complete = |key: &str, reference: Value, name: &str, value: &str, context: Value| -> Vec<Value> {
        let params =
            json!({"ref": reference, "argument": {"name": name, "value": value}, "context": {"arguments": context}});
        let answer = rpc(&app, key, "completion/complete", params);
        answer["result"]["completion"]["values"].as_array().unwrap_or_else(|| panic!("{answer}")).clone()
    };
    let prompt = |name: &str| json!({"type": "ref/prompt", "name": name});
    let files = json!({"type": "ref/resource", "uri": "agentsky://tasks/{task_id}/files/{path}"});
    assert_eq!(complete(&ada.key, prompt("delegate_task"), "agent", "ada", json!({})), vec![json!("@adawriter")]);
    assert_eq!(complete(&ada.key, prompt("delegate_task"), "agent", "@ADA", json!({})), vec![json!("@adawriter")]);
    assert_eq!(complete(&ada.key, prompt("split_work"), "agents", "@x, ad", json!({})), vec![json!("@x, @adawriter")]);
    assert_eq!(complete(&ada.key, prompt("review_result"), "session_id", "", json!({})), vec![json!(sid)]);
    assert_eq!(complete(&ada.key, prompt("delegate_task"), "task_id", "ses", json!({})), vec![json!(task)]);
    assert_eq!(complete(&bo.key, prompt("delegate_task"), "task_id", "", json!({})), Vec::<Value>::new());
    assert_eq!(
        complete(&ada.key, files.clone(), "path", "notes/", json!({"task_id": task})),
        vec![json!("notes/plan.md")]
    );
    assert_eq!(complete(&bo.key, files, "path", "", json!({"task_id": task})), Vec::<Value>::new());
    assert_eq!(complete(&bo.key, prompt("review_result"), "session_id", "", json!({})), Vec::<Value>::new());
    assert_eq!(complete(&bo.key, prompt("delegate_task"), "agent", "", json!({})), Vec::<Value>::new());
    let unknown = rpc(
        &app,
        &ada.key,
        "completion/complete",
        json!({"ref": prompt("nope"), "argument": {"name": "a", "value": ""}}),
    );
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn the_prompts_help_topic_is_the_prompt_table() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let topic = app.ok(&ada.key, "help", json!({"topic": "prompts"}));
    let steps = topic["steps"].as_str().unwrap();
    for p in agentsky::ops::prompts::PROMPTS {
        assert!(steps.contains(&format!("/{} ", p.name)), "{}: {steps}", p.name);
    }
    assert!(steps.contains("/delegate_task agent task [task_id]"), "{steps}");
}
