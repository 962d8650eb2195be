//! The Worker's entry points and its adapters to the platform. This is the only place that names
//! `worker::`; everything it does is convert, then call the core.

pub mod d1;
pub mod feeds;
mod limiter;
pub mod net;
pub mod r2;
pub mod sandboxes;
mod sessions;
mod stream;

use crate::app::{self, RequestMeta, MAX_BODY_BYTES};
use crate::cx::{Config, Cx, Env as CoreEnv};
use crate::http::{HttpRequest, HttpResponse};
use crate::store::Counted;
use worker::worker_sys::web_sys;
use worker::{event, Context, Env, Headers, MessageExt, Response, Result};

/// Binding names, as in `wrangler.toml`.
pub const DB: &str = "DB";
pub const LIMITER: &str = "LIMITER";
pub const SESSIONS: &str = "SESSIONS";
pub const FEEDS: &str = "FEEDS";
pub const FILES: &str = "FILES";
pub const FIRES_QUEUE: &str = "FIRES";

fn var(env: &Env, name: &str) -> Option<String> {
    env.var(name).ok().map(|v| v.to_string()).filter(|v| !v.is_empty())
}

fn secret(env: &Env, name: &str) -> Option<String> {
    env.secret(name).ok().map(|v| v.to_string()).filter(|v| !v.is_empty())
}

pub(crate) fn config(env: &Env) -> Config {
    let flag = |name| var(env, name).is_some_and(|v| v == "1" || v.eq_ignore_ascii_case("true"));
    Config {
        open_signup: flag("OPEN_SIGNUP"),
        admin_token: secret(env, "ADMIN_TOKEN").or_else(|| var(env, "ADMIN_TOKEN")),
        rate_limit_per_min: var(env, "RATE_LIMIT_PER_MIN").and_then(|v| v.parse().ok()).unwrap_or(600),
        sandboxes_per_workspace: var(env, "SANDBOXES_PER_WORKSPACE").and_then(|v| v.parse().ok()),
        sandbox_cents_per_hour: var(env, "SANDBOX_PRICE_CENTS_PER_HOUR").and_then(|v| v.parse().ok()).unwrap_or(0),
        allowed_origins: var(env, "ALLOWED_ORIGINS")
            .map(|v| {
                v.split(',').map(|s| s.trim().trim_end_matches('/').to_owned()).filter(|s| !s.is_empty()).collect()
            })
            .unwrap_or_default(),
        public_base_url: var(env, "PUBLIC_BASE_URL").unwrap_or_default(),
        secrets_key: secret(env, "SECRETS_KEY").or_else(|| var(env, "SECRETS_KEY")),
        prices: var(env, "PRICES")
            .map(|p| {
                crate::rules::prices::Prices::parse(&p).unwrap_or_else(|e| {
                    crate::error::log_line(&format!("{e}; using the default prices"));
                    Default::default()
                })
            })
            .unwrap_or_default(),
        allow_loopback_http: flag("ALLOW_LOOPBACK_HTTP"),
        stripe_secret_key: secret(env, "STRIPE_SECRET_KEY").or_else(|| var(env, "STRIPE_SECRET_KEY")),
        stripe_webhook_secret: secret(env, "STRIPE_WEBHOOK_SECRET").or_else(|| var(env, "STRIPE_WEBHOOK_SECRET")),
        stripe_api_base: var(env, "STRIPE_API_BASE"),
        github_api_url: var(env, "GITHUB_API_URL"),
        slack_api_url: var(env, "SLACK_API_URL"),
        aws_sts_url: var(env, "AWS_STS_URL"),
        gcp_iam_url: var(env, "GCP_IAM_URL"),
        gcp_sts_url: var(env, "GCP_STS_URL"),
        conformance_fixtures: flag("CONFORMANCE_FIXTURES"),
        log_errors_only: match var(env, "REQUEST_LOG").as_deref() {
            None | Some("all") => false,
            Some("errors") => true,
            Some(other) => {
                crate::error::log_line(&format!("REQUEST_LOG is `{other}`, not `all` or `errors`; logging all"));
                false
            }
        },
        trust_cf_connecting_ip: flag("TRUST_CF_CONNECTING_IP"),
        agent_wait_ms: var(env, "AGENT_WAIT_MS").and_then(|v| v.parse().ok()),
        webhook_retry_schedule_s: var(env, "WEBHOOK_RETRY_SCHEDULE").and_then(|v| {
            let parsed = crate::rules::webhooks::parse_schedule(&v);
            if parsed.is_none() {
                crate::error::log_line(
                    "WEBHOOK_RETRY_SCHEDULE is not comma-separated seconds (each 0-43200); using the default",
                );
            }
            parsed
        }),
    }
}

