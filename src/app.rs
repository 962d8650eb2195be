//! The whole server as one function: `handle(env, request) -> response`. The Worker edge calls it for
//! every request; host tests call it directly, the way axum tests call `app().oneshot()`.

use crate::cx::{Channel, Cx, Env};
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::mcp::{self, ServerSpec};
use crate::operator_mcp::OperatorTools;
use crate::rest::{self, Route};
use crate::rules::ids;
use crate::store;
use futures::channel::oneshot;
use futures::future::{join, FutureExt, LocalBoxFuture};
use serde_json::json;

pub mod observe;

/// Bodies above this are refused before they are parsed, on every face.
pub use crate::mcp::MAX_BODY_BYTES;

/// The MCP endpoints. A request to one that is refused before a tool runs is answered with a JSON-RPC
/// error ([`refuse`]), never with REST's body.
const MCP_ENDPOINTS: [&str; 4] = ["/v1/mcp", "/v1/session/mcp", "/v1/help/mcp", "/v1/conformance/mcp"];

/// The timing and identity of one request, supplied by the edge.
pub struct RequestMeta {
    pub now_ms: i64,
    pub request_id: String,
}

pub const INSTRUCTIONS: &str = "agentsky runs AI agents for you as tools. \
Start with list_agents (or search the catalog), then start_session with a fresh idempotency_key, then read_session with the returned cursor and wait_seconds: 50 until turn_finished. \
Continue with send_message; finish with collect_result and stop_session. \
Every list and create tool takes an optional `workspace` slug (see list_workspaces); tools taking a session, task or artifact id derive the workspace from it. \
Retry a timed-out mutation with the same idempotency_key and inputs: it is never done twice. \
Errors are tool results whose error.code is the API's (not_found, insufficient_scope, universe_mismatch, rate_limited, …). \
Call help for topics, required fields and examples.";

/// Answers one request. Adds `x-request-id` and `x-d1-queries` (round trips this request made) to every
/// response.
pub async fn handle(env: &Env, req: HttpRequest, meta: RequestMeta) -> HttpResponse {
    let (resp, done) = serve(env, req, meta).await;
    observe::finish(env, done).await;
    resp
}

/// [`handle`] without its aftermath: the Worker answers first and writes the request's log line and
/// metrics ([`observe::finish`]) after the response has gone. Adds `x-trace-id` too.
pub async fn serve(env: &Env, req: HttpRequest, meta: RequestMeta) -> (HttpResponse, observe::Finished) {
    let request_id = meta.request_id.clone();
    let started = observe::start(env, &req, meta.now_ms);
    let mut req = req;
    // A streamed answer's head goes out before this function ends: it carries the ids now.
    req.stream = req.stream.take().map(|out| {
        out.with_header("x-request-id", request_id.clone()).with_header("x-trace-id", started.trace_id().to_owned())
    });
    let resp = withhold_unsendable(&req, route(env, &req, meta).await);
    let resp = resp
        .with_header("x-request-id", request_id.clone())
        .with_header("x-d1-queries", env.db.calls().to_string())
        .with_header("x-trace-id", started.trace_id().to_owned());
    let done = started.end(env, &request_id, &resp);
    (resp, done)
}

/// An answer the runtime could not send (a header with a line break) becomes a refusal that says so, not
/// the runtime's bare 500. Every face checks what it puts in a header before acting; this is the last line.
fn withhold_unsendable(req: &HttpRequest, resp: HttpResponse) -> HttpResponse {
    let Some(name) = resp.unsendable_header() else { return resp };
    crate::error::log_line(&format!("answer withheld: its `{name}` header held a character no header can carry"));
    let message =
        format!("this answer's `{name}` header would have held a character no header carries (such as a line break), so it was not sent");
    refuse(req, &ApiError::invalid(message))
}

