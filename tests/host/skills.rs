//! Company skills (issue 16, item 1): saved, listed, read and deleted over MCP and REST by owners and
//! admins, checked against the Agent Skills layout; described with the workspace; offered to every
//! session (the openai harness lists them and reads one on demand; runners fetch them).

use crate::support::{Account, TestApp};
use serde_json::{json, Value};

pub const SKILL_MD: &str =
    "---\nname: release-notes\ndescription: Write release notes from merged pull requests. Use when asked for a changelog.\n---\n# Release notes\nGroup changes by area; one line each.\n";

pub fn put(app: &TestApp, who: &Account, args: Value) -> Value {
    app.ok(&who.key, "put_skill", args)
}

#[test]
fn a_skill_is_saved_listed_read_replaced_and_deleted_over_mcp() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let saved = put(
        &app,
        &ada,
        json!({"name": "release-notes", "skill_md": SKILL_MD, "files": {"./templates//entry.md": "- {title}"}}),
    );
    assert_eq!(saved["created"], true);
    assert_eq!(saved["description"], "Write release notes from merged pull requests. Use when asked for a changelog.");
    let listed = app.ok(&ada.key, "list_skills", json!({}));
    let skills = listed["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 1);
    assert_eq!(skills[0]["name"], "release-notes");
    let got = app.ok(&ada.key, "get_skill", json!({"name": "release-notes"}));
    assert_eq!(got["skill_md"], SKILL_MD);
    assert_eq!(got["files"], json!({"templates/entry.md": "- {title}"}), "paths are normalised");

    app.advance(1000);
    let again =
        put(&app, &ada, json!({"name": "release-notes", "skill_md": SKILL_MD.replace("one line", "two lines")}));
    assert_eq!(again["created"], false, "the same name replaces");
    let got = app.ok(&ada.key, "get_skill", json!({"name": "release-notes"}));
    assert!(got["skill_md"].as_str().unwrap().contains("two lines"));
    assert_eq!(got["files"], json!({}), "a put replaces the files too");

    assert_eq!(app.ok(&ada.key, "delete_skill", json!({"name": "release-notes"}))["deleted"], true);
    assert_eq!(app.err_code(&ada.key, "delete_skill", json!({"name": "release-notes"})), "not_found");
    assert_eq!(app.err_code(&ada.key, "get_skill", json!({"name": "release-notes"})), "not_found");
}

#[test]
fn skills_are_managed_over_rest_too() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request("PUT", "/v1/skills/release-notes", Some(&ada.key), Some(json!({"skill_md": SKILL_MD})));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let r = app.request("GET", "/v1/skills/release-notes", Some(&ada.key), None);
    assert_eq!(r.json_body()["name"], "release-notes");
    let r = app.request("GET", "/v1/skills", Some(&ada.key), None);
    assert_eq!(r.json_body()["skills"][0]["name"], "release-notes");
    let r = app.request("DELETE", "/v1/skills/release-notes", Some(&ada.key), None);
    assert_eq!(r.status, 200);
    let r = app.request("GET", "/v1/skills/release-notes", Some(&ada.key), None);
    assert_eq!(r.status, 404);
}

#[test]
fn a_skill_is_refused_unless_it_follows_the_layout() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let refused = |args: Value, says: &str| {
        let result = app.call(&ada.key, "put_skill", args);
        let error = TestApp::tool_error(&result);
        assert_eq!(error["code"], "invalid_params", "{error}");
        assert!(error["message"].as_str().unwrap().contains(says), "{says}: {error}");
    };
    refused(json!({"name": "Release_Notes", "skill_md": SKILL_MD}), "lowercase letters");
    refused(json!({"name": "x".repeat(65), "skill_md": SKILL_MD}), "lowercase letters");
    refused(json!({"name": "release-notes", "skill_md": "# no front matter"}), "must start with a `---`");
    refused(json!({"name": "release-notes", "skill_md": "---\nname: release-notes\n---\n"}), "needs a `description`");
    refused(
        json!({"name": "release-notes", "skill_md": format!("---\nname: release-notes\ndescription: {}\n---\n", "d".repeat(1025))}),
        "at most 1024",
    );
    refused(json!({"name": "other", "skill_md": SKILL_MD}), "must be the skill's name");
    refused(
        json!({"name": "release-notes", "skill_md": SKILL_MD, "files": {"../x.md": "x"}}),
        "`files[\"../x.md\"]` must not contain `..`",
    );
    refused(
        json!({"name": "release-notes", "skill_md": SKILL_MD, "files": {"SKILL.md": "x"}}),
        "pass it as `skill_md`",
    );
    assert!(app.ok(&ada.key, "list_skills", json!({}))["skills"].as_array().unwrap().is_empty());
}

