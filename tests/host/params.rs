//! The published parameter schemas are the contract: every closed word set publishes `enum`, every typed
//! text `minLength`/`maxLength`, every bounded number `minimum`/`maximum`, every capped list `maxItems`, and the server refuses what they rule out, in words naming the field.

use crate::support::TestApp;
use agentsky::ops::{Op, OPS};
use serde_json::{json, Map, Value};

/// The fields whose values are a closed set of words, by operation: each must publish `enum`.
const WORD_FIELDS: &[(&str, &str)] = &[
    ("switch_model", "thinking"),
    ("hand_off_session", "thinking"),
    ("create_agent", "harness"),
    ("update_agent", "harness"),
    ("create_invitation", "role"),
    ("set_member_role", "role"),
    ("create_key", "scopes"),
    ("record_session", "name"),
    ("get_usage", "group_by"),
    ("help_search", "lang"),
    ("connect_target", "provider"),
    ("connect_target", "env"),
    ("set_policy", "scope"),
    ("set_policy", "decision"),
    ("set_task_settings", "review"),
    ("run_command", "kind"),
    ("ask_command", "kind"),
    ("search_context", "scope"),
    ("upload_trace", "format"),
    ("create_webhook", "format"),
    ("create_webhook", "events"),
    ("record_session", "value"),
];

/// A property's own schema, or its array's items (`Option` and `Vec` wrap the rule).
fn rule_of(prop: &Value) -> (&Value, bool) {
    match prop.get("items") {
        Some(items) => (items, true),
        None => (prop, false),
    }
}

/// A value `schema` takes: its first word, a short enough text, its least number, an object of its
/// required properties (a `$ref` is read from `root`'s `$defs`, an `anyOf` by its first choice).
fn sample(root: &Value, schema: &Value) -> Value {
    if let Some(name) = schema["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")) {
        return sample(root, &root["$defs"][name]);
    }
    if let Some(first) = schema["anyOf"].get(0).or(schema["oneOf"].get(0)) {
        return sample(root, first);
    }
    if let Some(word) = schema["enum"].get(0) {
        return word.clone();
    }
    // An id's pattern (`^ses_…`, `^(?:ag_…|@…)`) is met by its prefix and 26 zeros.
    if let Some(pattern) = schema["pattern"].as_str() {
        let bare = pattern.trim_start_matches('^').trim_start_matches("(?:");
        return match bare.split_once('_') {
            Some((prefix, _)) if prefix.chars().all(|c| c.is_ascii_lowercase()) => {
                json!(format!("{prefix}_{}", "0".repeat(26)))
            }
            _ => json!("A"),
        };
    }
    let ty = |t: &str| schema["type"] == t || schema["type"].as_array().is_some_and(|a| a.contains(&json!(t)));
    if ty("string") {
        json!("a".repeat(schema["minLength"].as_u64().unwrap_or(1).max(1) as usize))
    } else if ty("integer") || ty("number") {
        json!(schema["minimum"].as_i64().unwrap_or(0))
    } else if ty("object") {
        let required = schema["required"].as_array().cloned().unwrap_or_default();
        let props = required.iter().filter_map(Value::as_str);
        Value::Object(props.map(|k| (k.to_owned(), sample(root, &schema["properties"][k]))).collect())
    } else {
        Value::Null
    }
}

/// Runs an operation's decoding (and, were the arguments accepted, its handler with no caller).
fn refusal(app: &TestApp, op: &'static Op, args: Value) -> Option<(String, String)> {
    app.system(|cx| Box::pin(async move { (op.run)(cx, args).await }))
        .err()
        .map(|e| (e.code.as_str().to_owned(), e.message))
}

/// An operation's parameters (none for one like `list_keys`).
fn properties(op: &Op) -> Map<String, Value> {
    op.params_schema()["properties"].as_object().cloned().unwrap_or_default()
}

#[test]
fn closed_word_sets_publish_enum() {
    for (name, field) in WORD_FIELDS {
        let op = OPS.iter().find(|op| op.name == *name).unwrap_or_else(|| panic!("no operation {name}"));
        let props = properties(op);
        let (rule, _) = rule_of(&props[*field]);
        assert!(rule["enum"].is_array(), "{name}.{field} publishes no enum: {rule}");
    }
}

