//! Session logs of local coding agents, read into plain messages for the trace library. Pure.
//!
//! - Claude Code writes `~/.claude/projects/<project>/<session>.jsonl`: one object per line, `type` `user`
//!   or `assistant` with `message.content` a string or blocks (`text`, `tool_use`, `tool_result`,
//!   `thinking`), plus `summary` lines and bookkeeping lines (`file-history-snapshot`, `system`, …).
//! - Codex writes `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`: lines `{timestamp, type,
//!   payload}` with `session_meta`, `response_item` (`message`, `function_call`, `function_call_output`,
//!   `local_shell_call`, `custom_tool_call`, `reasoning`), `event_msg` (a second copy of the conversation
//!   for the UI, skipped) and `turn_context`; older rollouts hold the payloads directly, after a first
//!   line `{id, timestamp, instructions}`.
//!
//! Unknown line types are skipped, so newer versions of either tool still load; a line that is not a
//! JSON object is an error naming its line number, because it means the file is not what it claims.
//! Every message passes the redaction rule ([`super::redact`]) before it is kept: traces are stored and
//! indexed for search, and a local agent's log holds whatever credentials it printed or fetched.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Most lines a trace may have.
pub const MAX_LINES: usize = 50_000;
/// Longest message kept, in characters (the rest is cut with a marker).
pub const MAX_MESSAGE_CHARS: usize = 64_000;
/// Longest tool output kept, in characters: outputs are long and rarely what one searches for.
pub const MAX_TOOL_OUTPUT_CHARS: usize = 8_000;
/// Line errors reported at most.
const MAX_ERRORS: usize = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    ClaudeCode,
    Codex,
}

impl Format {
    pub const NAMES: &'static [&'static str] = &["claude_code", "codex"];

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "claude_code" => Some(Self::ClaudeCode),
            "codex" => Some(Self::Codex),
            _ => None,
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ClaudeCode => "claude_code",
            Self::Codex => "codex",
        }
    }
}

/// One message of a trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceMessage {
    /// `user`, `assistant`, `tool_call` or `tool_result`.
    pub role: String,
    pub text: String,
    /// The tool's name, for tool calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Parsed {
    pub format: Format,
    pub messages: Vec<TraceMessage>,
    /// The log's own title (Claude Code's summary), else its first user message's first line.
    pub title: Option<String>,
    pub started_ms: Option<i64>,
}

/// Reads a log. `format` `None` tells the format from the lines. The error is written for the uploader:
/// which lines are broken, or why the file is not a session log.
pub fn parse(content: &str, format: Option<Format>) -> Result<Parsed, String> {
    let mut objects = Vec::new();
    let mut errors = Vec::new();
    let mut lines = 0;
    for (i, line) in content.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        lines += 1;
        if lines > MAX_LINES {
            return Err(format!("a trace may have at most {MAX_LINES} lines"));
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(o)) => objects.push(Value::Object(o)),
            Ok(_) => errors.push(format!("line {}: expected a JSON object", i + 1)),
            Err(e) => errors.push(format!("line {}: not JSON ({e})", i + 1)),
        }
    }
    if !errors.is_empty() {
        let more = errors.len().saturating_sub(MAX_ERRORS);
        let mut text = errors.into_iter().take(MAX_ERRORS).collect::<Vec<_>>().join("; ");
        if more > 0 {
            text.push_str(&format!("; and {more} more"));
        }
        return Err(format!("not a JSONL session log: {text}"));
    }
    if objects.is_empty() {
        return Err("the trace is empty".into());
    }
    let format = match format.or_else(|| detect(&objects)) {
        Some(f) => f,
        None => {
            return Err("cannot tell whose log this is: pass `format` (`claude_code` or `codex`), or upload the \
                 .jsonl file Claude Code or Codex wrote"
                .into())
        }
    };
    let mut parsed = match format {
        Format::ClaudeCode => claude_code(&objects),
        Format::Codex => codex(&objects),
    };
    if !parsed.messages.iter().any(|m| m.role == "user" || m.role == "assistant") {
        return Err(format!(
            "no user or assistant messages found in this {} log; is it the session's .jsonl file?",
            format.as_str()
        ));
    }
    if parsed.title.is_none() {
        parsed.title = parsed.messages.iter().find(|m| m.role == "user").map(|m| first_line(&m.text, 120));
    }
    Ok(parsed)
}

