//! Accounts, keys, workspaces, agents and the rules around them: scopes, locks, revocation, limits.

use crate::support::TestApp;
use serde_json::json;

#[test]
fn signup_returns_a_write_key_once_and_stores_only_its_hash() {
    let app = TestApp::new();
    let resp =
        app.request("POST", "/v1/accounts", None, Some(json!({"name": "Ada Lovelace", "email": "ada@example.com"})));
    assert_eq!(resp.status, 201);
    let body = resp.json_body();
    let key = body["key"]["key"].as_str().unwrap();
    assert!(key.starts_with("ast_") && key.len() >= 47);
    assert_eq!(body["workspace"]["slug"], "ada-lovelace");
    assert_eq!(body["key"]["scopes"], json!(["read", "write"]));
    let stored: String = app.db.0.query_row("SELECT key_hash FROM api_key", [], |r| r.get(0)).unwrap();
    assert_ne!(stored, key);
    assert_eq!(stored, agentsky::rules::ids::hash_secret(key));
    let n: i64 = app
        .db
        .0
        .query_row(
            "SELECT COUNT(*) FROM api_key WHERE key_hash LIKE ?1 OR prefix = ?2",
            [format!("%{}%", &key[4..]), key.to_owned()],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 0, "the secret itself is nowhere in the table");
}

#[test]
fn a_second_account_with_the_same_name_gets_another_slug_and_the_same_email_is_refused() {
    let app = TestApp::new();
    let a = app.signup("Ada", "ada@example.com");
    let b = app.signup("Ada", "ada2@example.com");
    assert_eq!(a.slug, "ada");
    assert!(b.slug.starts_with("ada-") && b.slug != a.slug);
    let resp = app.request("POST", "/v1/accounts", None, Some(json!({"name": "X", "email": "ADA@example.com"})));
    assert_eq!(resp.status, 409);
    assert_eq!(resp.json_body()["error"]["code"], "conflict");
}

#[test]
fn signup_is_closed_unless_configured_and_the_admin_token_opens_it() {
    let app = TestApp::with_config(agentsky::cx::Config {
        open_signup: false,
        admin_token: Some("adm_secret".into()),
        rate_limit_per_min: 600,
        ..Default::default()
    });
    let body = json!({"name": "Bo", "email": "bo@example.com"});
    assert_eq!(app.request("POST", "/v1/accounts", None, Some(body.clone())).status, 403);
    assert_eq!(app.request("POST", "/v1/accounts", Some("ast_wrong"), Some(body.clone())).status, 401);
    assert_eq!(app.request("POST", "/v1/accounts", Some("adm_secret"), Some(body)).status, 201);
}

#[test]
fn bad_signup_input_gets_clear_errors() {
    let app = TestApp::new();
    for (body, needle) in [
        (json!({"name": "", "email": "a@b.co"}), "`name`"),
        (json!({"name": "A", "email": "nope"}), "`email`"),
        (json!({"name": "A"}), "`email` is required"),
        (json!({"name": "A", "email": "a@b.co", "extra": 1}), "`extra` is not a known field"),
        (json!(["not", "an", "object"]), "JSON object"),
    ] {
        let resp = app.request("POST", "/v1/accounts", None, Some(body));
        assert_eq!(resp.status, 400);
        let msg = resp.json_body()["error"]["message"].as_str().unwrap().to_owned();
        assert!(msg.contains(needle), "{msg}");
    }
    let resp = app.send(agentsky::http::HttpRequest {
        method: "POST".into(),
        path: "/v1/accounts".into(),
        body: b"{not json".to_vec(),
        ..Default::default()
    });
    assert_eq!(resp.status, 400);
}

#[test]
fn missing_and_unknown_keys_get_401_with_a_bearer_challenge() {
    let app = TestApp::new();
    let resp = app.request("GET", "/v1/keys", None, None);
    assert_eq!(resp.status, 401);
    let challenge = resp.header("www-authenticate").unwrap();
    assert!(
        challenge.starts_with("Bearer realm=")
            && !challenge.contains("invalid_token")
            && !challenge.contains("resource_metadata")
    );
    let resp = app.request("GET", "/v1/keys", Some("ast_unknown"), None);
    assert_eq!(resp.status, 401);
    assert!(resp.header("www-authenticate").unwrap().contains("error=\"invalid_token\""));
    assert_eq!(resp.json_body()["error"]["code"], "unauthorized");
}

