//! Outgoing webhooks, the operations (issue 15): a workspace's endpoints, created with the events to
//! send, listed, deleted, their signing secret rotated with overlap, a test event sent. Secrets are sealed
//! at rest ([`crate::rules::seal`]) and shown once, at creation or rotation, never in a list, a log or an
//! event. Emitting and delivering are [`crate::domain::webhooks`].

use crate::cx::{Cx, Role};
use crate::domain::webhooks::{enqueue, envelope, TEST_EVENT};
use crate::error::{ApiError, Code};
use crate::rules::ids::WebhookId;
use crate::rules::params::{words, Text};
use crate::rules::{ids, outbound, seal, webhooks as rule};
use crate::store::webhooks as db;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// How long a rotated secret keeps signing beside the new one when the call does not say.
const DEFAULT_OVERLAP_HOURS: i64 = 24;

fn master<'a>(cx: &Cx<'a>) -> Result<&'a str, ApiError> {
    cx.env.config.secrets_key.as_deref().ok_or_else(|| {
        ApiError::new(Code::NotImplemented, "this deployment has no SECRETS_KEY configured, so it cannot sign webhooks")
    })
}

words! {
    /// An event an endpoint may subscribe to (any but the test event, which reaches every endpoint).
    pub enum WebhookEvent {
        RequestOpened = "request.opened",
        RequestAnswered = "request.answered",
        RequestExpired = "request.expired",
        TurnFinished = "turn.finished",
        SessionFailed = "session.failed",
        GoalMet = "goal.met",
        GoalLimitReached = "goal.limit_reached",
        RoutineFired = "routine.fired",
        RoutineFailed = "routine.failed",
        BudgetThreshold = "budget.threshold",
    }
}

/// The events asked for, each once in the order given. The schema's `minItems` is kept here (serde
/// has no rule for it).
fn check_events(events: &[WebhookEvent]) -> Result<Vec<String>, ApiError> {
    if events.is_empty() {
        return Err(ApiError::invalid(format!("`events` needs at least one of {}", WebhookEvent::WORDS.join(", "))));
    }
    let mut out: Vec<String> = Vec::new();
    for e in events {
        if !out.iter().any(|o| o == e.as_str()) {
            out.push(e.as_str().to_owned());
        }
    }
    Ok(out)
}

