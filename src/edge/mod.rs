//! The Worker's entry points and its adapters to the platform. This is the only place that names
//! `worker::`; everything it does is convert, then call the core.

pub mod d1;
pub mod feeds;
mod limiter;
pub mod net;
pub mod r2;
mod sessions;

use crate::app::{self, RequestMeta, MAX_BODY_BYTES};
use crate::cx::{Config, Cx, Env as CoreEnv};
use crate::http::{HttpRequest, HttpResponse};
use crate::store::Counted;
use worker::{event, Context, Env, Headers, MessageExt, Request, Response, Result};

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
        conformance_fixtures: flag("CONFORMANCE_FIXTURES"),
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
}

pub(crate) fn core_env(env: &Env) -> Result<CoreEnv> {
    Ok(CoreEnv {
        db: Counted::new(Box::new(d1::D1(env.d1(DB)?))),
        limiter: Box::new(limiter::Client(env.durable_object(LIMITER)?)),
        sessions: Box::new(sessions::Client(env.durable_object(SESSIONS)?)),
        blobs: Box::new(r2::R2(env.bucket(FILES)?)),
        queue: Box::new(Fires(env.queue(FIRES_QUEUE)?)),
        feeds: Box::new(feeds::Client(env.durable_object(FEEDS)?)),
        clock: Box::new(sessions::WorkerClock),
        net: Box::new(net::WorkerNet),
        config: CONFIG.with(|c| c.get_or_init(|| config(env)).clone()),
    })
}

#[event(start)]
fn start() {
    console_error_panic_hook::set_once();
}

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let request_id = hex::encode(crate::rules::ids::random_bytes::<8>());
    let url = req.url()?;
    let headers: Vec<(String, String)> = req.headers().entries().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
    let declared = headers.iter().find(|(k, _)| k == "content-length").and_then(|(_, v)| v.parse::<usize>().ok());
    // Refuse a declared oversized body before reading it; the core checks the real length too.
    let body = if declared.is_some_and(|n| n > MAX_BODY_BYTES) {
        vec![0; MAX_BODY_BYTES + 1]
    } else {
        req.bytes().await.unwrap_or_default()
    };
    let request = HttpRequest {
        method: req.method().to_string(),
        path: url.path().to_owned(),
        query: url.query().unwrap_or_default().to_owned(),
        // A Worker is never shown its peer: the address comes from headers, trusted by configuration only
        // (`crate::http::client_address`).
        client_ip: String::new(),
        headers,
        body,
    };
    // A missing binding is the deployment's fault, but the caller still gets an answer in its face's shape.
    let core = match core_env(&env) {
        Ok(core) => core,
        Err(e) => return to_worker(app::refuse(&request, &crate::error::ApiError::cause(e).finish(&request_id))),
    };
    let response = app::handle(&core, request, RequestMeta { now_ms: now_ms(), request_id }).await;
    to_worker(response)
}

fn to_worker(resp: HttpResponse) -> Result<Response> {
    let headers = Headers::new();
    for (k, v) in &resp.headers {
        headers.append(k, v)?;
    }
    let body = if resp.body.is_empty() { Response::empty()? } else { Response::from_bytes(resp.body)? };
    Ok(body.with_status(resp.status).with_headers(headers))
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
}

/// Routine fires and webhook deliveries from `agentsky-fires`; from its dead-letter queue, the ones that
/// kept failing, recorded as failed.
#[event(queue)]
async fn queue(batch: worker::MessageBatch<serde_json::Value>, env: Env, _ctx: Context) -> Result<()> {
    let core = core_env(&env)?;
    let dead_letters = batch.queue().ends_with("-dlq");
    for message in batch.messages()? {
        if let Some(delivery_id) = message.body()["webhook_delivery"].as_str().map(str::to_owned) {
            let attempt = message.body()["attempt"].as_i64().unwrap_or(0);
            let cx = Cx::system(&core, now_ms(), hex::encode(crate::rules::ids::random_bytes::<8>()));
            let outcome = if dead_letters {
                crate::domain::webhooks::give_up(&cx, &delivery_id).await
            } else {
                crate::domain::webhooks::deliver(&cx, &net::WorkerNet, &delivery_id, attempt).await
            };
            match outcome {
                Ok(()) => message.ack(),
                Err(e) => {
                    crate::error::log_line(&format!("queue: webhook delivery {delivery_id} failed, retrying: {e}"));
                    message.retry();
                }
            }
            continue;
        }
        let Some(fire_id) = message.body()["fire_id"].as_str().map(str::to_owned) else {
            crate::error::log_line(&format!("queue: dropping a message without fire_id: {}", message.body()));
            message.ack();
            continue;
        };
        let cx = Cx::system(&core, now_ms(), hex::encode(crate::rules::ids::random_bytes::<8>()));
        let outcome = if dead_letters {
            crate::ops::routines::give_up(&cx, &fire_id).await
        } else {
            crate::ops::routines::run_fire(&cx, &fire_id).await
        };
        match outcome {
            Ok(()) => message.ack(),
            Err(e) => {
                crate::error::log_line(&format!(
                    "queue: fire {fire_id} failed, retrying: {}",
                    e.finish(&cx.request_id)
                ));
                message.retry();
            }
        }
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