pub fn now_ms() -> i64 {
    js_sys::Date::now() as i64
}

thread_local! {
    /// The settings, read once per isolate: vars and secrets are fixed for its life (a change deploys a new
    /// one), and reading them (and parsing `PRICES`) through JavaScript cost every request.
    static CONFIG: std::cell::OnceCell<Config> = const { std::cell::OnceCell::new() };
    /// The isolate's finished calls not yet counted in D1 (`app::observe`).
    static PENDING_CALLS: std::rc::Rc<crate::rules::metrics::PendingCalls> = std::rc::Rc::default();
}

/// The bindings of `wrangler.toml`, looked up once per isolate: `env` and its bindings are the same
/// objects for the isolate's life, and each lookup (a property read and a check of its class's name
/// through JavaScript) cost every request.
#[derive(Clone)]
struct Bindings {
    /// The `D1Database` as its JavaScript value: the `worker` type is not `Clone`.
    db: wasm_bindgen::JsValue,
    limiter: worker::ObjectNamespace,
    sessions: worker::ObjectNamespace,
    feeds: worker::ObjectNamespace,
    files: worker::Bucket,
    fires: worker::Queue,
    /// The static assets (wrangler.toml `[assets]`); a deployment without them still serves everything
    /// but the Help Center's pages.
    assets: Option<worker::Fetcher>,
    /// Hosted sandboxes' objects (wrangler.toml `[[containers]]`); a deployment without them refuses
    /// hosted placement, saying so.
    sandboxes: Option<worker::ObjectNamespace>,
}

thread_local! {
    static BINDINGS: std::cell::OnceCell<Bindings> = const { std::cell::OnceCell::new() };
}

fn bindings(env: &Env) -> Result<Bindings> {
    if let Some(found) = BINDINGS.with(|b| b.get().cloned()) {
        return Ok(found);
    }
    // A missing binding is not kept: the next request looks again and says so again.
    let found = Bindings {
        db: env.d1(DB)?.as_ref().clone(),
        limiter: env.durable_object(LIMITER)?,
        sessions: env.durable_object(SESSIONS)?,
        feeds: env.durable_object(FEEDS)?,
        files: env.bucket(FILES)?,
        fires: env.queue(FIRES_QUEUE)?,
        assets: env.assets("ASSETS").ok(),
        sandboxes: env.durable_object("SANDBOXES").ok(),
    };
    BINDINGS.with(|b| {
        let _ = b.set(found.clone());
    });
    Ok(found)
}

pub(crate) fn core_env(env: &Env) -> Result<CoreEnv> {
    use wasm_bindgen::JsCast;
    let b = bindings(env)?;
    let meter = std::rc::Rc::new(crate::cx::Meter::default());
    Ok(CoreEnv {
        db: Counted::new(Box::new(d1::D1(b.db.unchecked_into()))),
        limiter: Box::new(Counting(limiter::Client(b.limiter), meter.clone())),
        sessions: Box::new(sessions::Client(b.sessions, meter.clone())),
        blobs: Box::new(r2::R2(b.files)),
        queue: Box::new(Fires(b.fires)),
        feeds: Box::new(Counting(feeds::Client(b.feeds), meter.clone())),
        clock: Box::new(sessions::WorkerClock),
        assets: Box::new(StaticAssets(b.assets)),
        net: Box::new(net::observed(meter.clone())),
        sandboxes: Box::new(sandboxes::Client::new(b.sandboxes, env)),
        config: CONFIG.with(|c| c.get_or_init(|| config(env)).clone()),
        meter,
        pending_calls: PENDING_CALLS.with(std::rc::Rc::clone),
    })
}