#[test]
fn keys_are_listed_without_secrets_and_a_revoked_key_is_refused_at_once() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let resp = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "ci", "scopes": ["read"]})));
    assert_eq!(resp.status, 201);
    let created = resp.json_body();
    let read_key = created["key"].as_str().unwrap().to_owned();
    assert_eq!(created["scopes"], json!(["read"]));

    let list = app.request("GET", "/v1/keys", Some(&read_key), None).json_body();
    let keys = list["keys"].as_array().unwrap();
    assert_eq!(keys.len(), 2);
    assert!(!list.to_string().contains(&read_key[4..]), "no secret in the list");
    assert!(keys.iter().any(|k| k["name"] == "ci" && k["scopes"] == "read" && k["last_used_ms"].is_i64()));

    let key_id = created["key_id"].as_str().unwrap();
    assert_eq!(
        app.request("DELETE", &format!("/v1/keys/{key_id}"), Some(&read_key), None).status,
        403,
        "a read key cannot revoke"
    );
    assert_eq!(app.request("DELETE", &format!("/v1/keys/{key_id}"), Some(&ada.key), None).status, 200);
    assert_eq!(app.request("GET", "/v1/keys", Some(&read_key), None).status, 401);

    let other = app.signup("Bo", "bo@example.com");
    assert_eq!(
        app.request("DELETE", &format!("/v1/keys/{key_id}"), Some(&other.key), None).status,
        404,
        "not someone else's"
    );
}

#[test]
fn key_scopes_are_checked() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    for (scopes, status) in
        [(json!([]), 400), (json!(["admin"]), 400), (json!(["write"]), 201), (json!(["read", "write"]), 201)]
    {
        let resp = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "k", "scopes": scopes})));
        assert_eq!(resp.status, status, "{scopes}");
    }
}

#[test]
fn workspaces_members_and_roles() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    let resp = app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Acme", "slug": "acme"})));
    assert_eq!(resp.status, 201);
    assert_eq!(
        app.request("POST", "/v1/workspaces", Some(&bo.key), Some(json!({"name": "Acme", "slug": "acme"}))).status,
        409
    );
    assert_eq!(
        app.request("POST", "/v1/workspaces", Some(&bo.key), Some(json!({"name": "X", "slug": "Bad Slug"}))).status,
        400
    );

    // Bo is not a member yet: acme does not exist for him.
    assert_eq!(app.request("GET", "/v1/workspaces/acme/members", Some(&bo.key), None).status, 404);
    app.join(&ada, "acme", &bo, "member");
    let members = app.request("GET", "/v1/workspaces/acme/members", Some(&bo.key), None).json_body();
    assert_eq!(members["members"].as_array().unwrap().len(), 2);
    // A member cannot invite anyone (members.rs has the rest).
    let by_member =
        app.request("POST", "/v1/workspaces/acme/invitations", Some(&bo.key), Some(json!({"role": "member"})));
    assert_eq!(by_member.status, 403);
    assert_eq!(by_member.json_body()["error"]["code"], "forbidden");

    let listed = app.ok(&bo.key, "list_workspaces", json!({}));
    let names: Vec<&str> =
        listed["workspaces"].as_array().unwrap().iter().map(|w| w["slug"].as_str().unwrap()).collect();
    assert!(names.contains(&"acme") && names.contains(&bo.slug.as_str()));
    let current: Vec<_> = listed["workspaces"].as_array().unwrap().iter().filter(|w| w["is_current"] == true).collect();
    assert_eq!(current.len(), 1);
    assert_eq!(current[0]["slug"], bo.slug.as_str());
    assert_eq!(current[0]["is_personal"], true);
}

fn echo_agent(name: &str) -> serde_json::Value {
    json!({"name": name, "harness": "echo", "model": "echo-1"})
}

