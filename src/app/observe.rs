//! The request's side of operability: its trace context, its one structured log line and its metrics
//! row, and the health check. The line holds ids, names, counts and times only: never a path (share and
//! webhook paths carry tokens), a header, a body or a query.
//!
//! A finished call is counted without a round trip of its own: its tally waits in the isolate's buffer
//! ([`crate::rules::metrics::PendingCalls`]) and the next request's first D1 round trip carries the buffer's upserts in front of
//! its own statements ([`crate::store::Counted::ride`]), so a read right after sees the calls before it.
//! An isolate left idle writes the buffer itself a second later ([`flush_later`]).

use crate::cx::{Cx, Env};
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::metrics::{CallKey, CallTally};
use crate::rules::traceparent::{self, TraceContext};
use crate::store::{Riding, Sql, Stmt};
use serde::de::{IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{json, Value};

/// Which face a path belongs to, for the log line and nothing else.
pub fn face_of(path: &str) -> &'static str {
    match path {
        "/v1/mcp" => "operator_mcp",
        "/v1/session/mcp" => "session_mcp",
        "/v1/help/mcp" => "help_mcp",
        "/v1/conformance/mcp" => "conformance_mcp",
        "/v1/health" | "/" | "/v1" => "health",
        "/v1/billing/stripe/webhook" => "stripe_webhook",
        "/device" => "device",
        _ if path.starts_with("/v1/webhooks/records/") => "records_webhook",
        _ if path.starts_with("/v1/runner/") => "runner",
        _ if path == "/console" || path.starts_with("/console/") => "console",
        _ if path.starts_with("/s/") || path.starts_with("/a/") => "share",
        _ if path == "/help" || path.starts_with("/help/") => "help_center",
        _ if path.starts_with("/oauth/") || path.starts_with("/.well-known/") => "oauth",
        _ => "rest",
    }
}

/// The JSON-RPC call an MCP request makes (`tools/call:start_session`), and its `_meta.traceparent`
/// (the 2026-07-28 wire carries trace context there as well as in the header). Read from the body
/// without building it ([`Head`]): the call itself parses it next, and a body may be megabytes.
fn mcp_call(req: &HttpRequest) -> (String, Option<String>) {
    if req.method != "POST" || !super::MCP_ENDPOINTS.contains(&req.path.as_str()) {
        return (String::new(), None);
    }
    let head: Head = serde_json::from_slice(&req.body).unwrap_or_default();
    let method = head.method.0.unwrap_or_default();
    let params = head.params.0.unwrap_or_default();
    let op = match params.name.0 {
        Some(tool) if method == "tools/call" => format!("tools/call:{tool}"),
        _ => method,
    };
    // Names only: a tool name the caller made up is cut short and kept to name characters.
    let op: String = op.chars().filter(|c| c.is_ascii_alphanumeric() || "/:_-.".contains(*c)).take(80).collect();
    (op, params.meta.0.and_then(|m| m.traceparent.0))
}

/// What [`mcp_call`] reads of a JSON-RPC body; the rest is skipped unbuilt.
#[derive(Default, Deserialize)]
#[serde(default)]
struct Head {
    method: Short,
    params: Object<HeadParams>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct HeadParams {
    name: Short,
    #[serde(rename = "_meta")]
    meta: Object<HeadMeta>,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct HeadMeta {
    traceparent: Short,
}

/// A string's first [`Short::KEPT`] characters; any other JSON value is skipped and read as none.
#[derive(Default)]
struct Short(Option<String>);

impl Short {
    const KEPT: usize = 128;
}

/// `T` read from a JSON object; any other JSON value is skipped and read as none.
#[derive(Default)]
struct Object<T>(Option<T>);

/// The visitor methods that skip what is not wanted: arrays and scalars (and, unless named, strings).
macro_rules! skip {
    ($none:expr $(, $kind:ident)*) => {
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("any JSON value")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok($none)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> { Ok($none) }
        fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> { Ok($none) }
        fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> { Ok($none) }
        fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> { Ok($none) }
        fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> { Ok($none) }
        $(fn $kind<E>(self, _: &str) -> Result<Self::Value, E> { Ok($none) })*
    };
}

impl<'de> Deserialize<'de> for Short {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> Visitor<'de> for Visit {
            type Value = Short;
            skip!(Short(None));
            fn visit_str<E>(self, s: &str) -> Result<Short, E> {
                Ok(Short(Some(s.chars().take(Short::KEPT).collect())))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Short, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Short(None))
            }
        }
        d.deserialize_any(Visit)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Visit<T> {
            type Value = Object<T>;
            skip!(Object(None), visit_str);
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Object<T>, A::Error> {
                T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(|t| Object(Some(t)))
            }
        }
        d.deserialize_any(Visit(std::marker::PhantomData))
    }
}