#[test]
fn every_enum_and_length_published_is_enforced_naming_the_field() {
    let app = TestApp::new();
    let (mut enums, mut lengths, mut ranges, mut capped, mut patterns) = (0, 0, 0, 0, 0);
    for op in OPS {
        for (field, prop) in &properties(op) {
            let (rule, list) = rule_of(prop);
            let wrap = |v: Value| if list { json!({ field: [v] }) } else { json!({ field: v }) };
            if rule["enum"].is_array() {
                enums += 1;
                let (code, message) = refusal(&app, op, wrap(json!("not-a-word")))
                    .unwrap_or_else(|| panic!("{}.{field} took a word outside its enum", op.name));
                assert_eq!(code, "invalid_params", "{}.{field}: {message}", op.name);
                assert!(message.starts_with(&format!("`{field}")), "{}.{field}: {message}", op.name);
                assert!(message.contains("must be one of") && message.contains("(got \"not-a-word\")"), "{message}");
            }
            // An id of the wrong shape is refused before any lookup, naming the field and the kind.
            if rule["pattern"].is_string() {
                patterns += 1;
                let (code, message) = refusal(&app, op, wrap(json!("not-an-id")))
                    .unwrap_or_else(|| panic!("{}.{field} took a value its pattern rules out", op.name));
                assert_eq!(code, "invalid_params", "{}.{field}: {message}", op.name);
                assert!(message.starts_with(&format!("`{field}")), "{}.{field}: {message}", op.name);
                assert!(message.contains(" id like ") && message.contains("(got \"not-an-id\")"), "{message}");
            }
            if let Some(max) = rule["maxLength"].as_u64() {
                lengths += 1;
                let long = "é".repeat(max as usize + 1);
                let (code, message) = refusal(&app, op, wrap(json!(long)))
                    .unwrap_or_else(|| panic!("{}.{field} took a text past its maxLength", op.name));
                assert_eq!(code, "invalid_params", "{}.{field}: {message}", op.name);
                assert!(message.starts_with(&format!("`{field}")), "{}.{field}: {message}", op.name);
                assert!(message.contains(&format!("(got {})", max + 1)), "{}.{field}: {message}", op.name);
                if rule["minLength"].as_u64().is_some_and(|min| min > 0) {
                    let (_, message) = refusal(&app, op, wrap(json!(""))).expect("an empty text is refused");
                    assert!(message.contains("characters (got 0)"), "{}.{field}: {message}", op.name);
                }
            }
            for (bound, past) in [("minimum", -1), ("maximum", 1)] {
                let Some(edge) = rule[bound].as_i64() else { continue };
                ranges += 1;
                let (code, message) = refusal(&app, op, wrap(json!(edge + past)))
                    .unwrap_or_else(|| panic!("{}.{field} took a number past its {bound}", op.name));
                assert_eq!(code, "invalid_params", "{}.{field}: {message}", op.name);
                assert!(message.starts_with(&format!("`{field}")), "{}.{field}: {message}", op.name);
                assert!(message.contains(&format!("(got {})", edge + past)), "{}.{field}: {message}", op.name);
            }
            // A list one past its cap, of items their own rule takes: only the cap is broken.
            if let Some(cap) = prop["maxItems"].as_u64() {
                capped += 1;
                let item = sample(op.params_schema(), &prop["items"]);
                let (code, message) = refusal(&app, op, json!({ field: vec![item; cap as usize + 1] }))
                    .unwrap_or_else(|| panic!("{}.{field} took a list past its maxItems", op.name));
                assert_eq!(code, "invalid_params", "{}.{field}: {message}", op.name);
                let want = format!("`{field}` may hold at most {cap} items (got {})", cap + 1);
                assert_eq!(message, want, "{}.{field}", op.name);
            }
        }
    }
    // Not a test that passes by finding nothing.
    assert!(
        enums >= WORD_FIELDS.len() && lengths >= 20 && ranges >= 40 && capped >= 5 && patterns >= 50,
        "{enums} enums, {lengths} lengths, {ranges} ranges, {capped} capped lists, {patterns} id patterns"
    );
}

#[test]
fn the_wire_crates_word_lists_and_the_enums_agree() {
    use agentsky::ops::connectors::{Provider, TargetEnv, TargetScope};
    use agentsky::rules::targets;
    assert_eq!(Provider::WORDS, targets::PROVIDERS);
    assert_eq!(TargetEnv::WORDS, targets::ENVS);
    assert_eq!(TargetScope::WORDS, targets::SCOPES);
    assert_eq!(agentsky::ops::webhooks::WebhookFormat::WORDS, agentsky::rules::webhooks::FORMATS);
    let subscribable: Vec<&str> =
        agentsky::rules::webhooks::EVENTS.iter().copied().filter(|e| *e != "webhook.test").collect();
    assert_eq!(agentsky::ops::webhooks::WebhookEvent::WORDS, subscribable.as_slice());
    assert_eq!(agentsky::ops::traces::TraceFormat::WORDS, agentsky::rules::traces::Format::NAMES);
    let records = [agentsky::ops::records::DECISIONS, agentsky::ops::records::OUTCOMES].concat();
    assert_eq!(agentsky::ops::records::RecordName::WORDS, records.as_slice());
}