words! {
    /// How a webhook's events are written ([`rule::FORMATS`]).
    pub enum WebhookFormat { Standard = "standard", Slack = "slack" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateWebhook {
    /// Where events are POSTed: an `https://` URL on a public host.
    pub url: Text<1, 2_000>,
    /// The events to send: `request.opened`, `request.answered`, `request.expired`, `turn.finished`,
    /// `session.failed`, `goal.met`, `goal.limit_reached`, `routine.fired`, `routine.failed`,
    /// `budget.threshold`.
    #[schemars(length(min = 1))]
    pub events: Vec<WebhookEvent>,
    /// `standard` (default): the Standard Webhooks JSON envelope `{type, timestamp, data}`. `slack`: a Slack
    /// incoming-webhook message (`text` and `blocks`), with a link to answer a request in the console.
    pub format: Option<WebhookFormat>,
    /// A note for people.
    pub description: Option<Text<0, 200>>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookCreated {
    pub webhook: db::Endpoint,
    /// The signing secret (`whsec_…`), shown only now: verify `webhook-signature` with it.
    pub secret: String,
}

/// create_webhook — owners and admins.
pub async fn create(cx: &Cx<'_>, p: CreateWebhook) -> Result<WebhookCreated, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let url = outbound::check("url", &p.url, cx.env.config.allow_loopback_http).map_err(ApiError::invalid)?;
    let events = check_events(&p.events)?;
    let format = p.format.unwrap_or(WebhookFormat::Standard).as_str();
    let description = p.description.map(String::from).unwrap_or_default();
    let master = master(cx)?;
    let n = db::count(cx.db(), &w.workspace_id).await?;
    if n >= db::MAX_PER_WORKSPACE {
        return Err(ApiError::new(
            Code::Conflict,
            format!("a workspace holds at most {} webhook endpoints; delete one first", db::MAX_PER_WORKSPACE),
        ));
    }
    let webhook_id = ids::new_id("wh");
    let secret = rule::new_secret(ids::random_bytes());
    let sealed = seal::seal(master, &seal::webhook_aad(&w.workspace_id, &webhook_id), &secret);
    let caller = cx.caller()?;
    let row = db::NewEndpoint {
        webhook_id: &webhook_id,
        workspace_id: &w.workspace_id,
        url: url.as_str(),
        events: &events,
        format,
        description: &description,
        secret_sealed: &sealed,
        created_by: &caller.account_id,
        now_ms: cx.now_ms,
    };
    db::insert(cx.db(), &row).await?;
    let webhook = db::get(cx.db(), &w.workspace_id, &webhook_id, cx.now_ms)
        .await?
        .ok_or_else(|| ApiError::cause("webhook vanished"))?;
    Ok(WebhookCreated { webhook, secret })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListWebhooks {
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookList {
    /// The workspace's endpoints (never their secrets).
    pub webhooks: Vec<db::Endpoint>,
    /// The newest 50 deliveries, newest first: `failed` ones were dead-lettered after the retry budget,
    /// with the receiver's last answer.
    pub deliveries: Vec<db::Delivery>,
}

/// list_webhooks — anyone who can read the workspace.
pub async fn list(cx: &Cx<'_>, p: ListWebhooks) -> Result<WebhookList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let (webhooks, deliveries) =
        futures::try_join!(db::list(cx.db(), &w.workspace_id, cx.now_ms), db::recent(cx.db(), &w.workspace_id, 50))?;
    Ok(WebhookList { webhooks, deliveries })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteWebhook {
    /// The endpoint's id (`wh_…`).
    pub webhook_id: WebhookId,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookDeleted {
    pub webhook_id: String,
    pub deleted: bool,
}

/// delete_webhook — owners and admins. Its pending deliveries go with it.
pub async fn delete(cx: &Cx<'_>, p: DeleteWebhook) -> Result<WebhookDeleted, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let deleted = db::delete(cx.db(), &w.workspace_id, &p.webhook_id).await?;
    if !deleted {
        return Err(ApiError::not_found("webhook"));
    }
    Ok(WebhookDeleted { webhook_id: p.webhook_id.into(), deleted })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RotateWebhookSecret {
    /// The endpoint's id (`wh_…`).
    pub webhook_id: WebhookId,
    /// Hours (0–168, default 24) the current secret keeps signing beside the new one, so the receiver can
    /// switch without refusing a delivery: meanwhile `webhook-signature` carries both signatures.
    pub overlap_hours: Option<i64>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookSecretRotated {
    pub webhook_id: String,
    /// The new signing secret, shown only now.
    pub secret: String,
    /// Until when the previous secret signs too (unix ms); none without an overlap.
    pub previous_secret_until_ms: Option<i64>,
}

/// rotate_webhook_secret — owners and admins.
pub async fn rotate(cx: &Cx<'_>, p: RotateWebhookSecret) -> Result<WebhookSecretRotated, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let hours = p.overlap_hours.unwrap_or(DEFAULT_OVERLAP_HOURS);
    if !(0..=168).contains(&hours) {
        return Err(ApiError::invalid(format!("`overlap_hours` must be between 0 and 168 (got {hours})")));
    }
    let master = master(cx)?;
    let current = db::secrets(cx.db(), &p.webhook_id)
        .await?
        .filter(|s| s.workspace_id == w.workspace_id)
        .ok_or_else(|| ApiError::not_found("webhook"))?;
    let secret = rule::new_secret(ids::random_bytes());
    let sealed = seal::seal(master, &seal::webhook_aad(&w.workspace_id, &p.webhook_id), &secret);
    let until = (hours > 0).then(|| cx.now_ms + hours * 3_600_000);
    let r = db::Rotation {
        workspace_id: &w.workspace_id,
        webhook_id: &p.webhook_id,
        previous_sealed: &current.secret_sealed,
        until_ms: until.unwrap_or(0),
        secret_sealed: &sealed,
        now_ms: cx.now_ms,
    };
    if !db::rotate(cx.db(), &r).await? {
        return Err(ApiError::not_found("webhook"));
    }
    Ok(WebhookSecretRotated { webhook_id: p.webhook_id.into(), secret, previous_secret_until_ms: until })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TestWebhook {
    /// The endpoint's id (`wh_…`).
    pub webhook_id: WebhookId,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WebhookTestSent {
    /// The delivery, to follow in `list_webhooks`.
    pub delivery_id: String,
    /// Its `webhook-id`.
    pub event_id: String,
}

/// test_webhook — owners and admins: queues a `webhook.test` event to this endpoint only.
pub async fn test(cx: &Cx<'_>, p: TestWebhook) -> Result<WebhookTestSent, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    db::get(cx.db(), &w.workspace_id, &p.webhook_id, cx.now_ms).await?.ok_or_else(|| ApiError::not_found("webhook"))?;
    let event_id = ids::new_id("msg");
    let data = json!({ "workspace": w.slug, "message": "a test event from agentsky" });
    let delivery_id = ids::new_id("whd");
    let payload = envelope(TEST_EVENT, cx.now_ms, data).to_string();
    let d = db::NewDelivery {
        delivery_id: &delivery_id,
        webhook_id: &p.webhook_id,
        workspace_id: &w.workspace_id,
        event_id: &event_id,
        event: TEST_EVENT,
        payload: &payload,
        now_ms: cx.now_ms,
    };
    cx.db().all(db::insert_delivery(&d)).await?;
    enqueue(cx.env, &delivery_id, 0, 0).await;
    Ok(WebhookTestSent { delivery_id, event_id })
}
