//! Money in through Stripe: a one-off top-up and saving a card through Checkout, the automatic top-up's
//! setting, the receipts, and Stripe's webhook, whose signed events credit the wallet (each applied
//! once; the credit itself is `store::usage::credit`, the one way money comes in). Paying and changing
//! how the workspace pays need the admin role, as other money matters do.

use crate::cx::{Cx, Role};
use crate::domain::billing::{Links, Stripe, AUTO_TOP_UP};
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::params::Int;
use crate::rules::{ids, stripe};
use crate::store::{self, billing::Receipt, usage::Credit};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TopUp {
    /// Cents to add, 500–100,000 ($5–$1,000).
    pub amount_cents: stripe::TopUpCents,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Checkout {
    pub workspace: String,
    pub checkout_session_id: String,
    /// Stripe's checkout page: open it in a browser to pay (or save the card). The wallet is credited
    /// when Stripe reports the payment.
    pub url: String,
}

fn stripe_failed(e: String) -> ApiError {
    ApiError::new(Code::Internal, format!("Stripe refused the request: {e}"))
}

/// The workspace an owner or admin pays for, with Stripe and the return links.
fn paying<'a>(
    cx: &'a Cx<'a>,
    workspace: Option<&str>,
) -> Result<(&'a crate::cx::Membership, Stripe<'a>, Links), ApiError> {
    let stripe = Stripe::new(cx.env.net.as_ref(), &cx.env.config)?;
    let m = cx.workspace(workspace)?;
    cx.require_role(m, Role::Admin)?;
    let links = Links::usage_page(cx.link_base()?, &m.slug);
    Ok((m, stripe, links))
}

