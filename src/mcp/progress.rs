//! Progress on the 2025 wire: a `tools/call` that carries `params._meta.progressToken`, from a client that
//! accepts `text/event-stream`, may be answered with a server-sent-event stream holding the tool's
//! `notifications/progress` and then its result. The stream is the answer to that one POST: no
//! `Mcp-Session-Id`, no event ids, so nothing to resume and nothing kept between requests.

use serde_json::{json, Value};
use std::cell::RefCell;

/// Where a tool reports progress while it runs; the era module writes what it gathered.
#[derive(Debug)]
pub struct Progress {
    token: Value,
    notes: RefCell<Vec<Value>>,
}

impl Progress {
    /// A sink for the request's `progressToken` (a string or an integer), when the client can read a stream.
    pub fn for_request(params: &serde_json::Map<String, Value>, accepts_stream: bool) -> Option<Self> {
        let token = params.get("_meta")?.get("progressToken")?;
        (accepts_stream && (token.is_string() || token.is_i64() || token.is_u64()))
            .then(|| Self { token: token.clone(), notes: RefCell::new(Vec::new()) })
    }

    /// One step: `progress` must grow from one report to the next (the spec's rule); `total` when known.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let mut params = json!({"progressToken": self.token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notes.borrow_mut().push(json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}));
    }

    /// The stream's body: each notification, then the response, as SSE `message` events. `None` when the
    /// tool reported nothing, so the answer stays one JSON body.
    pub fn stream(&self, response: &Value) -> Option<Vec<u8>> {
        let notes = self.notes.borrow();
        if notes.is_empty() {
            return None;
        }
        let mut body = String::new();
        for message in notes.iter().chain(std::iter::once(response)) {
            body.push_str("event: message\ndata: ");
            body.push_str(&message.to_string());
            body.push_str("\n\n");
        }
        Some(body.into_bytes())
    }
}

/// Whether the request's `Accept` lists `text/event-stream`.
pub fn accepts_stream(accept: Option<&str>) -> bool {
    accept.is_some_and(|a| {
        a.split(',').any(|t| t.split(';').next().is_some_and(|t| t.trim().eq_ignore_ascii_case("text/event-stream")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_and_an_accepted_stream_are_both_needed() {
        let with = json!({"_meta": {"progressToken": "p1"}});
        assert!(Progress::for_request(with.as_object().unwrap(), true).is_some());
        assert!(Progress::for_request(with.as_object().unwrap(), false).is_none());
        assert!(Progress::for_request(&serde_json::Map::new(), true).is_none());
        let bad = json!({"_meta": {"progressToken": {"x": 1}}});
        assert!(Progress::for_request(bad.as_object().unwrap(), true).is_none());
    }

    #[test]
    fn the_stream_carries_each_notification_then_the_response() {
        let params = json!({"_meta": {"progressToken": 7}});
        let progress = Progress::for_request(params.as_object().unwrap(), true).unwrap();
        assert_eq!(progress.stream(&json!({"id": 1})), None);
        progress.report(1.0, Some(2.0), Some("half"));
        progress.report(2.0, Some(2.0), None);
        let body =
            String::from_utf8(progress.stream(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})).unwrap()).unwrap();
        let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 3);
        assert!(events[0].contains("\"progressToken\":7") && events[0].contains("\"message\":\"half\""));
        assert!(events[2].contains("\"result\""));
        assert!(!body.contains("\nid:"), "no event ids: nothing to resume");
    }

    #[test]
    fn accept_lists_are_read_by_media_type() {
        assert!(accepts_stream(Some("application/json, text/event-stream")));
        assert!(accepts_stream(Some("text/event-stream;q=0.9")));
        assert!(!accepts_stream(Some("application/json")));
        assert!(!accepts_stream(None));
    }
}
