//! Pure edits of the two clients' config files. Each takes the file's text (or `None` when it does not
//! exist) and returns the new text, or `Ok(None)` when the file already says what it should.
//!
//! Claude Code's `~/.claude.json` is a large file the app itself rewrites; only the one value
//! `mcpServers.agentsky` is spliced into the original text, so every other byte (key order, indentation,
//! other servers, per-project settings) stays as it was. serde_json validates the file first and compares
//! values; it never re-serialises the file (its `preserve_order` feature would also change the Worker's
//! JSON in a shared build). Codex's `config.toml` goes through toml_edit, which keeps comments and layout.
//!
//! Malformed files are refused with the reason and the position, and nothing is written.

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
    let text = original.unwrap_or_default();
    if text.trim().is_empty() {
        let servers = wrap(name, entry, "  ", "  ");
        return Ok(Some(format!("{{\n  \"mcpServers\": {servers}\n}}\n")));
    }
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
    let unit = indent_unit(text);
    let b = text.as_bytes();
    let open = skip_ws(b, 0);
    let top_obj = object_at(b, open);
    // The last of duplicate keys wins, as in serde_json (and JavaScript).
    let new_text = match top_obj.members.iter().rev().find(|m| m.key == "mcpServers") {
        Some(servers) => {
            let inner = object_at(b, servers.value_start);
            match inner.members.iter().rev().find(|m| m.key == name) {
                Some(m) => {
                    let indent = line_indent(text, m.key_start);
                    splice(text, m.value_start, m.value_end, &render(entry, &unit, &indent))
                }
                None => insert_member(text, &inner, name, |u, indent| render(entry, u, indent), &unit),
            }
        }
        None => insert_member(text, &top_obj, "mcpServers", |u, indent| wrap(name, entry, u, indent), &unit),
    };
    debug_assert!(serde_json::from_str::<Value>(&new_text).is_ok());
    Ok(Some(new_text))
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

// ── A span scanner for text already known to be valid JSON ──

struct Member {
    key: String,
    key_start: usize,
    value_start: usize,
    value_end: usize,
}

struct Object {
    open: usize,
    close: usize,
    members: Vec<Member>,
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `i` at an opening quote; returns the index after the closing one.
fn string_end(b: &[u8], mut i: usize) -> usize {
    i += 1;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    i
}

/// `i` at a value's first byte; returns the index after its last.
fn value_end(b: &[u8], i: usize) -> usize {
    match b[i] {
        b'"' => string_end(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = string_end(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            j
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                j += 1;
            }
            j
        }
    }
}

/// The members of the object whose `{` is at `open`.
fn object_at(b: &[u8], open: usize) -> Object {
    let mut members = Vec::new();
    let mut i = skip_ws(b, open + 1);
    loop {
        if b[i] == b'}' {
            return Object { open, close: i, members };
        }
        let key_start = i;
        let key_end = string_end(b, i);
        let key = serde_json::from_slice::<String>(&b[key_start..key_end]).unwrap_or_default();
        i = skip_ws(b, key_end);
        i = skip_ws(b, i + 1); // the colon
        let value_start = i;
        let value_end = value_end(b, i);
        members.push(Member { key, key_start, value_start, value_end });
        i = skip_ws(b, value_end);
        if b[i] == b',' {
            i = skip_ws(b, i + 1);
        }
    }
}

fn splice(text: &str, start: usize, end: usize, with: &str) -> String {
    format!("{}{with}{}", &text[..start], &text[end..])
}

/// The whitespace that starts the line `at` is on.
fn line_indent(text: &str, at: usize) -> String {
    let line_start = text[..at].rfind('\n').map_or(0, |nl| nl + 1);
    text[line_start..].chars().take_while(|c| *c == ' ' || *c == '\t').collect()
}

/// The file's indentation step: the leading whitespace of its first indented line (two spaces if none).
fn indent_unit(text: &str) -> String {
    text.lines()
        .skip(1)
        .map(|l| l.chars().take_while(|c| *c == ' ' || *c == '\t').collect::<String>())
        .find(|w| !w.is_empty())
        .unwrap_or_else(|| "  ".into())
}

/// A value pretty-printed with `unit` per level, its lines after the first starting with `indent`; with
/// an empty `unit`, on one line.
fn render(value: &impl Serialize, unit: &str, indent: &str) -> String {
    if unit.is_empty() {
        return serde_json::to_string(value).expect("a value serialises");
    }
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(unit.as_bytes());
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    value.serialize(&mut ser).expect("a Value always serialises");
    String::from_utf8(buf).expect("serde_json writes UTF-8").replace('\n', &format!("\n{indent}"))
}

/// `{ "<name>": <entry> }` laid out at `indent`.
fn wrap(name: &str, entry: &impl Serialize, unit: &str, indent: &str) -> String {
    let key = serde_json::to_string(name).expect("a string serialises");
    if unit.is_empty() {
        return format!("{{{key}:{}}}", render(entry, "", ""));
    }
    let inner = format!("{indent}{unit}");
    format!("{{\n{inner}{key}: {}\n{indent}}}", render(entry, unit, &inner))
}

/// Adds `"key": value` as the last member of `obj`, laid out like its siblings: `value(unit, indent)`
/// renders the value for a member line indented by `indent` (an empty `unit`: on one line).
fn insert_member(text: &str, obj: &Object, key: &str, value: impl Fn(&str, &str) -> String, unit: &str) -> String {
    let key_json = serde_json::to_string(key).expect("a string serialises");
    let multiline = text[obj.open..obj.close].contains('\n');
    match obj.members.last() {
        Some(last) if multiline => {
            let indent = line_indent(text, last.key_start);
            let member = format!(",\n{indent}{key_json}: {}", value(unit, &indent));
            splice(text, last.value_end, last.value_end, &member)
        }
        Some(last) => {
            // A one-line object stays on one line.
            splice(text, last.value_end, last.value_end, &format!(", {key_json}: {}", value("", "")))
        }
        None => {
            let outer = line_indent(text, obj.open);
            let inner = format!("{outer}{unit}");
            let member = format!("\n{inner}{key_json}: {}\n{outer}", value(unit, &inner));
            splice(text, obj.open + 1, obj.close, &member)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_scanner_finds_members_through_strings_that_look_like_structure() {
        let text = r#"{ "a": "}\"{", "b": [1, {"c": "]"}], "d": -1.5e3, "e": null }"#;
        let obj = object_at(text.as_bytes(), 0);
        let keys: Vec<&str> = obj.members.iter().map(|m| m.key.as_str()).collect();
        assert_eq!(keys, ["a", "b", "d", "e"]);
        let values: Vec<&str> = obj.members.iter().map(|m| &text[m.value_start..m.value_end]).collect();
        assert_eq!(values, [r#""}\"{""#, r#"[1, {"c": "]"}]"#, "-1.5e3", "null"]);
    }

    #[test]
    fn a_compact_file_gets_a_compact_member() {
        let out = claude_json(Some(r#"{"a":1}"#), "agentsky", &json!({"x": 1})).unwrap().unwrap();
        assert_eq!(out, r#"{"a":1, "mcpServers": {"agentsky":{"x":1}}}"#);
    }

    #[test]
    fn an_empty_servers_object_is_filled_at_its_indentation() {
        let before = "{\n    \"mcpServers\": {},\n    \"z\": true\n}\n";
        let out = claude_json(Some(before), "agentsky", &json!({"x": 1})).unwrap().unwrap();
        assert_eq!(out, "{\n    \"mcpServers\": {\n        \"agentsky\": {\n            \"x\": 1\n        }\n    },\n    \"z\": true\n}\n");
    }
}