/// POST /v1/billing/top-up
pub async fn top_up(cx: &Cx<'_>, p: TopUp) -> Result<Checkout, ApiError> {
    let cents = p.amount_cents.get();
    let (m, stripe, links) = paying(cx, p.workspace.as_deref())?;
    let (id, url) =
        stripe.checkout_payment(&m.workspace_id, cents, &links, &ids::new_id("chk")).await.map_err(stripe_failed)?;
    Ok(Checkout { workspace: m.slug.clone(), checkout_session_id: id, url })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveCard {
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// POST /v1/billing/card
pub async fn save_card(cx: &Cx<'_>, p: SaveCard) -> Result<Checkout, ApiError> {
    let (m, stripe, links) = paying(cx, p.workspace.as_deref())?;
    let known = store::billing::account(cx.db(), &m.workspace_id).await?;
    let customer = match known {
        Some(a) => a.customer_id,
        None => {
            let created = stripe.create_customer(&m.workspace_id, &m.slug).await.map_err(stripe_failed)?;
            store::billing::remember_customer(cx.db(), &m.workspace_id, &created, cx.now_ms).await?
        }
    };
    let (id, url) =
        stripe.checkout_setup(&m.workspace_id, &customer, &links, &ids::new_id("chk")).await.map_err(stripe_failed)?;
    Ok(Checkout { workspace: m.slug.clone(), checkout_session_id: id, url })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetAutoTopUp {
    /// On: when a model call leaves the balance under `threshold_cents`, `amount_cents` is charged to the
    /// saved card (one top-up at a time). Off: never.
    pub enabled: bool,
    /// With `enabled`: the balance, in cents (0–100,000), under which the top-up fires.
    pub threshold_cents: Option<stripe::ThresholdCents>,
    /// With `enabled`: cents to add each time, 500–100,000.
    pub amount_cents: Option<stripe::TopUpCents>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AutoTopUp {
    pub enabled: bool,
    pub threshold_cents: Option<i64>,
    pub amount_cents: Option<i64>,
    /// A top-up was started and its payment has not been reported yet.
    pub pending: bool,
    /// Why the last automatic top-up could not be started (a declined card), until one succeeds.
    pub last_error: Option<String>,
}

impl AutoTopUp {
    fn of(a: Option<&store::billing::Account>) -> Self {
        let a = a.filter(|a| a.auto_amount_cents.is_some());
        Self {
            enabled: a.is_some(),
            threshold_cents: a.and_then(|a| a.auto_threshold_cents),
            amount_cents: a.and_then(|a| a.auto_amount_cents),
            pending: a.is_some_and(|a| a.auto_pending_ms.is_some()),
            last_error: a.and_then(|a| a.auto_last_error.clone()),
        }
    }
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AutoTopUpSet {
    pub workspace: String,
    pub auto_top_up: AutoTopUp,
}

/// PUT /v1/billing/auto-top-up
pub async fn set_auto_top_up(cx: &Cx<'_>, p: SetAutoTopUp) -> Result<AutoTopUpSet, ApiError> {
    let auto = match (p.enabled, p.threshold_cents, p.amount_cents) {
        (false, _, _) => None,
        (true, Some(threshold), Some(amount)) => Some((threshold.get(), amount.get())),
        (true, _, _) => return Err(ApiError::invalid("`enabled: true` needs `threshold_cents` and `amount_cents`")),
    };
    Stripe::new(cx.env.net.as_ref(), &cx.env.config)?;
    let m = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(m, Role::Admin)?;
    let set = store::billing::set_auto(cx.db(), &m.workspace_id, auto, cx.now_ms).await?;
    if set.is_none() && auto.is_some() {
        return Err(ApiError::new(
            Code::Conflict,
            "the automatic top-up charges a saved card, and this workspace has none: call save_card first",
        ));
    }
    Ok(AutoTopUpSet { workspace: m.slug.clone(), auto_top_up: AutoTopUp::of(set.as_ref()) })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListReceipts {
    /// At most this many, newest first (1–200, default 50).
    pub limit: Option<Int<1, 200>>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Receipts {
    pub workspace: String,
    pub balance_cents: i64,
    pub card_saved: bool,
    pub auto_top_up: AutoTopUp,
    /// Every credit to the wallet, newest first: `checkout`, `auto` or `admin`, with Stripe's ids.
    pub receipts: Vec<Receipt>,
}

/// GET /v1/billing/receipts
pub async fn list_receipts(cx: &Cx<'_>, p: ListReceipts) -> Result<Receipts, ApiError> {
    let limit = p.limit.map_or(50, Int::get);
    let m = cx.workspace(p.workspace.as_deref())?;
    let db = cx.db();
    let (overview, account, receipts) = futures::try_join!(
        store::workspaces::overview(db, &m.workspace_id, 0),
        store::billing::account(db, &m.workspace_id),
        store::billing::receipts(db, &m.workspace_id, limit),
    )?;
    let (wallet, _) = overview.ok_or_else(|| ApiError::not_found("workspace"))?;
    Ok(Receipts {
        workspace: m.slug.clone(),
        balance_cents: wallet.balance_cents,
        card_saved: wallet.card_saved,
        auto_top_up: AutoTopUp::of(account.as_ref()),
        receipts,
    })
}

/// `POST /v1/billing/stripe/webhook`: Stripe's signed events. Answers 200 to every verified event,
/// applied or not, so Stripe stops redelivering it; a bad signature is refused.
pub async fn webhook(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    match receive(cx, req).await {
        Ok(body) => HttpResponse::json(200, &body),
        Err(e) => crate::error::error_response(&e),
    }
}

async fn receive(cx: &Cx<'_>, req: &HttpRequest) -> Result<Value, ApiError> {
    if req.method != "POST" {
        return Err(ApiError::invalid("Stripe's events are POSTed"));
    }
    let secret = cx.env.config.stripe_webhook_secret.as_deref().ok_or_else(crate::domain::billing::not_configured)?;
    let header = req.header("stripe-signature").unwrap_or_default();
    stripe::verify(secret, header, &req.body, cx.now_ms.div_euclid(1000))
        .map_err(|r| ApiError::new(Code::Unauthorized, r.message()))?;
    let event: Value =
        serde_json::from_slice(&req.body).map_err(|e| ApiError::invalid(format!("the event is not JSON: {e}")))?;
    let (Some(event_id), Some(kind)) = (event["id"].as_str(), event["type"].as_str()) else {
        return Err(ApiError::invalid("the event has no `id` or `type`"));
    };
    let object = &event["data"]["object"];
    let outcome = match (kind, object["mode"].as_str()) {
        ("checkout.session.completed", Some("payment")) => paid(cx, (event_id, kind), object, "checkout").await?,
        ("checkout.session.completed", Some("setup")) => card_saved(cx, (event_id, kind), object).await?,
        ("payment_intent.succeeded", _) if object["metadata"]["agentsky"] == AUTO_TOP_UP => {
            paid(cx, (event_id, kind), object, "auto").await?
        }
        _ => Outcome::Ignored("not an event this deployment acts on"),
    };
    Ok(match outcome {
        Outcome::Applied(workspace_id) => {
            // Best effort: the console's Usage page shows the new balance on its next wake-up.
            let _ = cx.env.feeds.bump(&workspace_id).await;
            json!({ "received": true, "applied": true })
        }
        Outcome::Ignored(why) => json!({ "received": true, "applied": false, "reason": why }),
    })
}

enum Outcome {
    /// Money or a card recorded, in this workspace.
    Applied(String),
    Ignored(&'static str),
}

/// The workspace an event's object names: `client_reference_id` (a checkout session) and
/// `metadata.workspace` must agree.
fn workspace_of(object: &Value) -> Option<&str> {
    let named = object["metadata"]["workspace"].as_str()?;
    match object["client_reference_id"].as_str() {
        Some(r) if r != named => None,
        _ => ids::is_id(named, "ws").then_some(named),
    }
}

/// A paid checkout session (`amount_total`) or an automatic top-up's payment intent (`amount_received`).
async fn paid(cx: &Cx<'_>, event: (&str, &str), object: &Value, source: &str) -> Result<Outcome, ApiError> {
    let Some(workspace_id) = workspace_of(object) else { return Ok(Outcome::Ignored("no workspace of ours")) };
    if source == "checkout" && object["payment_status"] != "paid" {
        return Ok(Outcome::Ignored("the checkout session is not paid yet"));
    }
    if object["currency"] != stripe::CURRENCY {
        return Ok(Outcome::Ignored("not in the wallet's currency"));
    }
    let cents = object["amount_total"].as_i64().or_else(|| object["amount_received"].as_i64()).unwrap_or(0);
    let Some(object_id) = object["id"].as_str().filter(|_| cents > 0) else {
        return Ok(Outcome::Ignored("no amount"));
    };
    let credit = Credit {
        receipt_id: &ids::new_id("rcp"),
        workspace_id,
        source,
        cents,
        stripe_object_id: Some(object_id),
        event: Some(event),
        now_ms: cx.now_ms,
    };
    match store::usage::credit(cx.db(), &credit).await? {
        Some(_) => Ok(Outcome::Applied(workspace_id.to_owned())),
        None => Ok(Outcome::Ignored("applied before")),
    }
}

/// A completed setup: the card its SetupIntent saved becomes the workspace's.
async fn card_saved(cx: &Cx<'_>, event: (&str, &str), object: &Value) -> Result<Outcome, ApiError> {
    let (Some(workspace_id), Some(customer)) = (workspace_of(object), object["customer"].as_str()) else {
        return Ok(Outcome::Ignored("no workspace of ours"));
    };
    let stripe = Stripe::new(cx.env.net.as_ref(), &cx.env.config)?;
    let setup_intent = object["setup_intent"].as_str().unwrap_or_default();
    let method = stripe.setup_payment_method(setup_intent).await.map_err(stripe_failed)?;
    let saved = store::billing::save_card(cx.db(), event, workspace_id, customer, &method, cx.now_ms).await?;
    Ok(if saved { Outcome::Applied(workspace_id.to_owned()) } else { Outcome::Ignored("applied before") })
}
