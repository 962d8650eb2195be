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

/// A successful result: the value as text for every client, and as `structuredContent` for those that
/// read it.
pub fn success(value: Value) -> Value {
    json!({
        "content": [{ "type": "text", "text": value.to_string() }],
        "structuredContent": value,
        "isError": false,
    })
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