/// The Worker's static assets, read through its `ASSETS` binding (an internal fetch: no visitor reaches
/// them, wrangler.toml's `run_worker_first`).
struct StaticAssets(Option<worker::Fetcher>);

impl crate::cx::Assets for StaticAssets {
    fn get(&self, path: String) -> futures::future::LocalBoxFuture<'_, std::result::Result<Option<String>, String>> {
        Box::pin(async move {
            let fetcher = self.0.as_ref().ok_or("this deployment has no ASSETS binding (wrangler.toml [assets])")?;
            let url = format!("https://assets.invalid/{path}");
            let mut resp = fetcher.fetch(url, None).await.map_err(|e| e.to_string())?;
            match resp.status_code() {
                200 => resp.text().await.map(Some).map_err(|e| e.to_string()),
                404 => Ok(None),
                status => Err(format!("the ASSETS binding answered HTTP {status} for {path}")),
            }
        })
    }
}

/// An object client whose calls are counted for the work's log line.
struct Counting<T>(T, std::rc::Rc<crate::cx::Meter>);

impl<T: crate::cx::Limiter> crate::cx::Limiter for Counting<T> {
    fn hit(
        &self,
        bucket: String,
        limit: u32,
        period_ms: i64,
        now_ms: i64,
    ) -> futures::future::LocalBoxFuture<'_, std::result::Result<crate::rules::rate::Decision, String>> {
        self.1.count_object_call();
        self.0.hit(bucket, limit, period_ms, now_ms)
    }
}

impl<T: crate::cx::Feeds> crate::cx::Feeds for Counting<T> {
    fn bump(&self, workspace_id: &str) -> futures::future::LocalBoxFuture<'_, std::result::Result<(), String>> {
        self.1.count_object_call();
        self.0.bump(workspace_id)
    }
    fn wait(
        &self,
        workspace_id: &str,
        seen: &str,
        wait_ms: i64,
    ) -> futures::future::LocalBoxFuture<'_, std::result::Result<String, String>> {
        self.1.count_object_call();
        self.0.wait(workspace_id, seen, wait_ms)
    }
}

/// One line for a unit of background work (a routine fire, a webhook delivery), like a request's.
fn work_line(core: &CoreEnv, kind: &str, id_field: &str, id: &str, started_ms: i64, error: Option<&str>) {
    let outbound: Vec<serde_json::Value> = core
        .meter
        .outbound()
        .iter()
        .map(|o| serde_json::json!({ "host": o.host, "status": o.status, "ms": o.ms }))
        .collect();
    let labels = core.meter.labels();
    let line = serde_json::json!({
        "log": kind,
        id_field: id,
        "trace_id": core.meter.trace().map(|t| t.trace_id).unwrap_or_default(),
        "workspace_id": labels.workspace_id,
        "ok": error.is_none(),
        "error": error.unwrap_or_default(),
        "duration_ms": now_ms() - started_ms,
        "d1_round_trips": core.db.calls(),
        "object_calls": core.meter.object_calls(),
        "outbound": outbound,
    });
    crate::error::log_record(&line);
}

/// A new trace for work no request started (a cron tick, a queue message).
fn fresh_trace(core: &CoreEnv) {
    let (trace, span) = (crate::rules::ids::random_bytes(), crate::rules::ids::random_bytes());
    core.meter.set_trace(crate::rules::traceparent::TraceContext::fresh(trace, span));
}

#[event(start)]
fn start() {
    console_error_panic_hook::set_once();
}

