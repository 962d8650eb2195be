//! The session server: the eleven agent tools over `/v1/session/mcp` with a session token, and the
//! operator's side (targets, policies, answer_request).

use crate::support::{Account, TestApp};
use serde_json::{json, Value};

fn app() -> TestApp {
    TestApp::with_secrets()
}

/// An account, an echo agent, a session in a new task, and the session's token.
fn setup(app: &TestApp) -> (Account, String, String, String) {
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "m"}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "build it", "idempotency_key": "s1"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    (ada, agent_id, sid, token)
}

fn connect(app: &TestApp, who: &Account, name: &str, provider: &str, env: &str) -> String {
    let r = app.request(
        "POST",
        "/v1/connectors",
        Some(&who.key),
        Some(json!({
            "name": name, "provider": provider, "env": env,
            "credentials": {"env": {"VERCEL_TOKEN": "vt-secret-1"}}
        })),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    r.json_body()["connector_id"].as_str().unwrap().to_owned()
}

#[test]
fn the_session_server_lists_the_eleven_tools_and_refuses_bad_tokens() {
    let app = app();
    let (ada, _, sid, token) = setup(&app);
    let list = |token: &str| app.mcp_post("/v1/session/mcp", Some(token), "203.0.113.7", "tools/list", json!({}));
    let tools = list(&token).json_body();
    let names: Vec<&str> =
        tools["result"]["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "request_access",
            "check_grant",
            "get_credential",
            "list_targets",
            "report_status",
            "ask_user",
            "withdraw_request",
            "list_sessions",
            "project_activity",
            "send_message",
            "remember_command",
            "land"
        ]
    );
    // The harness offers its model the same declarations.
    let specs: Vec<Value> = agentsky::agent::function_specs()
        .into_iter()
        .map(|f| {
            json!({"name": f["function"]["name"], "description": f["function"]["description"],
            "inputSchema": f["function"]["parameters"]})
        })
        .collect();
    assert_eq!(tools["result"]["tools"].as_array().unwrap(), &specs);
    let text = |name: &str| specs.iter().find(|t| t["name"] == name).unwrap()["description"].clone();
    assert_eq!(text("check_grant"), "Check, and wait up to 5 minutes for, the outcome of an access request.");
    assert_eq!(list("sst_nope").status, 401);
    assert_eq!(list(&ada.key).status, 401, "an API key is not a session token");
    app.ok(&ada.key, "stop_session", json!({"session_id": sid}));
    assert_eq!(list(&token).status, 401, "dead once the session ended");
}

