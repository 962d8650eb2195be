//! `GET /v1/openapi.json`: an OpenAPI 3.1 document generated from the operation table. Its schemas are
//! the same JSON Schemas the MCP tools publish, hoisted into `components`.

use crate::ops::{Scope, OPS};
use serde_json::{json, Map, Value};

/// Moves a schema's `$defs` into `defs` and points its `$ref`s at `#/components/schemas/…`.
fn hoist(mut schema: Value, defs: &mut Map<String, Value>) -> Value {
    fn rewrite(v: &mut Value) {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get_mut("$ref") {
                    if let Some(name) = r.strip_prefix("#/$defs/") {
                        *r = format!("#/components/schemas/{name}");
                    }
                }
                map.values_mut().for_each(rewrite);
            }
            Value::Array(items) => items.iter_mut().for_each(rewrite),
            _ => {}
        }
    }
    if let Some(map) = schema.as_object_mut() {
        map.remove("$schema");
        if let Some(Value::Object(found)) = map.remove("$defs") {
            for (name, mut def) in found {
                rewrite(&mut def);
                defs.insert(name, def);
            }
        }
    }
    rewrite(&mut schema);
    schema
}

/// The whole document. `base_url` becomes the one server entry.
pub fn document(base_url: &str) -> Value {
    let mut paths = Map::new();
    let mut defs = Map::new();
    for op in OPS {
        let params_schema = hoist(op.params_schema().clone(), &mut defs);
        let result_schema = hoist(op.result_schema().clone(), &mut defs);
        let path_names: Vec<&str> =
            op.path.split('/').filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}'))).collect();
        let mut parameters: Vec<Value> = path_names
            .iter()
            .map(|name| {
                json!({ "name": name, "in": "path", "required": true,
                        "schema": params_schema["properties"][*name].clone() })
            })
            .collect();
        let mut body_schema = params_schema.clone();
        if let Some(props) = body_schema["properties"].as_object_mut() {
            for name in &path_names {
                props.remove(*name);
            }
        }
        if let Some(req) = body_schema["required"].as_array_mut() {
            req.retain(|r| !path_names.iter().any(|n| r == n));
        }
        let mut operation = json!({
            "operationId": op.name,
            "summary": op.title,
            "description": op.description(),
            "tags": [op.group.name()],
            "responses": {
                op.http_status().to_string(): {
                    "description": op.title,
                    "content": { "application/json": { "schema": result_schema } }
                },
                "default": {
                    "description": "An error with the API's code",
                    "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } }
                }
            },
            "x-mcp-tool": op.mcp_tool(),
        });
        if op.method == "GET" || op.method == "DELETE" {
            let required: Vec<&str> =
                params_schema["required"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            for (name, schema) in body_schema["properties"].as_object().into_iter().flatten() {
                parameters.push(json!({ "name": name, "in": "query", "required": required.contains(&name.as_str()),
                                        "schema": schema }));
            }
        } else {
            operation["requestBody"] =
                json!({ "required": true, "content": { "application/json": { "schema": body_schema } } });
        }
        operation["parameters"] = Value::Array(parameters);
        if op.scope == Scope::Public {
            operation["security"] = json!([]);
        }
        let entry = paths.entry(op.path.to_owned()).or_insert_with(|| json!({}));
        entry[op.method.to_ascii_lowercase()] = operation;
    }
    defs.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": { "error": {
                "type": "object", "required": ["code", "message"],
                "properties": {
                    "code": { "type": "string", "description": "not_found, insufficient_scope, universe_mismatch, invalid_params, rate_limited, …" },
                    "message": { "type": "string" },
                    "retry_after_ms": { "type": "integer" }
                }
            }}
        }),
    );
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "agentsky API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Call your AI agents as tools. Every operation here is also described by the `help` tool, and those marked x-mcp-tool are MCP tools on /v1/mcp."
        },
        "servers": [{ "url": base_url }],
        "security": [{ "bearer": [] }],
        "paths": paths,
        "components": {
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer", "description": "An API key, ast_…" } },
            "schemas": defs
        }
    })
}