#[event(fetch)]
async fn fetch(req: web_sys::Request, env: Env, ctx: Context) -> Result<web_sys::Response> {
    // The runtime's own request, not `worker::Request`: that one reads `cf` and parses the URL for every
    // request, which the profile showed as a few per cent of a call; nothing here reads `cf`.
    let request_id = hex::encode(crate::rules::ids::random_bytes::<8>());
    let url = req.url();
    let (path, query) = crate::http::path_and_query(&url);
    let headers: Vec<(String, String)> =
        Headers(req.headers()).entries().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    let declared = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse::<usize>().ok());
    // Refuse a declared oversized body before reading it; the core checks the real length too.
    let body = if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        vec![0; MAX_BODY_BYTES + 1]
    } else {
        body_bytes(&req).await.unwrap_or_default()
    };
    let request = HttpRequest {
        method: req.method(),
        path: path.to_owned(),
        query: query.to_owned(),
        // A Worker is never shown its peer: the address comes from headers, trusted by configuration only
        // (`crate::http::client_address`).
        client_ip: String::new(),
        headers,
        body,
        stream: None,
    };
    // A missing binding is the deployment's fault, but the caller still gets an answer in its face's shape.
    let core = match core_env(&env) {
        Ok(core) => core,
        Err(e) => return to_js(app::refuse(&request, &crate::error::ApiError::cause(e).finish(&request_id))),
    };
    // The request runs on its own task, so an answer it streams (MCP progress) can go out while it runs:
    // the handler answers with whichever head comes first, a whole response or a stream's.
    let (sink, head, body) = stream::EdgeSink::new();
    let mut request = request;
    request.stream = Some(crate::http::StreamOut::new(sink.clone()));
    ctx.wait_until(async move {
        let (response, done) = app::serve(&core, request, RequestMeta { now_ms: now_ms(), request_id }).await;
        sink.finish(response);
        // The log line and the metrics count come after the answer has gone: a timer, not a microtask,
        // since the runtime sends the response only once the microtasks ran out, and the line (serialized
        // for wrangler's inspector under `wrangler dev`) would otherwise go first. Even with no line to
        // write, going on at once measured slower on one connection (p50 7 → 10 ms under the peers rig).
        worker::Delay::from(std::time::Duration::ZERO).await;
        app::observe::finish(&core, done).await;
        app::observe::flush_later(&core).await;
    });
    match head.await {
        Ok(stream::Head::Whole(response)) => to_js(response),
        Ok(stream::Head::Streamed(status, headers)) => {
            let response = Response::from_stream(body)?.with_status(status);
            Ok(response.with_headers(to_headers(&headers)?).into())
        }
        Err(_) => Err(worker::Error::RustError("the request ended without an answer".into())),
    }
}

async fn body_bytes(req: &web_sys::Request) -> Result<Vec<u8>> {
    let buffer = wasm_bindgen_futures::JsFuture::from(req.array_buffer()?).await?;
    Ok(js_sys::Uint8Array::new(&buffer).to_vec())
}

fn to_headers(pairs: &[(String, String)]) -> Result<Headers> {
    let headers = Headers::new();
    for (k, v) in pairs {
        headers.append(k, v)?;
    }
    Ok(headers)
}

fn to_js(resp: HttpResponse) -> Result<web_sys::Response> {
    let init = web_sys::ResponseInit::new();
    init.set_status(resp.status);
    init.set_headers(&to_headers(&resp.headers)?.0);
    let body = (!resp.body.is_empty()).then(|| js_sys::Uint8Array::from(resp.body.as_slice()));
    Ok(web_sys::Response::new_with_opt_buffer_source_and_init(body.as_ref().map(AsRef::as_ref), &init)?)
}

