//! The request context every operation receives: the bindings, the clock, the caller and its workspaces.
//! The core reaches the platform only through here, so host tests can build a `Cx` from SQLite and a fixed
//! clock, and nothing in the core calls `SystemTime::now()` (it panics on wasm32).

use crate::error::{ApiError, Code};
pub use crate::identity::{Caller, Membership, Role};
use crate::rules::params::{clipped, QUOTED_CHARS};
use crate::rules::rate::Decision;
use crate::session::{Answer, SessionCall, SessionRequest};
use crate::store::{Counted, Sql};
use futures::future::LocalBoxFuture;

pub mod meter;
pub use meter::Meter;

/// Settings read from the Worker's vars and secrets.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `POST /v1/accounts` without an admin token (on under `make dev`, off in production).
    pub open_signup: bool,
    /// Lets `POST /v1/accounts` through when signup is closed.
    pub admin_token: Option<String>,
    /// One per-key limit shared by REST and MCP.
    pub rate_limit_per_min: u32,
    /// Hosted sandboxes one workspace may run at once (`SANDBOXES_PER_WORKSPACE`; `None`: 5).
    pub sandboxes_per_workspace: Option<u32>,
    /// What an hour of a hosted sandbox's running time costs, in cents, metered per second
    /// (`SANDBOX_PRICE_CENTS_PER_HOUR`; 0: not charged).
    pub sandbox_cents_per_hour: i64,
    /// Origins allowed to call the MCP endpoints besides loopback ones.
    pub allowed_origins: Vec<String>,
    /// Base of the links the server hands out; empty means the request's own origin.
    pub public_base_url: String,
    /// Seals workspace secrets at rest (`SECRETS_KEY`); without it secrets cannot be stored.
    pub secrets_key: Option<String>,
    /// Model prices, cents per million input and output tokens (`PRICES`, JSON).
    pub prices: crate::rules::prices::Prices,
    /// How long session tools wait for a person (`AGENT_WAIT_MS`; the contract's 5 minutes by default).
    pub agent_wait_ms: Option<i64>,
    /// Count per-address limits by `CF-Connecting-IP` (`TRUST_CF_CONNECTING_IP`): only behind Cloudflare,
    /// whose edge sets it; elsewhere a client could name any address ([`crate::http::client_address`]).
    pub trust_cf_connecting_ip: bool,
    /// Lets tenant URLs (model endpoints, MCP servers) name this machine, over plain http too
    /// (`ALLOW_LOOPBACK_HTTP`): local development and its end-to-end tests only, never production.
    pub allow_loopback_http: bool,
    /// Seconds between a webhook delivery's attempts (`WEBHOOK_RETRY_SCHEDULE`, comma-separated); `None`
    /// is the default day ([`crate::rules::webhooks::DEFAULT_SCHEDULE_S`]). Tests shorten it.
    pub webhook_retry_schedule_s: Option<Vec<u32>>,
    /// Stripe, for money in (`STRIPE_SECRET_KEY`, `STRIPE_WEBHOOK_SECRET`, secrets); without both the
    /// top-up tools say billing is not configured.
    pub stripe_secret_key: Option<String>,
    pub stripe_webhook_secret: Option<String>,
    /// Stripe's API origin (`STRIPE_API_BASE`; default `https://api.stripe.com`); tests name a local fake.
    pub stripe_api_base: Option<String>,
    /// GitHub's REST API (`GITHUB_API_URL`; default `https://api.github.com`), where GitHub App targets mint
    /// their grants' tokens; tests name a local fake. Under the outbound rule like any other URL.
    pub github_api_url: Option<String>,
    /// AWS STS (`AWS_STS_URL`; default the role's regional endpoint `https://sts.<region>.amazonaws.com`),
    /// where AWS role targets assume their role for each grant; tests name a local fake.
    pub aws_sts_url: Option<String>,
    /// Google's IAM Credentials API (`GCP_IAM_URL`; default `https://iamcredentials.googleapis.com`) and
    /// Security Token Service (`GCP_STS_URL`; default `https://sts.googleapis.com`), where service-account
    /// targets mint and downscope each grant's token; tests name local fakes.
    pub gcp_iam_url: Option<String>,
    pub gcp_sts_url: Option<String>,
    /// Slack's Web API (`SLACK_API_URL`; default `https://slack.com/api`), where a workspace's Slack app
    /// posts requests and updates them once decided; tests name a local fake.
    pub slack_api_url: Option<String>,
    /// Serves the conformance suite's fixture tools without auth at `/v1/conformance/mcp` (tests only).
    pub conformance_fixtures: bool,
    /// `REQUEST_LOG=errors`: a request's log line is written only when it failed or took a second or more.
    /// Every line is a `console.log`, which under `wrangler dev` goes through V8's inspector and halves the
    /// requests a second a Worker answers (`make bench-ceiling` measures it); deployed, it is log volume.
    pub log_errors_only: bool,
}

