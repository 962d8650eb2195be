//! Search and context: conversations indexed as turns end, memory, the trace library, ranking in English
//! and Chinese, and paging through hits and through a long message.

use crate::support::{Account, TestApp};
use serde_json::{json, Value};
use std::collections::HashSet;

fn echo_agent(app: &TestApp, who: &Account) -> String {
    let body = json!({"name": "Echo", "harness": "echo", "model": "echo-1"});
    let resp = app.request("POST", "/v1/agents", Some(&who.key), Some(body));
    assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    resp.json_body()["agent_id"].as_str().unwrap().to_owned()
}

/// Starts a session with `message` and lets its turn run to its end.
fn converse(app: &TestApp, who: &Account, agent_id: &str, message: &str, key: &str) -> String {
    let started =
        app.ok(&who.key, "start_session", json!({"agent_id": agent_id, "message": message, "idempotency_key": key}));
    app.settle();
    started["session"]["session_id"].as_str().unwrap().to_owned()
}

fn search(app: &TestApp, who: &Account, args: Value) -> Value {
    app.ok(&who.key, "search_context", args)
}

fn count(app: &TestApp, sql: &str) -> i64 {
    app.db.0.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// Every hit of a search, following `nextCursor` to the end.
fn all_pages(app: &TestApp, who: &Account, mut args: Value) -> Vec<Value> {
    let mut hits = Vec::new();
    for _ in 0..100 {
        let page = search(app, who, args.clone());
        hits.extend(page["hits"].as_array().unwrap().iter().cloned());
        match page.get("nextCursor") {
            Some(c) => args["cursor"] = c.clone(),
            None => return hits,
        }
    }
    panic!("the pages never ended");
}

#[test]
fn search_finds_a_past_conversation_by_a_word_in_it() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo_agent(&app, &ada);
    let session = converse(&app, &ada, &agent, "Please refactor the billing module to store cents", "k1");
    converse(&app, &ada, &agent, "Write a haiku about autumn", "k2");
    // The turn's end indexed both messages already: the search needs no catch-up.
    assert_eq!(count(&app, "SELECT COUNT(*) FROM context_doc WHERE scope = 'conversations'"), 4);

    let found = search(&app, &ada, json!({"query": "billing"}));
    let hits = found["hits"].as_array().unwrap();
    assert_eq!(hits.len(), 2, "the message and the agent's echo of it: {found}");
    assert!(found.get("nextCursor").is_none());
    for hit in hits {
        assert_eq!(hit["scope"], "conversations");
        assert_eq!(hit["session_id"], session.as_str());
        assert_eq!(hit["workspace"], ada.slug.as_str());
        assert!(hit["snippet"].as_str().unwrap().contains("**billing**"), "{hit}");
    }
    let roles: HashSet<&str> = hits.iter().map(|h| h["role"].as_str().unwrap()).collect();
    assert_eq!(roles, HashSet::from(["user", "agent"]));

    // Stemming: `refactoring` finds `refactor`; a natural question still finds it.
    assert_eq!(search(&app, &ada, json!({"query": "refactoring"}))["hits"].as_array().unwrap().len(), 2);
    let asked = search(&app, &ada, json!({"query": "how do I store money in cents?"}));
    assert_eq!(asked["hits"][0]["session_id"], session.as_str());

    let user_hit = hits.iter().find(|h| h["role"] == "user").unwrap();
    let read = app.ok(&ada.key, "read_context", json!({"ref": user_hit["ref"]}));
    assert_eq!(read["text"], "Please refactor the billing module to store cents");
    assert_eq!(read["session_id"], session.as_str());
    assert!(read.get("nextOffset").is_none());
    // The cursor continues the conversation in read_session from that message.
    let on = app.ok(&ada.key, "read_session", json!({"session_id": session, "cursor": read["cursor"]}));
    assert_eq!(on["events"][0]["text"], "echo: Please refactor the billing module to store cents");

    let beyond = format!("conversations/{session}/999");
    assert_eq!(app.err_code(&ada.key, "read_context", json!({"ref": beyond})), "not_found");

    // Another account sees none of it.
    let bob = app.signup("Bob", "bob@example.com");
    assert_eq!(search(&app, &bob, json!({"query": "billing"}))["hits"], json!([]));
    assert_eq!(app.err_code(&bob.key, "read_context", json!({"ref": user_hit["ref"]})), "not_found");
}

