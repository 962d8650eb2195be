//! A workspace's Stripe side: its customer (created once, remembered), its saved card and its automatic
//! top-up. Money itself moves only in `store::usage` (`credit`, and `settle`, which claims the top-up).

use super::{first, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// How long a claimed automatic top-up blocks the next: its payment normally succeeds in seconds, and one
/// that never reports (declined, lost) may be tried again after this.
pub const AUTO_PENDING_MS: i64 = 3_600_000;

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Account {
    pub customer_id: String,
    pub payment_method_id: Option<String>,
    pub auto_threshold_cents: Option<i64>,
    pub auto_amount_cents: Option<i64>,
    /// When the automatic top-up in flight was started; `None` when none is.
    pub auto_pending_ms: Option<i64>,
    /// Why the last automatic top-up could not be started, until one succeeds.
    pub auto_last_error: Option<String>,
}

const ACCOUNT: &str = "SELECT customer_id, payment_method_id, auto_threshold_cents, auto_amount_cents,
    auto_pending_ms, auto_last_error FROM billing_account WHERE workspace_id = ?1";

pub async fn account(db: &dyn Sql, workspace_id: &str) -> DbResult<Option<Account>> {
    first(db, stmt!(ACCOUNT, workspace_id)).await
}

const REMEMBER: &str = "INSERT INTO billing_account (workspace_id, customer_id, updated_ms) VALUES (?1, ?2, ?3)
  ON CONFLICT (workspace_id) DO NOTHING";

/// Remembers the workspace's Stripe customer; the first remembered wins, and is returned.
pub async fn remember_customer(db: &dyn Sql, workspace_id: &str, customer_id: &str, now_ms: i64) -> DbResult<String> {
    let mut results =
        db.batch(vec![stmt!(REMEMBER, workspace_id, customer_id, now_ms), stmt!(ACCOUNT, workspace_id)]).await?;
    let row = results.pop().and_then(|rows| rows.into_iter().next());
    let row = row.ok_or_else(|| super::DbError::Other("billing account missing".into()))?;
    Ok(super::decode::<Account>(row)?.customer_id)
}

const CARD_EVENT: &str =
    "INSERT INTO stripe_event (event_id, type, applied_ms) VALUES (?1, ?2, ?3) ON CONFLICT (event_id) DO NOTHING";
const CARD_SAVE: &str = "UPDATE billing_account SET payment_method_id = ?3, auto_pending_ms = NULL,
    auto_last_error = NULL, updated_ms = ?4
  WHERE workspace_id = ?1 AND customer_id = ?2 AND changes() = 1";
const CARD_FLAG: &str =
    "UPDATE workspace SET card_saved = 1 WHERE workspace_id = ?1 AND changes() = 1 RETURNING workspace_id";

/// A card saved through checkout (setup mode), once per event and only for the workspace's own customer.
/// `true` when it was recorded now.
pub async fn save_card(
    db: &dyn Sql,
    event: (&str, &str),
    workspace_id: &str,
    customer_id: &str,
    payment_method_id: &str,
    now_ms: i64,
) -> DbResult<bool> {
    let results = db
        .batch(vec![
            stmt!(CARD_EVENT, event.0, event.1, now_ms),
            stmt!(CARD_SAVE, workspace_id, customer_id, payment_method_id, now_ms),
            stmt!(CARD_FLAG, workspace_id),
        ])
        .await?;
    Ok(results.last().is_some_and(|rows| !rows.is_empty()))
}

const SET_AUTO: &str = "UPDATE billing_account SET auto_threshold_cents = ?2, auto_amount_cents = ?3, updated_ms = ?4
  WHERE workspace_id = ?1 AND (?3 IS NULL OR payment_method_id IS NOT NULL)
  RETURNING customer_id, payment_method_id, auto_threshold_cents, auto_amount_cents, auto_pending_ms, auto_last_error";

/// Sets (or with `None`, turns off) the automatic top-up. Turning it on needs a saved card: `None` back
/// when there is none.
pub async fn set_auto(
    db: &dyn Sql,
    workspace_id: &str,
    auto: Option<(i64, i64)>,
    now_ms: i64,
) -> DbResult<Option<Account>> {
    let (threshold, amount) = auto.unzip();
    first(db, stmt!(SET_AUTO, workspace_id, threshold, amount, now_ms)).await
}

/// An automatic top-up to start: what to charge to which card.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct AutoTopUp {
    pub workspace_id: String,
    pub customer_id: String,
    pub payment_method_id: String,
    pub amount_cents: i64,
    /// When it was claimed: a failure is noted against this claim.
    pub pending_ms: i64,
}

/// Claims the automatic top-up when the wallet is under its threshold and none is in flight (or the one
/// in flight is older than [`AUTO_PENDING_MS`]): one statement, so of many settlements at once only one
/// claims it. Run in the settlement's own batch (`store::usage::settle`).
pub const CLAIM_AUTO: &str = "UPDATE billing_account SET auto_pending_ms = ?2
  WHERE workspace_id = ?1 AND payment_method_id IS NOT NULL AND auto_amount_cents IS NOT NULL
    AND (auto_pending_ms IS NULL OR auto_pending_ms < ?2 - ?3)
    AND (SELECT balance_cents FROM workspace WHERE workspace_id = ?1) < auto_threshold_cents
  RETURNING workspace_id, customer_id, payment_method_id, auto_amount_cents AS amount_cents,
    auto_pending_ms AS pending_ms";

const AUTO_FAILED: &str =
    "UPDATE billing_account SET auto_last_error = ?3 WHERE workspace_id = ?1 AND auto_pending_ms = ?2";

/// Notes why a claimed top-up could not be started; it stays claimed until [`AUTO_PENDING_MS`] passes,
/// so a declined card is not charged again on every turn.
pub async fn auto_failed(db: &dyn Sql, workspace_id: &str, pending_ms: i64, why: &str) -> DbResult<()> {
    db.batch(vec![stmt!(AUTO_FAILED, workspace_id, pending_ms, why)]).await.map(drop)
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Receipt {
    pub receipt_id: String,
    /// `checkout` (a one-off top-up), `auto` (the automatic top-up) or `admin` (the deployment's admin).
    pub source: String,
    pub cents: i64,
    /// The Stripe checkout session or payment intent that paid it.
    pub stripe_object_id: Option<String>,
    /// The Stripe event that reported it.
    pub stripe_event_id: Option<String>,
    pub created_ms: i64,
}

const RECEIPTS: &str = "SELECT receipt_id, source, cents, stripe_object_id, stripe_event_id, created_ms
  FROM credit_receipt WHERE workspace_id = ?1 ORDER BY created_ms DESC, rowid DESC LIMIT ?2";

/// The workspace's newest receipts.
pub async fn receipts(db: &dyn Sql, workspace_id: &str, limit: i64) -> DbResult<Vec<Receipt>> {
    super::rows(db, stmt!(RECEIPTS, workspace_id, limit)).await
}