#[test]
fn only_owners_and_admins_change_skills_and_members_read_them() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bob = app.signup("Bob", "bob@example.com");
    app.shared_workspace(&ada, "acme");
    app.join(&ada, "acme", &bob, "member");
    put(&app, &ada, json!({"name": "release-notes", "skill_md": SKILL_MD, "workspace": "acme"}));
    let args = json!({"name": "release-notes", "skill_md": SKILL_MD, "workspace": "acme"});
    assert_eq!(app.err_code(&bob.key, "put_skill", args), "forbidden");
    assert_eq!(
        app.err_code(&bob.key, "delete_skill", json!({"name": "release-notes", "workspace": "acme"})),
        "forbidden"
    );
    let listed = app.ok(&bob.key, "list_skills", json!({"workspace": "acme"}));
    assert_eq!(listed["skills"][0]["name"], "release-notes");
    // Another workspace's skills are not Bob's.
    assert!(app.ok(&bob.key, "list_skills", json!({}))["skills"].as_array().unwrap().is_empty());
}

#[test]
fn the_skill_tools_are_annotated_truthfully() {
    // Reached through `manage`: the row's hints are what `help` and the OpenAPI document publish.
    let hints = |name: &str| {
        let h = agentsky::ops::find(name).unwrap_or_else(|| panic!("{name} is an operation")).hints;
        (h.read_only, h.destructive, h.idempotent)
    };
    assert_eq!(hints("list_skills"), (true, false, true));
    assert_eq!(hints("get_skill"), (true, false, true));
    assert_eq!(hints("put_skill"), (false, false, true), "a put sets the skill to what it says");
    assert_eq!(hints("delete_skill"), (false, true, true));
}