async fn route(env: &Env, req: &HttpRequest, meta: RequestMeta) -> HttpResponse {
    if req.body.len() > MAX_BODY_BYTES {
        let message = format!("request bodies are limited to {MAX_BODY_BYTES} bytes");
        return refuse(req, &ApiError::new(Code::PayloadTooLarge, message));
    }
    if let Err(e) = crate::rules::limits::json_body(&req.body) {
        return refuse(req, &e);
    }
    let path = req.path.as_str();
    let mut cx = Cx {
        env,
        now_ms: meta.now_ms,
        request_id: meta.request_id,
        caller: None,
        universe: req.header("x-universe").filter(|s| !s.is_empty()).map(str::to_owned),
        base_url: base_url(env, req),
        client_ip: crate::http::client_address(req, env.config.trust_cf_connecting_ip),
        admin: false,
        touched: Default::default(),
        channel: match path {
            _ if path.starts_with("/v1/mcp") => Channel::Mcp,
            _ if req.header("user-agent").is_some_and(|ua| ua.starts_with("sky/")) => Channel::Cli,
            _ => Channel::Rest,
        },
        verdict: None,
    };
    match path {
        "/v1/health" => return observe::health(&cx, matches!(authenticate(&cx, req), Ok(Auth::Admin))).await,
        "/" | "/v1" => {
            return HttpResponse::json(
                200,
                &json!({ "ok": true, "name": "agentsky", "version": env!("CARGO_PKG_VERSION") }),
            )
        }
        "/v1/openapi.json" => {
            let server = if cx.base_url.is_empty() { "/" } else { cx.base_url.as_str() };
            return HttpResponse::json(200, &crate::openapi::document(server));
        }
        "/v1/mcp" => {
            if req.method != "POST" {
                return mcp::serve(&spec(&cx, req), &NoTools, req).await;
            }
            // A refusal names where OAuth clients discover how to sign in (MCP authorization, RFC 9728 §5.1).
            let metadata = crate::oauth::resource_metadata_url(&cx);
            let refused = |e: &ApiError| with_resource_metadata(refuse(req, e), metadata.as_deref());
            return match authenticate(&cx, req) {
                Ok(Auth::Key(hash)) => as_key(cx, &hash, Face::Mcp { server_wide: mcp::server_wide(req) }, |cx| {
                    Box::pin(async move { mcp::serve(&spec(cx, req), &OperatorTools { cx }, req).await })
                })
                .await
                .unwrap_or_else(|e| refused(&e)),
                Ok(Auth::Admin | Auth::None) => refused(&key_required(&cx)),
                Err(e) => refused(&e),
            };
        }
        // The Help Center's own server: help_search and help_get only, no key, 600 calls/min per address.
        "/v1/help/mcp" => {
            let spec = ServerSpec {
                name: "agentsky_help".into(),
                title: "agentsky Help Center".into(),
                instructions: crate::help_mcp::INSTRUCTIONS.into(),
                ..spec(&cx, req)
            };
            return mcp::serve(&spec, &crate::help_mcp::HelpTools { cx: &cx }, req).await;
        }
        "/v1/billing/stripe/webhook" => return crate::receivers::stripe::webhook(&cx, req).await,
        "/v1/slack/interactions" => return crate::receivers::slack::interactions(&cx, req).await,
        "/v1/slack/commands" => return crate::receivers::slack::commands(&cx, req).await,
        _ if path.starts_with("/v1/webhooks/records/") => {
            return crate::receivers::records::receive(&cx, &path["/v1/webhooks/records/".len()..], req).await
        }
        "/help" if req.method == "GET" => return crate::console::help::serve(&cx, "").await,
        _ if path.starts_with("/help/") && req.method == "GET" => {
            return crate::console::help::serve(&cx, &path["/help/".len()..]).await
        }
        "/v1/session/mcp" => {
            if req.method != "POST" {
                return mcp::serve(&session_spec(&cx, req), &NoTools, req).await;
            }
            let me = match session_caller(&cx, req).await {
                Ok(me) => me,
                Err(e) => return refuse(req, &e),
            };
            env.meter.label(|l| {
                l.workspace_id.clone_from(&me.workspace_id);
                l.session_id.clone_from(&me.session_id);
                l.agent_id.clone_from(&me.agent_id);
            });
            let tools = crate::agent::SessionTools { agent: crate::agent::CallingSession::new(&cx, me) };
            return mcp::serve(&session_spec(&cx, req), &tools, req).await;
        }
        _ if path.starts_with("/v1/runner/") => return crate::runner::handle(&cx, req).await,
        "/v1/conformance/mcp" if env.config.conformance_fixtures => {
            let tasks = mcp::fixtures_tasks::FixtureTasks { store: &FixtureStore(&cx) };
            return mcp::serve(&spec(&cx, req), &tasks, req).await;
        }
        "/console" => return crate::console::serve(cx, req).await,
        _ if path.starts_with("/console/") => return crate::console::serve(cx, req).await,
        // Device sign-in's approval page (`sky auth login`); the JSON half is in the table.
        "/device" if req.method == "GET" => return crate::console::device::page(&cx, req).await,
        "/device" if req.method == "POST" => return crate::console::device::submit(&cx, req).await,
        _ if path.starts_with("/a/") && req.method == "GET" => {
            return crate::console::shared::serve_artifact(env, &path[3..]).await
        }
        _ if path.starts_with("/s/") && req.method == "GET" => {
            return crate::console::shared::serve_session(env, &path[3..]).await
        }
        _ if path.starts_with("/s/") && req.method == "POST" => {
            return crate::console::shared::post_to_session(&cx, &path[3..], &req.body).await
        }
        "/oauth/authorize" => return crate::console::authorize(cx, req).await,
        _ if path.starts_with("/.well-known/") || path.starts_with("/oauth/") => {
            return match crate::oauth::serve(&cx, req).await {
                Some(resp) => resp,
                None => HttpResponse::json(404, &ApiError::not_found("resource").body()),
            };
        }
        _ => {}
    }
    match rest::route(&req.method, path) {
        Route::Found(op, params) => {
            let args = rest::arguments(op, req, params);
            match authenticate(&cx, req) {
                Ok(Auth::Key(hash)) => as_key(cx, &hash, Face::Rest, |cx| Box::pin(rest::serve(cx, op, args.clone())))
                    .await
                    .unwrap_or_else(|e| refuse(req, &e)),
                Ok(Auth::Admin) => {
                    cx.admin = true;
                    rest::serve(&cx, op, args).await
                }
                Ok(Auth::None) if op.scope == crate::ops::Scope::Public => rest::serve(&cx, op, args).await,
                Ok(Auth::None) => refuse(req, &key_required(&cx)),
                Err(e) => refuse(req, &e),
            }
        }
        Route::WrongMethod(allowed) => HttpResponse::json(
            405,
            &ApiError::new(
                Code::InvalidParams,
                format!("{} is not served on {path}; use {}", req.method, allowed.join(", ")),
            )
            .body(),
        )
        .with_header("allow", allowed.join(", ")),
        Route::NotFound => {
            HttpResponse::json(404, &ApiError::new(Code::NotFound, format!("no route {} {path}", req.method)).body())
        }
    }
}

