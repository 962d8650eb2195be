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

/// Keys, members, invitations, runners, budgets and the audit log are set once and seldom again: one
/// `manage` tool runs them by name, so a model reads one short schema instead of 27, with every rule of the
/// row it names.
#[test]
fn the_operations_set_once_run_through_manage_with_the_roles_rest_has() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let listed = app.rpc(&ada.key, "tools/list", json!({})).json_body();
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert!(names.contains(&"manage") && !names.contains(&"create_key"), "{names:?}");
    let manage = tools.iter().find(|t| t["name"] == "manage").unwrap();
    let offered = manage["inputSchema"]["properties"]["operation"]["enum"].to_string();
    assert!(offered.contains("\"create_invitation\"") && offered.contains("\"list_audit\""), "{offered}");
    assert!(!offered.contains("create_account") && !offered.contains("start_session"), "{offered}");

    let ws = ada.slug.as_str();
    let members = app.ok(&ada.key, "manage", json!({"operation": "list_members", "arguments": {"workspace": ws}}));
    assert_eq!(members["members"].as_array().unwrap().len(), 1, "{members}");
    let read =
        app.ok(&ada.key, "manage", json!({"operation": "create_key", "arguments": {"name": "r", "scopes": ["read"]}}));
    let read_key = read["key"].as_str().unwrap().to_owned();
    let keys = app.ok(&ada.key, "manage", json!({"operation": "list_keys"}));
    assert_eq!(keys["keys"].as_array().unwrap().len(), 2, "`arguments` may be left out: {keys}");
    // A read key reads through it and is refused what needs write, as on REST.
    app.ok(&read_key, "manage", json!({"operation": "list_members", "arguments": {"workspace": ws}}));
    let write = json!({"operation": "create_invitation", "arguments": {"workspace": ws, "role": "member"}});
    assert_eq!(app.err_code(&read_key, "manage", write.clone()), "insufficient_scope");
    // A member is refused what only owners and admins do.
    let bo = app.signup("Bo", "bo@example.com");
    app.join(&ada, ws, &bo, "member");
    assert_eq!(app.err_code(&bo.key, "manage", write.clone()), "forbidden");
    let invited = app.ok(&ada.key, "manage", write);
    assert!(invited["token"].as_str().is_some(), "{invited}");

    // Bad calls name the field and the rule.
    for (args, words) in [
        (json!({"operation": "nope"}), "`operation`: \"nope\" is not one of"),
        (json!({"operation": "start_session"}), "`start_session` is a tool of its own"),
        (json!({"arguments": {}}), "`operation` is required: it is one of create_key"),
        (json!({"operation": "list_keys", "arguments": 5}), "`arguments` must be an object"),
        (json!({"operation": "revoke_key", "arguments": {}}), "key_id"),
    ] {
        let r = app.call(&ada.key, "manage", args.clone());
        let e = TestApp::tool_error(&r);
        assert_eq!(e["code"], "invalid_params", "{args}: {e}");
        assert!(e["message"].as_str().unwrap().contains(words), "{args}: {e}");
    }

    // Help says how to reach each one, and names none that an MCP client needs as REST only.
    let help = app.ok(&ada.key, "help", json!({"topic": "workspaces"}));
    let ops = help["operations"].as_array().unwrap();
    let invite = ops.iter().find(|o| o["name"] == "create_invitation").unwrap();
    assert_eq!(invite["tool"], "manage");
    assert!(invite["usage"].as_str().unwrap().starts_with("manage {\"arguments\":"), "{invite}");
    let own = ops.iter().find(|o| o["name"] == "list_workspaces").unwrap();
    assert_eq!(own["tool"], "list_workspaces");
}