#[test]
fn agents_are_created_listed_updated_and_deleted_in_their_workspace() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let resp = app.request(
        "POST",
        "/v1/agents",
        Some(&ada.key),
        Some(json!({
            "name": "Writer", "handle": "@writer", "harness": "echo", "model": "echo-1",
            "description": "Writes things", "categories": ["writing"],
            "mcpServers": [{"name": "docs", "url": "https://docs.example.com/mcp"}]
        })),
    );
    assert_eq!(resp.status, 201, "{:?}", resp.json_body());
    let agent = resp.json_body();
    let id = agent["agent_id"].as_str().unwrap().to_owned();
    assert_eq!(agent["handle"], "writer");

    let list = app.ok(&ada.key, "list_agents", json!({}));
    assert_eq!(
        list["agents"],
        json!([{"id": id, "name": "Writer", "handle": "@writer", "harness": "echo", "model": "echo-1",
            "placement": "runner", "egress": [], "session_count": 0}])
    );

    let patched = app.request("PATCH", &format!("/v1/agents/{id}"), Some(&ada.key), Some(json!({"model": "echo-2"})));
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json_body()["model"], "echo-2");
    assert_eq!(patched.json_body()["description"], "Writes things", "fields left out keep their value");

    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(
        app.request("GET", &format!("/v1/agents/{id}"), Some(&bo.key), None).status,
        404,
        "another account cannot see it"
    );
    let taken = app.request(
        "POST",
        "/v1/agents",
        Some(&bo.key),
        Some(json!({"name": "W", "handle": "writer", "harness": "echo", "model": "m"})),
    );
    assert_eq!(taken.status, 409);

    assert_eq!(app.request("DELETE", &format!("/v1/agents/{id}"), Some(&ada.key), None).status, 200);
    assert_eq!(app.request("GET", &format!("/v1/agents/{id}"), Some(&ada.key), None).status, 404);
}

#[test]
fn agent_fields_are_validated_against_their_limits() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    for (patch, needle) in [
        (json!({"harness": "gpt"}), "`harness`"),
        (json!({"name": "x".repeat(101)}), "`name`"),
        (json!({"instructions": "x".repeat(20_001)}), "`instructions`"),
        (json!({"categories": vec!["c"; 11]}), "`categories`"),
        (json!({"mcpServers": [{"name": "a", "url": "http://evil.example.com"}]}), "`mcpServers[].url`"),
        (json!({"handle": "Bad_Handle"}), "`handle`"),
    ] {
        let mut body = echo_agent("A");
        body.as_object_mut().unwrap().extend(patch.as_object().unwrap().clone());
        let resp = app.request("POST", "/v1/agents", Some(&ada.key), Some(body));
        assert_eq!(resp.status, 400, "{patch}");
        assert!(
            resp.json_body()["error"]["message"].as_str().unwrap().contains(needle),
            "{needle}: {:?}",
            resp.json_body()
        );
    }
}

#[test]
fn list_agents_pages_without_gaps_or_duplicates() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    for i in 0..7 {
        app.advance(1);
        assert_eq!(app.request("POST", "/v1/agents", Some(&ada.key), Some(echo_agent(&format!("a{i}")))).status, 201);
    }
    let mut seen = Vec::new();
    let mut offset = 0;
    loop {
        let page = app.ok(&ada.key, "list_agents", json!({"limit": 3, "offset": offset}));
        seen.extend(page["agents"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap().to_owned()));
        match page["next_offset"].as_i64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    assert_eq!(seen, ["a6", "a5", "a4", "a3", "a2", "a1", "a0"], "newest first, each once");
    assert_eq!(app.err_code(&ada.key, "list_agents", json!({"limit": 0})), "invalid_params");
}

#[test]
fn a_read_key_reads_but_cannot_write() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let read =
        app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "r", "scopes": ["read"]}))).json_body();
    let read = read["key"].as_str().unwrap();
    app.ok(read, "list_agents", json!({}));
    let resp = app.request("POST", "/v1/agents", Some(read), Some(echo_agent("A")));
    assert_eq!(resp.status, 403);
    assert_eq!(resp.json_body()["error"]["code"], "insufficient_scope");
}

