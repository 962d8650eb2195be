//! Every schema a client can read (each tool's `inputSchema` and `outputSchema` on `/v1/mcp`,
//! `/v1/session/mcp` and `/v1/help/mcp`) is well-formed JSON Schema 2020-12, and results match their
//! `outputSchema`: the official SDKs validate both and refuse the call when either is wrong.
//!
//! [`check_schema`] is a strict structural check (every keyword known to 2020-12 and of the right shape,
//! `required` unique and declared in `properties`, every `$ref` resolving inside the schema). [`validate`]
//! checks an instance against the keywords our schemas use and refuses any other keyword, so it can never
//! pass a schema it does not understand. [`crate::support::TestApp::call`] runs it on every tool result of
//! every host test; the end-to-end suites run the real validators (ajv, jsonschema) on top.

use crate::support::TestApp;
use serde_json::{json, Map, Value};
use std::collections::HashSet;

const TYPES: [&str; 7] = ["null", "boolean", "object", "array", "number", "integer", "string"];

/// Keywords whose value is one schema.
const ONE_SCHEMA: [&str; 10] = [
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
];
/// Keywords whose value is a non-empty array of schemas.
const SCHEMA_LISTS: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAPS: [&str; 4] = ["properties", "$defs", "patternProperties", "dependentSchemas"];
const STRINGS: [&str; 7] = ["$schema", "$id", "$anchor", "$comment", "title", "description", "format"];
const NUMBERS: [&str; 4] = ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"];
const COUNTS: [&str; 8] =
    ["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains", "maxContains"];
const BOOLEANS: [&str; 4] = ["uniqueItems", "readOnly", "writeOnly", "deprecated"];
/// Keywords that take any value.
const ANY: [&str; 2] = ["const", "default"];

/// What is wrong with `schema` as a JSON Schema 2020-12 document that MCP accepts as a tool schema (an
/// object schema, self-contained); empty when nothing is.
pub fn check_schema(schema: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    if schema["type"] != "object" {
        problems.push(format!("the root must be `\"type\": \"object\"`, got {}", schema["type"]));
    }
    check_node(schema, schema, "#", &mut problems);
    problems
}

fn check_node(root: &Value, node: &Value, at: &str, out: &mut Vec<String>) {
    let map = match node {
        Value::Bool(_) => return,
        Value::Object(map) => map,
        other => return out.push(format!("{at}: a schema is an object or a boolean, got {other}")),
    };
    for (key, value) in map {
        let here = format!("{at}/{key}");
        let k = key.as_str();
        if ONE_SCHEMA.contains(&k) {
            check_node(root, value, &here, out);
        } else if SCHEMA_LISTS.contains(&k) {
            match value.as_array() {
                Some(list) if !list.is_empty() => {
                    for (i, s) in list.iter().enumerate() {
                        check_node(root, s, &format!("{here}/{i}"), out);
                    }
                }
                _ => out.push(format!("{here}: must be a non-empty array of schemas")),
            }
        } else if SCHEMA_MAPS.contains(&k) {
            match value.as_object() {
                Some(entries) => {
                    for (name, s) in entries {
                        check_node(root, s, &format!("{here}/{name}"), out);
                    }
                }
                None => out.push(format!("{here}: must be an object of schemas")),
            }
        } else if k == "type" {
            check_type(value, &here, out);
        } else if k == "required" {
            check_required(map, value, &here, out);
        } else if k == "dependentRequired" {
            let ok = value.as_object().is_some_and(|m| m.values().all(|v| unique_strings(v).is_some()));
            if !ok {
                out.push(format!("{here}: must map names to arrays of unique strings"));
            }
        } else if k == "$ref" {
            match value.as_str() {
                Some(r) if resolve(root, r).is_some() => {}
                _ => out.push(format!("{here}: {value} does not resolve inside the schema")),
            }
        } else if k == "enum" {
            if value.as_array().is_none_or(|v| v.is_empty()) {
                out.push(format!("{here}: must be a non-empty array"));
            }
        } else if k == "examples" {
            if !value.is_array() {
                out.push(format!("{here}: must be an array"));
            }
        } else if k == "pattern" || STRINGS.contains(&k) {
            if !value.is_string() {
                out.push(format!("{here}: must be a string"));
            }
        } else if NUMBERS.contains(&k) {
            if !value.is_number() {
                out.push(format!("{here}: must be a number (the boolean form is draft-04)"));
            }
        } else if k == "multipleOf" {
            if !value.as_f64().is_some_and(|n| n > 0.0) {
                out.push(format!("{here}: must be a number above 0"));
            }
        } else if COUNTS.contains(&k) {
            if value.as_u64().is_none() {
                out.push(format!("{here}: must be a non-negative integer"));
            }
        } else if BOOLEANS.contains(&k) {
            if !value.is_boolean() {
                out.push(format!("{here}: must be a boolean"));
            }
        } else if !ANY.contains(&k) {
            out.push(format!("{here}: `{k}` is not a JSON Schema 2020-12 keyword"));
        }
    }
}

