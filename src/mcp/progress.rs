//! Progress on the 2025 wire: a `tools/call` that carries `params._meta.progressToken`, from a client that
//! accepts `text/event-stream`, may be answered with a server-sent-event stream holding the tool's
//! `notifications/progress` and then its result. Each notification goes out the moment the tool reports
//! it, when the request has a [`StreamOut`] (the Worker's edge gives one); without one (host tests) the
//! same events arrive whole at the end. The stream is the answer to that one POST: no `Mcp-Session-Id`,
//! no event ids, so nothing to resume and nothing kept between requests.

use crate::http::{HttpResponse, StreamOut};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};

/// Where a tool reports progress while it runs.
#[derive(Debug)]
pub struct Progress {
    token: Value,
    sse: Sse,
}

impl Progress {
    /// A sink for the request's `progressToken` (a string or an integer), when the client can read a stream.
    pub fn for_request(
        params: &serde_json::Map<String, Value>,
        accepts_stream: bool,
        out: Option<&StreamOut>,
    ) -> Option<Self> {
        let token = params.get("_meta")?.get("progressToken")?;
        (accepts_stream && (token.is_string() || token.is_i64() || token.is_u64()))
            .then(|| Self { token: token.clone(), sse: Sse::new(out) })
    }

    /// One step: `progress` must grow from one report to the next (the spec's rule); `total` when known.
    /// Sent at once; `false` when the client has gone away, so the tool may stop early.
    pub fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let mut params = json!({"progressToken": self.token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.sse.event(&json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": params}))
    }

    /// Whether the client is still reading (always, until a send failed).
    pub fn listening(&self) -> bool {
        self.sse.listening()
    }

    /// The answer: the response as the stream's last event when the tool reported progress (the stream is
    /// open, or is made whole here), else `None`, so the answer stays one JSON body.
    pub fn finish(&self, response: &Value) -> Option<HttpResponse> {
        self.sse.opened().then(|| self.sse.finish(response))
    }
}

/// One answer as server-sent events: each sent the moment it is made where the request has a
/// [`StreamOut`], and all kept for the response's record (the whole body when nothing streams).
#[derive(Debug)]
pub struct Sse {
    out: Option<StreamOut>,
    body: RefCell<Vec<u8>>,
    opened: Cell<bool>,
    gone: Cell<bool>,
}

impl Sse {
    pub fn new(out: Option<&StreamOut>) -> Self {
        Self { out: out.cloned(), body: RefCell::default(), opened: Cell::new(false), gone: Cell::new(false) }
    }

    /// Whether the client is still reading (always, until a send failed).
    pub fn listening(&self) -> bool {
        !self.gone.get()
    }

    pub fn opened(&self) -> bool {
        self.opened.get()
    }

    /// One SSE `message` event; the first opens the stream. `false` when the client has gone away.
    pub fn event(&self, message: &Value) -> bool {
        let chunk = sse_event(message);
        self.body.borrow_mut().extend_from_slice(&chunk);
        if let Some(out) = &self.out {
            if !self.opened.get() {
                out.open(200, stream_headers());
            }
            if !self.gone.get() && !out.send(chunk) {
                self.gone.set(true);
            }
        }
        self.opened.set(true);
        !self.gone.get()
    }

    /// Sends `response` as the last event and answers the whole stream (the edge has sent it already).
    pub fn finish(&self, response: &Value) -> HttpResponse {
        self.event(response);
        let body = std::mem::take(&mut *self.body.borrow_mut());
        let mut answer = HttpResponse::new(200).with_body(body);
        answer.headers = stream_headers();
        answer
    }
}

/// The head of every streamed answer.
pub fn stream_headers() -> Vec<(String, String)> {
    vec![("content-type".into(), "text/event-stream".into()), ("cache-control".into(), "no-cache".into())]
}

/// One message as an SSE `message` event, without an id: nothing is resumable.
pub fn sse_event(message: &Value) -> Vec<u8> {
    format!("event: message\ndata: {message}\n\n").into_bytes()
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
        assert!(Progress::for_request(with.as_object().unwrap(), true, None).is_some());
        assert!(Progress::for_request(with.as_object().unwrap(), false, None).is_none());
        assert!(Progress::for_request(&serde_json::Map::new(), true, None).is_none());
        let bad = json!({"_meta": {"progressToken": {"x": 1}}});
        assert!(Progress::for_request(bad.as_object().unwrap(), true, None).is_none());
    }

    #[test]
    fn the_stream_carries_each_notification_then_the_response() {
        let params = json!({"_meta": {"progressToken": 7}});
        let quiet = Progress::for_request(params.as_object().unwrap(), true, None).unwrap();
        assert_eq!(quiet.finish(&json!({"id": 1})), None);
        let progress = Progress::for_request(params.as_object().unwrap(), true, None).unwrap();
        progress.report(1.0, Some(2.0), Some("half"));
        progress.report(2.0, Some(2.0), None);
        let answer = progress.finish(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})).unwrap();
        assert_eq!(answer.header("content-type"), Some("text/event-stream"));
        let body = String::from_utf8(answer.body).unwrap();
        let events: Vec<&str> = body.split("\n\n").filter(|e| !e.is_empty()).collect();
        assert_eq!(events.len(), 3);
        assert!(events[0].contains("\"progressToken\":7") && events[0].contains("\"message\":\"half\""));
        assert!(events[2].contains("\"result\""));
        assert!(!body.contains("\nid:"), "no event ids: nothing to resume");
    }

    /// A sink that keeps what the edge would have sent, in order.
    #[derive(Default)]
    struct Recorder {
        sent: RefCell<Vec<String>>,
        open_after: Cell<usize>,
        hang_up_after: Cell<Option<usize>>,
    }

    impl crate::http::StreamSink for Recorder {
        fn open(&self, status: u16, headers: Vec<(String, String)>) {
            assert_eq!(status, 200);
            assert!(headers.iter().any(|(k, v)| k == "content-type" && v == "text/event-stream"));
            assert!(headers.iter().any(|(k, v)| k == "x-request-id" && v == "r1"), "the request's own headers too");
            self.open_after.set(self.sent.borrow().len() + 1);
        }
        fn send(&self, chunk: Vec<u8>) -> bool {
            self.sent.borrow_mut().push(String::from_utf8(chunk).unwrap());
            self.hang_up_after.get().is_none_or(|n| self.sent.borrow().len() < n)
        }
    }

    #[test]
    fn with_an_edge_each_event_goes_out_when_it_is_reported() {
        let recorder = std::rc::Rc::new(Recorder::default());
        let out = StreamOut::new(recorder.clone()).with_header("x-request-id", "r1");
        let params = json!({"_meta": {"progressToken": "t"}});
        let progress = Progress::for_request(params.as_object().unwrap(), true, Some(&out)).unwrap();
        assert!(progress.report(1.0, None, Some("first")));
        assert_eq!(recorder.sent.borrow().len(), 1, "sent before the tool has finished");
        assert_eq!(recorder.open_after.get(), 1, "the head went out with the first event");
        assert!(progress.report(2.0, None, None));
        progress.finish(&json!({"jsonrpc": "2.0", "id": 1, "result": {}})).unwrap();
        let sent = recorder.sent.borrow();
        assert_eq!(sent.len(), 3);
        assert!(sent[0].contains("first") && sent[2].contains("\"result\""));
    }

    #[test]
    fn a_client_that_hung_up_is_told_to_the_tool() {
        let recorder = std::rc::Rc::new(Recorder { hang_up_after: Cell::new(Some(1)), ..Recorder::default() });
        let out = StreamOut::new(recorder.clone()).with_header("x-request-id", "r1");
        let params = json!({"_meta": {"progressToken": 3}});
        let progress = Progress::for_request(params.as_object().unwrap(), true, Some(&out)).unwrap();
        assert!(!progress.report(1.0, None, None));
        assert!(!progress.listening());
        assert!(!progress.report(2.0, None, None));
        assert_eq!(recorder.sent.borrow().len(), 1, "nothing is sent to a client that went away");
    }

    #[test]
    fn accept_lists_are_read_by_media_type() {
        assert!(accepts_stream(Some("application/json, text/event-stream")));
        assert!(accepts_stream(Some("text/event-stream;q=0.9")));
        assert!(!accepts_stream(Some("application/json")));
        assert!(!accepts_stream(None));
    }
}