#[test]
fn access_is_decided_by_a_person_by_policies_and_expires() {
    let app = app();
    let (ada, _, sid, token) = setup(&app);
    connect(&app, &ada, "web", "vercel", "prod");
    let con = connect(&app, &ada, "site", "vercel", "preview");
    app.request(
        "POST",
        "/v1/connectors",
        Some(&ada.key),
        Some(json!({"name": "db", "provider": "supabase", "env": "prod"})),
    );

    let targets = app.agent_ok(&token, "list_targets", json!({}));
    let lock =
        |t: &Value, name: &str| t.as_array().unwrap().iter().find(|x| x["name"] == name).unwrap()["lockState"].clone();
    assert_eq!((lock(&targets, "web"), lock(&targets, "db")), (json!("locked"), json!("unconnected")));
    assert!(app
        .agent_err(&token, "request_access", json!({"target": "db", "scope": ["read"], "reason": "r"}))
        .contains("connect it in agentsky"));
    assert!(app
        .agent_err(&token, "request_access", json!({"target": "nope", "scope": ["read"], "reason": "r"}))
        .contains("no target"));
    assert!(app
        .agent_err(&token, "request_access", json!({"target": "vercel", "scope": ["read"], "reason": "r"}))
        .contains("several targets"));
    assert!(app
        .agent_err(&token, "request_access", json!({"target": "web", "scope": [], "reason": "r"}))
        .contains("(code -32602)"));

    // A person decides: the request waits, shows on the task, and is answered.
    let pending = app.agent_ok(
        &token,
        "request_access",
        json!({"target": "vercel:prod", "scope": ["deploy"], "reason": "ship the fix"}),
    );
    assert_eq!((pending["status"].as_str(), pending["queuePosition"].as_i64()), (Some("pending"), Some(1)));
    let grant_id = pending["grantId"].as_str().unwrap().to_owned();
    let task = app.ok(&ada.key, "get_task", json!({"task_id": sid}));
    assert_eq!(task["waiting_on"], "you");
    let req = &task["open_requests"][0];
    assert_eq!((req["kind"].as_str(), req["payload"]["reason"].as_str()), (Some("access"), Some("ship the fix")));
    let answered = app.ok(
        &ada.key,
        "answer_request",
        json!({"task_id": sid, "request_id": req["request_id"], "answer": "approve", "expires_in_minutes": 10}),
    );
    assert_eq!(answered["grant"]["status"], "active");
    let active = app.agent_ok(&token, "check_grant", json!({"grantId": grant_id}));
    assert_eq!(
        (active["status"].as_str(), active["decidedBy"].as_str(), active["scope"].clone()),
        (Some("active"), Some("user"), json!(["deploy"]))
    );
    assert_eq!(lock(&app.agent_ok(&token, "list_targets", json!({})), "web"), json!("open"));
    // Asking again for what a live grant covers is answered by that grant, without a new request.
    let again =
        app.agent_ok(&token, "request_access", json!({"target": "web", "scope": ["deploy"], "reason": "again"}));
    assert_eq!((again["grantId"].as_str(), again["decidedBy"].as_str()), (Some(grant_id.as_str()), Some("user")));
    assert_eq!(app.ok(&ada.key, "get_task", json!({"task_id": sid}))["open_requests"], json!([]));
    let cred = app.agent_ok(&token, "get_credential", json!({"grantId": grant_id}));
    assert_eq!(
        (cred["kind"].as_str(), cred["env"]["VERCEL_TOKEN"].as_str(), cred["scoped"].as_bool()),
        (Some("env"), Some("vt-secret-1"), Some(false))
    );
    let audit = app.request("GET", "/v1/audit", Some(&ada.key), None).json_body();
    assert_eq!(audit["entries"][0]["action"], "get_credential");
    assert_eq!(
        app.err_code(
            &ada.key,
            "answer_request",
            json!({"task_id": sid, "request_id": req["request_id"], "answer": "deny"})
        ),
        "conflict"
    );

    // Expired: refused.
    app.advance(11 * 60_000);
    assert!(app.agent_err(&token, "get_credential", json!({"grantId": grant_id})).contains("not active"));
    assert_eq!(
        app.agent_ok(&token, "check_grant", json!({"grantId": grant_id}))["status"],
        "expired",
        "past its time: expired, not denied"
    );

    // A target policy decides without a person; a workspace policy denies.
    app.request(
        "PUT",
        "/v1/policies",
        Some(&ada.key),
        Some(json!({"connector_id": con, "scope": "read", "decision": "allow"})),
    );
    let by_policy =
        app.agent_ok(&token, "request_access", json!({"target": "site", "scope": ["read"], "reason": "look"}));
    assert_eq!(
        (by_policy["status"].as_str(), by_policy["decidedBy"].as_str()),
        (Some("active"), Some("target-policy"))
    );
    app.request("PUT", "/v1/policies", Some(&ada.key), Some(json!({"scope": "delete", "decision": "deny"})));
    let denied =
        app.agent_ok(&token, "request_access", json!({"target": "web", "scope": ["delete"], "reason": "clean"}));
    assert_eq!(denied["status"], "denied");
    assert!(app.agent_err(&token, "get_credential", json!({"grantId": denied["grantId"]})).contains("not active"));
    assert!(app
        .agent_err(&token, "check_grant", json!({"grantId": "gr_00000000000000000000000000"}))
        .contains("unknown grant"));
}