#[test]
fn chinese_conversations_are_found_by_words_without_spaces() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo_agent(&app, &ada);
    let session = converse(&app, &ada, &agent, "请把部署脚本改成每周二晚上运行", "k1");
    converse(&app, &ada, &agent, "帮我写一首关于秋天的诗", "k2");
    for query in ["部署", "每周二", "部署脚本怎么改", "脚"] {
        let found = search(&app, &ada, json!({"query": query}));
        assert_eq!(found["hits"][0]["session_id"], session.as_str(), "{query}: {found}");
    }
    let found = search(&app, &ada, json!({"query": "部署脚本"}));
    assert!(found["hits"][0]["snippet"].as_str().unwrap().contains("**部署脚本**"), "{found}");
    assert_eq!(search(&app, &ada, json!({"query": "火箭"}))["hits"], json!([]));
}

#[test]
fn a_conversation_not_yet_indexed_is_caught_up_by_the_search() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo_agent(&app, &ada);
    let session = converse(&app, &ada, &agent, "first topic: gardening", "k1");
    // As if the index had missed the session (it ran before the index existed, or indexing failed).
    app.db.0.execute_batch("DELETE FROM context_doc; DELETE FROM context_session;").unwrap();
    let found = search(&app, &ada, json!({"query": "gardening", "scope": "conversations"}));
    assert_eq!(found["hits"].as_array().unwrap().len(), 2, "{found}");
    assert_eq!(found["hits"][0]["session_id"], session.as_str());
    // A stopped session's last messages are caught up too (a millisecond later: the index counts as
    // current for everything up to the millisecond it was written).
    app.advance(1);
    app.ok(
        &ada.key,
        "send_message",
        json!({"session_id": session, "message": "second topic: sailing", "idempotency_key": "k2"}),
    );
    app.ok(&ada.key, "stop_session", json!({"session_id": session}));
    let found = search(&app, &ada, json!({"query": "sailing", "scope": "conversations"}));
    assert_eq!(found["hits"].as_array().unwrap().len(), 1, "{found}");
}

#[test]
fn paging_through_results_is_complete_and_without_duplicates() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo_agent(&app, &ada);
    for i in 0..6 {
        converse(&app, &ada, &agent, &format!("kiwi harvest report number {i}"), &format!("s{i}"));
    }
    for i in 0..13 {
        let text = format!("kiwi note {i}: {}", "the orchard needs water ".repeat(i));
        let resp = app.request("POST", "/v1/memory", Some(&ada.key), Some(json!({"text": text})));
        assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    }
    let every = all_pages(&app, &ada, json!({"query": "kiwi", "limit": 4}));
    let refs: Vec<&str> = every.iter().map(|h| h["ref"].as_str().unwrap()).collect();
    let unique: HashSet<&str> = refs.iter().copied().collect();
    assert_eq!(refs.len(), 6 * 2 + 13, "every message and entry once");
    assert_eq!(unique.len(), refs.len(), "no duplicates: {refs:?}");
    // The same search in one page ranks the same way.
    let whole = search(&app, &ada, json!({"query": "kiwi", "limit": 50}));
    let one_page: Vec<&str> = whole["hits"].as_array().unwrap().iter().map(|h| h["ref"].as_str().unwrap()).collect();
    assert_eq!(one_page, refs);

    // A memory entry saved between pages does not slip into the later pages.
    let first = search(&app, &ada, json!({"query": "kiwi", "limit": 4, "scope": "memory"}));
    app.request("POST", "/v1/memory", Some(&ada.key), Some(json!({"text": "kiwi, saved late"})));
    let mut rest =
        all_pages(&app, &ada, json!({"query": "kiwi", "limit": 4, "scope": "memory", "cursor": first["nextCursor"]}));
    rest.extend(first["hits"].as_array().unwrap().iter().cloned());
    assert_eq!(rest.len(), 13);
    assert!(rest.iter().all(|h| h["scope"] == "memory"));

    let code = app.err_code(&ada.key, "search_context", json!({"query": "orchard", "cursor": first["nextCursor"]}));
    assert_eq!(code, "invalid_params", "a cursor belongs to its search");
}

#[test]
fn a_long_message_is_read_completely_by_offset() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = echo_agent(&app, &ada);
    let long: String = (0..5_000).map(|i| format!("w{i:05} ")).collect::<String>() + "zebra 斑马 end";
    assert!(long.chars().count() > 30_000);
    converse(&app, &ada, &agent, &long, "k1");
    // Only the first 16,000 characters are indexed; a word there finds the message.
    let found = search(&app, &ada, json!({"query": "w00007"}));
    let hit = found["hits"].as_array().unwrap().iter().find(|h| h["role"] == "user").unwrap().clone();
    assert_eq!(hit["chars"], long.chars().count() as i64);

    let mut text = String::new();
    let mut offsets = Vec::new();
    let mut offset = json!(0);
    loop {
        let part = app.ok(&ada.key, "read_context", json!({"ref": hit["ref"], "offset": offset, "limit": 7000}));
        assert_eq!(part["offset"], offset);
        assert_eq!(part["total_chars"], long.chars().count() as i64);
        offsets.push(offset.as_i64().unwrap());
        text.push_str(part["text"].as_str().unwrap());
        match part.get("nextOffset") {
            Some(next) => offset = next.clone(),
            None => break,
        }
    }
    assert_eq!(text, long, "the pages put together are the message, once");
    let expected: Vec<i64> = (0..long.chars().count() as i64).step_by(7000).collect();
    assert_eq!(offsets, expected);
    let past = app.err_code(&ada.key, "read_context", json!({"ref": hit["ref"], "offset": 1_000_000}));
    assert_eq!(past, "invalid_params");
    assert_eq!(app.err_code(&ada.key, "read_context", json!({"ref": "conversations/nope/1"})), "invalid_params");
}