fn check_type(value: &Value, at: &str, out: &mut Vec<String>) {
    let names: Vec<&Value> = match value {
        Value::Array(list) if !list.is_empty() => list.iter().collect(),
        Value::String(_) => vec![value],
        _ => return out.push(format!("{at}: must be a type name or a non-empty array of them")),
    };
    if unique_strings(&Value::Array(names.iter().map(|v| (*v).clone()).collect())).is_none() {
        out.push(format!("{at}: type names must be unique strings"));
    }
    for name in names {
        if !name.as_str().is_some_and(|n| TYPES.contains(&n)) {
            out.push(format!("{at}: {name} is not a JSON type"));
        }
    }
}

fn check_required(schema: &Map<String, Value>, value: &Value, at: &str, out: &mut Vec<String>) {
    let Some(names) = unique_strings(value) else {
        return out.push(format!("{at}: must be an array of unique strings, got {value}"));
    };
    let declared = schema.get("properties").and_then(Value::as_object);
    for name in names {
        if !declared.is_some_and(|p| p.contains_key(name)) {
            out.push(format!("{at}: `{name}` is required but not in `properties`"));
        }
    }
}

/// The strings of an array whose elements are unique strings; `None` for anything else.
fn unique_strings(value: &Value) -> Option<Vec<&str>> {
    let list: Vec<&str> = value.as_array()?.iter().map(Value::as_str).collect::<Option<_>>()?;
    let distinct: HashSet<&&str> = list.iter().collect();
    (distinct.len() == list.len()).then_some(list)
}

/// A local reference (`#`, `#/$defs/Name`, any `#/…` JSON pointer) inside `root`.
fn resolve<'a>(root: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    root.pointer(&pointer.replace("~1", "/").replace("~0", "~"))
}

/// Where `instance` does not match `schema`; empty when it does. Knows the keywords our schemas use and
/// reports any other as unsupported rather than ignoring it.
pub fn validate(instance: &Value, schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    matches(schema, schema, instance, "$", &mut out);
    out
}