#[test]
fn an_always_grant_decides_later_requests_as_a_persistent_grant() {
    let app = app();
    let (ada, agent, sid, token) = setup(&app);
    connect(&app, &ada, "web", "vercel", "prod");
    let pending =
        app.agent_ok(&token, "request_access", json!({"target": "web", "scope": ["read", "deploy"], "reason": "r"}));
    let req = app.ok(&ada.key, "get_task", json!({"task_id": sid}))["open_requests"][0]["request_id"].clone();
    app.ok(&ada.key, "answer_request", json!({"task_id": sid, "request_id": req, "answer": "approve", "always": true}));
    let g = app.agent_ok(&token, "check_grant", json!({"grantId": pending["grantId"]}));
    assert!(g["expiresAt"].is_null(), "an always grant does not expire");
    // Another session of the workspace asks for a subset: the persistent grant answers.
    let other = app.ok(&ada.key, "start_session", json!({"agent_id": agent, "message": "x", "idempotency_key": "s2"}));
    let t2 = app.session_token(&ada.key, other["session"]["session_id"].as_str().unwrap());
    let reused = app.agent_ok(&t2, "request_access", json!({"target": "web", "scope": ["deploy"], "reason": "r"}));
    assert_eq!((reused["status"].as_str(), reused["decidedBy"].as_str()), (Some("active"), Some("persistent-grant")));
    let targets = app.agent_ok(&t2, "list_targets", json!({}));
    assert_eq!(targets[0]["lockState"], "persistent");

    // Revoked by an operator: refused from the next call on, for every session it answered.
    let listed = app.request("GET", "/v1/grants", Some(&ada.key), None).json_body();
    let always = listed["grants"].as_array().unwrap().iter().find(|g| g["persistent"] == true).unwrap().clone();
    assert_eq!(always["grant_id"], pending["grantId"]);
    let id = always["grant_id"].as_str().unwrap();
    let bo = app.signup("Bo", "bo@example.com");
    assert_eq!(app.request("DELETE", &format!("/v1/grants/{id}"), Some(&bo.key), None).status, 404, "not his");
    let revoked = app.request("DELETE", &format!("/v1/grants/{id}"), Some(&ada.key), None);
    assert_eq!(revoked.json_body(), json!({"grant_id": id, "revoked": true}));
    assert_eq!(app.agent_ok(&t2, "check_grant", json!({"grantId": id}))["status"], "denied");
    assert!(app.agent_err(&t2, "get_credential", json!({"grantId": id})).contains("not active"));
    assert_eq!(app.agent_ok(&t2, "list_targets", json!({}))[0]["lockState"], "locked");
    assert_eq!(app.request("DELETE", &format!("/v1/grants/{id}"), Some(&ada.key), None).status, 404, "once");
    let audit = app.request("GET", "/v1/audit", Some(&ada.key), None).json_body();
    assert_eq!(audit["entries"][0]["action"], "revoked");
}

#[test]
fn the_sixth_access_request_in_a_minute_is_refused() {
    let app = app();
    let (ada, _, _, token) = setup(&app);
    connect(&app, &ada, "web", "vercel", "prod");
    for _ in 0..5 {
        app.agent_ok(&token, "request_access", json!({"target": "web", "scope": ["read"], "reason": "r"}));
    }
    app.advance(1_500);
    let err = app.agent_err(&token, "request_access", json!({"target": "web", "scope": ["read"], "reason": "r"}));
    assert_eq!(err, "too many access requests (5 a minute); try again in 58.5 s (code -32003)");
    // remember_command answers agentsky's own question: not an access request, so not refused for this.
    let err = app.agent_err(&token, "remember_command", json!({"kind": "checks", "command": "make test"}));
    assert!(err.contains("did not ask this task") && !err.contains("-32003"), "{err}");
    app.advance(58_500);
    app.agent_ok(&token, "request_access", json!({"target": "web", "scope": ["read"], "reason": "r"}));
}

#[test]
fn ask_user_shows_as_an_open_request_and_times_out_unanswered() {
    let app = app();
    let (ada, _, sid, token) = setup(&app);
    let err = app.agent_err(
        &token,
        "ask_user",
        json!({"kind": "decision", "payload": {"prompt": "Which db?", "options": ["pg", "sqlite"]}}),
    );
    assert_eq!(err, "timed out waiting for the user (code -32004)");
    assert!(app
        .agent_err(&token, "ask_user", json!({"kind": "poll", "payload": {}}))
        .contains("must be one of plan, decision, question"));
    assert!(app
        .agent_err(&token, "ask_user", json!({"kind": "plan", "payload": {"files": []}}))
        .contains("payload.summary"));
    assert_eq!(
        app.ok(&ada.key, "get_task", json!({"task_id": sid}))["open_requests"],
        json!([]),
        "timed out: no longer open"
    );
}