/// A request under way.
pub struct Started {
    face: &'static str,
    method: String,
    started_ms: i64,
    trace: TraceContext,
    carried: Carried,
}

/// Earlier calls' tallies riding on this request's first round trip, until it is known they were written.
type Carried = Option<(Vec<(CallKey, CallTally)>, Riding)>;

/// How long an isolate's buffer waits for a request to carry it before its last request writes it.
pub const FLUSH_AFTER_MS: i64 = 1_000;
/// How many times one flush waits again while requests keep carrying the buffer: the platform ends work
/// left running 30 s after its answer, and the next request starts a new wait.
const FLUSH_WAITS: usize = 20;

/// The most metrics rows one round trip carries (each is one statement of its batch).
const MOST_CARRIED: usize = 50;

fn upserts(tallies: &[(CallKey, CallTally)]) -> Vec<Stmt> {
    tallies.iter().map(|((ws, agent, minute), t)| crate::store::metrics::add_calls(ws, agent, *minute, t)).collect()
}

/// Starts the request's trace: the caller's `traceparent` (header, else the MCP call's `_meta`), or a new
/// trace. The request is one span of it, and what it calls onward its children.
pub fn start(env: &Env, req: &HttpRequest, now_ms: i64) -> Started {
    let (op, meta_traceparent) = mcp_call(req);
    let incoming = req
        .header("traceparent")
        .and_then(traceparent::parse)
        .or_else(|| meta_traceparent.as_deref().and_then(traceparent::parse));
    let trace = match incoming {
        Some(parent) => parent.child(crate::rules::ids::random_bytes()),
        None => TraceContext::fresh(crate::rules::ids::random_bytes(), crate::rules::ids::random_bytes()),
    };
    env.meter.set_trace(trace.clone());
    if !op.is_empty() {
        env.meter.label(|l| l.op = op);
    }
    let taken = env.pending_calls.take(MOST_CARRIED);
    let carried = (!taken.is_empty()).then(|| {
        let riding = env.db.ride(upserts(&taken));
        (taken, riding)
    });
    Started { face: face_of(&req.path), method: req.method.clone(), started_ms: now_ms, trace, carried }
}

/// A finished request: its log line and metrics row, written after the answer has gone.
pub struct Finished {
    pub line: Value,
    /// Written whatever `REQUEST_LOG` says: the request failed or was slow.
    notable: bool,
    workspace_id: String,
    agent_id: String,
    error: bool,
    started_ms: i64,
    duration_ms: i64,
    carried: Carried,
}

impl Finished {
    /// Whether its line is written: always, or under `REQUEST_LOG=errors` when it failed or was slow.
    pub fn logged(&self, config: &crate::cx::Config) -> bool {
        self.notable || !config.log_errors_only
    }
}

impl Started {
    pub fn trace_id(&self) -> &str {
        &self.trace.trace_id
    }