#[test]
fn a_locked_key_stays_in_its_workspace() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Acme", "slug": "acme"})));
    let locked = app.request(
        "POST",
        "/v1/keys",
        Some(&ada.key),
        Some(json!({"name": "acme-only", "scopes": ["read", "write"], "workspace": "acme"})),
    );
    assert_eq!(locked.status, 201);
    assert_eq!(locked.json_body()["workspace"], "acme");
    let locked = locked.json_body()["key"].as_str().unwrap().to_owned();

    assert_eq!(app.err_code(&locked, "list_agents", json!({"workspace": ada.slug})), "universe_mismatch");
    app.ok(&locked, "list_agents", json!({"workspace": "acme"}));
    let listed = app.ok(&locked, "list_workspaces", json!({}));
    assert_eq!(listed["workspaces"].as_array().unwrap().len(), 1, "a locked key sees only its workspace");
    assert_eq!(listed["workspaces"][0]["is_current"], true);
    // Creating without a workspace lands in the locked one.
    let agent = app.request("POST", "/v1/agents", Some(&locked), Some(echo_agent("A"))).json_body();
    let in_acme = app.ok(&ada.key, "list_agents", json!({"workspace": "acme"}));
    assert_eq!(in_acme["agents"][0]["id"], agent["agent_id"]);
    assert_eq!(
        app.request("POST", "/v1/workspaces", Some(&locked), Some(json!({"name": "Z"}))).json_body()["error"]["code"],
        "universe_mismatch"
    );
    // Another account's agent id is simply not found; the personal workspace's agent is a mismatch.
    let personal = app.request("POST", "/v1/agents", Some(&ada.key), Some(echo_agent("P"))).json_body();
    let resp =
        app.request("GET", &format!("/v1/agents/{}", personal["agent_id"].as_str().unwrap()), Some(&locked), None);
    assert_eq!(resp.json_body()["error"]["code"], "universe_mismatch");
}

#[test]
fn the_x_universe_header_sets_the_connections_workspace() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Acme", "slug": "acme"})));
    let mut req = agentsky::http::HttpRequest {
        method: "GET".into(),
        path: "/v1/workspaces".into(),
        headers: vec![("authorization".into(), format!("Bearer {}", ada.key)), ("x-universe".into(), "acme".into())],
        ..Default::default()
    };
    let body = app.send(req.clone()).json_body();
    let current: Vec<_> = body["workspaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["is_current"] == true)
        .map(|w| w["slug"].clone())
        .collect();
    assert_eq!(current, vec![json!("acme")]);
    req.headers[1].1 = "nobody".into();
    req.path = "/v1/agents".into();
    assert_eq!(app.send(req).status, 404);
}

#[test]
fn the_per_key_limit_answers_rate_limited_with_a_retry_after() {
    let app =
        TestApp::with_config(agentsky::cx::Config { open_signup: true, rate_limit_per_min: 5, ..Default::default() });
    let ada = app.signup("Ada", "ada@example.com");
    for _ in 0..5 {
        app.ok(&ada.key, "list_agents", json!({}));
        app.advance(1_000);
    }
    let result = app.call(&ada.key, "list_agents", json!({}));
    assert_eq!(TestApp::tool_error(&result)["code"], "rate_limited");
    assert_eq!(TestApp::tool_error(&result)["retry_after_ms"], 55_000, "until the first call leaves the minute");
    let rest = app.request("GET", "/v1/agents", Some(&ada.key), None);
    assert_eq!(rest.status, 429, "REST shares the same bucket");
    assert_eq!(rest.header("retry-after"), Some("55"));
    app.advance(54_999);
    assert_eq!(app.request("GET", "/v1/agents", Some(&ada.key), None).status, 429, "a millisecond early");
    app.advance(1);
    app.ok(&ada.key, "list_agents", json!({}));
}

#[test]
fn every_call_is_counted_beside_its_key_check_and_exactly_the_capacity_passes() {
    let app =
        TestApp::with_config(agentsky::cx::Config { open_signup: true, rate_limit_per_min: 120, ..Default::default() });
    let ada = app.signup("Ada", "ada@example.com");
    let before = app.limiter.1.get();
    for i in 0..121 {
        let r = app.call(&ada.key, "list_agents", json!({}));
        assert_eq!(r["isError"], false, "call {i}: {r}");
    }
    let over = app.call(&ada.key, "list_agents", json!({}));
    assert_eq!(TestApp::tool_error(&over)["code"], "rate_limited");
    assert_eq!(app.key_units(), 121, "every passed call is in the key's log, the refused one is not");
    assert_eq!(app.limiter.1.get(), before, "no trip to a Limiter object");
}

#[test]
fn a_cached_key_is_checked_on_every_call_and_refused_once_revoked_elsewhere() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let hash = agentsky::rules::ids::hash_secret(&ada.key);
    app.ok(&ada.key, "list_workspaces", json!({}));
    assert!(agentsky::keycache::get(&hash, app.now_ms.get()).is_some(), "the key is cached");
    // Revoked by another Worker: this one's cache does not know.
    app.db.0.execute("UPDATE api_key SET revoked_ms = 1", []).unwrap();
    assert_eq!(app.rpc(&ada.key, "tools/call", json!({"name": "list_workspaces", "arguments": {}})).status, 401);
    assert_eq!(app.request("GET", "/v1/agents", Some(&ada.key), None).status, 401);
    assert!(agentsky::keycache::get(&hash, app.now_ms.get()).is_none(), "forgotten");
}