#[test]
fn report_status_shows_on_the_session() {
    let app = app();
    let (ada, _, sid, token) = setup(&app);
    assert_eq!(
        app.agent_ok(&token, "report_status", json!({"note": "Applying migration 0042 to prod"})),
        json!({"ok": true})
    );
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["note"], "Applying migration 0042 to prod");
    assert!(app.agent_err(&token, "report_status", json!({"note": "x".repeat(201)})).contains("-32602"));
    app.agent_ok(&token, "report_status", json!({"note": ""}));
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["note"], "");
}

/// Two sessions in one task with lanes; returns (account, first, second, their tokens).
fn two_lanes(app: &TestApp) -> (Account, String, String, String, String) {
    let (ada, agent, sid, token) = setup(app);
    let r = app.request("PUT", &format!("/v1/tasks/{sid}/settings"), Some(&ada.key), Some(json!({"lanes": true})));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let other = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent, "message": "review it", "idempotency_key": "s2", "task_id": sid}),
    );
    let sid2 = other["session"]["session_id"].as_str().unwrap().to_owned();
    let t2 = app.session_token(&ada.key, &sid2);
    app.settle();
    (ada, sid, sid2, token, t2)
}

fn agent_write(app: &TestApp, who: &Account, sid: &str, path: &str, text: &str) {
    app.ok(&who.key, "send_message", json!({"session_id": sid, "message": format!("/write {path} {text}"), "idempotency_key": format!("w-{sid}-{path}-{text}")}));
    app.settle();
}

#[test]
fn two_lanes_see_overlaps_one_lands_the_other_is_behind_then_conflicts() {
    let app = app();
    let (ada, a, b, ta, tb) = two_lanes(&app);
    agent_write(&app, &ada, &a, "app.rs", "fn a() {}");
    agent_write(&app, &ada, &b, "app.rs", "fn b() {}");
    agent_write(&app, &ada, &b, "notes.md", "b's notes");

    let seen = app.agent_ok(&ta, "list_sessions", json!({}));
    let me = seen.as_array().unwrap().iter().find(|s| s["self"] == true).unwrap();
    let peer = seen.as_array().unwrap().iter().find(|s| s["self"] == false).unwrap();
    assert_eq!((me["files"].clone(), peer["files"].clone()), (json!(["app.rs"]), json!(["app.rs", "notes.md"])));
    assert_eq!(peer["overlapsWithYou"], json!(["app.rs"]));
    assert_eq!(peer["branch"], format!("lane/{b}"));
    let activity = app.agent_ok(&ta, "project_activity", json!({}));
    assert_eq!(activity["overlaps"][0]["file"], "app.rs");
    assert_eq!(activity["behind"], 0);
    // The base does not have lane writes until they land.
    assert_eq!(app.err_code(&ada.key, "read_task_file", json!({"task_id": a, "path": "app.rs"})), "not_found");

    // First landing: no checks known yet, so the agent is asked for them.
    let first = app.agent_ok(&ta, "land", json!({"summary": "Add a()"}));
    assert_eq!(first["landed"], false);
    assert!(first["reason"].as_str().unwrap().contains("remember_command"));
    app.agent_ok(&ta, "remember_command", json!({"kind": "checks", "command": "cargo test"}));
    // These sessions run no runner: the checks run on one of the workspace's.
    crate::lanes::checker(&app, &ada.key, 0);
    let landed = app.agent_ok(&ta, "land", json!({"summary": "Add a()\n\nThe first function."}));
    assert_eq!(landed["landed"], true, "{landed}");
    assert!(landed["steps"].as_array().unwrap().iter().any(|s| s.as_str().unwrap().contains("cargo test")));
    assert_eq!(app.ok(&ada.key, "read_task_file", json!({"task_id": a, "path": "app.rs"}))["content"], "fn a() {}");
    let project = app.ok(&ada.key, "read_task_file", json!({"task_id": a, "path": ".agentsky/project.json"}))
        ["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(project.contains("\"cargo test\""));
    assert_eq!(
        app.agent_ok(&ta, "land", json!({"summary": "again"}))["reason"],
        "there is nothing to land: this lane has no changes against the base"
    );

    // The other lane is behind, sees the landing, and conflicts on the file both changed.
    let behind = app.agent_ok(&tb, "project_activity", json!({}));
    assert_eq!(behind["behind"], 2, "the project file and the landing");
    let landing = behind["baseCommits"].as_array().unwrap().iter().find(|c| c["subject"] == "Add a()").unwrap().clone();
    assert_eq!(
        (landing["files"].clone(), landing["lane"]["branch"].clone()),
        (json!(["app.rs"]), json!(format!("lane/{a}")))
    );
    let conflict = app.agent_ok(&tb, "land", json!({"summary": "Add b()"}));
    assert_eq!(conflict["landed"], false);
    assert!(conflict["reason"].as_str().unwrap().contains("app.rs"), "{conflict}");
    assert_eq!(conflict["conflicts"][0]["kind"], "added_in_both", "{conflict}");
    assert_eq!(conflict["conflicts"][0]["regions"][0]["base"]["text"], "fn a() {}");
}