    pub fn end(self, env: &Env, request_id: &str, resp: &HttpResponse) -> Finished {
        let labels = env.meter.labels();
        let duration_ms = (env.clock.now_ms() - self.started_ms).max(0);
        let error_code = if !labels.error_code.is_empty() {
            labels.error_code.clone()
        } else if resp.status >= 400 {
            error_code_of(resp)
        } else {
            String::new()
        };
        let outbound: Vec<Value> =
            env.meter.outbound().iter().map(|o| json!({ "host": o.host, "status": o.status, "ms": o.ms })).collect();
        let line = json!({
            "log": "request",
            "request_id": request_id,
            "trace_id": self.trace.trace_id,
            "face": self.face,
            "method": self.method,
            "op": labels.op,
            "workspace_id": labels.workspace_id,
            "key_id": labels.key_id,
            "session_id": labels.session_id,
            "agent_id": labels.agent_id,
            "status": resp.status,
            "error_code": error_code,
            "duration_ms": duration_ms,
            "d1_round_trips": env.db.calls(),
            "object_calls": env.meter.object_calls(),
            "outbound": outbound,
        });
        Finished {
            line,
            // Every answer of 400 or more has an error code (`http_<status>` at least).
            notable: !error_code.is_empty() || duration_ms >= 1000,
            workspace_id: labels.workspace_id,
            agent_id: labels.agent_id,
            error: resp.status >= 500 || !error_code.is_empty(),
            started_ms: self.started_ms,
            duration_ms,
            carried: self.carried,
        }
    }
}

/// The error code of an answer that is the API's error body, or a JSON-RPC error carrying it.
fn error_code_of(resp: &HttpResponse) -> String {
    if resp.body.len() > 64 * 1024 {
        return format!("http_{}", resp.status);
    }
    let body = resp.json_body();
    let code = body["error"]["code"].as_str().or_else(|| body["error"]["data"]["code"].as_str());
    match code {
        Some(c) => c.chars().filter(|c| c.is_ascii_alphanumeric() || *c == '_').take(40).collect(),
        None => format!("http_{}", resp.status),
    }
}

/// Writes the line, then counts the call: its tally joins the buffer, with the earlier ones this request
/// was to carry when no round trip of it took them (metrics never fail a request and cost it no round trip).
pub async fn finish(env: &Env, done: Finished) {
    if done.logged(&env.config) {
        crate::error::log_record(&done.line);
    }
    env.db.unride();
    if let Some((taken, mut riding)) = done.carried {
        if !matches!(riding.try_recv(), Ok(Some(Ok(_)))) {
            env.pending_calls.put_back(taken);
        }
    }
    if done.workspace_id.is_empty() {
        return;
    }
    let key = (done.workspace_id, done.agent_id, done.started_ms.div_euclid(60_000));
    env.pending_calls.add(key, &CallTally::one(done.error, done.duration_ms));
}

/// After an answer: when calls wait in the buffer and no flush waits already, waits [`FLUSH_AFTER_MS`] and
/// writes them ([`write_pending`]), unless a request took the buffer meanwhile (it carries them): then it
/// waits again for what came after, up to [`FLUSH_WAITS`] times. An idle isolate so loses no count, a busy
/// one writes none alone, and it keeps one timer, not one per request. A failed write puts them back and
/// is logged.
pub async fn flush_later(env: &Env) {
    let pending = &env.pending_calls;
    if pending.is_empty() || pending.flush_waiting(env.clock.now_ms()) {
        return;
    }
    for _ in 0..FLUSH_WAITS {
        let seen = pending.takes();
        pending.set_flush_wakes(env.clock.now_ms() + FLUSH_AFTER_MS);
        env.clock.sleep(FLUSH_AFTER_MS).await;
        if pending.is_empty() {
            break;
        }
        if pending.takes() == seen {
            write_pending(env).await;
            break;
        }
    }
    pending.set_flush_wakes(0);
}

