//! The operation table against the contract, and the generated faces against golden files
//! (rewrite them with `UPDATE_GOLDEN=1 cargo test`).

use agentsky::ops::{Scope, Tool, OPS};
use serde_json::{json, Value};
use std::collections::HashSet;

/// The contract's tool names, kept in the repository so the tests need nothing outside it.
const CONTRACT: &str = include_str!("contract-tools.txt");

/// Every tool name the contract's table lists.
fn contract_tools() -> HashSet<String> {
    CONTRACT.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned).collect()
}

/// Tools of their own beyond the contract's table: an operator's own MCP client is an approver too
/// (`list_requests`), and a new account has no agent until it creates one (`create_agent`). Every other
/// extension (routines' edits, webhooks, billing, skills, memory, grants, targets, secrets and the rest)
/// is reached through `manage`, so a model reads one short entry for them.
const BEYOND_THE_CONTRACT: &[&str] = &["list_requests", "create_agent"];

#[test]
fn every_contract_tool_is_offered_and_every_other_tool_is_a_known_extension() {
    let contract = contract_tools();
    assert_eq!(contract.len(), 40, "the contract names 40 tools; parsed {contract:?}");
    let tools: HashSet<&str> = OPS.iter().filter(|op| op.tool == Tool::Own).map(|op| op.name).collect();
    for name in &contract {
        assert!(tools.contains(name.as_str()), "the contract's `{name}` is not offered as a tool");
    }
    for name in tools {
        assert!(
            contract.contains(name) || BEYOND_THE_CONTRACT.contains(&name),
            "`{name}` is neither a contract tool nor a listed extension"
        );
    }
}

/// An MCP client reaches every operation but those it cannot use: the ones that need no key or the
/// deployment's admin token, the console's browser sign-in link, and subscribing a browser to Web Push
/// (its `PushSubscription` and the key it subscribes with exist only in a browser).
#[test]
fn only_what_an_mcp_client_cannot_use_is_rest_only() {
    let browser_only = ["open_console", "subscribe_push"];
    for op in OPS.iter().filter(|op| op.tool == Tool::RestOnly) {
        let why = matches!(op.scope, Scope::Public | Scope::Admin) || browser_only.contains(&op.name);
        assert!(why, "`{}` is REST only, but an MCP client could use it: make it a tool or `manage` it", op.name);
    }
}

#[test]
fn operation_names_and_routes_are_unique() {
    let mut names = HashSet::new();
    let mut routes = HashSet::new();
    for op in OPS {
        assert!(names.insert(op.name), "duplicate name {}", op.name);
        assert!(routes.insert((op.method, op.path)), "duplicate route {} {}", op.method, op.path);
        assert!(op.path.starts_with("/v1/"), "{}", op.path);
        assert!(!op.description().is_empty(), "{} has no doc", op.name);
        if op.hints.read_only {
            assert!(
                op.method == "GET" && op.scope != Scope::Write,
                "{}: read-only ops are GETs with read scope",
                op.name
            );
        } else {
            assert!(op.method != "GET", "{}: GET must not change state", op.name);
        }
    }
}

#[test]
fn every_parameter_schema_is_an_object_with_documented_fields() {
    for op in OPS {
        let schema = op.params_schema();
        assert_eq!(schema["type"], "object", "{}", op.name);
        if op.tool != Tool::RestOnly {
            for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
                let has_doc = prop.get("description").is_some() || prop.get("$ref").is_some();
                assert!(has_doc, "{}.{name} needs a doc comment: the model reads it", op.name);
            }
        }
    }
}

fn golden(name: &str, actual: &Value) {
    golden_text(&format!("tests/host/golden/{name}"), &(serde_json::to_string_pretty(actual).unwrap() + "\n"));
}

/// Compares `text` with the file at `path` (from the crate root), printing a line diff when they differ.
fn golden_text(path: &str, text: &str) {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != text {
        let diff = similar::TextDiff::from_lines(expected.as_str(), text);
        panic!(
            "{path} changed; review and rewrite with UPDATE_GOLDEN=1 cargo test\n{}",
            diff.unified_diff().context_radius(2).header("golden", "now")
        );
    }
}