/// Counts hits on named rate buckets (the `Limiter` Durable Object in the Worker).
pub trait Limiter {
    /// Counts one call on `bucket` ([`crate::rules::rate::Window::hit`]). `now_ms` is the caller's clock;
    /// the object counts on its own, so every Worker's calls share one timeline.
    fn hit(
        &self,
        bucket: String,
        limit: u32,
        period_ms: i64,
        now_ms: i64,
    ) -> LocalBoxFuture<'_, Result<Decision, String>>;
}

/// Reaches a session's Durable Object (or the host tests' stand-in).
pub trait Sessions {
    /// Sends `call` to the session's object: its [`Answer`] as JSON, or why the object could not be reached.
    /// Callers use [`Self::ask`], which reads the answer as the call's own reply.
    fn call(&self, session_id: &str, call: SessionCall) -> LocalBoxFuture<'_, Result<serde_json::Value, String>>;
}

impl dyn Sessions + '_ {
    /// Sends `req` to the session's object: its reply or refusal, or why the object could not be reached.
    pub async fn ask<R: SessionRequest>(&self, session_id: &str, req: R) -> Result<Answer<R::Reply>, String> {
        let answer = self.call(session_id, req.into()).await?;
        serde_json::from_value(answer).map_err(|e| format!("session {session_id}: its answer does not parse: {e}"))
    }
}

/// Time that moves during a request (waiting for another request's result), and sleeping.
pub trait Clock {
    fn now_ms(&self) -> i64;
    fn sleep(&self, ms: i64) -> LocalBoxFuture<'_, ()>;
}

/// Bytes by key: R2 in the Worker, a map in host tests.
pub trait Blobs {
    fn put(&self, key: String, bytes: Vec<u8>) -> LocalBoxFuture<'_, Result<(), String>>;
    fn get(&self, key: String) -> LocalBoxFuture<'_, Result<Option<Vec<u8>>, String>>;
    /// One page (up to 1000) of the keys under `prefix` in key order, and the cursor of the next page
    /// (`None` at the end).
    fn list(&self, prefix: String, cursor: Option<String>) -> LocalBoxFuture<'_, Result<BlobPage, String>>;
    /// Deletes up to 1000 keys.
    fn delete(&self, keys: Vec<String>) -> LocalBoxFuture<'_, Result<(), String>>;
}

/// A page of [`Blobs::list`].
pub type BlobPage = (Vec<String>, Option<String>);

/// Files deployed beside the Worker (wrangler.toml `[assets]`: the Help Center's rendered pages), read
/// through the `ASSETS` binding in the Worker and from the build's output in host tests. `None`: no such
/// file.
pub trait Assets {
    fn get(&self, path: String) -> LocalBoxFuture<'_, Result<Option<String>, String>>;
}

/// One outbound HTTPS POST (a model's API, a remote MCP server).
#[derive(Debug, Clone)]
pub struct Outbound {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// The network, for harnesses: `fetch` in the Worker, a scripted stand-in in host tests.
pub trait Net {
    fn post(&self, req: Outbound) -> LocalBoxFuture<'_, Result<crate::http::HttpResponse, String>>;
    /// One outbound GET of `req.url` (its body is ignored): OAuth client metadata documents, Stripe's API.
    /// The answer's body is read as it arrives and at most `max_bytes + 1` of it is kept: a longer one
    /// comes back cut there, the rest never downloaded, so the caller sees that it is over its limit.
    fn get(&self, req: Outbound, max_bytes: usize) -> LocalBoxFuture<'_, Result<crate::http::HttpResponse, String>> {
        let _ = (req, max_bytes);
        Box::pin(async { Err("this network cannot GET".to_owned()) })
    }
}