/// Writes the buffer now, in round trips of [`MOST_CARRIED`] rows.
pub async fn write_pending(env: &Env) {
    loop {
        let taken = env.pending_calls.take(MOST_CARRIED);
        if taken.is_empty() {
            return;
        }
        if let Err(e) = env.db.batch(upserts(&taken)).await {
            env.pending_calls.put_back(taken);
            crate::error::log_record(&json!({ "log": "metrics_write_failed", "error": e.to_string() }));
            return;
        }
    }
}

/// How long one health check's answer is reused by this isolate: uptime checks and load balancers may
/// poll often, and each check touches every binding (the queue one sends a message).
const HEALTH_TTL_MS: i64 = 10_000;

thread_local! {
    /// The last check: when it ran, and its answer.
    static LAST_HEALTH: std::cell::RefCell<Option<(i64, u16, Value)>> = const { std::cell::RefCell::new(None) };
}

/// Whether each backing service answers: D1, a session object, R2 and the queue. Only `ok` per service
/// and the version; why one failed goes to the log with the request id, not to the caller. A 503 when
/// any is down, so a load balancer or uptime check reads it without parsing. The deployment's admin token
/// also gets what this isolate holds in memory ([`memory`]).
pub async fn health(cx: &Cx<'_>, admin: bool) -> HttpResponse {
    let (status, mut body) = checked(cx).await;
    if admin {
        body["memory"] = memory(cx.env);
    }
    HttpResponse::json(status, &body)
}

/// What this isolate holds, for the deployment's admin alone (`make bench-memory` samples it): the wasm
/// linear memory, whose size is its peak since it never shrinks (`null` off wasm), and what the Worker
/// keeps between requests, each bounded: the key cache and the metrics buffer.
fn memory(env: &Env) -> Value {
    #[cfg(target_arch = "wasm32")]
    let wasm_bytes = Some(core::arch::wasm32::memory_size(0) as u64 * 65_536);
    #[cfg(not(target_arch = "wasm32"))]
    let wasm_bytes: Option<u64> = None;
    let (keys, key_bytes) = crate::keycache::usage();
    let (rows, dropped) = env.pending_calls.usage();
    json!({
        "wasm_bytes": wasm_bytes,
        "key_cache": { "entries": keys, "bytes": key_bytes },
        "pending_calls": { "rows": rows, "dropped_calls": dropped },
    })
}

/// The checks' answer, reused for [`HEALTH_TTL_MS`].
async fn checked(cx: &Cx<'_>) -> (u16, Value) {
    let cached =
        LAST_HEALTH.with(|l| l.borrow().clone()).filter(|(at, _, _)| (0..HEALTH_TTL_MS).contains(&(cx.now_ms - at)));
    if let Some((_, status, body)) = cached {
        return (status, body);
    }
    let env = cx.env;
    let d1 = async { env.db.all(crate::stmt!("SELECT 1 AS ok")).await.map(|_| ()).map_err(|e| e.to_string()) };
    let object = async {
        let call = crate::session::calls::Wait { key: "health".into(), wait_ms: 0 };
        env.sessions.ask("_health", call).await.map(drop)
    };
    let r2 = async { env.blobs.get("_health/probe".into()).await.map(|_| ()) };
    let queue = async { env.queue.send(json!({ "health": cx.now_ms })).await };
    let (d1, object, r2, queue) = futures::join!(d1, object, r2, queue);
    let mut checks = serde_json::Map::new();
    let mut ok = true;
    for (name, result) in [("d1", d1), ("session_object", object), ("r2", r2), ("queue", queue)] {
        if let Err(e) = &result {
            ok = false;
            crate::error::log_record(
                &json!({ "log": "health_check_failed", "request_id": cx.request_id, "check": name, "error": e }),
            );
        }
        checks.insert(name.into(), json!({ "ok": result.is_ok() }));
    }
    let status = if ok { 200 } else { 503 };
    let body = json!({ "ok": ok, "name": "agentsky", "version": env!("CARGO_PKG_VERSION"), "checks": checks });
    LAST_HEALTH.with(|l| l.replace(Some((cx.now_ms, status, body.clone()))));
    (status, body)
}
