//! Money in through Stripe: a one-off top-up and saving a card through Checkout, the automatic top-up's
//! setting and the receipts. Stripe's webhook, whose signed events credit the wallet, is
//! [`crate::receivers::stripe`]. Paying and changing how the workspace pays need the admin role, as other
//! money matters do.

use crate::cx::{Cx, Role};
use crate::domain::billing::{Links, Stripe};
use crate::error::{ApiError, Code};
use crate::rules::params::Int;
use crate::rules::{ids, stripe};
use crate::store::{self, billing::Receipt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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

pub fn stripe_failed(e: String) -> ApiError {
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
