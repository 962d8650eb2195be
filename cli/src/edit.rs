//! Pure edits of the two clients' config files. Each takes the file's text (or `None` when it does not
//! exist) and returns the new text, or `Ok(None)` when the file already says what it should.
//!
//! Claude Code's `~/.claude.json` is a large file the app itself rewrites; only the one value
//! `mcpServers.agentsky` is set through jsonc-parser's concrete syntax tree, so every other byte (key
//! order, indentation, comments, other servers, per-project settings) stays as it was. serde_json
//! validates the file first (Claude Code reads it as strict JSON) and compares values; it never
//! re-serialises the file (its `preserve_order` feature would also change the Worker's JSON in a shared
//! build). Codex's `config.toml` goes through toml_edit, which keeps comments and layout.
//!
//! Malformed files are refused with the reason and the position, and nothing is written.

use jsonc_parser::cst::{CstInputValue, CstNode, CstObject, CstObjectProp, CstRootNode};
use jsonc_parser::ParseOptions;
use serde::Serialize;
use serde_json::Value;
use toml_edit::{DocumentMut, Item, Table};

/// Why a file cannot be edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditError(pub String);

impl std::fmt::Display for EditError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Claude Code's entry for a remote server with a bearer header (`claude mcp add --transport http`),
/// its fields in the order Claude Code writes them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaudeEntry {
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub url: String,
    pub headers: ClaudeHeaders,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClaudeHeaders {
    #[serde(rename = "Authorization")]
    pub authorization: String,
}

pub fn claude_entry(mcp_url: &str, key: &str) -> ClaudeEntry {
    ClaudeEntry {
        kind: "http",
        url: mcp_url.to_owned(),
        headers: ClaudeHeaders { authorization: format!("Bearer {key}") },
    }
}

/// Sets `mcpServers.<name>` in the text of `~/.claude.json`.
pub fn claude_json(original: Option<&str>, name: &str, entry: &impl Serialize) -> Result<Option<String>, EditError> {
    let text = original.filter(|t| !t.trim().is_empty()).unwrap_or("{}\n");
    let value = serde_json::to_value(entry).map_err(|e| EditError(e.to_string()))?;
    let parsed: Value = serde_json::from_str(text)
        .map_err(|e| EditError(format!("it is not valid JSON (line {}, column {}: {e})", e.line(), e.column())))?;
    let Value::Object(top) = &parsed else {
        return Err(EditError("it is valid JSON but not an object".into()));
    };
    match top.get("mcpServers") {
        Some(Value::Object(servers)) if servers.get(name) == Some(&value) => return Ok(None),
        Some(Value::Object(_)) | None => {}
        Some(_) => return Err(EditError("its `mcpServers` is not an object".into())),
    }
    let entry = input_value(entry)?;
    let root = CstRootNode::parse(text, &ParseOptions::default()).map_err(|e| EditError(e.to_string()))?;
    let top = root.object_value_or_set();
    let servers = match last_property(&top, "mcpServers") {
        Some(p) => p.object_value_or_set(),
        None => top.append("mcpServers", CstInputValue::Object(vec![])).object_value_or_set(),
    };
    match last_property(&servers, name) {
        Some(p) => p.set_value(entry),
        None => drop(servers.append(name, entry)),
    }
    let new_text = root.to_string();
    debug_assert!(serde_json::from_str::<Value>(&new_text).is_ok());
    Ok(Some(new_text))
}

/// The property `key` of `obj`: the last of duplicate keys, which wins in serde_json (and JavaScript).
fn last_property(obj: &CstObject, key: &str) -> Option<CstObjectProp> {
    obj.properties().into_iter().rev().find(|p| p.decoded_name().as_deref() == Some(key))
}

/// `value` as jsonc-parser's input, members in the order `value` serialises them (a struct's field order;
/// serde_json's `Value` would sort them).
fn input_value(value: &impl Serialize) -> Result<CstInputValue, EditError> {
    let text = serde_json::to_string(value).map_err(|e| EditError(e.to_string()))?;
    let root = CstRootNode::parse(&text, &ParseOptions::default()).map_err(|e| EditError(e.to_string()))?;
    Ok(root.value().map(|v| from_node(&v)).unwrap_or(CstInputValue::Null))
}

fn from_node(node: &CstNode) -> CstInputValue {
    if let Some(o) = node.as_object() {
        let members = o.properties().into_iter().filter_map(|p| Some((p.decoded_name()?, from_node(&p.value()?))));
        CstInputValue::Object(members.collect())
    } else if let Some(a) = node.as_array() {
        CstInputValue::Array(a.elements().iter().map(from_node).collect())
    } else if let Some(s) = node.as_string_lit() {
        CstInputValue::String(s.decoded_value().unwrap_or_default())
    } else if let Some(n) = node.as_number_lit() {
        CstInputValue::Number(n.to_string())
    } else if let Some(b) = node.as_boolean_lit() {
        CstInputValue::Bool(b.value())
    } else {
        CstInputValue::Null
    }
}