/// At-least-once background work (routine fires): the `FIRES` queue in the Worker.
pub trait Queue {
    fn send(&self, body: serde_json::Value) -> LocalBoxFuture<'_, Result<(), String>>;
    /// Sends `body` to be delivered no sooner than `delay_s` seconds from now (a webhook's retry). A queue
    /// without delays (the host tests') delivers when the test says.
    fn send_after(&self, body: serde_json::Value, delay_s: u32) -> LocalBoxFuture<'_, Result<(), String>> {
        let _ = delay_s;
        self.send(body)
    }
}

/// A workspace's change feed (the `Feed` Durable Object in the Worker): a version that moves whenever
/// something a person may be watching changes (a request opened or answered, a session's status, a
/// write through any face), and waits woken by it, so the console, `list_requests` and `sky approvals`
/// see a change within moments without polling.
pub trait Feeds {
    /// Moves the workspace's version on.
    fn bump(&self, workspace_id: &str) -> LocalBoxFuture<'_, Result<(), String>>;
    /// The workspace's version once it differs from `seen` (at once when it already does, or when `seen`
    /// is empty), or after `wait_ms` with nothing new.
    fn wait(&self, workspace_id: &str, seen: &str, wait_ms: i64) -> LocalBoxFuture<'_, Result<String, String>>;
}

/// What a hosted session's sandbox starts with ([`Sandboxes::boot`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SandboxBoot {
    pub session_id: String,
    pub workspace_id: String,
    /// The session's hosted runner token (`srt_…`): the sandbox's `sky runner` claims with it, and only
    /// this session's turns and checkouts. Each boot hands a fresh one; the one before stops working
    /// (its container is gone: a boot happens only while none runs).
    pub runner_token: String,
    /// The host names the sandbox may reach (the defaults for its harness and targets, and the agent's).
    pub egress: Vec<String>,
    /// How long one turn may run before the sandbox is stopped.
    pub max_run_s: i64,
    /// More of its runner's environment: a coding agent CLI's model endpoint and key, the relay's.
    pub env: Vec<(String, String)>,
}

/// Hosted sandboxes: where `placement: hosted` agents run (Cloudflare Containers in the Worker).
pub trait Sandboxes {
    /// Whether this deployment runs hosted sandboxes; `Err(why)` names what is missing (e.g. "no container
    /// runtime: Docker is not running on this machine").
    fn available(&self) -> Result<(), String>;
    /// Whether the session's sandbox runs now (it sleeps once its runner found no work for a while).
    fn running(&self, session_id: &str) -> LocalBoxFuture<'_, Result<bool, String>>;
    /// Boots (or wakes) the session's sandbox; returns when the start was accepted. Only while it does not
    /// run: a running sandbox keeps the runner token it started with.
    fn boot(&self, boot: SandboxBoot) -> LocalBoxFuture<'_, Result<(), String>>;
    /// Stops the session's sandbox (a stop, or a turn past its budget).
    fn stop(&self, session_id: &str) -> LocalBoxFuture<'_, Result<(), String>>;
}

/// The platform, per request.
pub struct Env {
    pub db: Counted,
    pub limiter: Box<dyn Limiter>,
    pub sessions: Box<dyn Sessions>,
    pub blobs: Box<dyn Blobs>,
    pub queue: Box<dyn Queue>,
    pub feeds: Box<dyn Feeds>,
    pub clock: Box<dyn Clock>,
    pub assets: Box<dyn Assets>,
    /// The network for fetches the core makes itself (OAuth client metadata documents), always through
    /// [`crate::egress`].
    pub net: Box<dyn Net>,
    /// Hosted sandboxes for `placement: hosted` agents.
    pub sandboxes: Box<dyn Sandboxes>,
    pub config: Config,
    /// What this unit of work did, for its log line, metrics and trace (shared with the Worker's adapters).
    pub meter: std::rc::Rc<Meter>,
    /// Finished calls not yet counted in D1: the isolate's (the test app's) buffer, carried by the next
    /// request's first round trip (`app::observe`).
    pub pending_calls: std::rc::Rc<crate::rules::metrics::PendingCalls>,
}