#[event(scheduled)]
async fn scheduled(_event: worker::ScheduledEvent, env: Env, _ctx: worker::ScheduleContext) {
    let core = match core_env(&env) {
        Ok(c) => c,
        Err(e) => return crate::error::log_line(&format!("cron: bindings missing: {e}")),
    };
    let cx = Cx::system(&core, now_ms(), hex::encode(crate::rules::ids::random_bytes::<8>()));
    match crate::ops::routines::tick(&cx).await {
        Ok(n) if n > 0 => crate::error::log_line(&format!("cron: {n} routine fire(s) recorded")),
        Ok(_) => {}
        Err(e) => crate::error::log_line(&format!("cron: {}", e.finish(&cx.request_id))),
    }
    if let Err(e) = crate::domain::webhooks::sweep(&cx).await {
        crate::error::log_line(&format!("cron: webhook sweep: {e}"));
    }
    // Requests nobody answered in their workspace's time expire, and their agents hear it.
    match crate::ops::requests::expire_due(&cx, None).await {
        Ok(n) if n > 0 => crate::error::log_line(&format!("cron: {n} request(s) expired")),
        Ok(_) => {}
        Err(e) => crate::error::log_line(&format!("cron: expiring requests: {}", e.finish(&cx.request_id))),
    }
    // MCP tasks past their time: already invisible to tasks/get, their rows go here.
    if let Err(e) = crate::ops::mcp_tasks::forget_expired(&cx).await {
        crate::error::log_line(&format!("cron: forgetting expired MCP tasks: {}", e.finish(&cx.request_id)));
    }
    // Checks run by another runner: their results were read when they ended.
    if let Err(e) = crate::domain::jobs::forget_done_checkouts(&cx).await {
        crate::error::log_line(&format!("cron: forgetting done checkouts: {}", e.finish(&cx.request_id)));
    }
    // Metrics: this minute's open requests per workspace; once an hour, minutes past keeping go.
    let minute = cx.now_ms.div_euclid(60_000);
    if let Err(e) = cx.db().all(crate::store::metrics::sample_open_requests(minute)).await {
        crate::error::log_line(&format!("cron: sampling open requests: {e}"));
    }
    if minute % 60 == 0 {
        if let Err(e) = cx.db().all(crate::store::metrics::prune(minute)).await {
            crate::error::log_line(&format!("cron: pruning metrics: {e}"));
        }
    }
}

/// Routine fires and webhook deliveries from `agentsky-fires`; from its dead-letter queue, the ones that
/// kept failing, recorded as failed. The batch's webhook deliveries go out after its fires, to different
/// endpoints at once and to each in order ([`crate::domain::webhooks::by_endpoint`]).
#[event(queue)]
async fn queue(batch: worker::MessageBatch<serde_json::Value>, env: Env, _ctx: Context) -> Result<()> {
    let dead_letters = batch.queue().ends_with("-dlq");
    let mut deliveries = Vec::new();
    for message in batch.messages()? {
        if message.body().get("health").is_some() {
            // `GET /v1/health` checking that the queue takes messages: nothing to do.
            message.ack();
            continue;
        }
        if let Some(delivery_id) = message.body()["webhook_delivery"].as_str().map(str::to_owned) {
            deliveries.push((delivery_id, message));
            continue;
        }
        if message.body().get("web_push").is_some() {
            // A request's notifications to the members' browsers: once, best effort (a dead letter drops).
            let core = core_env(&env)?;
            let started = traced(&core, &message);
            let request_id = message.body()["web_push"].as_str().unwrap_or_default().to_owned();
            let cx = Cx::system(&core, started, hex::encode(crate::rules::ids::random_bytes::<8>()));
            let outcome = match dead_letters {
                true => Ok(0),
                false => crate::domain::push::deliver(&cx, &net::observed(core.meter.clone()), message.body()).await,
            };
            work_line(
                &core,
                "web_push",
                "request_id",
                &request_id,
                started,
                outcome.as_ref().err().map(String::as_str),
            );
            match outcome {
                Ok(_) => message.ack(),
                Err(_) => message.retry(),
            }
            continue;
        }
        // Each message is its own unit of work: its own counters, trace and log line.
        let core = core_env(&env)?;
        let started = traced(&core, &message);
        let Some(fire_id) = message.body()["fire_id"].as_str().map(str::to_owned) else {
            crate::error::log_record(&serde_json::json!({ "log": "queue_message_dropped", "why": "no fire_id" }));
            message.ack();
            continue;
        };
        let cx = Cx::system(&core, now_ms(), hex::encode(crate::rules::ids::random_bytes::<8>()));
        let outcome = if dead_letters {
            crate::ops::routines::give_up(&cx, &fire_id).await
        } else {
            crate::ops::routines::run_fire(&cx, &fire_id).await
        };
        let error = outcome.as_ref().err().map(|e| e.clone().finish(&cx.request_id).to_string());
        work_line(&core, "routine_fire", "fire_id", &fire_id, started, error.as_deref());
        match outcome {
            Ok(()) => message.ack(),
            Err(_) => message.retry(),
        }
    }
    if !deliveries.is_empty() {
        let core = core_env(&env)?;
        let env = &env;
        crate::domain::webhooks::by_endpoint(&core.db, deliveries, |message| async move {
            if let Err(e) = deliver_one(env, &message, dead_letters).await {
                crate::error::log_line(&format!("queue: webhook delivery: {e}"));
                message.retry();
            }
        })
        .await;
    }
    Ok(())
}