#[test]
fn a_bad_argument_is_told_in_plain_words() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let message = |tool: &str, args: Value| {
        let e = TestApp::tool_error(&app.call(&ada.key, tool, args));
        assert_eq!(e["code"], "invalid_params", "{e}");
        e["message"].as_str().unwrap().to_owned()
    };
    let ses = json!("ses_00000000000000000000000000");
    assert_eq!(
        message("switch_model", json!({"session_id": ses, "thinking": "ten"})),
        "`thinking` must be one of off, low, medium, high (got \"ten\")"
    );
    assert_eq!(
        message(
            "start_session",
            json!({"agent_id": "@nobody", "message": "hi", "idempotency_key": "k", "budget_cents": "5"})
        ),
        "`budget_cents` must be a whole number (got a text)"
    );
    assert_eq!(message("switch_model", json!({"thinking": "low"})), "`session_id` is required");
    let long = message("start_session", json!({"agent_id": "@nobody", "message": "", "idempotency_key": "k"}));
    assert_eq!(long, "`message` must be 1–64000 characters (got 0)");
    let unknown = message("switch_model", json!({"session_id": ses, "mode": "x"}));
    assert!(unknown.starts_with("`mode` is not a known field; the fields are session_id, model"), "{unknown}");
    let nested =
        message("set_goal", json!({"session_id": ses, "objective": "o", "idempotency_key": "k", "criteria": [7]}));
    assert!(nested.starts_with("`criteria[0]` must be"), "{nested}");
    assert!(!nested.contains("untagged"), "{nested}");
    let deep = message(
        "set_goal",
        json!({"session_id": ses, "objective": "o", "idempotency_key": "k", "criteria": [{"text": ""}]}),
    );
    assert_eq!(deep, "`criteria[0].text` must be 1–1000 characters (got 0)");
    // A malformed id is refused by its shape; a well-formed one of nobody's is `not_found`.
    assert_eq!(
        message("switch_model", json!({"session_id": "ses_missing", "model": "m"})),
        "`session_id` must be a session id like ses_… (got \"ses_missing\")"
    );
    assert_eq!(
        message("get_agent", json!({"agent_id": "Dev"})),
        "`agent_id` must be an agent id like ag_… or an @handle (got \"Dev\")"
    );
    let e = TestApp::tool_error(&app.call(&ada.key, "switch_model", json!({"session_id": ses, "model": "m"})));
    assert_eq!(e["code"], "not_found", "{e}");
}

#[test]
fn every_id_parameter_publishes_its_pattern() {
    // Named `…_id` (or `to`, a peer session) and holding an id of ours: each must publish its shape.
    let mut ids = 0;
    for op in OPS {
        for (field, prop) in &properties(op) {
            if !field.ends_with("_id") {
                continue;
            }
            let (rule, _) = rule_of(prop);
            ids += 1;
            assert!(rule["pattern"].is_string(), "{}.{field} publishes no pattern: {rule}", op.name);
        }
    }
    for spec in agentsky::agent::function_specs() {
        let (tool, schema) = (spec["function"]["name"].as_str().unwrap(), &spec["function"]["parameters"]);
        for (field, prop) in schema["properties"].as_object().cloned().unwrap_or_default() {
            // `appId` is an app's bundle id or package, not an id of ours.
            let ours = (field.ends_with("_id") || field.ends_with("Id")) && field != "appId";
            if ours || (tool == "send_message" && field == "to") {
                ids += 1;
                assert!(prop["pattern"].is_string(), "{tool}.{field} publishes no pattern: {prop}");
            }
        }
    }
    assert!(ids >= 60, "{ids} id parameters");
}

#[test]
fn the_session_tools_publish_what_they_enforce() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = app.ok(&ada.key, "create_agent", json!({"name": "Dev", "harness": "echo", "model": "m"}));
    let args = json!({"agent_id": agent["agent_id"], "message": "build it", "idempotency_key": "s1"});
    let sid = app.ok(&ada.key, "start_session", args)["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let token = app.session_token(&ada.key, &sid);
    let (mut enums, mut lengths, mut patterns) = (0, 0, 0);
    for spec in agentsky::agent::function_specs() {
        let (tool, schema) = (spec["function"]["name"].as_str().unwrap(), &spec["function"]["parameters"]);
        for (field, prop) in schema["properties"].as_object().cloned().unwrap_or_default() {
            let mut bad = vec![];
            if prop["enum"].is_array() {
                enums += 1;
                bad.push((json!("not-a-word"), "must be one of".to_owned()));
            }
            if let Some(max) = prop["maxLength"].as_u64() {
                lengths += 1;
                bad.push((json!("é".repeat(max as usize + 1)), format!("(got {})", max + 1)));
            }
            if prop["pattern"].is_string() {
                patterns += 1;
                bad.push((json!("not-an-id"), " id like ".to_owned()));
            }
            for (value, says) in bad {
                let message = app.agent_err(&token, tool, json!({ &field: value }));
                assert!(message.contains("-32602"), "{tool}.{field}: {message}");
                assert!(
                    message.contains(&format!("`{field}`")) && message.contains(&says),
                    "{tool}.{field}: {message}"
                );
            }
        }
    }
    assert!(enums >= 3 && lengths >= 11 && patterns >= 4, "{enums} enums, {lengths} lengths, {patterns} patterns");
}