/// The MCP server's identity and which browser origins may call it.
/// The conformance fixtures' tasks, kept in D1 (`store::conformance`) on the request's clock.
struct FixtureStore<'a>(&'a Cx<'a>);

impl mcp::fixtures_tasks::TaskStore for FixtureStore<'_> {
    fn now_ms(&self) -> i64 {
        self.0.clock_now()
    }

    fn load<'a>(&'a self, task_id: &'a str) -> LocalBoxFuture<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            store::conformance::load(self.0.db(), task_id, self.0.clock_now()).await.map_err(|e| e.to_string())
        })
    }

    fn save<'a>(&'a self, task_id: &'a str, state: &'a str, expires_ms: i64) -> LocalBoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let now = self.0.clock_now();
            store::conformance::save(self.0.db(), task_id, state, expires_ms, now).await.map_err(|e| e.to_string())
        })
    }
}

fn spec(cx: &Cx<'_>, req: &HttpRequest) -> ServerSpec {
    let mut allowed_origins = cx.env.config.allowed_origins.clone();
    if !cx.base_url.is_empty() {
        allowed_origins.push(cx.base_url.clone());
    }
    if let Some(host) = req.header("host").filter(|h| is_loopback_host(h)) {
        let port =
            host.rsplit_once(':').map(|(_, p)| format!(":{p}")).filter(|_| !host.ends_with(']')).unwrap_or_default();
        for name in ["localhost", "127.0.0.1", "[::1]"] {
            allowed_origins.push(format!("http://{name}{port}"));
        }
    }
    ServerSpec {
        name: "agentsky".into(),
        title: "agentsky".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        instructions: INSTRUCTIONS.into(),
        allowed_origins,
        allowed_hosts: vec![],
    }
}

