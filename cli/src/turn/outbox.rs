//! The turn's output on its way to the session: lines masked and redacted, grouped into keyed events
//! that a retried post sends again under the same keys.

use crate::redact;
use crate::runner_client::{Event, EventType, Usage};
use serde_json::{Map, Value};

/// The most text one event carries; longer output is split.
pub const EVENT_TEXT_MAX: usize = 64 * 1024;
/// The most events one post carries (the server takes 500).
pub(super) const POST_MAX_EVENTS: usize = 200;

/// Which stream a line came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Output waiting to be posted: lines not yet made into events, and keyed events not yet accepted.
pub struct Outbox {
    pub(super) lease_id: String,
    next: u64,
    lines: Vec<(Stream, String)>,
    /// Keyed events, in order; kept (with their keys) until a post is accepted.
    pub unsent: Vec<Event>,
    /// A coding agent CLI's usage of the turn so far, not yet posted (the newest replaces the older).
    pub usage: Option<Usage>,
    secrets: Vec<String>,
}

impl Outbox {
    /// `secrets` are masked in every line, and whatever else the redaction rule catches is replaced.
    pub fn new(lease_id: &str, secrets: Vec<String>) -> Self {
        Self { lease_id: lease_id.to_owned(), next: 1, lines: vec![], unsent: vec![], usage: None, secrets }
    }

    pub fn push(&mut self, stream: Stream, line: &str) {
        let line = self.masked(line.trim_end_matches(['\n', '\r']));
        self.lines.push((stream, line));
    }

    /// A text as it may be posted: secrets masked, the redaction rule applied, at most [`EVENT_TEXT_MAX`].
    fn masked(&self, text: &str) -> String {
        let mut text = text.to_owned();
        for s in &self.secrets {
            text = redact(&text, s);
        }
        text = crate::redaction::redact(&text);
        if text.len() > EVENT_TEXT_MAX {
            let mut cut = EVENT_TEXT_MAX;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
            text.push('…');
        }
        text
    }

    /// Adds a typed event a coding agent's stream made (a message, a tool call or result), after the lines
    /// before it, with every text in it masked as lines are.
    pub fn typed(&mut self, kind: EventType, mut body: Value) {
        self.seal();
        self.mask_all(&mut body);
        self.event(kind, body);
    }

    fn mask_all(&self, v: &mut Value) {
        match v {
            Value::String(s) => *s = self.masked(s),
            Value::Array(items) => items.iter_mut().for_each(|x| self.mask_all(x)),
            Value::Object(map) => map.values_mut().for_each(|x| self.mask_all(x)),
            _ => {}
        }
    }

    pub fn has_lines(&self) -> bool {
        !self.lines.is_empty()
    }

    fn key(&mut self) -> String {
        let k = format!("{}-{}", self.lease_id, self.next);
        self.next += 1;
        k
    }

    /// Adds one keyed event (`text` for status and messages; `error` events carry `message`): `body`'s
    /// fields (an object's; anything else carries none).
    pub fn event(&mut self, kind: EventType, body: Value) {
        let body = match body {
            Value::Object(fields) => fields,
            _ => Map::new(),
        };
        let key = self.key();
        self.unsent.push(Event { key, kind, body });
    }

    /// Turns the buffered lines into keyed events: consecutive lines of one stream make one event (up to
    /// [`EVENT_TEXT_MAX`]); stdout is `agent_message`, stderr `status`.
    pub fn seal(&mut self) {
        let lines = std::mem::take(&mut self.lines);
        let mut current: Option<(Stream, String)> = None;
        for (stream, line) in lines {
            match &mut current {
                Some((s, text)) if *s == stream && text.len() + 1 + line.len() <= EVENT_TEXT_MAX => {
                    text.push('\n');
                    text.push_str(&line);
                }
                _ => {
                    if let Some((s, text)) = current.take() {
                        self.emit(s, text);
                    }
                    current = Some((stream, line));
                }
            }
        }
        if let Some((s, text)) = current {
            self.emit(s, text);
        }
    }

    fn emit(&mut self, stream: Stream, text: String) {
        let kind = match stream {
            Stream::Stdout => EventType::AgentMessage,
            Stream::Stderr => EventType::Status,
        };
        self.text(kind, text);
    }

