//! Resources, prompts and completions on `/v1/mcp` through the whole app: reads obey the tools' workspace
//! rules (another account's file is "not found"), prompts render with their arguments, completions offer
//! only the caller's own things.

use crate::support::{Account, TestApp};
use agentsky::http::HttpRequest;
use serde_json::{json, Value};

fn setup(app: &TestApp) -> (Account, String, String) {
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id =
        app.create_agent(&ada.key, json!({"name": "E", "harness": "echo", "model": "m", "handle": "adawriter"}));
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
    let articles = agentsky::ops::help_center::ARTICLES.len();
    assert_eq!(resources.len(), articles + agentsky::ops::apps::APPS.len());
    for r in &resources[..articles] {
        let uri = r["uri"].as_str().unwrap();
        let body = read(&app, &ada.key, uri);
        assert!(body["result"]["contents"][0]["text"].as_str().unwrap().starts_with("# "), "{uri}");
    }
    // Then the MCP Apps' views: HTML for clients that render them, with the CSP they need (none).
    for r in &resources[articles..] {
        let uri = r["uri"].as_str().unwrap();
        assert!(uri.starts_with("ui://") && r["mimeType"] == "text/html;profile=mcp-app", "{r}");
        let content = read(&app, &ada.key, uri)["result"]["contents"][0].clone();
        assert_eq!((&content["uri"], &content["mimeType"]), (&json!(uri), &r["mimeType"]));
        assert!(content["text"].as_str().unwrap().starts_with("<!DOCTYPE html>"), "{uri}");
        assert_eq!(content["_meta"]["ui"]["csp"], json!({"connectDomains": [], "resourceDomains": []}));
    }
    let tools = rpc(&app, &ada.key, "tools/list", json!({}));
    let list_requests = tools["result"]["tools"].as_array().unwrap().iter().find(|t| t["name"] == "list_requests");
    assert_eq!(list_requests.unwrap()["_meta"]["ui"]["resourceUri"], "ui://agentsky/approvals");
    let templates = rpc(&app, &ada.key, "resources/templates/list", json!({}));
    assert_eq!(templates["result"]["resourceTemplates"].as_array().unwrap().len(), 6);
    // Examples name this deployment, never a placeholder or another host.
    let article = app.ok(&ada.key, "help_get", json!({"slug": "zh-keys-and-scopes"}));
    let md = article["markdown"].as_str().unwrap();
    assert!(md.contains("curl -X POST http://127.0.0.1:8787/v1/keys") && !md.contains("{{"), "{md}");
    // Every article `help_search` finds, in either language, carries its resource address, and the address
    // reads; a Chinese article also reads under its own slug (`zh-…`).
    for lang in ["en", "zh"] {
        let hits = app.ok(&ada.key, "help_search", json!({"query": "runner", "lang": lang, "limit": 20}));
        for hit in hits["articles"].as_array().unwrap() {
            let uri = hit["uri"].as_str().unwrap();
            assert!(uri.starts_with(&format!("agentsky://help/{lang}/")), "{hit}");
            assert!(read(&app, &ada.key, uri)["result"]["contents"][0]["text"].is_string(), "{uri}");
            let own = format!("agentsky://help/{lang}/{}", hit["slug"].as_str().unwrap());
            assert!(read(&app, &ada.key, &own)["result"]["contents"][0]["text"].is_string(), "{own}");
        }
    }
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
    let files = json!({"type": "ref/resource", "uri": "agentsky://tasks/{task_id}/files/{+path}"});
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

/// The answer of one `completion/complete` (`result.completion`, or the error).
fn completion(app: &TestApp, key: &str, reference: Value, name: &str, value: &str, context: Value) -> Value {
    let params =
        json!({"ref": reference, "argument": {"name": name, "value": value}, "context": {"arguments": context}});
    let answer = rpc(app, key, "completion/complete", params);
    answer["result"]["completion"].clone()
}

#[test]
fn a_transcript_has_its_header_its_tool_results_and_counts_one_rate_unit() {
    let app = TestApp::new();
    let (ada, sid, task) = setup(&app);
    app.settle();
    app.ok(
        &ada.key,
        "send_message",
        json!({"session_id": sid, "message": "/write out/a.md hello file", "idempotency_key": "w"}),
    );
    app.settle();
    assert_eq!(
        app.ok(&ada.key, "read_task_file", json!({"task_id": task, "path": "out/a.md", "session_id": sid}))["content"],
        "hello file"
    );
    // The file waits in the session's lane: a resource as the session sees it, not yet one of the base.
    let lane = read(&app, &ada.key, &format!("agentsky://sessions/{sid}/files/out/a.md"));
    assert_eq!(lane["result"]["contents"][0]["text"], "hello file", "{lane}");
    assert_eq!(lane["result"]["contents"][0]["mimeType"], "text/markdown");
    assert!(read(&app, &ada.key, &format!("agentsky://tasks/{task}/files/out/a.md"))["error"].is_object());
    let files = json!({"type": "ref/resource", "uri": "agentsky://sessions/{session_id}/files/{+path}"});
    let paths = completion(&app, &ada.key, files, "path", "out", json!({"session_id": sid}));
    assert_eq!(paths["values"], json!(["out/a.md"]), "{paths}");
    let before = app.key_units();
    let transcript = read(&app, &ada.key, &format!("agentsky://sessions/{sid}/transcript"));
    assert_eq!(app.key_units() - before, 1, "one rate unit for the whole transcript");
    let md = transcript["result"]["contents"][0]["text"].as_str().unwrap();
    let header = md.lines().nth(2).unwrap();
    assert!(header.contains("agent E") && header.contains("model m") && header.contains(&task), "{md}");
    assert!(md.contains("**tool call**") && md.contains("write_task_file"), "{md}");
    let result = md.split("**tool result**").nth(1).expect("a tool result section");
    let body = result.split("```").nth(1).unwrap();
    assert!(body.contains("out/a.md") && !body.trim_start_matches("text").trim().eq("null"), "{md}");
}

#[test]
fn a_long_transcript_is_cut_and_says_where_read_session_continues() {
    let app = TestApp::new();
    let (ada, sid, _) = setup(&app);
    app.settle();
    for (i, c) in ["a", "b"].iter().enumerate() {
        let text = c.repeat(40_000);
        app.ok(
            &ada.key,
            "send_message",
            json!({"session_id": sid, "message": text, "idempotency_key": format!("m{i}")}),
        );
        app.settle();
    }
    let transcript = read(&app, &ada.key, &format!("agentsky://sessions/{sid}/transcript"));
    let md = transcript["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(md.len() < 110_000, "{}", md.len());
    let note = md.lines().last().unwrap();
    let cursor = note.split('`').nth(1).unwrap_or_else(|| panic!("{note}"));
    assert!(note.contains("More follows: read_session from cursor"), "{note}");
    // The rest starts with the first event the transcript left out.
    let rest = app.ok(&ada.key, "read_session", json!({"session_id": sid, "cursor": cursor}));
    let next = &rest["events"][0];
    let text = next["text"].as_str().unwrap_or_default();
    assert!(!text.is_empty() && !md.contains(text), "{next}");
}

#[test]
fn artifact_reads_check_the_id_count_a_rate_unit_and_check_the_workspace() {
    let app = TestApp::new();
    let (ada, _, task) = setup(&app);
    let bo = app.signup("Bo", "bo@example.com");
    let artifact = app.ok(&ada.key, "publish_artifact", json!({"task_id": task, "path": "notes/plan.md"}));
    let uri = format!("agentsky://artifacts/{}", artifact["artifact_id"].as_str().unwrap());
    let before = app.key_units();
    assert_eq!(read(&app, &bo.key, &uri)["error"]["code"], -32002);
    assert_eq!(app.key_units() - before, 1, "a foreign artifact is counted, then refused at the workspace");
    let before = app.key_units();
    assert_eq!(read(&app, &bo.key, "agentsky://artifacts/tsk_notanartifact")["error"]["code"], -32002);
    assert_eq!(app.key_units() - before, 0, "an id of the wrong shape never reaches storage");
    assert_eq!(read(&app, &ada.key, &uri)["result"]["contents"][0]["mimeType"], "text/markdown");
}

#[test]
fn a_locked_key_cannot_tell_whether_something_exists_in_another_workspace() {
    let app = TestApp::new();
    let (ada, sid, task) = setup(&app);
    app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Acme", "slug": "acme"})));
    let locked = app.request(
        "POST",
        "/v1/keys",
        Some(&ada.key),
        Some(json!({"name": "acme-only", "scopes": ["read", "write"], "workspace": "acme"})),
    );
    let locked = locked.json_body()["key"].as_str().unwrap().to_owned();
    for uri in [
        format!("agentsky://sessions/{sid}/transcript"),
        format!("agentsky://sessions/{sid}/result"),
        format!("agentsky://tasks/{task}/files/notes/plan.md"),
    ] {
        let answer = read(&app, &locked, &uri);
        assert_eq!(answer["error"]["code"], -32002, "{uri}: {answer}");
    }
    let files = json!({"type": "ref/resource", "uri": "agentsky://tasks/{task_id}/files/{+path}"});
    let offered = completion(&app, &locked, files, "path", "", json!({"task_id": task}));
    assert_eq!(offered["values"], json!([]), "{offered}");
    let prompt = json!({"type": "ref/prompt", "name": "review_result"});
    let offered = completion(&app, &locked, prompt, "session_id", "", json!({"workspace": ada.slug}));
    assert_eq!(offered["values"], json!([]), "{offered}");
}

#[test]
fn completions_cover_artifacts_and_workspaces_scope_by_workspace_and_say_has_more() {
    let app = TestApp::new();
    let (ada, sid, task) = setup(&app);
    let artifact = app.ok(&ada.key, "publish_artifact", json!({"task_id": task, "path": "notes/plan.md"}));
    let artifacts = json!({"type": "ref/resource", "uri": "agentsky://artifacts/{artifact_id}"});
    let offered = completion(&app, &ada.key, artifacts, "artifact_id", "art", json!({}));
    assert_eq!(offered["values"], json!([artifact["artifact_id"]]), "{offered}");
    let waiting = json!({"type": "ref/prompt", "name": "whats_waiting"});
    let offered = completion(&app, &ada.key, waiting, "workspace", "", json!({}));
    assert_eq!(offered["values"], json!([ada.slug]), "{offered}");
    assert_eq!(offered["total"], 1);

    // A workspace in the context scopes the list: the new one has no sessions yet.
    app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Acme", "slug": "acme"})));
    let review = json!({"type": "ref/prompt", "name": "review_result"});
    assert_eq!(completion(&app, &ada.key, review.clone(), "session_id", "", json!({}))["values"], json!([sid]));
    let scoped = completion(&app, &ada.key, review.clone(), "session_id", "", json!({"workspace": "acme"}));
    assert_eq!(scoped["values"], json!([]), "{scoped}");

    // More sessions than one page of the list: hasMore, and no total nobody counted.
    let agent = app.ok(&ada.key, "list_agents", json!({}))["agents"][0]["id"].clone();
    for i in 0..100 {
        app.ok(
            &ada.key,
            "start_session",
            json!({"agent_id": agent, "message": "x", "idempotency_key": format!("s{i}")}),
        );
    }
    let many = completion(&app, &ada.key, review, "session_id", "", json!({}));
    assert_eq!(many["values"].as_array().unwrap().len(), 100, "{many}");
    assert_eq!(many["hasMore"], true);
    assert!(many.get("total").is_none(), "{many}");
}

#[test]
fn errors_keep_their_codes_and_lists_refuse_cursors_they_never_issued() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    for method in ["resources/list", "resources/templates/list", "prompts/list"] {
        let answer = rpc(&app, &ada.key, method, json!({"cursor": "made-up"}));
        assert_eq!(answer["error"]["code"], -32602, "{method}: {answer}");
    }
    // The scheme is case-insensitive.
    let read_upper = read(&app, &ada.key, "AGENTSKY://help/en/getting-started");
    assert!(read_upper["result"]["contents"][0]["text"].as_str().unwrap().starts_with("# "), "{read_upper}");
    // A malformed escape is not found, not decoded leniently.
    assert_eq!(read(&app, &ada.key, "agentsky://help/en/getting%+1started")["error"]["code"], -32002);
}

/// A 2026-07-28 request to `/v1/mcp`, with the routing headers it needs.
fn modern(app: &TestApp, key: &str, method: &str, name: Option<&str>, params: Value) -> (u16, Value) {
    let resp = modern_raw(app, key, method, name, params);
    (resp.status, resp.json_body())
}

fn modern_raw(
    app: &TestApp,
    key: &str,
    method: &str,
    name: Option<&str>,
    mut params: Value,
) -> agentsky::http::HttpResponse {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    let mut headers = vec![
        ("host".to_owned(), "127.0.0.1:8787".to_owned()),
        ("content-type".into(), "application/json".into()),
        ("accept".into(), "application/json, text/event-stream".into()),
        ("authorization".into(), format!("Bearer {key}")),
        ("mcp-protocol-version".into(), "2026-07-28".into()),
        ("mcp-method".into(), method.into()),
    ];
    if let Some(name) = name {
        headers.push(("mcp-name".into(), name.into()));
    }
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": method, "params": params});
    app.send(HttpRequest {
        method: "POST".into(),
        path: "/v1/mcp".into(),
        headers,
        body: serde_json::to_vec(&body).unwrap(),
        client_ip: "203.0.113.7".into(),
        ..Default::default()
    })
}

/// The JSON messages of a server-sent-event body, in order.
fn sse_messages(body: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(body)
        .split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}

#[test]
fn subscriptions_listen_acknowledges_what_can_change_then_closes_gracefully() {
    let app = TestApp::new();
    let (ada, sid, task) = setup(&app);
    let (_, discovered) = modern(&app, &ada.key, "server/discover", None, json!({}));
    assert_eq!(discovered["result"]["capabilities"]["resources"]["subscribe"], true, "{discovered}");
    let transcript = format!("agentsky://sessions/{sid}/transcript");
    let file = format!("agentsky://tasks/{task}/files/notes/plan.md");
    let (_, listed) = modern(&app, &ada.key, "resources/list", None, json!({}));
    let help = listed["result"]["resources"][0]["uri"].as_str().unwrap().to_owned();
    let filter = json!({"toolsListChanged": true, "resourceSubscriptions": [transcript, file, help, transcript]});
    let resp = modern_raw(&app, &ada.key, "subscriptions/listen", None, json!({"notifications": filter}));
    assert_eq!((resp.status, resp.header("content-type")), (200, Some("text/event-stream")));
    assert!(resp.header("mcp-session-id").is_none());
    let messages = sse_messages(&resp.body);
    let ack = &messages[0];
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{messages:?}");
    // Lists never change and a help article is fixed: only the transcript and the file are honored.
    assert_eq!(ack["params"]["notifications"], json!({"resourceSubscriptions": [transcript, file]}));
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 3);
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 3);
    assert_eq!(last["result"]["resultType"], "complete");
    assert_eq!(last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 3);
    for note in &messages[1..messages.len() - 1] {
        assert_eq!(note["method"], "notifications/resources/updated");
        assert_eq!(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 3);
    }

    // Scoped as reads are: another account's session is not found, before anything streams.
    let bo = app.signup("Bo", "bo@example.com");
    let (status, body) = modern(
        &app,
        &bo.key,
        "subscriptions/listen",
        None,
        json!({"notifications": {"resourceSubscriptions": [transcript]}}),
    );
    assert_eq!((status, body["error"]["code"].clone()), (400, json!(-32602)), "{body}");
    assert_eq!(body["error"]["data"]["uri"], json!(transcript));
    for bad in [json!({}), json!({"notifications": {"resourceSubscriptions": "x"}})] {
        let (status, body) = modern(&app, &ada.key, "subscriptions/listen", None, bad);
        assert_eq!((status, body["error"]["code"].clone()), (400, json!(-32602)), "{body}");
        assert!(body["error"]["message"].as_str().unwrap().contains("notifications"), "{body}");
    }
    // The 2025 wire has no such method.
    let legacy = rpc(&app, &ada.key, "subscriptions/listen", json!({"notifications": {}}));
    assert_eq!(legacy["error"]["code"], -32601);
}

