//! The operation table as an MCP [`ToolHost`]: `tools/list` entries derived from each row, and
//! `tools/call` through [`ops::invoke`], with failures as results carrying the API's code.

use crate::cx::Cx;
use crate::error::ApiError;
use crate::mcp::{CallOutcome, ToolHost};
use crate::ops::{self, Op, OPS};
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};
use std::sync::OnceLock;

/// The tools of `/v1/mcp`, derived once per isolate: the table is static, so its schemas are too.
pub fn operator_tools() -> &'static [Value] {
    static TOOLS: OnceLock<Vec<Value>> = OnceLock::new();
    TOOLS.get_or_init(|| OPS.iter().filter(|op| op.tool).map(tool_entry).collect())
}

/// One `tools/list` entry.
pub fn tool_entry(op: &Op) -> Value {
    json!({
        "name": op.name,
        "title": op.title,
        "description": op.description(),
        "inputSchema": for_clients((op.params)().to_value()),
        "outputSchema": for_clients((op.result)().to_value()),
        "annotations": {
            "title": op.title,
            "readOnlyHint": op.hints.read_only,
            "destructiveHint": op.hints.destructive,
            "idempotentHint": op.hints.idempotent,
            "openWorldHint": false,
        },
    })
}

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

/// The operator server's tools, bound to one request's context.
pub struct OperatorTools<'a> {
    pub cx: &'a Cx<'a>,
}

impl ToolHost for OperatorTools<'_> {
    fn tools(&self) -> Vec<Value> {
        operator_tools().to_vec()
    }

    fn call<'a>(&'a self, name: &'a str, arguments: Value) -> LocalBoxFuture<'a, CallOutcome> {
        Box::pin(async move {
            let op = ops::find(name).filter(|op| op.tool)?;
            Some(match ops::invoke(self.cx, op, arguments).await {
                Ok(value) => success(value),
                Err(e) => failure(&e),
            })
        })
    }
}