    /// Adds an `error` event saying why the turn failed.
    pub fn error(&mut self, message: impl Into<String>) {
        let key = self.key();
        let body = Map::from_iter([("message".to_owned(), Value::String(message.into()))]);
        self.unsent.push(Event { key, kind: EventType::Error, body });
    }

    /// Adds one keyed event whose body is a `text` (a status line, a message).
    pub fn text(&mut self, kind: EventType, text: impl Into<String>) {
        let key = self.key();
        let body = Map::from_iter([("text".to_owned(), Value::String(text.into()))]);
        self.unsent.push(Event { key, kind, body });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The unsent events as they are posted.
    fn posted(o: &Outbox) -> Vec<Value> {
        o.unsent.iter().map(|e| serde_json::to_value(e).unwrap()).collect()
    }

    #[test]
    fn lines_become_keyed_events_grouped_by_stream_with_secrets_masked() {
        let mut o = Outbox::new("lease_1", vec!["sst_secret_token_value_123".into()]);
        o.push(Stream::Stdout, "hello\n");
        o.push(Stream::Stdout, "world\r\n");
        o.push(Stream::Stderr, "warming up with sst_secret_token_value_123");
        o.push(Stream::Stdout, "done");
        o.seal();
        assert!(!o.has_lines());
        let shown = posted(&o);
        let kinds: Vec<(&str, &str, &str)> = shown
            .iter()
            .map(|e| (e["key"].as_str().unwrap(), e["type"].as_str().unwrap(), e["text"].as_str().unwrap()))
            .collect();
        assert_eq!(
            kinds,
            [
                ("lease_1-1", "agent_message", "hello\nworld"),
                ("lease_1-2", "status", "warming up with sst_secret_t…"),
                ("lease_1-3", "agent_message", "done"),
            ]
        );
        // Unsent events keep their keys; new lines get new ones.
        o.push(Stream::Stdout, "more");
        o.seal();
        assert_eq!(o.unsent.len(), 4);
        assert_eq!(o.unsent[3].key, "lease_1-4");
        o.event(EventType::Error, json!({"message": "boom"}));
        let e = &posted(&o)[4];
        assert_eq!(
            (e["key"].as_str(), e["type"].as_str(), e["message"].as_str()),
            (Some("lease_1-5"), Some("error"), Some("boom"))
        );
    }

    #[test]
    fn typed_events_follow_the_lines_before_them_with_every_text_masked() {
        let mut o = Outbox::new("l", vec!["sst_secret_token_value_123".into()]);
        o.push(Stream::Stderr, "starting");
        let args = json!({"command": "echo sst_secret_token_value_123", "n": 1});
        o.typed(EventType::ToolCall, json!({"call_id": "c1", "name": "shell", "arguments": args}));
        let posted = posted(&o);
        assert_eq!(posted[0]["text"], "starting");
        assert_eq!(posted[1]["type"], "tool_call");
        assert_eq!(posted[1]["arguments"], json!({"command": "echo sst_secret_t…", "n": 1}));
    }

    #[test]
    fn secrets_the_agent_prints_are_redacted_before_they_are_posted() {
        let mut o = Outbox::new("l", vec![]);
        o.push(Stream::Stdout, "export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwx");
        o.push(Stream::Stderr, "curl -u ada:s3cr3t https://api.example.com");
        o.seal();
        let texts: Vec<&str> = o.unsent.iter().map(|e| e.body["text"].as_str().unwrap()).collect();
        assert_eq!(texts, ["export GITHUB_TOKEN=[redacted]", "curl -u ada:[redacted] https://api.example.com"]);
    }

    #[test]
    fn long_output_is_split_into_events_of_bounded_size() {
        let mut o = Outbox::new("l", vec![]);
        let line = "x".repeat(40 * 1024);
        o.push(Stream::Stdout, &line);
        o.push(Stream::Stdout, &line);
        o.push(Stream::Stdout, &"y".repeat(EVENT_TEXT_MAX + 10));
        o.seal();
        assert_eq!(o.unsent.len(), 3);
        assert!(o.unsent.iter().all(|e| e.body["text"].as_str().unwrap().len() <= EVENT_TEXT_MAX + 3));
    }
}