#[test]
fn remember_command_is_refused_unless_asked_and_when_it_holds_a_secret() {
    let app = app();
    let (ada, sid, _, token, _) = two_lanes(&app);
    assert!(app
        .agent_err(&token, "remember_command", json!({"kind": "run", "command": "npm run dev"}))
        .contains("give the command to the user"));
    let asked = app.request("POST", &format!("/v1/sessions/{sid}/ask"), Some(&ada.key), Some(json!({"kind": "run"})));
    assert_eq!(asked.status, 200, "{:?}", asked.json_body());
    // The agent is asked, in a session of the same task: the person's own session keeps what it was doing.
    let asked = asked.json_body();
    let helper = asked["asked_session_id"].as_str().unwrap().to_owned();
    assert_ne!(helper, sid);
    let row = app.ok(&ada.key, "get_session", json!({"session_id": helper}));
    assert_eq!((row["task_id"].as_str(), row["relation"].as_str()), (Some(sid.as_str()), Some("helper")), "{row}");
    let first = app.ok(&ada.key, "read_session", json!({"session_id": helper}))["events"][0]["text"].clone();
    assert!(first.as_str().unwrap().starts_with("agentsky asks: work out how to run this project locally"), "{first}");
    let again = app.request("POST", &format!("/v1/sessions/{sid}/ask"), Some(&ada.key), Some(json!({"kind": "run"})));
    assert_eq!(again.json_body()["asked_session_id"], helper.as_str(), "a second click is the same ask");
    assert!(app
        .agent_err(&token, "remember_command", json!({"kind": "run", "command": "API_TOKEN=abc npm run dev"}))
        .contains("secret"));
    app.agent_ok(
        &token,
        "remember_command",
        json!({"kind": "run", "command": "npm run dev", "url": "http://localhost:3000"}),
    );
    let project = app.ok(&ada.key, "read_task_file", json!({"task_id": sid, "path": ".agentsky/project.json"}))
        ["content"]
        .as_str()
        .unwrap()
        .to_owned();
    let project: Value = serde_json::from_str(&project).unwrap();
    assert_eq!(project["dev"], json!({"command": "npm run dev", "url": "http://localhost:3000"}));
    // The asked session teaches it too: the command is the task's.
    let helper_token = app.session_token(&ada.key, &helper);
    app.agent_ok(&helper_token, "remember_command", json!({"kind": "run", "command": "npm start"}));
}

#[test]
fn peers_message_each_other_within_their_task_only() {
    let app = app();
    let (ada, a, b, ta, tb) = two_lanes(&app);
    assert_eq!(
        app.agent_ok(&ta, "send_message", json!({"to": b, "body": "I took app.rs"})),
        json!({"delivered": true})
    );
    let events = app.ok(&ada.key, "read_session", json!({"session_id": b}));
    let note = events["events"].as_array().unwrap().iter().rev().find(|e| e["type"] == "user_message").unwrap().clone();
    assert_eq!(
        (note["text"].as_str(), note["from"]["peer"]["session_id"].as_str()),
        (Some("I took app.rs"), Some(a.as_str()))
    );
    assert!(app.agent_err(&ta, "send_message", json!({"to": a, "body": "me"})).contains("you"));
    assert!(app.agent_err(&ta, "send_message", json!({"to": b, "body": ""})).contains("-32602"));
    // A session of another task is unknown to it.
    let (_, _, outsider, _) = {
        let bo = app.signup("Bo", "bo@example.com");
        let agent_id = app.create_agent(&bo.key, json!({"name": "X", "harness": "echo", "model": "m"}));
        let s =
            app.ok(&bo.key, "start_session", json!({"agent_id": agent_id, "message": "x", "idempotency_key": "x1"}));
        (bo, agent_id, s["session"]["session_id"].as_str().unwrap().to_owned(), ())
    };
    assert!(app.agent_err(&ta, "send_message", json!({"to": outsider, "body": "hi"})).contains("no session"));
    app.ok(&ada.key, "stop_session", json!({"session_id": b}));
    assert!(app.agent_err(&ta, "send_message", json!({"to": b, "body": "hi"})).contains("ended"));
    let _ = tb;
}