#[test]
fn the_tool_list_is_answered_to_a_key_looked_up_moments_ago_with_no_round_trip() {
    use agentsky::keycache::SERVER_WIDE_MS;
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let hash = agentsky::rules::ids::hash_secret(&ada.key);
    let list = |key: &str| (app.rpc(key, "tools/list", json!({})), app.last_queries.get());
    let (unknown, trips) = list("ast_unknown_0000000000000000000000000000000000000");
    assert_eq!((unknown.status, trips), (401, 1), "a key this Worker has not seen is looked up first");
    app.ok(&ada.key, "list_workspaces", json!({}));

    // Every key is shown the same list, and nothing in it was read: a key just looked up costs no trip.
    let (known, trips) = list(&ada.key);
    assert_eq!((known.status, trips), (200, 0));
    assert!(known.json_body()["result"]["tools"].as_array().is_some_and(|t| t.len() > 40));
    let hello =
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}});
    for method in ["initialize", "ping", "prompts/list", "resources/list"] {
        assert_eq!((app.rpc(&ada.key, method, hello.clone()).status, app.last_queries.get()), (200, 0), "{method}");
    }
    app.advance(SERVER_WIDE_MS);
    assert_eq!(list(&ada.key).1, 1, "looked up again once the lookup is older than {SERVER_WIDE_MS} ms");

    // Revoked by another Worker: this one may show the list for those seconds, no longer.
    app.db.0.execute("UPDATE api_key SET revoked_ms = 1", []).unwrap();
    assert_eq!(list(&ada.key).0.status, 200);
    app.advance(SERVER_WIDE_MS);
    let (refused, trips) = list(&ada.key);
    assert_eq!((refused.status, trips), (401, 1));
    assert!(agentsky::keycache::get(&hash, app.now_ms.get()).is_none(), "forgotten");
}

#[test]
fn a_key_revoked_through_this_worker_is_refused_the_tool_list_at_once() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let k = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "tmp", "scopes": ["read"]})));
    let (key, key_id) = (k.json_body()["key"].as_str().unwrap().to_owned(), k.json_body()["key_id"].clone());
    assert_eq!((app.rpc(&key, "tools/list", json!({})).status, app.last_queries.get()), (200, 1));
    assert_eq!((app.rpc(&key, "tools/list", json!({})).status, app.last_queries.get()), (200, 0));
    let revoked = app.request("DELETE", &format!("/v1/keys/{}", key_id.as_str().unwrap()), Some(&ada.key), None);
    assert_eq!(revoked.status, 200);
    assert_eq!(app.rpc(&key, "tools/list", json!({})).status, 401);
}

#[test]
fn oversized_bodies_are_refused_before_parsing() {
    let app = TestApp::new();
    let resp = app.send(agentsky::http::HttpRequest {
        method: "POST".into(),
        path: "/v1/accounts".into(),
        body: vec![b' '; agentsky::app::MAX_BODY_BYTES + 1],
        ..Default::default()
    });
    assert_eq!(resp.status, 413);
    assert_eq!(resp.json_body()["error"]["code"], "payload_too_large");
}

#[test]
fn a_read_tool_costs_one_round_trip_once_its_key_is_known() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    app.ok(&ada.key, "list_workspaces", json!({}));
    assert_eq!(app.last_queries.get(), 2, "a key this Worker has not seen is checked before the work");
    for tool in ["list_agents", "list_workspaces", "help"] {
        app.ok(&ada.key, tool, json!({}));
        assert_eq!(app.last_queries.get(), 1, "{tool}: the key check rides with the read");
    }
    app.rpc(&ada.key, "tools/list", json!({}));
    assert_eq!(app.last_queries.get(), 0, "tools/list: every key's, so no check for a known key");
    assert_eq!(app.request("GET", "/v1/agents", Some(&ada.key), None).status, 200);
    assert_eq!(app.last_queries.get(), 1, "REST reads alike");
}

#[test]
fn a_write_is_checked_before_it_runs_and_refused_once_the_key_is_revoked() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    app.ok(&ada.key, "list_agents", json!({}));
    app.db.0.execute("UPDATE api_key SET revoked_ms = 1", []).unwrap();
    let resp = app.request("POST", "/v1/agents", Some(&ada.key), Some(echo_agent("Scout")));
    assert_eq!(resp.status, 401);
    let agents: i64 = app.db.0.query_row("SELECT COUNT(*) FROM agent", [], |r| r.get(0)).unwrap();
    assert_eq!(agents, 0, "nothing was written");
}