/// Sets `[mcp_servers.<name>]` in the text of Codex's `config.toml`: `url` and `bearer_token_env_var`.
/// Other keys of that table (timeouts, `enabled`, …) stay; keys of a stdio server (`command`, `args`,
/// `env`, `cwd`) are removed, since one server is either and this one is remote.
pub fn codex_toml(original: Option<&str>, name: &str, url: &str, token_env: &str) -> Result<Option<String>, EditError> {
    let text = original.unwrap_or_default();
    let mut doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| {
        let at = e
            .span()
            .map(|s| line_col(text, s.start))
            .map(|(l, c)| format!("line {l}, column {c}: "))
            .unwrap_or_default();
        EditError(format!("it is not valid TOML ({at}{})", e.message()))
    })?;
    const STDIO_KEYS: [&str; 4] = ["command", "args", "env", "cwd"];
    let servers = doc.entry("mcp_servers").or_insert_with(|| {
        let mut t = Table::new();
        // Only `[mcp_servers.<name>]` is written, not an empty `[mcp_servers]` above it.
        t.set_implicit(true);
        Item::Table(t)
    });
    let servers = servers.as_table_like_mut().ok_or_else(|| EditError("its `mcp_servers` is not a table".into()))?;
    if let Some(existing) = servers.get(name) {
        let t =
            existing.as_table_like().ok_or_else(|| EditError(format!("its `mcp_servers.{name}` is not a table")))?;
        let same = t.get("url").and_then(Item::as_str) == Some(url)
            && t.get("bearer_token_env_var").and_then(Item::as_str) == Some(token_env)
            && STDIO_KEYS.iter().all(|k| t.get(k).is_none());
        if same {
            return Ok(None);
        }
    } else {
        servers.insert(name, Item::Table(Table::new()));
    }
    let entry = servers.get_mut(name).and_then(Item::as_table_like_mut).expect("just checked or inserted");
    for k in STDIO_KEYS {
        entry.remove(k);
    }
    set_str(entry, "url", url);
    set_str(entry, "bearer_token_env_var", token_env);
    let mut out = doc.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

/// Sets a string, keeping the key's position and its decor (comments, spacing) when it exists.
fn set_str(t: &mut dyn toml_edit::TableLike, key: &str, value: &str) {
    match t.get_mut(key).and_then(Item::as_value_mut) {
        Some(v) => {
            let decor = v.decor().clone();
            *v = toml_edit::Value::from(value);
            *v.decor_mut() = decor;
        }
        None => {
            t.insert(key, toml_edit::value(value));
        }
    }
}

fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.len(), |nl| before.len() - nl - 1) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_entry_changes_in_a_file_laid_out_by_hand() {
        // Tabs, spaces before colons, strings that look like structure, a key order of its own.
        let before = "{\n\t\"z\" : \"}\\\"{\",\n\t\"mcpServers\" : {\n\t\t\"b\" : [1, {\"c\": \"]\"}]\n\t},\n\t\"a\":-1.5e3\n}\n";
        let out = claude_json(Some(before), "agentsky", &json!({"x": 1})).unwrap().unwrap();
        assert_eq!(
            out,
            "{\n\t\"z\" : \"}\\\"{\",\n\t\"mcpServers\" : {\n\t\t\"b\" : [1, {\"c\": \"]\"}],\n\t\t\"agentsky\": {\n\t\t\t\"x\": 1\n\t\t}\n\t},\n\t\"a\":-1.5e3\n}\n"
        );
    }

    #[test]
    fn an_entry_keeps_its_fields_in_order_and_the_last_duplicate_key_is_the_one_updated() {
        let before = "{\n  \"mcpServers\": {\"agentsky\": 1, \"agentsky\": 2}\n}\n";
        let out = claude_json(Some(before), "agentsky", &claude_entry("https://x.dev/v1/mcp", "k")).unwrap().unwrap();
        assert!(out.starts_with("{\n  \"mcpServers\": {\"agentsky\": 1, \"agentsky\": {\n"), "{out}");
        let (t, u, h) = (out.find("\"type\"").unwrap(), out.find("\"url\"").unwrap(), out.find("\"headers\"").unwrap());
        assert!(t < u && u < h, "{out}");
        assert_eq!(claude_json(Some(&out), "agentsky", &claude_entry("https://x.dev/v1/mcp", "k")).unwrap(), None);
    }

    #[test]
    fn a_missing_file_gets_just_the_entry() {
        let out = claude_json(None, "agentsky", &json!({"x": 1})).unwrap().unwrap();
        assert_eq!(out, "{\n  \"mcpServers\": {\n    \"agentsky\": {\n      \"x\": 1\n    }\n  }\n}\n");
    }

    #[test]
    fn a_one_line_file_is_opened_onto_lines_around_the_new_member() {
        // jsonc-parser lays a new object member out on lines of its own; the members there keep their text.
        let out = claude_json(Some(r#"{"a":1}"#), "agentsky", &json!({"x": 1})).unwrap().unwrap();
        assert_eq!(out, "{\n  \"a\":1,\n  \"mcpServers\": {\n    \"agentsky\": {\n      \"x\": 1\n    }\n  }\n}");
    }

    #[test]
    fn an_empty_servers_object_is_filled_at_its_indentation() {
        let before = "{\n    \"mcpServers\": {},\n    \"z\": true\n}\n";
        let out = claude_json(Some(before), "agentsky", &json!({"x": 1})).unwrap().unwrap();
        assert_eq!(out, "{\n    \"mcpServers\": {\n        \"agentsky\": {\n            \"x\": 1\n        }\n    },\n    \"z\": true\n}\n");
    }
}