fn matches(root: &Value, schema: &Value, v: &Value, at: &str, out: &mut Vec<String>) {
    let map = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return out.push(format!("{at}: no value is allowed here")),
        Value::Object(map) => map,
        _ => return out.push(format!("{at}: the schema is not a schema")),
    };
    for (key, expected) in map {
        match key.as_str() {
            "type" => {
                let names: Vec<&str> = match expected {
                    Value::String(s) => vec![s.as_str()],
                    Value::Array(list) => list.iter().filter_map(Value::as_str).collect(),
                    _ => vec![],
                };
                if !names.iter().any(|n| is_type(v, n)) {
                    out.push(format!("{at}: {v} is not of type {expected}"));
                }
            }
            "properties" => {
                if let (Some(props), Some(obj)) = (expected.as_object(), v.as_object()) {
                    for (name, s) in props {
                        if let Some(field) = obj.get(name) {
                            matches(root, s, field, &format!("{at}.{name}"), out);
                        }
                    }
                }
            }
            "required" => {
                if let (Some(names), Some(obj)) = (expected.as_array(), v.as_object()) {
                    for name in names.iter().filter_map(Value::as_str) {
                        if !obj.contains_key(name) {
                            out.push(format!("{at}: `{name}` is required but missing"));
                        }
                    }
                }
            }
            "additionalProperties" => {
                if let Some(obj) = v.as_object() {
                    let declared = map.get("properties").and_then(Value::as_object);
                    for (name, field) in obj {
                        if !declared.is_some_and(|p| p.contains_key(name)) {
                            matches(root, expected, field, &format!("{at}.{name}"), out);
                        }
                    }
                }
            }
            "items" => {
                if let Some(list) = v.as_array() {
                    for (i, item) in list.iter().enumerate() {
                        matches(root, expected, item, &format!("{at}[{i}]"), out);
                    }
                }
            }
            "$ref" => match expected.as_str().and_then(|r| resolve(root, r)) {
                Some(target) => matches(root, target, v, at, out),
                None => out.push(format!("{at}: unresolved $ref {expected}")),
            },
            "anyOf" | "oneOf" => {
                let branches = expected.as_array().map(Vec::as_slice).unwrap_or_default();
                let passing = branches.iter().filter(|s| validate_at(root, s, v)).count();
                let ok = if key == "anyOf" { passing > 0 } else { passing == 1 };
                if !ok {
                    out.push(format!("{at}: {v} matches {passing} of the {key} branches"));
                }
            }
            "allOf" => {
                for s in expected.as_array().into_iter().flatten() {
                    matches(root, s, v, at, out);
                }
            }
            "enum" => {
                if !expected.as_array().is_some_and(|options| options.contains(v)) {
                    out.push(format!("{at}: {v} is not one of {expected}"));
                }
            }
            "const" => {
                if v != expected {
                    out.push(format!("{at}: {v} is not {expected}"));
                }
            }
            "minimum" | "maximum" => {
                if let (Some(n), Some(bound)) = (v.as_f64(), expected.as_f64()) {
                    if (key == "minimum" && n < bound) || (key == "maximum" && n > bound) {
                        out.push(format!("{at}: {n} is outside its {key} {bound}"));
                    }
                }
            }
            // Annotations: nothing to check in an instance.
            "$schema" | "$defs" | "title" | "description" | "default" | "examples" | "format" | "readOnly"
            | "writeOnly" | "deprecated" | "$comment" => {}
            other => out.push(format!("{at}: the host validator does not support `{other}`; extend it")),
        }
    }
}

fn validate_at(root: &Value, schema: &Value, v: &Value) -> bool {
    let mut out = Vec::new();
    matches(root, schema, v, "$", &mut out);
    out.is_empty()
}

fn is_type(v: &Value, name: &str) -> bool {
    match name {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "object" => v.is_object(),
        "array" => v.is_array(),
        "number" => v.is_number(),
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "string" => v.is_string(),
        _ => false,
    }
}

/// The `tools/list` of one MCP endpoint, as a client reads it.
fn listed(app: &TestApp, path: &str, bearer: Option<&str>) -> Vec<Value> {
    let resp = app.mcp_post(path, bearer, "203.0.113.9", "tools/list", json!({}));
    assert_eq!(resp.status, 200, "{path}: {}", String::from_utf8_lossy(&resp.body));
    resp.json_body()["result"]["tools"].as_array().cloned().unwrap_or_else(|| panic!("{path}: no tools"))
}

/// An account with an echo agent and one finished turn: a task, and a session token for it.
fn with_a_session(app: &TestApp) -> (String, String, String) {
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app.create_agent(&ada.key, json!({"name": "Dev", "harness": "echo", "model": "echo-1"}));
    let started =
        app.ok(&ada.key, "start_session", json!({"agent_id": agent_id, "message": "hi", "idempotency_key": "k1"}));
    app.settle();
    let sid = started["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    (ada.key, sid, token)
}

#[test]
fn every_published_schema_is_well_formed_json_schema_2020_12() {
    let app = TestApp::with_secrets();
    let (key, _, token) = with_a_session(&app);
    let servers = [
        ("/v1/mcp", listed(&app, "/v1/mcp", Some(&key))),
        ("/v1/session/mcp", listed(&app, "/v1/session/mcp", Some(&token))),
        ("/v1/help/mcp", listed(&app, "/v1/help/mcp", None)),
    ];
    let mut problems = Vec::new();
    for (path, tools) in &servers {
        assert!(!tools.is_empty(), "{path} lists no tools");
        for tool in tools {
            for field in ["inputSchema", "outputSchema"] {
                let Some(schema) = tool.get(field) else {
                    assert_eq!(field, "outputSchema", "{path} {}: inputSchema is required", tool["name"]);
                    continue;
                };
                for p in check_schema(schema) {
                    problems.push(format!("{path} {} {field}: {p}", tool["name"]));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} problem(s):\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_schema_check_catches_what_the_sdks_refused() {
    let duplicate = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "a"]});
    assert!(check_schema(&duplicate)[0].contains("unique"), "{:?}", check_schema(&duplicate));
    let undeclared = json!({"type": "object", "properties": {}, "required": ["a"]});
    assert!(check_schema(&undeclared)[0].contains("not in `properties`"));
    let dangling = json!({"type": "object", "properties": {"a": {"$ref": "#/$defs/A"}}});
    assert!(check_schema(&dangling)[0].contains("does not resolve"));
    let draft4 = json!({"type": "object", "properties": {"n": {"type": "integer", "exclusiveMinimum": true}}});
    assert!(check_schema(&draft4)[0].contains("draft-04"));
    let unknown = json!({"type": "object", "nullable": true});
    assert!(check_schema(&unknown)[0].contains("not a JSON Schema 2020-12 keyword"));
    let missing = json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]});
    assert_eq!(validate(&json!({}), &missing), ["$: `a` is required but missing"]);
    assert!(validate(&json!({"a": 1}), &missing)[0].contains("is not of type"));
    assert!(validate(&json!({"a": "x"}), &missing).is_empty());
}