fn is_loopback_host(host: &str) -> bool {
    let name = host.rsplit_once(':').filter(|_| !host.ends_with(']')).map_or(host, |(h, _)| h);
    matches!(name, "localhost" | "127.0.0.1" | "[::1]")
}

/// Where links point: `PUBLIC_BASE_URL`, else (local development) the loopback address the request
/// came to. Never a name from the request's `Host` otherwise: anyone can send `Host: evil.example`, and a
/// share or sign-in link on that host would hand its token to them. Empty means links cannot be made
/// ([`Cx::link_base`] says why).
fn base_url(env: &Env, req: &HttpRequest) -> String {
    if !env.config.public_base_url.is_empty() {
        return env.config.public_base_url.trim_end_matches('/').to_owned();
    }
    match req.header("host").filter(|h| is_loopback_host(h)) {
        Some(host) => format!("http://{host}"),
        None => String::new(),
    }
}

/// The session server's identity: the same transport, its own instructions.
fn session_spec(cx: &Cx<'_>, req: &HttpRequest) -> ServerSpec {
    ServerSpec {
        name: "agentsky-session".into(),
        title: "agentsky session".into(),
        instructions:
            "The tools of your agentsky session: ask the user for access to the project's targets or for answers, \
report your status, see and message the other tasks of your project, and land your work. Run provider CLIs \
directly after a grant: they already use it."
                .into(),
        ..spec(cx, req)
    }
}

/// The session behind a session token (`Authorization: Bearer sst_…`): refused once it has ended.
async fn session_caller(cx: &Cx<'_>, req: &HttpRequest) -> Result<crate::store::sessions::SessionRow, ApiError> {
    let Some(header) = req.header("authorization") else {
        return Err(unauthorized(
            "a session token is required: Authorization: Bearer sst_… (POST /v1/sessions/{session_id}/token)",
        ));
    };
    let token = header
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, t)| t.trim())
        .filter(|t| t.starts_with("sst_") && t.len() < 200);
    let Some(token) = token else {
        return Err(unauthorized("this is not an agentsky session token (Bearer sst_…)"));
    };
    match crate::store::requests::session_for_token(cx.db(), &ids::hash_secret(token)).await {
        Ok(Some(me)) => {
            // `sky mcp` names the session too; a token of another session is refused.
            if req.header("x-agentsky-session").is_some_and(|s| s != me.session_id) {
                return Err(unauthorized("this token belongs to another session"));
            }
            Ok(me)
        }
        Ok(None) => Err(unauthorized("unknown session token, or its session has ended")),
        Err(e) => Err(cx.internal(e)),
    }
}