/// One case of the precedence table: the target's own rules, the workspace-wide rules, what is asked,
/// and the answer (`status`, `decidedBy`).
type PolicyCase = (
    &'static [(&'static str, &'static str)],
    &'static [(&'static str, &'static str)],
    &'static [&'static str],
    &'static str,
    Option<&'static str>,
);

#[test]
fn the_most_specific_policy_decides_each_scope_and_the_answer_names_it() {
    const CASES: &[PolicyCase] = &[
        // The issue: a workspace-wide allow must not override the target's own ask.
        (&[("deploy", "ask")], &[("deploy", "allow")], &["deploy"], "pending", None),
        (&[], &[("deploy", "allow")], &["deploy"], "active", Some("policy")),
        (&[("deploy", "allow")], &[], &["deploy"], "active", Some("target-policy")),
        // The target's rule wins in both directions.
        (&[("deploy", "allow")], &[("deploy", "deny")], &["deploy"], "active", Some("target-policy")),
        (&[("deploy", "deny")], &[("deploy", "allow")], &["deploy"], "denied", Some("target-policy")),
        (&[("deploy", "ask")], &[("deploy", "deny")], &["deploy"], "pending", None),
        // Mixed scopes: each scope by its most specific rule; all must allow, one deny refuses.
        (&[("read", "allow")], &[("deploy", "allow")], &["read", "deploy"], "active", Some("policy")),
        (
            &[("read", "allow"), ("deploy", "allow")],
            &[("read", "deny")],
            &["read", "deploy"],
            "active",
            Some("target-policy"),
        ),
        (&[("read", "ask")], &[("read", "allow"), ("deploy", "allow")], &["read", "deploy"], "pending", None),
        (&[("read", "allow")], &[("deploy", "deny")], &["read", "deploy"], "denied", Some("policy")),
        (&[("deploy", "deny")], &[("read", "deny")], &["read", "deploy"], "denied", Some("target-policy")),
        (&[("read", "ask")], &[("deploy", "deny")], &["read", "deploy"], "denied", Some("policy")),
        // A scope without any rule is a person's to decide.
        (&[("read", "allow")], &[], &["read", "deploy"], "pending", None),
        (&[], &[], &["read"], "pending", None),
    ];
    for (i, (target, workspace, scopes, status, by)) in CASES.iter().enumerate() {
        let app = app();
        let (ada, _, _, token) = setup(&app);
        let web = connect(&app, &ada, "web", "vercel", "prod");
        let set = |connector: Option<&str>, scope: &str, decision: &str| {
            let mut body = json!({"scope": scope, "decision": decision});
            if let Some(c) = connector {
                body["connector_id"] = json!(c);
            }
            let r = app.request("PUT", "/v1/policies", Some(&ada.key), Some(body));
            assert_eq!(r.status, 200, "{:?}", r.json_body());
        };
        for (scope, decision) in target.iter() {
            set(Some(&web), scope, decision);
        }
        for (scope, decision) in workspace.iter() {
            set(None, scope, decision);
        }
        let answer = app.agent_ok(&token, "request_access", json!({"target": "web", "scope": scopes, "reason": "r"}));
        let case = format!("case {i}: target {target:?}, workspace {workspace:?}, asking {scopes:?}: {answer}");
        assert_eq!(answer["status"], *status, "{case}");
        assert_eq!(answer["decidedBy"].as_str(), *by, "{case}");
    }
}