#[test]
fn describe_workspace_reads_the_workspace_live() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    app.request("POST", "/v1/agents", Some(&ada.key), Some(echo_agent("Scout")));
    let d = app.ok(&ada.key, "describe_workspace", json!({}));
    assert_eq!(d["workspace"]["slug"], ada.slug.as_str());
    assert_eq!(d["role"], "owner");
    assert_eq!(d["key_scope"], "write");
    assert_eq!(d["agents"][0]["name"], "Scout");
    assert_eq!(d["budget"]["remaining_cents"], 0);
    let groups = d["route_groups"].as_array().unwrap();
    let agents = groups.iter().find(|g| g["group"] == "agents").unwrap();
    assert!(agents["tools"].as_array().unwrap().contains(&json!("list_agents")));
    assert!(agents["example"].as_str().unwrap().contains("list_agents"));
}

#[test]
fn help_lists_topics_and_explains_one() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let topics = app.ok(&ada.key, "help", json!({}));
    let names: Vec<&str> = topics["topics"].as_array().unwrap().iter().map(|t| t["topic"].as_str().unwrap()).collect();
    for t in ["agents", "workspaces", "keys", "workflow"] {
        assert!(names.contains(&t), "{t} in {names:?}");
    }
    // A group's summary is its doc, wrapped lines joined back into one.
    let summary = |topic: &str| {
        topics["topics"].as_array().unwrap().iter().find(|t| t["topic"] == topic).unwrap()["summary"].clone()
    };
    assert_eq!(
        summary("sessions"),
        "Start a session with an agent, send messages, read replies by cursor (waiting up to 50 s), hand off, share, stop."
    );
    assert_eq!(
        summary("webhooks"),
        "Send the workspace's events to your HTTPS endpoints, signed; see deliveries, rotate secrets, test."
    );
    let agents = app.ok(&ada.key, "help", json!({"topic": "agents"}));
    let create = agents["operations"].as_array().unwrap().iter().find(|o| o["name"] == "create_agent").unwrap();
    assert_eq!(create["http"], "POST /v1/agents");
    assert_eq!(create["required"], json!(["name", "harness", "model"]));
    assert_eq!(create["skeleton"]["harness"], "<harness>");
    assert!(create["usage"].as_str().unwrap().starts_with("create_agent {"), "a tool: {create}");
    let delete = agents["operations"].as_array().unwrap().iter().find(|o| o["name"] == "delete_agent").unwrap();
    let usage = delete["usage"].as_str().unwrap();
    assert_eq!(usage, r#"manage {"arguments":{"agent_id":"<agent_id>"},"operation":"delete_agent"}"#, "{delete}");
    let keys = app.ok(&ada.key, "help", json!({"topic": "keys"}));
    let signup = keys["operations"].as_array().unwrap().iter().find(|o| o["name"] == "create_account").unwrap();
    assert!(signup["usage"].as_str().unwrap().starts_with("curl -X POST"), "REST only: {signup}");
    assert!(signup.get("tool").is_none(), "{signup}");
    let list = agents["operations"].as_array().unwrap().iter().find(|o| o["name"] == "list_agents").unwrap();
    assert_eq!(list["usage"], format!("list_agents {{\"workspace\":\"{}\"}}", ada.slug));
    assert!(app.ok(&ada.key, "help", json!({"topic": "workflow"}))["steps"].as_str().unwrap().contains("read_session"));
    assert_eq!(app.err_code(&ada.key, "help", json!({"topic": "nope"})), "not_found");
}

#[test]
fn unknown_routes_and_methods_are_told_apart() {
    let app = TestApp::new();
    assert_eq!(app.request("GET", "/v1/nothing", None, None).status, 404);
    let resp = app.request("PUT", "/v1/agents", None, None);
    assert_eq!(resp.status, 405);
    assert!(resp.header("allow").unwrap().contains("GET"));
    // OAuth discovery is served (tests/host/oauth.rs); other well-known names are not.
    assert_eq!(app.request("GET", "/.well-known/oauth-protected-resource", None, None).status, 200);
    assert_eq!(app.request("GET", "/.well-known/openid-configuration", None, None).status, 404);
    assert_eq!(app.request("GET", "/v1/health", None, None).status, 200);
}