/// An MCP host with no tools: only used to answer non-POST requests (405) before authentication.
struct NoTools;
impl mcp::ToolHost for NoTools {
    fn tools(&self) -> Vec<serde_json::Value> {
        vec![]
    }
    fn call<'a>(&'a self, _: &'a str, _: serde_json::Value) -> futures::future::LocalBoxFuture<'a, mcp::CallOutcome> {
        Box::pin(async { None })
    }
}

enum Auth {
    None,
    Admin,
    /// An API key, by the hash it is looked up by.
    Key(String),
}

/// Reads the bearer: the admin token, an API key, or nothing. A bearer that is neither is a 401.
fn authenticate(cx: &Cx<'_>, req: &HttpRequest) -> Result<Auth, ApiError> {
    let Some(header) = req.header("authorization") else {
        return Ok(Auth::None);
    };
    let token = match header.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") => token.trim(),
        _ => return Err(unauthorized("the Authorization header must be `Bearer ast_…`")),
    };
    if let Some(admin) = cx.env.config.admin_token.as_deref().filter(|t| !t.is_empty()) {
        if ids::constant_time_eq(&ids::hash_secret(token), &ids::hash_secret(admin)) {
            return Ok(Auth::Admin);
        }
    }
    if !token.starts_with("ast_") || token.len() > 200 {
        return Err(unauthorized("this is not an agentsky API key"));
    }
    Ok(Auth::Key(ids::hash_secret(token)))
}

/// Runs `work` as the caller behind a key; `Err` when the key is refused or cannot be looked up. Every call
/// looks the key up. A key this Worker resolved before ([`crate::keycache`]) starts the work at once as that
/// caller, with the lookup riding in the same D1 batch as the work's first statement
/// ([`crate::store::Counted::ride`]; sent alone once the work is done if it made none), so a read costs one
/// round trip. The answer is kept only when the lookup agrees: a revoked key is refused from its next call,
/// and a changed caller runs the work again (writes wait for the lookup before they change anything, see
/// [`crate::ops::invoke`]).
///
/// `server_wide` work answers every key alike with nothing read from storage (the MCP tool list,
/// `initialize`: [`mcp::server_wide`]); for a key looked up here in the last
/// [`crate::keycache::SERVER_WIDE_MS`], it runs with no lookup of its own. What a key revoked by another
/// isolate can still get that way, for those seconds, is the public tool catalog (`/v1/openapi.json`
/// serves the same operations without a key); a revocation made here is refused at once.
async fn as_key<'a>(
    mut cx: Cx<'a>,
    hash: &str,
    face: Face,
    work: impl for<'c> Fn(&'c Cx<'a>) -> LocalBoxFuture<'c, HttpResponse>,
) -> Result<HttpResponse, ApiError> {
    let (env, now) = (cx.env, cx.now_ms);
    let server_wide = matches!(face, Face::Mcp { server_wide: true });
    if let Some(recent) = crate::keycache::recent(hash, now).filter(|_| server_wide) {
        cx.caller = Some(recent);
        return Ok(work(&cx).await);
    }
    let fresh = match crate::keycache::get(hash, now) {
        None => store::keys::authenticate(&env.db, hash, now).await,
        Some(cached) => {
            // A key's grant never changes, so the cached caller answers the audience question.
            face.admits(&cached, &cx.base_url)?;
            let riding = env.db.ride(store::keys::lookup(hash, now));
            let (tell, told) = oneshot::channel();
            cx.caller = Some(cached.clone());
            cx.verdict = Some(told.shared());
            let judge = async {
                let found = match riding.await {
                    Ok(rows) => rows.and_then(|rows| store::keys::looked_up(rows, hash)),
                    Err(_) => Err(store::DbError::Other("the key lookup was never sent".into())),
                };
                let agreed = matches!(&found, Ok(Some(c)) if *c == cached);
                let _ = tell.send(agreed);
                (found, agreed)
            };
            let running = async {
                let resp = work(&cx).await;
                // Work that made no round trip (a refused argument) sends the lookup alone.
                env.db.flush().await;
                resp
            };
            let ((found, agreed), resp) = join(judge, running).await;
            if agreed {
                crate::keycache::put(hash, Some(&cached), now);
                return Ok(resp);
            }
            cx.verdict = None;
            found
        }
    };
    match fresh {
        Ok(Some(caller)) => {
            crate::keycache::put(hash, Some(&caller), now);
            face.admits(&caller, &cx.base_url)?;
            cx.caller = Some(caller);
            Ok(work(&cx).await)
        }
        Ok(None) => {
            crate::keycache::put(hash, None, now);
            Err(unauthorized("unknown or revoked API key"))
        }
        Err(e) => Err(cx.internal(e)),
    }
}