/// A message's unit of work starts: the trace of the work that enqueued it, when it says, else a new one.
/// Returns when it started.
fn traced(core: &CoreEnv, message: &worker::Message<serde_json::Value>) -> i64 {
    match message.body()["traceparent"].as_str().and_then(crate::rules::traceparent::parse) {
        Some(parent) => core.meter.set_trace(parent.child(crate::rules::ids::random_bytes())),
        None => fresh_trace(core),
    }
    now_ms()
}

/// One attempt of a webhook delivery (or, from the dead-letter queue, giving it up), as its own unit of
/// work; the message is acknowledged, or retried when the database failed.
async fn deliver_one(env: &Env, message: &worker::Message<serde_json::Value>, dead_letters: bool) -> Result<()> {
    let core = core_env(env)?;
    let started = traced(&core, message);
    let delivery_id = message.body()["webhook_delivery"].as_str().unwrap_or_default().to_owned();
    let attempt = message.body()["attempt"].as_i64().unwrap_or(0);
    let cx = Cx::system(&core, started, hex::encode(crate::rules::ids::random_bytes::<8>()));
    let outcome = if dead_letters {
        crate::domain::webhooks::give_up(&cx, &delivery_id).await
    } else {
        crate::domain::webhooks::deliver(&cx, &net::observed(core.meter.clone()), &delivery_id, attempt).await
    };
    let error = outcome.as_ref().err().map(ToString::to_string);
    work_line(&core, "webhook_delivery", "delivery_id", &delivery_id, started, error.as_deref());
    match outcome {
        Ok(()) => message.ack(),
        Err(_) => message.retry(),
    }
    Ok(())
}

/// [`Queue`] over the `FIRES` producer binding.
struct Fires(worker::Queue);

impl crate::cx::Queue for Fires {
    fn send(&self, body: serde_json::Value) -> futures::future::LocalBoxFuture<'_, std::result::Result<(), String>> {
        self.send_after(body, 0)
    }

    fn send_after(
        &self,
        body: serde_json::Value,
        delay_s: u32,
    ) -> futures::future::LocalBoxFuture<'_, std::result::Result<(), String>> {
        Box::pin(async move {
            // As JSON-compatible JS (objects, not Maps): the queue encodes messages as JSON, and a Map
            // would arrive as `{}`.
            let value = serde::Serialize::serialize(&body, &serde_wasm_bindgen::Serializer::json_compatible())
                .map_err(|e| e.to_string())?;
            let message = worker::RawMessageBuilder::new(value)
                .delay_seconds(delay_s)
                .build_with_content_type(worker::QueueContentType::Json);
            self.0.send_raw(message).await.map_err(|e| e.to_string())
        })
    }
}