/// The Worker reads its schemas from `src/schemas.json` instead of deriving them (see `rules::schema`): the
/// file holds exactly what the types derive, one schema per line so a change reads as a one-line diff.
#[test]
fn the_published_schemas_are_derived_from_the_types() {
    let lines: Vec<String> = agentsky::published_schemas()
        .iter()
        .map(|(key, schema)| format!("{}:{}", Value::from(key.as_str()), schema))
        .collect();
    golden_text("src/schemas.json", &format!("{{\n{}\n}}\n", lines.join(",\n")));
}

#[test]
fn tools_list_matches_its_golden_file() {
    golden("tools.json", &Value::Array(agentsky::operator_mcp::operator_tools().to_vec()));
}

/// What a model reads of `tools/list` before it does anything (each tool's name, description and
/// `inputSchema`, as `make bench` counts it) stays within its budget: long explanations belong in `help`.
#[test]
fn what_a_model_reads_of_the_tool_list_stays_within_30000_characters() {
    let shown: Vec<Value> = agentsky::operator_mcp::operator_tools()
        .iter()
        .map(|t| json!({"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}))
        .collect();
    let chars = Value::Array(shown).to_string().chars().count();
    assert!(chars <= 30_000, "a model is shown {chars} characters of tools/list; the budget is 30,000");
}

#[test]
fn openapi_matches_its_golden_file_and_resolves_every_ref() {
    let doc = agentsky::openapi::document("http://127.0.0.1:8787");
    assert_eq!(doc["openapi"], "3.1.0");
    let text = doc.to_string();
    for part in text.split("\"$ref\":\"").skip(1) {
        let target = &part[..part.find('"').unwrap()];
        let name = target.strip_prefix("#/components/schemas/").unwrap_or_else(|| panic!("ref {target}"));
        assert!(doc["components"]["schemas"].get(name).is_some(), "dangling ref {target}");
    }
    for op in OPS {
        assert!(doc["paths"][op.path][op.method.to_ascii_lowercase()]["operationId"] == op.name, "{}", op.name);
    }
    golden("openapi.json", &doc);
}

/// `docs/operations.md`, the operations reference, is generated from the table: a row added, renamed or
/// redocumented shows up there in the same change.
#[test]
fn the_operations_reference_is_generated_from_the_table() {
    let mut groups: Vec<&str> = OPS.iter().map(|op| op.group.name()).collect();
    groups.dedup();
    let mut seen = HashSet::new();
    groups.retain(|g| seen.insert(*g));
    let mut md = String::from(
        "# Operations\n\nGenerated from the operation table (`src/ops/mod.rs`) by `UPDATE_GOLDEN=1 cargo test -p agentsky \
         --test host table`; do not edit by hand. Every operation is a REST route; those marked *tool* are also MCP \
         tools on `/v1/mcp`, and *tool, task* ones may run as MCP tasks that follow the turn they start. Scope is \
         what the caller's key must allow.\n",
    );
    for group in groups {
        md.push_str(&format!(
            "\n## {group}\n\n| Operation | REST | Scope | Tool | What it does |\n|---|---|---|---|---|\n"
        ));
        for op in OPS.iter().filter(|op| op.group.name() == group) {
            md.push_str(&format!(
                "| `{}` | `{} {}` | {} | {} | {} |\n",
                op.name,
                op.method,
                op.path,
                op.scope.as_str(),
                match (op.tool, op.task) {
                    (Tool::Own, true) => "tool, task",
                    (Tool::Own, false) => "tool",
                    (Tool::Grouped, _) => "`manage`",
                    (Tool::RestOnly, _) => "",
                },
                op.description().replace('|', "\\|")
            ));
        }
    }
    golden_text("docs/operations.md", &md);
}

/// What clients are told matches what the server enforces: an operation announced as read-only needs no
/// more than the read scope, and one that needs the write scope is never announced as read-only.
#[test]
fn read_only_hints_agree_with_the_scope_that_authorizes() {
    for op in OPS {
        if op.hints.read_only {
            assert!(
                matches!(op.scope, Scope::Read | Scope::Public),
                "{} is read-only but needs {:?}",
                op.name,
                op.scope
            );
        }
        if op.scope == Scope::Write {
            assert!(!op.hints.read_only, "{} needs write but says read-only", op.name);
        }
    }
}

/// REST answers 201 exactly for the operations that bring a resource with its own id into being (the
/// row's `http` column); actions, polls and upserts by a caller-chosen name answer 200.
#[test]
fn creating_operations_answer_201_and_no_other() {
    let created: Vec<&str> = OPS.iter().filter(|op| op.http_status() == 201).map(|op| op.name).collect();
    let mut expected: Vec<&str> = vec![
        "open_console",
        "accept_invitation",
        "start_session",
        "send_message",
        "hand_off_session",
        "publish_artifact",
        "run_routine",
        "issue_session_token",
        "save_memory",
        "upload_trace",
        "record_session",
        "register_runner",
        "request_device_code",
    ];
    expected.extend(OPS.iter().filter(|op| op.name.starts_with("create_")).map(|op| op.name));
    let mut sorted = created.clone();
    sorted.sort_unstable();
    expected.sort_unstable();
    assert_eq!(sorted, expected);
    for op in OPS.iter().filter(|op| op.http_status() != 201) {
        assert_eq!(op.http_status(), 200, "{}", op.name);
    }
    for name in ["test_webhook", "poll_device_token", "rotate_webhook_secret", "connect_target", "add_credit"] {
        assert!(!created.contains(&name), "{name}");
    }
}

/// Operations whose answer names a `key`, `token` or `secret` that is no credential for this server, and
/// why an app's OAuth token may have it.
const SECRETS_NO_CREDENTIAL: &[(&str, &str)] = &[
    ("get_usage", "`key` is the key id a usage row is grouped by"),
    ("create_webhook", "the signing secret lets the workspace's own endpoint check deliveries; it opens nothing here"),
    ("rotate_webhook_secret", "the same signing secret, replaced"),
];

/// The rule that an app's disconnection ends everything it could do holds for operations added later:
/// an operation whose answer hands out a key, token or secret must say `credentials: true` (refused to an
/// app's token) or be listed above with its reason. Public operations have no caller, so no app.
#[test]
fn every_operation_that_hands_out_a_secret_is_refused_to_apps_or_says_why_not() {
    fn names(v: &Value, out: &mut HashSet<String>) {
        match v {
            Value::Object(m) => {
                if let Some(Value::Object(props)) = m.get("properties") {
                    out.extend(props.keys().cloned());
                }
                m.values().for_each(|x| names(x, out));
            }
            Value::Array(a) => a.iter().for_each(|x| names(x, out)),
            _ => {}
        }
    }
    let secret = |n: &str| ["key", "token", "secret"].contains(&n) || n.ends_with("_token") || n.ends_with("_secret");
    for op in OPS.iter().filter(|op| op.scope != Scope::Public && !op.credentials) {
        let mut found = HashSet::new();
        names(op.result_schema(), &mut found);
        let handed: Vec<&String> = found.iter().filter(|n| secret(n)).collect();
        assert!(
            handed.is_empty() || SECRETS_NO_CREDENTIAL.iter().any(|(name, _)| *name == op.name),
            "`{}` answers {handed:?}: mark it `credentials: true` or say in SECRETS_NO_CREDENTIAL why an app may have it",
            op.name
        );
    }
    for (name, _) in SECRETS_NO_CREDENTIAL {
        assert!(OPS.iter().any(|op| op.name == *name && !op.credentials), "`{name}` is listed for nothing");
    }
}

/// The console names operations through the table: typed calls (`ops::call::list_tasks(…)`) and names
/// (`ops::name::revoke_key` in a form's action), which the compiler checks. Whatever still names one in
/// text (`action(p, "…")`, `action_url("…")`, a form posting to `/op/…`, a lookup by `find("…")`) must name
/// a row, so a renamed operation fails here, not on a person's page.
#[test]
fn every_operation_the_console_names_is_a_row_of_the_table() {
    let root = format!("{}/src/console", env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![std::path::PathBuf::from(&root)];
    let (mut named, mut checked) = (Vec::new(), 0);
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        if path.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        checked += ["call::", "name::"].iter().map(|m| text.matches(m).count()).sum::<usize>();
        for marker in ["find(\"", "action(p, \"", "action_url(\"", "\"/op/"] {
            for (at, _) in text.match_indices(marker) {
                let rest = &text[at + marker.len()..];
                let name: String = rest.chars().take_while(|c| c.is_ascii_lowercase() || *c == '_').collect();
                if !name.is_empty() {
                    named.push((path.display().to_string(), name));
                }
            }
        }
    }
    assert!(checked + named.len() > 40, "the scan found the console's operations: {checked} checked, {named:?}");
    for (file, name) in &named {
        assert!(OPS.iter().any(|op| op.name == name), "{file} names `{name}`, which is no operation of the table");
    }
}