fn detect(objects: &[Value]) -> Option<Format> {
    for o in objects.iter().take(200) {
        let ty = o["type"].as_str().unwrap_or_default();
        if o.get("payload").is_some()
            && matches!(ty, "session_meta" | "response_item" | "event_msg" | "turn_context" | "compacted")
        {
            return Some(Format::Codex);
        }
        if o.get("record_type").is_some() || (ty == "message" && o.get("role").is_some()) {
            return Some(Format::Codex);
        }
        if o.get("sessionId").is_some()
            || o.get("parentUuid").is_some()
            || (matches!(ty, "user" | "assistant") && o.get("message").is_some())
            || (ty == "summary" && o.get("leafUuid").is_some())
        {
            return Some(Format::ClaudeCode);
        }
    }
    None
}

/// ISO 8601 (`2025-10-29T00:59:38.317Z`) to unix ms.
fn timestamp(v: &Value) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(v.as_str()?).ok().map(|t| t.timestamp_millis())
}

fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}\n… [cut: {} characters in all]", &text[..at], text.chars().count()),
        None => text.to_owned(),
    }
}

fn first_line(text: &str, max: usize) -> String {
    text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or_default().chars().take(max).collect()
}

/// A tool's input or output as text: strings as they are, anything else as compact JSON.
fn as_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) if items.iter().all(|i| i["type"] == "text" || i["type"] == "input_text") => {
            items.iter().filter_map(|i| i["text"].as_str()).collect::<Vec<_>>().join("\n")
        }
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

struct Builder {
    messages: Vec<TraceMessage>,
    /// Claude Code writes one line per content block of a reply; blocks of one reply become one message.
    last_reply_id: Option<String>,
}

impl Builder {
    fn push(&mut self, role: &str, text: String, name: Option<String>, at_ms: Option<i64>) {
        let text = super::redact::redact(text.trim());
        if text.is_empty() {
            return;
        }
        let max = if role == "tool_result" { MAX_TOOL_OUTPUT_CHARS } else { MAX_MESSAGE_CHARS };
        self.messages.push(TraceMessage { role: role.to_owned(), text: cut(&text, max), name, at_ms });
    }

    /// Appends assistant text to the previous message when it continues the same reply.
    fn reply(&mut self, reply_id: Option<&str>, text: String, at_ms: Option<i64>) {
        let continues = reply_id.is_some() && self.last_reply_id.as_deref() == reply_id;
        match self.messages.last_mut() {
            Some(last) if continues && last.role == "assistant" && !text.trim().is_empty() => {
                let more = super::redact::redact(text.trim());
                last.text = cut(&format!("{}\n\n{}", last.text, more), MAX_MESSAGE_CHARS);
            }
            _ => self.push("assistant", text, None, at_ms),
        }
    }
}

fn claude_code(objects: &[Value]) -> Parsed {
    let mut b = Builder { messages: Vec::new(), last_reply_id: None };
    let mut title = None;
    let mut started_ms = None;
    for o in objects {
        let at = timestamp(&o["timestamp"]);
        started_ms = started_ms.or(at);
        let ty = o["type"].as_str().unwrap_or_default();
        if ty == "summary" {
            if title.is_none() {
                title = o["summary"].as_str().map(|s| first_line(s, 120)).filter(|s| !s.is_empty());
            }
            continue;
        }
        if !matches!(ty, "user" | "assistant") || o["isMeta"] == true {
            continue;
        }
        let message = &o["message"];
        let reply_id = message["id"].as_str();
        match &message["content"] {
            Value::String(text) if ty == "user" => b.push("user", text.clone(), None, at),
            Value::String(text) => b.reply(reply_id, text.clone(), at),
            Value::Array(blocks) => {
                for block in blocks {
                    match block["type"].as_str().unwrap_or_default() {
                        "text" if ty == "user" => b.push("user", as_text(&block["text"]), None, at),
                        "text" => b.reply(reply_id, as_text(&block["text"]), at),
                        "tool_use" => {
                            let name = block["name"].as_str().map(str::to_owned);
                            b.push("tool_call", as_text(&block["input"]), name, at);
                        }
                        "tool_result" => b.push("tool_result", as_text(&block["content"]), None, at),
                        _ => {}
                    }
                }
            }
            _ => {}
        }
        b.last_reply_id = if ty == "assistant" { reply_id.map(str::to_owned) } else { None };
    }
    Parsed { format: Format::ClaudeCode, messages: b.messages, title, started_ms }
}