#[test]
fn the_2026_wire_reads_with_cache_hints_and_answers_not_found_as_invalid_params() {
    let app = TestApp::new();
    let (ada, sid, task) = setup(&app);
    let uri = format!("agentsky://tasks/{task}/files/notes/plan.md");
    let (status, body) = modern(&app, &ada.key, "resources/read", Some(&uri), json!({"uri": uri}));
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["contents"][0]["text"], "the plan");
    assert_eq!((body["result"]["ttlMs"].clone(), body["result"]["cacheScope"].clone()), (json!(0), json!("private")));
    let (_, listed) = modern(&app, &ada.key, "resources/templates/list", None, json!({}));
    assert_eq!(listed["result"]["ttlMs"], 60_000, "{listed}");
    assert!(listed["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["uriTemplate"] == "agentsky://tasks/{task_id}/files/{+path}"));

    let bo = app.signup("Bo", "bo@example.com");
    let foreign = format!("agentsky://sessions/{sid}/transcript");
    let (status, body) = modern(&app, &bo.key, "resources/read", Some(&foreign), json!({"uri": foreign}));
    assert_eq!((status, body["error"]["code"].clone()), (400, json!(-32602)), "{body}");
    assert_eq!(body["error"]["data"]["uri"], json!(foreign));

    let (status, body) = modern(
        &app,
        &ada.key,
        "prompts/get",
        Some("review_result"),
        json!({"name": "review_result", "arguments": {"session_id": sid}}),
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["result"]["messages"][0]["content"]["resource"]["uri"],
        json!(format!("agentsky://sessions/{sid}/result"))
    );
}

#[test]
fn a_rate_limited_read_keeps_the_rate_limit_code() {
    let app =
        TestApp::with_config(agentsky::cx::Config { open_signup: true, rate_limit_per_min: 3, ..Default::default() });
    let ada = app.signup("Ada", "ada@example.com");
    let uri = "agentsky://sessions/ses_00000000000000000000000000/transcript";
    let codes: Vec<Value> = (0..4).map(|_| read(&app, &ada.key, uri)["error"]["code"].clone()).collect();
    assert_eq!(codes[3], -32003, "{codes:?}");
    assert_eq!(read(&app, &ada.key, uri)["error"]["data"]["code"], "rate_limited");
}
