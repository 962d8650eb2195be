//! What MCP faces send back: schemas trimmed for clients' validators, and tool results.

use crate::error::ApiError;
use serde_json::{json, Value};

/// Trims a generated schema to what MCP clients validate with: no `$schema` line, and no numeric
/// `format`s (`int64`, `uint32`, …) that JSON Schema validators do not know and warn about.
pub fn for_clients(mut schema: Value) -> Value {
    fn walk(v: &mut Value) {
        match v {
            Value::Object(map) => {
                let numeric = map.get("format").and_then(Value::as_str).is_some_and(|f| {
                    matches!(
                        f,
                        "int8"
                            | "int16"
                            | "int32"
                            | "int64"
                            | "uint"
                            | "uint8"
                            | "uint16"
                            | "uint32"
                            | "uint64"
                            | "float"
                            | "double"
                    )
                });
                if numeric {
                    map.remove("format");
                }
                map.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
    }
    walk(&mut schema);
    schema
}

/// An `inputSchema` as clients show it to their model: [`for_clients`] without the Rust type names
/// (`title: "ListAgents"`) that schema generation adds and no reader needs, and without what a model
/// never needs to send ([`leaving_out`]); the descriptions stay.
pub fn for_models(schema: Value) -> Value {
    let mut schema = without(for_clients(schema), &["title"]);
    leaving_out(&mut schema);
    schema
}

/// A field a caller may leave out is shown without its `null` (the server reads a `null` as left out,
/// so nothing a model sends changes); `workspace` without its description (every tool's own description
/// says when it takes one); and a field the server ignores (documented `Ignored: …`, kept so that older
/// callers sending it are not refused) not at all. Together these were a sixth of what a model reads.
fn leaving_out(schema: &mut Value) {
    let Value::Object(map) = schema else {
        if let Value::Array(items) = schema {
            items.iter_mut().for_each(leaving_out);
        }
        return;
    };
    let required: Vec<String> = match map.get("required") {
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    };
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        let ignored = |p: &Value| p["description"].as_str().is_some_and(|d| d.starts_with("Ignored:"));
        props.retain(|_, prop| !ignored(prop));
        for (name, prop) in props.iter_mut() {
            if !required.contains(name) {
                without_null(prop);
            }
            if name == "workspace" {
                if let Some(p) = prop.as_object_mut() {
                    p.remove("description");
                }
            }
        }
    }
    // A definition is described where a property uses it.
    if let Some(Value::Object(defs)) = map.get_mut("$defs") {
        defs.values_mut().filter_map(Value::as_object_mut).for_each(|d| drop(d.remove("description")));
    }
    map.values_mut().for_each(leaving_out);
}

/// `{"type": ["string", "null"]}` as `{"type": "string"}`, an `enum`'s `null` dropped, and
/// `{"anyOf": [X, {"type": "null"}]}` as X.
fn without_null(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let only = types.remove(0);
            map.insert("type".into(), only);
        }
    }
    if let Some(Value::Array(values)) = map.get_mut("enum") {
        values.retain(|v| !v.is_null());
    }
    let null = json!({"type": "null"});
    let other = match map.get("anyOf") {
        Some(Value::Array(any)) if any.len() == 2 && any.contains(&null) => any.iter().find(|s| **s != null).cloned(),
        _ => None,
    };
    if let Some(Value::Object(other)) = other {
        map.remove("anyOf");
        for (k, v) in other {
            map.entry(k).or_insert(v);
        }
    }
}

/// An `outputSchema` as validators read it: [`for_clients`] without the annotations (`description`,
/// `title`, `examples`) that no validator checks and no client shows its model. The result's fields are
/// documented where people read them (`help`, `openapi.json`); here they were a third of the list's bytes.
pub fn for_validators(schema: Value) -> Value {
    without(for_clients(schema), &["description", "title", "examples"])
}