/// Text Codex adds to the conversation itself, not typed by anyone.
fn injected(text: &str) -> bool {
    let t = text.trim_start();
    ["<environment_context>", "<user_instructions>", "<permissions", "# AGENTS.md instructions"]
        .iter()
        .any(|p| t.starts_with(p))
}

fn codex(objects: &[Value]) -> Parsed {
    let mut b = Builder { messages: Vec::new(), last_reply_id: None };
    let mut started_ms = None;
    for o in objects {
        let at = timestamp(&o["timestamp"]);
        let (ty, item) = match o.get("payload") {
            Some(payload) => (o["type"].as_str().unwrap_or_default(), payload),
            // Older rollouts: the item itself, after a first line of session metadata.
            None if o.get("id").is_some() && o.get("type").is_none() => ("session_meta", o),
            None => ("response_item", o),
        };
        match ty {
            "session_meta" => started_ms = started_ms.or(timestamp(&item["timestamp"])).or(at),
            "response_item" => codex_item(&mut b, item, at),
            _ => {}
        }
        started_ms = started_ms.or(at);
    }
    Parsed { format: Format::Codex, messages: b.messages, title: None, started_ms }
}

fn codex_item(b: &mut Builder, item: &Value, at: Option<i64>) {
    let name = || item["name"].as_str().map(str::to_owned);
    match item["type"].as_str().unwrap_or_default() {
        "message" => {
            let role = item["role"].as_str().unwrap_or_default();
            let text = match &item["content"] {
                Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join("\n"),
                other => as_text(other),
            };
            match role {
                "user" if !injected(&text) => b.push("user", text, None, at),
                "assistant" => b.push("assistant", text, None, at),
                _ => {}
            }
        }
        "function_call" => b.push("tool_call", as_text(&item["arguments"]), name(), at),
        "custom_tool_call" => b.push("tool_call", as_text(&item["input"]), name(), at),
        "local_shell_call" => {
            let command = match &item["action"]["command"] {
                Value::Array(parts) => parts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" "),
                other => as_text(other),
            };
            b.push("tool_call", command, Some("shell".into()), at);
        }
        "function_call_output" | "custom_tool_call_output" | "local_shell_call_output" => {
            let output = &item["output"];
            let text = match output.get("content") {
                Some(content) => as_text(content),
                None => as_text(output),
            };
            b.push("tool_result", text, None, at);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE: &str = r#"{"type":"summary","summary":"Fix the flaky login test","leafUuid":"u3"}
{"parentUuid":null,"isSidechain":false,"type":"user","message":{"role":"user","content":"The login test fails on CI, fix it"},"uuid":"u1","timestamp":"2025-10-29T00:59:38.317Z","sessionId":"s1"}
{"parentUuid":"u1","type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"Let me look at the test."}]},"uuid":"u2","timestamp":"2025-10-29T00:59:40.000Z","sessionId":"s1"}
{"parentUuid":"u2","type":"assistant","message":{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"npm test -- login"}}]},"uuid":"u3","timestamp":"2025-10-29T00:59:41.000Z","sessionId":"s1"}
{"parentUuid":"u3","type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"1 failing: timeout"}]},"uuid":"u4","timestamp":"2025-10-29T00:59:42.000Z","sessionId":"s1"}
{"type":"file-history-snapshot","messageId":"x","snapshot":{}}
{"parentUuid":"u4","type":"user","isMeta":true,"message":{"role":"user","content":"Caveat: local command"},"uuid":"u5","sessionId":"s1"}
"#;

    const CODEX: &str = r#"{"timestamp":"2025-10-29T00:59:38.317Z","type":"session_meta","payload":{"id":"019a","timestamp":"2025-10-29T00:59:38.308Z","cwd":"/tmp/x","cli_version":"0.46.0"}}
{"timestamp":"2025-10-29T00:59:38.317Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"<environment_context>cwd</environment_context>"}]}}
{"timestamp":"2025-10-29T00:59:38.317Z","type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"what is 2+2?"}]}}
{"timestamp":"2025-10-29T00:59:38.317Z","type":"event_msg","payload":{"type":"user_message","message":"what is 2+2?","kind":"plain"}}
{"timestamp":"2025-10-29T00:59:39.000Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"echo\",\"4\"]}","call_id":"c1"}}
{"timestamp":"2025-10-29T00:59:39.500Z","type":"response_item","payload":{"type":"function_call_output","call_id":"c1","output":"{\"output\":\"4\\n\"}"}}
{"timestamp":"2025-10-29T00:59:39.644Z","type":"response_item","payload":{"type":"reasoning","summary":[]}}
{"timestamp":"2025-10-29T00:59:39.700Z","type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"4"}]}}
"#;

    #[test]
    fn credentials_in_a_log_are_redacted_before_they_are_kept() {
        let log = r#"{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"tool_use","id":"t1","name":"mcp__agentsky__get_credential","input":{"grantId":"gr_1"}}]},"timestamp":"2025-10-29T00:59:41.000Z"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"{\"kind\":\"env\",\"env\":{\"VERCEL_TOKEN\":\"vt-live-credential-9f8e7d6c\"}}"}]},"timestamp":"2025-10-29T00:59:42.000Z"}
{"type":"assistant","message":{"id":"m2","role":"assistant","content":[{"type":"text","text":"Run with GH_TOKEN=ghp_abcdefghijklmnopqrstuvwx set."}]},"timestamp":"2025-10-29T00:59:43.000Z"}
"#;
        let p = parse(log, Some(Format::ClaudeCode)).unwrap();
        let all: String = p.messages.iter().map(|m| m.text.as_str()).collect::<Vec<_>>().join("\n");
        assert!(!all.contains("vt-live") && !all.contains("ghp_"), "{all}");
        assert!(all.contains(r#""VERCEL_TOKEN":"[redacted]""#) && all.contains("GH_TOKEN=[redacted] set."), "{all}");
    }

    #[test]
    fn a_claude_code_log_becomes_its_conversation() {
        let p = parse(CLAUDE, None).unwrap();
        assert_eq!(p.format, Format::ClaudeCode);
        assert_eq!(p.title.as_deref(), Some("Fix the flaky login test"));
        let roles: Vec<&str> = p.messages.iter().map(|m| m.role.as_str()).collect();
        assert_eq!(roles, ["user", "assistant", "tool_call", "tool_result"]);
        assert_eq!(p.messages[2].name.as_deref(), Some("Bash"));
        assert_eq!(p.messages[2].text, r#"{"command":"npm test -- login"}"#);
        assert_eq!(p.started_ms, Some(1_761_699_578_317));
    }

    #[test]
    fn a_codex_rollout_becomes_its_conversation_without_injected_context() {
        let p = parse(CODEX, None).unwrap();
        assert_eq!(p.format, Format::Codex);
        let texts: Vec<(&str, &str)> = p.messages.iter().map(|m| (m.role.as_str(), m.text.as_str())).collect();
        assert_eq!(
            texts,
            [
                ("user", "what is 2+2?"),
                ("tool_call", r#"{"command":["echo","4"]}"#),
                ("tool_result", r#"{"output":"4\n"}"#),
                ("assistant", "4")
            ]
        );
        assert_eq!(p.title.as_deref(), Some("what is 2+2?"));
        assert_eq!(p.started_ms, Some(1_761_699_578_308));
    }

    #[test]
    fn older_codex_rollouts_without_envelopes_load() {
        let old = r#"{"id":"abc","timestamp":"2025-05-01T10:00:00Z","instructions":null}
{"type":"message","role":"user","content":[{"type":"input_text","text":"rename the module"}]}
{"record_type":"state"}
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}"#;
        let p = parse(old, None).unwrap();
        assert_eq!(p.format, Format::Codex);
        assert_eq!(p.messages.len(), 2);
    }

    #[test]
    fn broken_lines_are_named_by_number() {
        let e = parse("{\"type\":\"user\"}\n{oops\n[1]\n", None).unwrap_err();
        assert!(e.contains("line 2: not JSON") && e.contains("line 3: expected a JSON object"), "{e}");
    }

    #[test]
    fn files_that_are_not_session_logs_are_told_so() {
        assert!(parse("", None).unwrap_err().contains("empty"));
        assert!(parse("{\"hello\":1}", None).unwrap_err().contains("pass `format`"));
        assert!(parse("{\"hello\":1}", Some(Format::Codex)).unwrap_err().contains("no user or assistant"));
    }

    #[test]
    fn long_messages_are_cut_with_a_marker() {
        let text = "x".repeat(MAX_TOOL_OUTPUT_CHARS + 10);
        assert!(cut(&text, MAX_TOOL_OUTPUT_CHARS).ends_with("characters in all]"));
    }
}