#[test]
fn memory_is_personal_saved_once_listed_and_deleted() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bob = app.signup("Bob", "bob@example.com");
    let save = |who: &Account, text: &str| {
        let resp = app.request("POST", "/v1/memory", Some(&who.key), Some(json!({"text": text})));
        assert_eq!(resp.status, 201, "{:?}", resp.json_body());
        resp.json_body()
    };
    let entry = save(&ada, "Deploys go out on Tuesdays only.");
    assert_eq!(save(&ada, "Deploys go out on Tuesdays only.")["memory_id"], entry["memory_id"], "saved once");
    save(&ada, "用户喜欢简短的回答");
    save(&bob, "Bob's own Tuesday note");
    assert_eq!(entry["workspace"], ada.slug.as_str());
    assert!(entry["saved_by"].as_str().unwrap().starts_with("key:"));

    let listed = app.request("GET", "/v1/memory", Some(&ada.key), None).json_body();
    assert_eq!(listed["entries"].as_array().unwrap().len(), 2);
    let found = search(&app, &ada, json!({"query": "tuesdays", "scope": "memory"}));
    assert_eq!(found["hits"].as_array().unwrap().len(), 1, "only Ada's own: {found}");
    assert_eq!(found["hits"][0]["memory_id"], entry["memory_id"]);
    assert_eq!(search(&app, &ada, json!({"query": "简短", "scope": "memory"}))["hits"].as_array().unwrap().len(), 1);

    let id = entry["memory_id"].as_str().unwrap();
    assert_eq!(app.request("DELETE", &format!("/v1/memory/{id}"), Some(&bob.key), None).status, 404);
    assert_eq!(app.request("DELETE", &format!("/v1/memory/{id}"), Some(&ada.key), None).status, 200);
    assert_eq!(search(&app, &ada, json!({"query": "tuesdays", "scope": "memory"}))["hits"], json!([]));
    assert_eq!(
        count(&app, "SELECT COUNT(*) FROM context_fts WHERE context_fts MATCH '\"tuesdays\"'"),
        1,
        "Bob's stays"
    );
    let gone = app.err_code(&ada.key, "read_context", json!({"ref": found["hits"][0]["ref"]}));
    assert_eq!(gone, "not_found");
}

