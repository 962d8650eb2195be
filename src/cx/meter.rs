//! What one unit of work did, for its log line, its metrics and its trace: the Worker's adapters count
//! Durable Object calls and outbound fetches here, the faces name the operation, the workspace and the
//! key, and the harness records its model and tool calls as spans. One per request, turn step, routine
//! fire or webhook delivery; it never holds a secret, only ids, names, counts and times.

use crate::rules::otlp::Span;
use crate::rules::traceparent::TraceContext;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

use super::{Net, Outbound};
use crate::http::HttpResponse;
use futures::future::LocalBoxFuture;

/// One outbound fetch: the host only (a URL's path or query may carry a token), its answer and time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundCall {
    pub host: String,
    /// The HTTP status, or 0 when the fetch failed.
    pub status: u16,
    pub ms: i64,
}

/// Who and what a unit of work was about; each face fills in what it knows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Labels {
    /// The operation or tool (`start_session`, `tools/call:report_status`).
    pub op: String,
    pub workspace_id: String,
    /// The API key's id (`key_…`), or a session's id on the session server; never a secret.
    pub key_id: String,
    pub agent_id: String,
    /// The session a session-server call came from.
    pub session_id: String,
    /// The error code the caller was answered with, if any (`not_found`, `rate_limited`, …).
    pub error_code: String,
}

#[derive(Default)]
pub struct Meter {
    trace: RefCell<Option<TraceContext>>,
    object_calls: Cell<u32>,
    outbound: RefCell<Vec<OutboundCall>>,
    labels: RefCell<Labels>,
    spans: RefCell<Vec<Span>>,
}

impl Meter {
    /// This unit's place in its trace: outbound calls carry it as their parent.
    pub fn set_trace(&self, t: TraceContext) {
        self.trace.replace(Some(t));
    }

    pub fn trace(&self) -> Option<TraceContext> {
        self.trace.borrow().clone()
    }

    /// The `traceparent` a call onward carries: the same trace, a new span id.
    pub fn child_traceparent(&self) -> Option<String> {
        self.trace.borrow().as_ref().map(|t| t.child(crate::rules::ids::random_bytes()).header())
    }

    pub fn count_object_call(&self) {
        self.object_calls.set(self.object_calls.get() + 1);
    }

    pub fn object_calls(&self) -> u32 {
        self.object_calls.get()
    }

    pub fn record_outbound(&self, call: OutboundCall) {
        self.outbound.borrow_mut().push(call);
    }

    pub fn outbound(&self) -> Vec<OutboundCall> {
        self.outbound.borrow().clone()
    }

    /// Changes the labels (`f` sets the fields it knows).
    pub fn label(&self, f: impl FnOnce(&mut Labels)) {
        f(&mut self.labels.borrow_mut());
    }

    pub fn labels(&self) -> Labels {
        self.labels.borrow().clone()
    }

    /// A span under this unit's current span (named, timed; the caller adds attributes and records it),
    /// or `None` when the unit has no trace.
    pub fn child_span(&self, name: &str, kind: u8, start_ms: i64, end_ms: i64) -> Option<Span> {
        let t = self.trace.borrow().clone()?;
        Some(Span {
            trace_id: t.trace_id,
            span_id: hex::encode(crate::rules::ids::random_bytes::<8>()),
            parent_span_id: t.span_id,
            name: name.to_owned(),
            kind,
            start_ms,
            end_ms,
            attributes: vec![],
            error: None,
        })
    }

    pub fn record_span(&self, span: Span) {
        self.spans.borrow_mut().push(span);
    }

    /// The spans recorded so far, leaving none.
    pub fn take_spans(&self) -> Vec<Span> {
        std::mem::take(&mut self.spans.borrow_mut())
    }
}

/// The host of a URL, for a log line (never its path or query).
pub fn host_of(url: &str) -> String {
    url::Url::parse(url).ok().and_then(|u| u.host_str().map(str::to_owned)).unwrap_or_default()
}

/// A network as a unit of work sees it: every request carries the work's trace onward (`traceparent`,
/// a new span of the same trace, replacing any the caller set) and is counted, with its host, status
/// and time, for the work's log line.
pub struct ObservedNet<N> {
    pub inner: N,
    pub meter: Rc<Meter>,
    pub now_ms: Box<dyn Fn() -> i64>,
}

impl<N: Net> ObservedNet<N> {
    /// `get` is the GET's body limit; `None` is a POST.
    async fn observed(&self, mut out: Outbound, get: Option<usize>) -> Result<HttpResponse, String> {
        out.headers.retain(|(k, _)| !k.eq_ignore_ascii_case("traceparent"));
        if let Some(tp) = self.meter.child_traceparent() {
            out.headers.push(("traceparent".into(), tp));
        }
        let host = host_of(&out.url);
        let started = (self.now_ms)();
        let result = match get {
            Some(max_bytes) => self.inner.get(out, max_bytes).await,
            None => self.inner.post(out).await,
        };
        let status = result.as_ref().map_or(0, |r| r.status);
        self.meter.record_outbound(OutboundCall { host, status, ms: (self.now_ms)() - started });
        result
    }
}

impl<N: Net> Net for ObservedNet<N> {
    fn post(&self, out: Outbound) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        Box::pin(self.observed(out, None))
    }
    fn get(&self, out: Outbound, max_bytes: usize) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        Box::pin(self.observed(out, Some(max_bytes)))
    }
}