#[test]
fn describe_workspace_shows_agents_by_handle_skills_routines_connectors_and_policies_each_with_a_usage_line() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let r = app.request(
        "POST",
        "/v1/agents",
        Some(&ada.key),
        Some(json!({"name": "Echo", "harness": "echo", "model": "echo", "handle": "echo-bot"})),
    );
    assert_eq!(r.status, 201, "{:?}", r.json_body());
    put(&app, &ada, json!({"name": "release-notes", "skill_md": SKILL_MD}));
    let routine = app.ok(
        &ada.key,
        "create_routine",
        json!({"name": "nightly", "agent_id": "@echo-bot", "message": "go", "cron": "0 3 * * *", "timezone": "UTC"}),
    );
    let r = app.request(
        "POST",
        "/v1/connectors",
        Some(&ada.key),
        Some(
            json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": "t"}}}),
        ),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let connector_id = r.json_body()["connector_id"].as_str().unwrap().to_owned();
    let r = app.request(
        "PUT",
        "/v1/policies",
        Some(&ada.key),
        Some(json!({"connector_id": connector_id, "scope": "read", "decision": "allow"})),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());

    let d = app.ok(&ada.key, "describe_workspace", json!({}));
    let agent = &d["agents"][0];
    assert_eq!(agent["handle"], "@echo-bot");
    assert!(agent["usage"].as_str().unwrap().starts_with("start_session "), "{agent}");
    assert!(agent["usage"].as_str().unwrap().contains(r#""agent_id":"@echo-bot""#), "{agent}");
    let skill = &d["skills"][0];
    assert_eq!(skill["name"], "release-notes");
    assert!(skill["description"].as_str().unwrap().starts_with("Write release notes"));
    let usage = skill["usage"].as_str().unwrap();
    assert!(usage.starts_with(r#"manage {"arguments":{"name":"release-notes""#), "{skill}");
    assert!(usage.contains(r#""operation":"get_skill""#), "{skill}");
    let r = &d["routines"][0];
    assert_eq!(r["trigger"], "cron 0 3 * * * UTC");
    assert!(r["usage"].as_str().unwrap().contains(routine["routine_id"].as_str().unwrap()), "{r}");
    let c = &d["connectors"][0];
    assert_eq!(
        (c["name"].as_str(), c["provider"].as_str(), c["connected"].as_bool()),
        (Some("web"), Some("vercel"), Some(true))
    );
    assert!(c["tools"].as_array().unwrap().contains(&json!("vercel")), "{c}");
    assert!(c["usage"].as_str().unwrap().starts_with(r#"request_access {"#), "{c}");
    assert!(c["usage"].as_str().unwrap().contains(r#""target":"web""#), "{c}");
    let p = &d["policies"][0];
    assert_eq!(
        (p["target"].as_str(), p["scope"].as_str(), p["decision"].as_str()),
        (Some("web"), Some("read"), Some("allow"))
    );
    assert!(
        p["usage"].as_str().unwrap().starts_with("manage {")
            && p["usage"].as_str().unwrap().contains(r#""operation":"set_policy""#)
            && p["usage"].as_str().unwrap().contains(&connector_id),
        "a tool call, now that policies are set from MCP too: {p}"
    );
    let skills_group = d["route_groups"].as_array().unwrap().iter().find(|g| g["group"] == "skills").unwrap();
    assert!(skills_group["tools"].as_array().unwrap().contains(&json!("manage")), "{skills_group}");
}

/// An openai agent in Ada's workspace, with credit and the model's secrets.
fn openai_setup() -> (TestApp, Account, String) {
    let app = TestApp::with_config(agentsky::cx::Config {
        admin_token: Some("adm".into()),
        secrets_key: Some("test-master-key".into()),
        prices: agentsky::rules::prices::Prices::parse(r#"{"gpt-test": [1000000, 2000000]}"#).unwrap(),
        ..TestApp::config()
    });
    let ada = app.signup("Ada", "ada@example.com");
    let credit = json!({"amount_cents": 1_000_000});
    app.request("POST", &format!("/v1/workspaces/{}/credit", ada.slug), Some("adm"), Some(credit));
    for (name, value) in [("OPENAI_BASE_URL", "https://model.example.com/v1"), ("OPENAI_API_KEY", "sk-test-123")] {
        let r = app.request("PUT", &format!("/v1/secrets/{name}"), Some(&ada.key), Some(json!({"value": value})));
        assert_eq!(r.status, 200, "{:?}", r.json_body());
    }
    let agent = json!({"name": "G", "harness": "openai", "model": "gpt-test", "instructions": "You are terse."});
    let r = app.request("POST", "/v1/agents", Some(&ada.key), Some(agent));
    let agent_id = r.json_body()["agent_id"].as_str().unwrap().to_owned();
    (app, ada, agent_id)
}

fn completion(message: Value) -> agentsky::http::HttpResponse {
    agentsky::http::HttpResponse::json(
        200,
        &json!({"choices": [{"message": message}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}}),
    )
}

#[test]
fn the_openai_harness_lists_the_skills_in_its_instructions_and_reads_one_on_demand() {
    let (app, ada, agent_id) = openai_setup();
    put(
        &app,
        &ada,
        json!({"name": "release-notes", "skill_md": SKILL_MD, "files": {"templates/entry.md": "- {title}"}}),
    );
    app.sessions.net.answer(|req| {
        let body: Value = serde_json::from_slice(&req.body).unwrap();
        let last = body["messages"].as_array().unwrap().last().unwrap().clone();
        if last["role"] == "user" {
            let args = json!({"name": "release-notes"}).to_string();
            completion(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
                "function": {"name": "read_skill", "arguments": args}}]}))
        } else {
            completion(json!({"role": "assistant", "content": "Followed the skill."}))
        }
    });
    let args = json!({"agent_id": agent_id, "message": "write the changelog", "idempotency_key": "k1"});
    let started = app.ok(&ada.key, "start_session", args);
    app.settle();
    let sid = started["session"]["session_id"].as_str().unwrap();
    let page = app.ok(&ada.key, "read_session", json!({"session_id": sid}));
    let events = page["events"].as_array().unwrap();
    let result = events.iter().find(|e| e["type"] == "tool_result").expect("read_skill answered");
    assert_eq!(result["is_error"], false, "{result}");
    let content: Value = serde_json::from_str(result["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["skill_md"], SKILL_MD);
    assert_eq!(content["files"], json!(["templates/entry.md"]));

    let first: Value = serde_json::from_slice(&app.sessions.net.requests.borrow()[0].body).unwrap();
    let system = first["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are terse."), "{system}");
    assert!(
        system.contains("- release-notes: Write release notes from merged pull requests."),
        "the skill's name and description are in the instructions: {system}"
    );
    assert!(!system.contains("Group changes by area"), "the body is read on demand, not listed");
    assert!(first["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "read_skill"));
}

#[test]
fn without_skills_the_harness_offers_no_read_skill() {
    let (app, ada, agent_id) = openai_setup();
    app.sessions.net.answer(|_| completion(json!({"role": "assistant", "content": "ok"})));
    app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "hi", "idempotency_key": "k1"}));
    app.settle();
    let first: Value = serde_json::from_slice(&app.sessions.net.requests.borrow()[0].body).unwrap();
    assert!(!first["tools"].as_array().unwrap().iter().any(|t| t["function"]["name"] == "read_skill"));
    assert!(!first["messages"][0]["content"].as_str().unwrap().contains("Company skills"));
}

#[test]
fn a_runner_fetches_the_workspaces_skills_for_the_turn_it_holds() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    put(
        &app,
        &ada,
        json!({"name": "release-notes", "skill_md": SKILL_MD, "files": {"templates/entry.md": "- {title}"}}),
    );
    let r = app.request("POST", "/v1/runners", Some(&ada.key), Some(json!({"name": "laptop"})));
    let token = r.json_body()["token"].as_str().unwrap().to_owned();
    let agent = json!({"name": "Coder", "harness": "runner", "model": "claude", "instructions": "Write code."});
    let agent_id = app.request("POST", "/v1/agents", Some(&ada.key), Some(agent)).json_body()["agent_id"].clone();
    app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "go", "idempotency_key": "k"}));
    app.settle();
    let runner =
        |method: &str, path: &str, body: Value| app.send(crate::support::runner_request(&token, method, path, body));
    let claim = runner("POST", "/v1/runner/claim", json!({})).json_body();
    let lease = claim["lease_id"].as_str().unwrap();
    let got = runner("GET", &format!("/v1/runner/skills?lease_id={lease}"), json!({}));
    assert_eq!(got.status, 200, "{:?}", got.json_body());
    let skills = got.json_body()["skills"].clone();
    assert_eq!(skills[0]["name"], "release-notes");
    assert_eq!(skills[0]["skill_md"], SKILL_MD);
    assert_eq!(skills[0]["files"], json!({"templates/entry.md": "- {title}"}));
    assert_eq!(
        runner("GET", "/v1/runner/skills?lease_id=lease_nope", json!({})).status / 100,
        4,
        "only for a lease it holds"
    );
}

mod console {
    use super::{put, SKILL_MD};
    use crate::support::{browser_request as request, form_body as form, TestApp};
    use serde_json::json;

    const ORIGIN: &str = "http://127.0.0.1:8787";

    fn sign_in(app: &TestApp, key: &str) -> String {
        let r = app.send(request("POST", "/console/login", None, &form(&[("key", key)]), Some(ORIGIN)));
        assert_eq!(r.status, 303);
        r.header("set-cookie").unwrap().split(';').next().unwrap().to_owned()
    }

    fn get(app: &TestApp, cookie: &str, path: &str) -> (u16, String) {
        let r = app.send(request("GET", path, Some(cookie), "", None));
        (r.status, String::from_utf8_lossy(&r.body).into_owned())
    }

    fn csrf(html: &str) -> String {
        let at = html.find("name=\"csrf\" value=\"").expect("a form with a csrf field") + 19;
        html[at..at + 64].to_owned()
    }

    #[test]
    fn the_skills_page_lists_shows_adds_edits_and_deletes_skills() {
        let app = TestApp::new();
        let ada = app.signup("Ada", "ada@example.com");
        put(&app, &ada, json!({"name": "release-notes", "skill_md": SKILL_MD}));
        let cookie = sign_in(&app, &ada.key);
        let base = format!("/console/w/{}", ada.slug);
        let (status, html) = get(&app, &cookie, &format!("{base}/skills"));
        assert_eq!(status, 200, "{html}");
        assert!(html.contains("data-skill=\"release-notes\"") && html.contains("Write release notes"), "{html}");
        assert!(html.contains(&format!("href=\"{base}/skills\"")), "the navigation links the page");

        let token = csrf(&html);
        let md = "---\nname: on-call\ndescription: \"<b>Page</b> the on-call engineer.\"\n---\nCall them.\n";
        let fields = [
            ("csrf", token.as_str()),
            ("workspace", ada.slug.as_str()),
            ("name", "on-call"),
            ("skill_md", md),
            ("files", ""),
        ];
        let r = app.send(request("POST", &format!("{base}/op/put_skill"), Some(&cookie), &form(&fields), Some(ORIGIN)));
        assert_eq!(r.status, 303);
        assert_eq!(app.ok(&ada.key, "get_skill", json!({"name": "on-call"}))["skill_md"], md, "saved from the form");
        let (_, one) = get(&app, &cookie, &format!("{base}/skills/on-call"));
        assert!(one.contains("&lt;b&gt;Page&lt;/b&gt; the on-call engineer."), "escaped: {one}");
        assert!(one.contains("data-skill-form"), "an owner can edit it");

        let fields = [("csrf", token.as_str()), ("workspace", ada.slug.as_str()), ("name", "on-call")];
        let r =
            app.send(request("POST", &format!("{base}/op/delete_skill"), Some(&cookie), &form(&fields), Some(ORIGIN)));
        assert_eq!(r.status, 303);
        let names: Vec<Value> = app.ok(&ada.key, "list_skills", json!({}))["skills"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k["name"].clone())
            .collect();
        assert_eq!(names, [json!("release-notes")]);

        // Without the csrf token nothing happens.
        let fields = [("workspace", ada.slug.as_str()), ("name", "release-notes")];
        let r =
            app.send(request("POST", &format!("{base}/op/delete_skill"), Some(&cookie), &form(&fields), Some(ORIGIN)));
        assert_ne!(r.status / 100, 2);
        assert_eq!(app.ok(&ada.key, "list_skills", json!({}))["skills"].as_array().unwrap().len(), 1);
    }

    use serde_json::Value;
}