#[test]
fn a_workspace_wide_allow_of_every_scope_shows_a_target_as_persistent_unless_its_own_rule_asks() {
    let app = app();
    let (ada, _, _, token) = setup(&app);
    let web = connect(&app, &ada, "web", "vercel", "prod");
    connect(&app, &ada, "site", "vercel", "preview");
    for scope in ["read", "write", "deploy", "delete"] {
        app.request("PUT", "/v1/policies", Some(&ada.key), Some(json!({"scope": scope, "decision": "allow"})));
    }
    app.request(
        "PUT",
        "/v1/policies",
        Some(&ada.key),
        Some(json!({"connector_id": web, "scope": "deploy", "decision": "ask"})),
    );
    let targets = app.agent_ok(&token, "list_targets", json!({}));
    let lock =
        |name: &str| targets.as_array().unwrap().iter().find(|t| t["name"] == name).unwrap()["lockState"].clone();
    assert_eq!((lock("site"), lock("web")), (json!("persistent"), json!("locked")));
}

/// Ada owns `acme`, where Bo is a member and Cy an admin; a session there waits on an access request for
/// `deploy` on `web`. Returns the three accounts, the session and its token.
fn acme_with_a_request(app: &TestApp) -> (Account, Account, Account, String, String) {
    let ada = app.signup("Ada", "ada@example.com");
    let (bo, cy) = (app.signup("Bo", "bo@example.com"), app.signup("Cy", "cy@example.com"));
    app.shared_workspace(&ada, "acme");
    app.join(&ada, "acme", &bo, "member");
    app.join(&ada, "acme", &cy, "admin");
    let agent_id =
        app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "m", "workspace": "acme"}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "ship", "idempotency_key": "s1", "workspace": "acme"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    let r = app.request(
        "POST",
        "/v1/connectors",
        Some(&ada.key),
        Some(json!({"name": "web", "provider": "vercel", "env": "prod", "workspace": "acme",
            "credentials": {"env": {"VERCEL_TOKEN": "vt-secret-1"}}})),
    );
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    (ada, bo, cy, sid, token)
}

fn open_request(app: &TestApp, token: &str, key: &str, sid: &str) -> (Value, Value) {
    let pending = app.agent_ok(token, "request_access", json!({"target": "web", "scope": ["deploy"], "reason": "r"}));
    assert_eq!(pending["status"], "pending", "{pending}");
    let req = app.ok(key, "get_task", json!({"task_id": sid}))["open_requests"][0]["request_id"].clone();
    (pending["grantId"].clone(), req)
}

#[test]
fn a_member_approves_once_within_a_day_and_only_owners_and_admins_approve_always() {
    let app = app();
    let (ada, bo, cy, sid, token) = acme_with_a_request(&app);
    let (grant, req) = open_request(&app, &token, &bo.key, &sid);
    let answer = |key: &str, extra: Value| {
        let mut body = json!({"answer": "approve"});
        body.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        app.request(
            "POST",
            &format!("/v1/tasks/{sid}/requests/{}/answer", req.as_str().unwrap()),
            Some(key),
            Some(body),
        )
    };

    // A member cannot make a persistent grant, and cannot approve for longer than a day.
    let always = answer(&bo.key, json!({"always": true}));
    assert_eq!((always.status, always.json_body()["error"]["code"].as_str()), (403, Some("forbidden")));
    let why = always.json_body()["error"]["message"].as_str().unwrap().to_owned();
    assert!(why.contains("`always`") && why.contains("owner or admin"), "{why}");
    let long = answer(&bo.key, json!({"expires_in_minutes": 1441}));
    assert_eq!(long.status, 400);
    assert!(long.json_body()["error"]["message"].as_str().unwrap().contains("`expires_in_minutes`"));
    // Nothing was decided by the refused answers.
    assert_eq!(app.agent_ok(&token, "check_grant", json!({"grantId": grant}))["status"], "pending");

    // Once, with the default expiry of an hour.
    let once = answer(&bo.key, json!({}));
    assert_eq!(once.status, 200, "{:?}", once.json_body());
    let g = app.agent_ok(&token, "check_grant", json!({"grantId": grant}));
    assert_eq!((g["status"].as_str(), g["expiresAt"].as_i64()), (Some("active"), Some(app.now_ms.get() + 60 * 60_000)));
    let listed = app.request("GET", "/v1/grants?workspace=acme", Some(&ada.key), None).json_body();
    assert_eq!(listed["grants"][0]["persistent"], false);

    // An admin and an owner may approve always.
    app.advance(2 * 60 * 60_000);
    for who in [&cy, &ada] {
        let (grant, req) = open_request(&app, &token, &who.key, &sid);
        let r = app.request(
            "POST",
            &format!("/v1/tasks/{sid}/requests/{}/answer", req.as_str().unwrap()),
            Some(&who.key),
            Some(json!({"answer": "approve", "always": true})),
        );
        assert_eq!(r.status, 200, "{:?}", r.json_body());
        let g = app.agent_ok(&token, "check_grant", json!({"grantId": grant}));
        assert!(g["expiresAt"].is_null(), "{g}");
        app.request("DELETE", &format!("/v1/grants/{}?workspace=acme", grant.as_str().unwrap()), Some(&ada.key), None);
    }
}