/// The answer `tool` gave, checked against the `outputSchema` that `/v1/mcp` lists for it.
fn assert_matches_output_schema(app: &TestApp, key: &str, tool: &str, args: Value) {
    let resp = app.rpc(key, "tools/call", json!({"name": tool, "arguments": args}));
    let result = &resp.json_body()["result"];
    assert_eq!(result["isError"], false, "{tool} {args}: {result}");
    let tools = listed(app, "/v1/mcp", Some(key));
    let schema = &tools.iter().find(|t| t["name"] == tool).unwrap()["outputSchema"];
    let errors = validate(&result["structuredContent"], schema);
    assert!(errors.is_empty(), "{tool} {args} does not match its outputSchema: {errors:?}");
}

#[test]
fn help_answers_match_their_output_schema_with_and_without_a_topic() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    for args in [json!({}), json!({"topic": "workflow"}), json!({"topic": "sessions"})] {
        assert_matches_output_schema(&app, &ada.key, "help", args);
    }
}

#[test]
fn get_task_answers_match_their_output_schema() {
    let app = TestApp::with_secrets();
    let (key, sid, _) = with_a_session(&app);
    assert_matches_output_schema(&app, &key, "get_task", json!({"task_id": sid}));
    assert_matches_output_schema(&app, &key, "list_tasks", json!({}));
}

#[test]
fn openapi_components_hold_one_schema_per_name() {
    use std::collections::HashMap;
    let mut seen: HashMap<String, (Value, &str)> = HashMap::new();
    let mut clashes = Vec::new();
    for op in agentsky::ops::OPS {
        for schema in [op.params_schema().clone(), op.result_schema().clone()] {
            for (name, def) in schema["$defs"].as_object().into_iter().flatten() {
                match seen.get(name) {
                    Some((other, by)) if other != def => clashes.push(format!("{name}: {by} and {}", op.name)),
                    Some(_) => {}
                    None => {
                        seen.insert(name.clone(), (def.clone(), op.name));
                    }
                }
            }
        }
    }
    assert!(clashes.is_empty(), "one component name, two schemas:\n{}", clashes.join("\n"));
}

#[test]
fn a_tool_error_carries_its_code_as_text_and_no_structured_content_to_check_against_the_output_schema() {
    // The TypeScript SDK 1.x checks structuredContent against the outputSchema even when isError is true,
    // so an error body there turned every tool error into "Structured content does not match".
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let result = app.call(&ada.key, "get_session", json!({"session_id": "ses_00000000000000000000000000"}));
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none(), "{result}");
    assert_eq!(TestApp::tool_error(&result)["code"], "not_found");
    let help = app.mcp_post(
        "/v1/help/mcp",
        None,
        "203.0.113.9",
        "tools/call",
        json!({"name": "help_get", "arguments": {"slug": "nope"}}),
    );
    let result = &help.json_body()["result"];
    assert_eq!(result["isError"], true);
    assert!(result.get("structuredContent").is_none(), "{result}");
}
