//! A session's log as people read it, for every face that shows a transcript: the `transcript` resource
//! (Markdown), a hand-off's brief (plain text) and a share link's page (HTML). Which events are shown and
//! where each keeps its text is decided here once; each face only lays it out.

use crate::session::Event;
use serde_json::Value;

/// One shown event.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry<'a> {
    /// A message, with who it is from (`user`, `visitor`, `goal`, `peer`, `routine` or `agent`).
    Said {
        who: &'static str,
        text: &'a str,
    },
    ToolCall {
        name: &'a str,
        arguments: &'a Value,
    },
    /// A tool's output, as text (the harnesses and the runner keep it under `content`).
    ToolResult {
        content: String,
    },
    Error {
        message: &'a str,
    },
}

/// The entry an event shows as; status changes, turn marks and the like show as none.
pub fn entry(event: &Event) -> Option<Entry<'_>> {
    let text = |key: &str| event.body[key].as_str().unwrap_or_default();
    Some(match event.kind.as_str() {
        "user_message" => Entry::Said { who: author(&event.body["from"]), text: text("text") },
        "agent_message" => Entry::Said { who: "agent", text: text("text") },
        "tool_call" => Entry::ToolCall { name: text("name"), arguments: &event.body["arguments"] },
        "tool_result" => Entry::ToolResult {
            content: match &event.body["content"] {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        },
        "error" => Entry::Error { message: text("message") },
        _ => return None,
    })
}

/// Who a message in a transcript is from, as people read it: the owner's messages are the user's, a
/// share-link holder's a visitor's.
pub fn author(from: &Value) -> &'static str {
    match from.as_str() {
        Some("share_link") => "visitor",
        Some("goal") => "goal",
        Some(_) => "user",
        None if from.get("peer").is_some() => "peer",
        None if from.get("routine").is_some() => "routine",
        None => "user",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(kind: &str, body: Value) -> Event {
        Event { seq: 1, kind: kind.into(), message_id: "msg_1".into(), at_ms: 0, body }
    }

    #[test]
    fn events_show_with_their_author_and_text() {
        let said = event("user_message", json!({"text": "hi", "from": "share_link"}));
        assert_eq!(entry(&said), Some(Entry::Said { who: "visitor", text: "hi" }));
        let result = event("tool_result", json!({"call_id": "c", "content": "ok"}));
        assert_eq!(entry(&result), Some(Entry::ToolResult { content: "ok".into() }));
        let structured = event("tool_result", json!({"content": {"n": 1}}));
        assert_eq!(entry(&structured), Some(Entry::ToolResult { content: "{\"n\":1}".into() }));
        assert_eq!(entry(&event("status", json!({"status": "idle"}))), None);
    }
}
