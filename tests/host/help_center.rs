//! The Help Center: `help_search` and `help_get` on the operator server and on the keyless
//! `/v1/help/mcp` (600 calls a minute per address), and the articles as pages.

use crate::support::TestApp;
use agentsky::http::HttpResponse;
use serde_json::{json, Value};

/// A JSON-RPC call to the help server from `ip`, without any key.
fn help_rpc(app: &TestApp, ip: &str, method: &str, params: Value) -> HttpResponse {
    app.mcp_post("/v1/help/mcp", None, ip, method, params)
}

fn help_call(app: &TestApp, ip: &str, tool: &str, args: Value) -> Value {
    let resp = help_rpc(app, ip, "tools/call", json!({"name": tool, "arguments": args}));
    assert_eq!(resp.status, 200, "{}", String::from_utf8_lossy(&resp.body));
    resp.json_body()["result"].clone()
}

#[test]
fn the_help_server_works_without_a_key() {
    let app = TestApp::new();
    let init = help_rpc(
        &app,
        "192.0.2.1",
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    assert_eq!(init.status, 200);
    assert_eq!(init.json_body()["result"]["serverInfo"]["name"], "agentsky_help");
    let listed = help_rpc(&app, "192.0.2.1", "tools/list", json!({})).json_body();
    let names: Vec<&str> =
        listed["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["help_search", "help_get"]);

    let found = help_call(&app, "192.0.2.1", "help_search", json!({"query": "how do I connect Codex?"}));
    assert_eq!(found["isError"], false, "{found}");
    let first = &found["structuredContent"]["articles"][0];
    assert_eq!(first["slug"], "connect-codex");
    assert_eq!(first["url"], "http://127.0.0.1:8787/help/connect-codex");
    let article = help_call(&app, "192.0.2.1", "help_get", json!({"slug": "connect-codex"}));
    let article = &article["structuredContent"];
    assert!(article["markdown"].as_str().unwrap().contains("codex mcp add"));
    assert_eq!(article["translation"]["slug"], "zh-connect-codex");

    // Operator tools are not on this server.
    let other = help_rpc(&app, "192.0.2.1", "tools/call", json!({"name": "list_agents", "arguments": {}}));
    assert!(other.json_body()["error"].is_object(), "unknown tool: a protocol error");
    let missing = help_call(&app, "192.0.2.1", "help_get", json!({"slug": "nope"}));
    assert_eq!(TestApp::tool_error(&missing)["code"], "not_found");
}

#[test]
fn a_chinese_article_is_found_by_a_chinese_phrase() {
    let app = TestApp::new();
    let found = help_call(&app, "192.0.2.1", "help_search", json!({"query": "幂等键怎么用"}));
    let articles = found["structuredContent"]["articles"].as_array().unwrap();
    assert_eq!(articles[0]["slug"], "zh-idempotency", "{articles:?}");
    assert_eq!(articles[0]["lang"], "zh");
    assert!(articles[0]["snippet"].as_str().unwrap().contains("**幂等"), "{}", articles[0]["snippet"]);
    for (query, slug) in [
        ("定时任务 时区", "zh-routines"),
        ("连接 Claude Code", "zh-connect-claude-code"),
        ("余额不足", "zh-budgets-and-usage"),
    ] {
        let found = help_call(&app, "192.0.2.1", "help_search", json!({"query": query}));
        assert_eq!(found["structuredContent"]["articles"][0]["slug"], slug, "{query}");
    }
    let only_en = help_call(&app, "192.0.2.1", "help_search", json!({"query": "idempotency", "lang": "en"}));
    assert!(only_en["structuredContent"]["articles"].as_array().unwrap().iter().all(|a| a["lang"] == "en"));
}

#[test]
fn the_call_past_600_and_its_one_percent_in_a_minute_from_one_address_is_refused() {
    let app = TestApp::new();
    let args = json!({"query": "errors", "limit": 1});
    for i in 0..606 {
        let r = help_call(&app, "203.0.113.9", "help_search", args.clone());
        assert_eq!(r["isError"], false, "call {i}: {r}");
    }
    let refused = help_call(&app, "203.0.113.9", "help_search", args.clone());
    assert_eq!(refused["isError"], true);
    assert_eq!(TestApp::tool_error(&refused)["code"], "rate_limited");
    assert!(TestApp::tool_error(&refused)["retry_after_ms"].as_i64().unwrap() > 0);
    // Another address is not affected; the first one may call again once time has passed.
    assert_eq!(help_call(&app, "203.0.113.10", "help_search", args.clone())["isError"], false);
    app.advance(60_000);
    assert_eq!(help_call(&app, "203.0.113.9", "help_search", args)["isError"], false);
}

#[test]
fn help_search_and_help_get_are_operator_tools_too() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let found = app.ok(&ada.key, "help_search", json!({"query": "rate_limited retry_after_ms"}));
    assert_eq!(found["articles"][0]["slug"], "errors");
    let article = app.ok(&ada.key, "help_get", json!({"slug": "zh-errors"}));
    assert_eq!(article["title"], "错误");
    let rest = app.request("GET", "/v1/help/articles?query=routines", Some(&ada.key), None);
    assert_eq!(rest.json_body()["articles"][0]["slug"], "routines");
}

#[test]
fn articles_are_served_as_pages() {
    let app = TestApp::new();
    let page = app.request("GET", "/help/zh-getting-started", None, None);
    assert_eq!(page.status, 200);
    assert!(page.header("content-type").unwrap().starts_with("text/html"));
    let html = String::from_utf8(page.body).unwrap();
    assert!(html.contains("<h1>快速上手</h1>") && html.contains("<html lang=\"zh\">"));
    assert!(html.contains("href=\"/help/getting-started\""), "links its translation");
    let index = String::from_utf8(app.request("GET", "/help", None, None).body).unwrap();
    assert!(index.contains("/help/records-and-performance") && index.contains("/help/zh-records-and-performance"));
    assert_eq!(app.request("GET", "/help/nope", None, None).status, 404);
}

#[test]
fn every_article_is_served_as_its_page_rendered_at_build_time() {
    use agentsky::ops::help_center::ARTICLES;
    let app = TestApp::new();
    for a in ARTICLES {
        let page = app.request("GET", &format!("/help/{}", a.slug), None, None);
        assert_eq!(page.status, 200, "{}", a.slug);
        let html = String::from_utf8(page.body).unwrap();
        assert!(html.contains(&format!("<h1>{}</h1>", a.title)), "{}", a.slug);
        // The page deployed as a static asset is the article rendered at build time.
        let built = std::fs::read_to_string(format!("{}/{}", env!("OUT_DIR"), a.html_path())).unwrap();
        let markdown = crate::support::article_markdown(a.slug);
        assert_eq!(built, crate::help_render::to_html(&markdown), "{}", a.slug);
        // The table compiled into the Worker says what the article says.
        assert_eq!(a.title, crate::help_render::title(&markdown, a.slug), "{}", a.slug);
        assert_eq!(a.summary, crate::help_render::summary(&markdown), "{}", a.slug);
        // Served with its examples naming this deployment.
        let served = built.replace(agentsky::ops::help_center::SERVER, "http://127.0.0.1:8787");
        assert!(html.contains(&served) && !html.contains("{{server}}"), "{}", a.slug);
        assert!(!html.contains("<script") && !html.contains("javascript:"), "{}", a.slug);
    }
    let page = String::from_utf8(app.request("GET", "/help/getting-started", None, None).body).unwrap();
    assert!(page.contains("<a href=\"/help/keys-and-scopes\">"), "a link to another article");
    assert!(page.contains("<pre><code"), "fenced code");
}

#[test]
fn every_link_between_articles_leads_to_an_article_in_the_same_language() {
    use agentsky::ops::help_center::{find, ARTICLES};
    for a in ARTICLES {
        let markdown = crate::support::article_markdown(a.slug);
        for (i, _) in markdown.match_indices("](") {
            let target: String = markdown[i + 2..].chars().take_while(|c| *c != ')').collect();
            if target.contains("://") || target.starts_with('/') || target.starts_with('#') {
                continue;
            }
            let linked = find(&target).unwrap_or_else(|| panic!("{} links to `{target}`, which is no article", a.slug));
            assert_eq!(linked.lang, a.lang, "{} links to `{target}` in another language", a.slug);
        }
    }
}