const CLAUDE_LOG: &str = r#"{"type":"summary","summary":"Fix the flaky login test","leafUuid":"u3"}
{"parentUuid":null,"type":"user","message":{"role":"user","content":"The login test fails on CI with a timeout"},"uuid":"u1","timestamp":"2025-10-29T00:59:38.317Z","sessionId":"s1"}
{"parentUuid":"u1","type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"text","text":"I raised the selenium wait to 30 seconds."}]},"uuid":"u2","timestamp":"2025-10-29T00:59:40.000Z","sessionId":"s1"}
"#;

const CODEX_LOG: &str = r#"{"timestamp":"2025-10-29T00:59:38.317Z","type":"session_meta","payload":{"id":"019a","timestamp":"2025-10-29T00:59:38.308Z","cwd":"/tmp/x"}}
{"timestamp":"2025-10-29T00:59:38.400Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"迁移数据库到新的集群"}]}}
{"timestamp":"2025-10-29T00:59:39.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"pg_dump\",\"prod\"]}","call_id":"c1"}}
{"timestamp":"2025-10-29T00:59:39.700Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"数据库已迁移完成。"}]}}
"#;

#[test]
fn traces_are_uploaded_parsed_searched_and_read() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let upload = |body: Value| app.request("POST", "/v1/traces", Some(&ada.key), Some(body));

    let resp = upload(json!({"content": CLAUDE_LOG}));
    assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    let trace = resp.json_body();
    assert_eq!((trace["format"].as_str(), trace["message_count"].as_i64()), (Some("claude_code"), Some(2)));
    assert_eq!(trace["name"], "Fix the flaky login test");
    assert_eq!(trace["created"], true);
    let again = upload(json!({"content": CLAUDE_LOG, "name": "other"})).json_body();
    assert_eq!((again["trace_id"].clone(), again["created"].clone()), (trace["trace_id"].clone(), json!(false)));
    let codex = upload(json!({"content": CODEX_LOG, "format": "codex", "name": "db move"})).json_body();
    assert_eq!(codex["message_count"], 3);

    let found = search(&app, &ada, json!({"query": "selenium", "scope": "traces"}));
    let hit = &found["hits"][0];
    assert_eq!((hit["trace_id"].clone(), hit["role"].clone()), (trace["trace_id"].clone(), json!("assistant")));
    let read = app.ok(&ada.key, "read_context", json!({"ref": hit["ref"]}));
    assert_eq!(read["text"], "I raised the selenium wait to 30 seconds.");
    assert_eq!(read["at_ms"], 1_761_699_580_000i64);
    // Tool calls are found by the tool's name and arguments; Chinese by its words.
    let found = search(&app, &ada, json!({"query": "pg_dump", "scope": "traces"}));
    assert_eq!(app.ok(&ada.key, "read_context", json!({"ref": found["hits"][0]["ref"]}))["tool"], "shell");
    assert_eq!(
        search(&app, &ada, json!({"query": "数据库迁移", "scope": "traces"}))["hits"].as_array().unwrap().len(),
        2
    );
    // Traces stay out of the default scopes.
    assert_eq!(search(&app, &ada, json!({"query": "selenium"}))["hits"], json!([]));

    let listed = app.request("GET", "/v1/traces", Some(&ada.key), None).json_body();
    assert_eq!(listed["traces"].as_array().unwrap().len(), 2);
    let id = codex["trace_id"].as_str().unwrap();
    let blobs_before = app.blobs.0.borrow().len();
    assert_eq!(app.request("DELETE", &format!("/v1/traces/{id}"), Some(&ada.key), None).status, 200);
    assert_eq!(search(&app, &ada, json!({"query": "pg_dump", "scope": "traces"}))["hits"], json!([]));
    assert_eq!(app.blobs.0.borrow().len(), blobs_before - 1, "a deleted trace's messages are deleted too");
}

#[test]
fn a_deleted_traces_bytes_stay_while_a_file_of_its_workspace_has_the_same() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let trace = app.request("POST", "/v1/traces", Some(&ada.key), Some(json!({"content": CLAUDE_LOG}))).json_body();
    let (key, bytes) = app.blobs.0.borrow().iter().next().map(|(k, v)| (k.clone(), v.clone())).unwrap();
    assert!(key.starts_with("w/ws_") && key.ends_with(&hex_sha(&bytes)), "{key}");
    // The same bytes as a task file of the workspace.
    let agent =
        app.request("POST", "/v1/agents", Some(&ada.key), Some(json!({"name": "E", "harness": "echo", "model": "m"})));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent.json_body()["agent_id"], "message": "hi", "idempotency_key": "s"}),
    );
    let text = String::from_utf8(bytes).unwrap();
    app.ok(&ada.key, "write_task_file", json!({"task_id": s["session"]["task_id"], "path": "m.json", "content": text}));
    let id = trace["trace_id"].as_str().unwrap();
    assert_eq!(app.request("DELETE", &format!("/v1/traces/{id}"), Some(&ada.key), None).status, 200);
    assert!(app.blobs.0.borrow().contains_key(&key), "still the file's bytes");
    let file = app.ok(&ada.key, "read_task_file", json!({"task_id": s["session"]["task_id"], "path": "m.json"}));
    assert_eq!(file["content"], text);
}

fn hex_sha(bytes: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(bytes))
}

#[test]
fn bad_and_huge_traces_get_clear_errors() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let upload = |body: Value| app.request("POST", "/v1/traces", Some(&ada.key), Some(body));

    let broken = upload(json!({"content": format!("{CLAUDE_LOG}{{not json\n[1,2]\n")}));
    assert_eq!(broken.status, 400);
    let message = broken.json_body()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.contains("line 4: not JSON") && message.contains("line 5: expected a JSON object"), "{message}");

    let unknown = upload(json!({"content": "{\"hello\": \"world\"}\n"}));
    assert!(unknown.json_body()["error"]["message"].as_str().unwrap().contains("`format`"));
    assert_eq!(upload(json!({"content": CLAUDE_LOG, "format": "cursor"})).status, 400);

    let huge = "x".repeat(3 * 1024 * 1024 + 1);
    let resp = upload(json!({"content": huge}));
    assert_eq!(resp.status, 413);
    assert_eq!(resp.json_body()["error"]["code"], "payload_too_large");
    assert_eq!(count(&app, "SELECT COUNT(*) FROM trace"), 0);
}