/// Which face a key is presented to: an app's OAuth access token is bound to the resource it was issued
/// for (RFC 8707's audience, `/v1/mcp`), so the REST API refuses it.
#[derive(Clone, Copy)]
enum Face {
    /// `/v1/mcp`; `server_wide` when the call answers every key alike ([`mcp::server_wide`]).
    Mcp {
        server_wide: bool,
    },
    Rest,
}

impl Face {
    fn admits(self, caller: &crate::cx::Caller, base_url: &str) -> Result<(), ApiError> {
        match (self, &caller.app) {
            (Face::Rest, Some(_)) => Err(unauthorized(format!(
                "this is an app's OAuth access token, issued for {base_url}/v1/mcp and accepted only there; \
                 the REST API takes an API key"
            ))),
            _ => Ok(()),
        }
    }
}

/// A refused credential. [`refuse`] adds the challenge.
fn unauthorized(message: impl Into<String>) -> ApiError {
    ApiError::new(Code::Unauthorized, message)
}

/// No API key where one is needed.
fn key_required(cx: &Cx<'_>) -> ApiError {
    unauthorized(format!(
        "an API key is required: Authorization: Bearer ast_… (create one with POST {}/v1/accounts)",
        cx.base_url
    ))
}

/// Answers a request refused before its work runs (too large, a bad credential, a failed lookup) in its
/// face's own shape: a JSON-RPC error on an MCP endpoint ([`mcp::refusal`], the API's error object as its
/// `data`), the API's error body on every other path. A 401 carries `WWW-Authenticate` either way, with
/// `invalid_token` when a credential was presented (RFC 6750 §3).
pub fn refuse(req: &HttpRequest, e: &ApiError) -> HttpResponse {
    let resp = if MCP_ENDPOINTS.contains(&req.path.as_str()) {
        mcp::refusal(req, e.code.http(), &e.message, Some(e.body()["error"].clone()))
    } else {
        crate::error::error_response(e)
    };
    if e.code != Code::Unauthorized {
        return resp;
    }
    let mut challenge = "Bearer realm=\"agentsky\"".to_owned();
    if req.header("authorization").is_some() {
        // A header value is visible ASCII, and the description a quoted-string without quotes in it.
        let why: String = e
            .message
            .replace('…', "...")
            .chars()
            .filter(|c| matches!(c, ' '..='~') && *c != '"' && *c != '\\')
            .collect();
        challenge.push_str(&format!(", error=\"invalid_token\", error_description=\"{why}\""));
    }
    resp.with_header("www-authenticate", challenge)
}

/// Adds `resource_metadata` and the scopes to a 401's challenge, so an MCP client that has no key can
/// start OAuth sign-in from it.
fn with_resource_metadata(resp: HttpResponse, url: Option<&str>) -> HttpResponse {
    let (Some(url), Some(challenge)) = (url, resp.header("www-authenticate").map(str::to_owned)) else {
        return resp;
    };
    resp.set_header("www-authenticate", format!("{challenge}, resource_metadata=\"{url}\", scope=\"read write\""))
}
