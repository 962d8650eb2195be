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
    refused(json!({"name": "release-notes", "skill_md": SKILL_MD, "files": {"../x.md": "x"}}), "`path`");
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
    let tools = agentsky::operator_mcp::operator_tools();
    let hints = |name: &str| {
        let t = tools.iter().find(|t| t["name"] == name).unwrap_or_else(|| panic!("{name} is a tool"));
        let a = &t["annotations"];
        (a["readOnlyHint"] == true, a["destructiveHint"] == true, a["idempotentHint"] == true)
    };
    assert_eq!(hints("list_skills"), (true, false, true));
    assert_eq!(hints("get_skill"), (true, false, true));
    assert_eq!(hints("put_skill"), (false, false, true), "a put sets the skill to what it says");
    assert_eq!(hints("delete_skill"), (false, true, true));
}
