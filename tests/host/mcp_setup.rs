//! Setting a workspace up from an MCP client alone (issue 36): a target and its credentials, a policy, the
//! model's secrets, a task's settings and a session token are tools, with the roles REST has, and no
//! secret is ever echoed back.

use crate::support::TestApp;
use serde_json::json;

#[test]
fn an_owner_sets_everything_up_over_mcp_and_a_member_is_refused_what_rest_refuses() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let web = app.ok(
        &ada.key,
        "connect_target",
        json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": "vt-secret-value"}}}),
    );
    assert!(!web.to_string().contains("vt-secret-value"), "credentials are never echoed: {web}");
    let id = web["connector_id"].as_str().unwrap().to_owned();
    // Connecting the same name again replaces its credentials and keeps the target.
    let again = app.ok(
        &ada.key,
        "connect_target",
        json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": "vt-new"}}}),
    );
    assert_eq!(again["connector_id"], id.as_str());
    let policy = app.ok(&ada.key, "set_policy", json!({"connector_id": id, "scope": "read", "decision": "allow"}));
    assert_eq!(policy["decision"], "allow");
    let listed = app.ok(&ada.key, "list_connectors", json!({}));
    assert!(listed.to_string().contains("\"web\"") && !listed.to_string().contains("vt-new"), "{listed}");
    app.ok(&ada.key, "put_secret", json!({"name": "OPENAI_API_KEY", "value": "sk-secret-value"}));
    let secrets = app.ok(&ada.key, "list_secrets", json!({}));
    assert!(secrets.to_string().contains("OPENAI_API_KEY") && !secrets.to_string().contains("sk-secret-value"));

    let agent = app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "m"}));
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": agent, "message": "hi", "idempotency_key": "s1"}));
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let settings = app.ok(&ada.key, "set_task_settings", json!({"task_id": sid, "lanes": true, "review": "manual"}));
    assert_eq!((settings["lanes"].as_bool(), settings["review"].as_str()), (Some(true), Some("manual")));
    assert_eq!(settings["base_branch"], "main", "by default");
    let bad = app.call(&ada.key, "set_task_settings", json!({"task_id": sid, "base_branch": "no spaces"}));
    assert!(bad.to_string().contains("base_branch"), "{bad}");
    let trunk = app.ok(&ada.key, "set_task_settings", json!({"task_id": sid, "base_branch": "trunk", "lanes": false}));
    assert_eq!((trunk["base_branch"].as_str(), trunk["review"].as_str()), (Some("trunk"), Some("manual")), "{trunk}");
    assert_eq!(app.ok(&ada.key, "get_task", json!({"task_id": sid}))["settings"], trunk);
    let token = app.ok(&ada.key, "issue_session_token", json!({"session_id": sid}));
    let activity = app.agent_ok(token["token"].as_str().unwrap(), "project_activity", json!({}));
    assert_eq!(activity["base"], "trunk", "{activity}");
    let listed = app.mcp_post("/v1/session/mcp", token["token"].as_str(), "203.0.113.7", "tools/list", json!({}));
    assert_eq!(listed.status, 200, "the token opens the session server");

    // A member is refused over MCP exactly what REST refuses them.
    let bo = app.signup("Bo", "bo@example.com");
    app.join(&ada, &ada.slug, &bo, "member");
    let ws = ada.slug.as_str();
    for (tool, args) in [
        ("connect_target", json!({"workspace": ws, "name": "db", "provider": "supabase", "env": "prod"})),
        ("set_policy", json!({"workspace": ws, "connector_id": id, "scope": "deploy", "decision": "allow"})),
        ("put_secret", json!({"workspace": ws, "name": "X", "value": "y"})),
        ("delete_connector", json!({"workspace": ws, "connector_id": id})),
    ] {
        let r = app.call(&bo.key, tool, args);
        assert_eq!(r["isError"], true, "{tool}: {r}");
        assert!(r.to_string().contains("forbidden") || r.to_string().contains("role"), "{tool}: {r}");
    }
}