#[test]
fn only_owners_and_admins_change_policies() {
    let app = app();
    let (ada, bo, cy, _, _) = acme_with_a_request(&app);
    let set = |who: &Account| {
        app.request(
            "PUT",
            "/v1/policies",
            Some(&who.key),
            Some(json!({"scope": "deploy", "decision": "allow", "workspace": "acme"})),
        )
        .status
    };
    assert_eq!((set(&bo), set(&cy), set(&ada)), (403, 200, 200));
}

#[test]
fn a_storage_failure_in_a_session_tool_names_only_the_request_id() {
    let app = app();
    let (_ada, _agent, _sid, token) = setup(&app);
    app.db.0.execute_batch("ALTER TABLE connector RENAME TO connector_gone").unwrap();
    let text = app.agent_err(&token, "list_targets", json!({}));
    assert_eq!(text, "internal error; request id req_test (code -32603)");
}

/// `ask_user` by a client that asked for progress: told every 15 s that the call still waits (so its own
/// timeout starts again), then the person's answer; a client that did not ask waits once, silently.
#[test]
fn a_wait_keeps_a_client_that_asked_for_progress_alive_until_the_answer() {
    use crate::support::{runner_request, HostSessions};
    use std::{cell::Cell, rc::Rc};
    let app = app();
    let (ada, _, sid, token) = setup(&app);
    let waits = Rc::new(Cell::new(0));
    let (seen, key, task) = (waits.clone(), ada.key.clone(), sid.clone());
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, request_id: String| {
        let (seen, key, task) = (seen.clone(), key.clone(), task.clone());
        Box::pin(async move {
            seen.set(seen.get() + 1);
            if seen.get() == 3 {
                let path = format!("/v1/tasks/{task}/requests/{request_id}/answer");
                let r = sessions.handle(runner_request(&key, "POST", &path, json!({"answer": "pg"}))).await;
                assert_eq!(r.status, 200, "{:?}", r.json_body());
            }
        })
    }));
    let ask = json!({"kind": "decision", "payload": {"prompt": "Which db?", "options": ["pg", "sqlite"]}});
    let params = json!({"name": "ask_user", "arguments": ask, "_meta": {"progressToken": "t1"}});
    let r = app.mcp_post("/v1/session/mcp", Some(&token), "203.0.113.7", "tools/call", params);
    let body = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!(r.header("content-type"), Some("text/event-stream"), "{body}");
    let messages: Vec<Value> = body
        .split("\n\n")
        .filter_map(|e| e.strip_prefix("event: message\ndata: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    assert_eq!(messages.len(), 3, "two keep-alives, then the result: {body}");
    for (n, m) in messages[..2].iter().enumerate() {
        assert_eq!(m["method"], "notifications/progress");
        assert_eq!(m["params"]["progressToken"], "t1");
        assert_eq!(m["params"]["progress"], json!(15.0 * (n + 1) as f64), "{m}");
        assert_eq!(m["params"]["total"], json!(300.0));
        assert!(m["params"]["message"].as_str().unwrap().starts_with("waiting for a person to answer request req_"));
    }
    let result = &messages[2]["result"];
    assert_eq!(result["structuredContent"]["resolution"]["answer"], "pg", "{result}");
    assert_eq!(waits.get(), 3);
    // Without a progress token: one wait of the whole 5 minutes, no stream.
    waits.set(10);
    let again = json!({"kind": "question", "payload": {"prompt": "Anything else?"}});
    let r = app.mcp_post(
        "/v1/session/mcp",
        Some(&token),
        "203.0.113.7",
        "tools/call",
        json!({"name": "ask_user", "arguments": again}),
    );
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(waits.get(), 11, "one wait");
    assert!(r.json_body()["result"]["content"][0]["text"].as_str().unwrap().contains("timed out waiting for the user"));
}