/// Everything one operation call may use.
pub struct Cx<'a> {
    pub env: &'a Env,
    pub now_ms: i64,
    pub request_id: String,
    pub caller: Option<Caller>,
    /// The connection's default workspace (`x-universe` header), if it named one.
    pub universe: Option<String>,
    /// The origin links are built from (`PUBLIC_BASE_URL`, or the loopback address under local
    /// development); empty when neither is known. Links with a token go through [`Cx::link_base`].
    pub base_url: String,
    /// The caller's address, for per-address limits.
    pub client_ip: String,
    /// The bearer was the deployment's admin token (lets sign-up through when it is closed).
    pub admin: bool,
    /// The workspace this call acted in, once [`Cx::workspace`] or [`Cx::member_of`] resolved it: a
    /// successful write moves that workspace's feed on ([`crate::ops::invoke`]).
    pub touched: std::cell::RefCell<Option<String>>,
    /// Where the call came from (the audit log's channel of an answer; a step-up approval needs the console).
    pub channel: Channel,
    /// When `caller` came from [`crate::keycache`]: whether the key lookup, riding along with the work's
    /// first round trip, found the same caller. Writes wait for it before they change anything.
    pub verdict: Option<Verdict>,
}

/// Where a call came from: what the audit log names as an answer's channel, and what a step-up approval
/// checks (only the console proves a recent sign-in).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Rest,
    /// The REST API from `sky` (its user agent).
    Cli,
    Mcp,
    /// The console, signed in at `signed_in_ms`.
    Console {
        signed_in_ms: i64,
    },
    /// A button in Slack, by the member who linked that Slack user.
    Slack,
    /// Work no caller waits on: the cron trigger and the queue consumer.
    System,
    /// A notification's action button (Web Push): a one-time answer token, acting as its subscriber.
    Push,
}

impl Channel {
    pub fn word(self) -> &'static str {
        match self {
            Channel::Rest => "REST",
            Channel::Cli => "sky",
            Channel::Mcp => "MCP",
            Channel::Console { .. } => "console",
            Channel::Slack => "Slack",
            Channel::System => "system",
            Channel::Push => "push",
        }
    }
}

/// The answer of a key lookup under way: `true` when it agrees with the cached caller.
pub type Verdict = futures::future::Shared<futures::channel::oneshot::Receiver<bool>>;