/// `schema` without the annotation keywords `keys`, in it and in every subschema. Property names are not
/// keywords: a property called `title` stays.
fn without(mut schema: Value, keys: &[&str]) -> Value {
    fn walk(v: &mut Value, keys: &[&str]) {
        let Value::Object(map) = v else {
            if let Value::Array(items) = v {
                items.iter_mut().for_each(|i| walk(i, keys));
            }
            return;
        };
        for key in keys {
            map.remove(*key);
        }
        for (key, sub) in map.iter_mut() {
            match key.as_str() {
                // Maps from a name to a schema: the names stay, each schema is trimmed.
                "properties" | "$defs" | "definitions" | "patternProperties" => {
                    if let Value::Object(named) = sub {
                        named.values_mut().for_each(|s| walk(s, keys));
                    }
                }
                "items"
                | "prefixItems"
                | "additionalProperties"
                | "anyOf"
                | "oneOf"
                | "allOf"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "unevaluatedProperties"
                | "unevaluatedItems" => walk(sub, keys),
                _ => {}
            }
        }
    }
    walk(&mut schema, keys);
    schema
}

/// A successful result: the value as text for every client, and as `structuredContent` for those that
/// read it.
pub fn success(value: Value) -> Value {
    json!({
        "content": [{ "type": "text", "text": value.to_string() }],
        "structuredContent": value,
        "isError": false,
    })
}

/// [`success`] written out, with the members of `rest` (an object) besides its own: the value is
/// serialized once, for its text, and those same bytes are its `structuredContent`.
pub fn success_text(value: &Value, mut rest: Value) -> String {
    let text = value.to_string();
    rest["content"] = json!([{ "type": "text", "text": text }]);
    rest["isError"] = json!(false);
    super::rpc::splice_first("structuredContent", &text, &rest)
}

/// A failed operation as a tool result: `isError: true` with the API's error body as JSON text, never a
/// JSON-RPC error. No `structuredContent`: clients check it against the tool's `outputSchema`, which
/// describes a success, and the TypeScript SDK 1.x does so on error results too, refusing the whole result.
pub fn failure(error: &ApiError) -> Value {
    json!({
        "content": [{ "type": "text", "text": error.body().to_string() }],
        "isError": true,
    })
}

#[cfg(test)]
mod written {
    use super::*;

    #[test]
    fn a_success_written_out_reads_as_the_success_value_with_the_eras_members() {
        let value = json!({"agents": [{"name": "A \"quoted\" one", "n": 1}], "next_cursor": null});
        for rest in [json!({}), json!({"resultType": "complete", "_meta": {"k": "v"}})] {
            let mut want = success(value.clone());
            want.as_object_mut().unwrap().extend(rest.as_object().unwrap().clone());
            let text = success_text(&value, rest);
            assert_eq!(serde_json::from_str::<Value>(&text).unwrap(), want, "{text}");
        }
    }
}

#[cfg(test)]
mod trims {
    use super::*;

    #[test]
    fn annotations_go_and_properties_of_the_same_name_stay() {
        let schema = json!({
            "title": "Params", "description": "d", "type": "object",
            "properties": {
                "title": {"type": "string", "description": "the title", "title": "Title"},
                "items": {"type": "array", "items": {"title": "Item", "type": "integer", "format": "int64"}},
                "either": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null", "description": "none"}]}
            },
            "$defs": {"A": {"title": "A", "type": "object", "properties": {"description": {"type": "string"}}}}
        });
        assert_eq!(
            for_validators(schema.clone()),
            json!({
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "items": {"type": "array", "items": {"type": "integer"}},
                    "either": {"anyOf": [{"$ref": "#/$defs/A"}, {"type": "null"}]}
                },
                "$defs": {"A": {"type": "object", "properties": {"description": {"type": "string"}}}}
            })
        );
        let shown = for_models(schema);
        assert_eq!(shown["description"], "d");
        assert_eq!(shown["properties"]["title"], json!({"type": "string", "description": "the title"}));
    }
}