impl<'a> Cx<'a> {
    /// The same request acting for `caller` through `channel`: a member answering from Slack, where no key
    /// of theirs came with the call.
    pub fn acting_as(&self, caller: Caller, channel: Channel) -> Cx<'a> {
        Cx {
            env: self.env,
            now_ms: self.now_ms,
            request_id: self.request_id.clone(),
            caller: Some(caller),
            universe: None,
            base_url: self.base_url.clone(),
            client_ip: self.client_ip.clone(),
            admin: false,
            touched: Default::default(),
            channel,
            verdict: None,
        }
    }

    /// A context for work no caller is waiting on: the cron trigger and the queue consumer.
    pub fn system(env: &'a Env, now_ms: i64, request_id: String) -> Self {
        Self {
            env,
            now_ms,
            request_id,
            caller: None,
            universe: None,
            base_url: env.config.public_base_url.clone(),
            client_ip: String::new(),
            admin: false,
            touched: Default::default(),
            channel: Channel::System,
            verdict: None,
        }
    }

    pub fn db(&self) -> &'a dyn Sql {
        &self.env.db
    }

    /// The time now, for work that outlasts the request's start (after a wait).
    pub fn clock_now(&self) -> i64 {
        self.env.clock.now_ms()
    }

    /// The authenticated caller; operations with a scope never run without one.
    pub fn caller(&self) -> Result<&Caller, ApiError> {
        self.caller.as_ref().ok_or_else(|| ApiError::new(Code::Unauthorized, "an API key is required"))
    }

    /// The origin of a link this call hands out. Without `PUBLIC_BASE_URL` a deployment serving a public
    /// name makes no links at all rather than trusting the request's `Host` header.
    pub fn link_base(&self) -> Result<&str, ApiError> {
        if self.base_url.is_empty() {
            return Err(ApiError::new(
                Code::NotImplemented,
                "this deployment cannot make links: its PUBLIC_BASE_URL is not set (the operator sets it in wrangler.toml)",
            ));
        }
        Ok(&self.base_url)
    }

    /// An internal failure with this request's id (the cause goes to the log only).
    pub fn internal(&self, cause: impl std::fmt::Display) -> ApiError {
        ApiError::cause(cause).finish(&self.request_id)
    }

    /// The workspace a list or create call works in, by the contract's rules: the `workspace` slug if
    /// given, else the connection's `x-universe`, else the key's locked workspace, else the personal one.
    /// A locked key naming another slug is `universe_mismatch`; a slug the caller is not in is `not_found`.
    pub fn workspace(&self, slug: Option<&str>) -> Result<&Membership, ApiError> {
        let m = self.resolve_workspace(slug)?;
        self.touched.replace(Some(m.workspace_id.clone()));
        self.env.meter.label(|l| l.workspace_id.clone_from(&m.workspace_id));
        Ok(m)
    }

    /// The workspace a call without a `workspace` lands in (the connection's, the locked or the
    /// personal one), if any: where a failed call's metrics go when it never resolved one.
    pub fn default_workspace_id(&self) -> Option<String> {
        self.resolve_workspace(None).ok().map(|m| m.workspace_id.clone())
    }

    fn resolve_workspace(&self, slug: Option<&str>) -> Result<&Membership, ApiError> {
        let caller = self.caller()?;
        let locked = caller
            .locked_workspace_id
            .as_ref()
            .map(|id| {
                caller
                    .memberships
                    .iter()
                    .find(|m| &m.workspace_id == id)
                    .ok_or_else(|| ApiError::not_found("workspace"))
            })
            .transpose()?;
        let wanted = slug.or(self.universe.as_deref());
        match (wanted, locked) {
            (Some(s), Some(l)) if s != l.slug => Err(ApiError::new(
                Code::UniverseMismatch,
                format!("this key is locked to workspace `{}`; it cannot use `{}`", l.slug, clipped(s, QUOTED_CHARS)),
            )),
            (_, Some(l)) => Ok(l),
            (Some(s), None) => caller.memberships.iter().find(|m| m.slug == s).ok_or_else(|| {
                ApiError::new(
                    Code::NotFound,
                    format!("workspace `{}` not found among yours; call list_workspaces", clipped(s, QUOTED_CHARS)),
                )
            }),
            (None, None) => caller
                .memberships
                .iter()
                .find(|m| m.is_personal)
                .ok_or_else(|| ApiError::not_found("personal workspace")),
        }
    }

    /// The caller's membership of the workspace an object (`what`: "session", "agent", …) lives in, for
    /// operations that derive the workspace from an object. A locked key naming another workspace's
    /// object is `universe_mismatch`; an object of a workspace the caller is not in is `not_found` as
    /// `what`, so ids do not leak.
    pub fn member_of(&self, workspace_id: &str, what: &str) -> Result<&Membership, ApiError> {
        let caller = self.caller()?;
        if caller.locked_workspace_id.as_deref().is_some_and(|l| l != workspace_id) {
            return Err(ApiError::new(Code::UniverseMismatch, "this key is locked to another workspace"));
        }
        let m = caller
            .memberships
            .iter()
            .find(|m| m.workspace_id == workspace_id)
            .ok_or_else(|| ApiError::not_found(what))?;
        self.touched.replace(Some(m.workspace_id.clone()));
        self.env.meter.label(|l| l.workspace_id.clone_from(&m.workspace_id));
        Ok(m)
    }

    /// Refuses unless the caller's role in `m` is at least `role`.
    pub fn require_role(&self, m: &Membership, role: Role) -> Result<(), ApiError> {
        if m.role >= role {
            Ok(())
        } else {
            Err(ApiError::new(
                Code::Forbidden,
                format!("this needs the {} role in `{}`; yours is {}", role.as_str(), m.slug, m.role.as_str()),
            ))
        }
    }
}
