//! Outgoing webhook endpoints and their deliveries. Secrets arrive here sealed and leave sealed.

use super::{first, rows, DbResult, Sql, Stmt};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// An endpoint as lists show it: never its secrets.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Endpoint {
    pub webhook_id: String,
    pub url: String,
    /// The events it receives.
    #[serde(deserialize_with = "super::json_text")]
    pub events: Vec<String>,
    /// `standard` (the Standard Webhooks JSON envelope) or `slack`.
    pub format: String,
    pub description: String,
    pub created_ms: i64,
    /// While a rotated secret still signs too (until then both signatures are sent).
    pub previous_secret_until_ms: Option<i64>,
}

/// An endpoint with its sealed secrets, for signing.
#[derive(Debug, Clone, Deserialize)]
pub struct EndpointSecrets {
    pub webhook_id: String,
    pub workspace_id: String,
    pub url: String,
    pub format: String,
    pub secret_sealed: String,
    pub previous_sealed: Option<String>,
    pub previous_until_ms: Option<i64>,
}

pub struct NewEndpoint<'a> {
    pub webhook_id: &'a str,
    pub workspace_id: &'a str,
    pub url: &'a str,
    pub events: &'a [String],
    pub format: &'a str,
    pub description: &'a str,
    pub secret_sealed: &'a str,
    pub created_by: &'a str,
    pub now_ms: i64,
}

const INSERT: &str = "INSERT INTO webhook_endpoint (webhook_id, workspace_id, url, events, format, description,
  secret_sealed, created_by, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?9)";

/// An endpoint holds at most this many per workspace.
pub const MAX_PER_WORKSPACE: i64 = 20;

const COUNT: &str = "SELECT COUNT(*) AS n FROM webhook_endpoint WHERE workspace_id = ?1";

pub async fn count(db: &dyn Sql, workspace_id: &str) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct N {
        n: i64,
    }
    Ok(first::<N>(db, stmt!(COUNT, workspace_id)).await?.map_or(0, |r| r.n))
}

pub async fn insert(db: &dyn Sql, e: &NewEndpoint<'_>) -> DbResult<()> {
    let events = serde_json::to_string(e.events).unwrap_or_else(|_| "[]".into());
    db.all(stmt!(
        INSERT,
        e.webhook_id,
        e.workspace_id,
        e.url,
        events,
        e.format,
        e.description,
        e.secret_sealed,
        e.created_by,
        e.now_ms
    ))
    .await
    .map(drop)
}

const LIST: &str = "SELECT webhook_id, url, events, format, description, created_ms,
  CASE WHEN previous_until_ms > ?2 THEN previous_until_ms END AS previous_secret_until_ms
  FROM webhook_endpoint WHERE workspace_id = ?1 ORDER BY created_ms, webhook_id LIMIT 100";

pub async fn list(db: &dyn Sql, workspace_id: &str, now_ms: i64) -> DbResult<Vec<Endpoint>> {
    rows(db, stmt!(LIST, workspace_id, now_ms)).await
}

const GET: &str = "SELECT webhook_id, url, events, format, description, created_ms,
  CASE WHEN previous_until_ms > ?3 THEN previous_until_ms END AS previous_secret_until_ms
  FROM webhook_endpoint WHERE workspace_id = ?1 AND webhook_id = ?2";

pub async fn get(db: &dyn Sql, workspace_id: &str, webhook_id: &str, now_ms: i64) -> DbResult<Option<Endpoint>> {
    first(db, stmt!(GET, workspace_id, webhook_id, now_ms)).await
}

const SECRETS: &str = "SELECT webhook_id, workspace_id, url, format, secret_sealed, previous_sealed, previous_until_ms
  FROM webhook_endpoint WHERE webhook_id = ?1";

pub async fn secrets(db: &dyn Sql, webhook_id: &str) -> DbResult<Option<EndpointSecrets>> {
    first(db, stmt!(SECRETS, webhook_id)).await
}

const DELETE: &str = "DELETE FROM webhook_endpoint WHERE workspace_id = ?1 AND webhook_id = ?2 RETURNING webhook_id";

pub async fn delete(db: &dyn Sql, workspace_id: &str, webhook_id: &str) -> DbResult<bool> {
    Ok(!db.all(stmt!(DELETE, workspace_id, webhook_id)).await?.is_empty())
}

/// The new secret signs from now on; the current one keeps signing beside it until `until_ms`.
const ROTATE: &str = "UPDATE webhook_endpoint SET previous_sealed = ?3, previous_until_ms = ?4,
  secret_sealed = ?5, updated_ms = ?6 WHERE workspace_id = ?1 AND webhook_id = ?2 RETURNING webhook_id";

pub struct Rotation<'a> {
    pub workspace_id: &'a str,
    pub webhook_id: &'a str,
    /// The current secret, re-sealed as the previous one (its row binding changes).
    pub previous_sealed: &'a str,
    pub until_ms: i64,
    pub secret_sealed: &'a str,
    pub now_ms: i64,
}

pub async fn rotate(db: &dyn Sql, r: &Rotation<'_>) -> DbResult<bool> {
    let s = stmt!(ROTATE, r.workspace_id, r.webhook_id, r.previous_sealed, r.until_ms, r.secret_sealed, r.now_ms);
    Ok(!db.all(s).await?.is_empty())
}

/// The endpoints of a workspace subscribed to `event`, by id.
const SUBSCRIBED: &str = "SELECT webhook_id FROM webhook_endpoint
  WHERE workspace_id = ?1 AND EXISTS (SELECT 1 FROM json_each(events) WHERE value = ?2)";

pub async fn subscribed(db: &dyn Sql, workspace_id: &str, event: &str) -> DbResult<Vec<String>> {
    #[derive(Deserialize)]
    struct Id {
        webhook_id: String,
    }
    Ok(rows::<Id>(db, stmt!(SUBSCRIBED, workspace_id, event)).await?.into_iter().map(|r| r.webhook_id).collect())
}

// ── Deliveries ──

crate::rules::params::words! {
    /// Where a delivery stands: `pending` while attempts remain, then `delivered`, or `failed`
    /// (dead-lettered after the retry budget).
    pub enum DeliveryStatus {
        Pending = "pending",
        Delivered = "delivered",
        Failed = "failed",
    }
}

/// A delivery as the console and `list_webhooks` show it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Delivery {
    pub delivery_id: String,
    pub webhook_id: String,
    /// The `webhook-id` header of every attempt.
    pub event_id: String,
    pub event: String,
    pub status: DeliveryStatus,
    pub attempts: i64,
    pub next_attempt_ms: i64,
    /// The receiver's last HTTP status (none when it could not be reached).
    pub last_status: Option<i64>,
    /// The start of its last answer, or why it could not be reached.
    pub last_body: Option<String>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// A delivery with what is sent.
#[derive(Debug, Clone, Deserialize)]
pub struct Outgoing {
    pub delivery_id: String,
    pub webhook_id: String,
    pub event_id: String,
    pub event: String,
    pub payload: String,
    pub attempts: i64,
    pub created_ms: i64,
}

const INSERT_DELIVERY: &str = "INSERT INTO webhook_delivery (delivery_id, webhook_id, workspace_id, event_id, event,
  payload, status, attempts, next_attempt_ms, created_ms, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', 0, ?7, ?7, ?7)
  ON CONFLICT (webhook_id, event_id) DO NOTHING";

pub struct NewDelivery<'a> {
    pub delivery_id: &'a str,
    pub webhook_id: &'a str,
    pub workspace_id: &'a str,
    pub event_id: &'a str,
    pub event: &'a str,
    pub payload: &'a str,
    pub now_ms: i64,
}

pub fn insert_delivery(d: &NewDelivery<'_>) -> Stmt {
    stmt!(INSERT_DELIVERY, d.delivery_id, d.webhook_id, d.workspace_id, d.event_id, d.event, d.payload, d.now_ms)
}

/// Claims attempt `attempt` + 1 of a pending delivery: only the message carrying the current count wins,
/// so a duplicate or stale message claims nothing. The claim holds the row against the sweep for `hold_ms`
/// ([`crate::rules::webhooks::claim_hold_ms`]): if the attempt never settles, that is when it is due again.
const CLAIM: &str = "UPDATE webhook_delivery SET attempts = attempts + 1, updated_ms = ?3, next_attempt_ms = ?3 + ?4
  WHERE delivery_id = ?1 AND status = 'pending' AND attempts = ?2
  RETURNING delivery_id, webhook_id, event_id, event, payload, attempts, created_ms";

pub async fn claim(
    db: &dyn Sql,
    delivery_id: &str,
    attempt: i64,
    now_ms: i64,
    hold_ms: i64,
) -> DbResult<Option<Outgoing>> {
    first(db, stmt!(CLAIM, delivery_id, attempt, now_ms, hold_ms)).await
}

/// An attempt's outcome counts while its claim is the latest (`attempts` unchanged). Once its claim lapsed
/// and a later attempt claimed the delivery, only a success still counts; nothing undoes `delivered`.
const SETTLE: &str = "UPDATE webhook_delivery SET status = ?2, next_attempt_ms = ?3, last_status = ?4, last_body = ?5,
  updated_ms = ?6 WHERE delivery_id = ?1 AND status <> 'delivered' AND (attempts = ?7 OR ?2 = 'delivered')
  RETURNING delivery_id";

/// Records an attempt's outcome: `delivered`, `failed`, or `pending` again until `next_attempt_ms`.
pub struct Settle<'a> {
    pub delivery_id: &'a str,
    pub status: DeliveryStatus,
    pub next_attempt_ms: i64,
    pub last_status: Option<i64>,
    pub last_body: Option<&'a str>,
    pub now_ms: i64,
    /// The count the attempt's claim made.
    pub attempts: i64,
}

/// False when the outcome no longer counts: a later attempt's claim superseded this one's.
pub async fn settle(db: &dyn Sql, s: &Settle<'_>) -> DbResult<bool> {
    let st = stmt!(
        SETTLE,
        s.delivery_id,
        s.status.as_str(),
        s.next_attempt_ms,
        s.last_status,
        s.last_body,
        s.now_ms,
        s.attempts
    );
    Ok(!db.all(st).await?.is_empty())
}

/// A delivery whose messages kept failing in the consumer itself (the dead-letter queue's): failed.
const GIVE_UP: &str = "UPDATE webhook_delivery SET status = 'failed', updated_ms = ?2,
  last_body = COALESCE(last_body, 'the delivery could not be processed') WHERE delivery_id = ?1 AND status = 'pending'";

pub async fn give_up(db: &dyn Sql, delivery_id: &str, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(GIVE_UP, delivery_id, now_ms)).await.map(drop)
}

const RECENT: &str = "SELECT delivery_id, webhook_id, event_id, event, status, attempts, next_attempt_ms, last_status,
  last_body, created_ms, updated_ms FROM webhook_delivery WHERE workspace_id = ?1
  ORDER BY created_ms DESC, delivery_id LIMIT ?2";

/// The workspace's newest deliveries.
pub async fn recent(db: &dyn Sql, workspace_id: &str, limit: i64) -> DbResult<Vec<Delivery>> {
    rows(db, stmt!(RECENT, workspace_id, limit)).await
}

/// The endpoint of each of `delivery_ids` that still exists, oldest delivery first: the order each
/// endpoint's deliveries go out in.
const ENDPOINTS_OF: &str = "SELECT delivery_id, webhook_id FROM webhook_delivery
  WHERE delivery_id IN (SELECT value FROM json_each(?1)) ORDER BY created_ms, delivery_id";

pub async fn endpoints_of(db: &dyn Sql, delivery_ids: &[&str]) -> DbResult<Vec<(String, String)>> {
    #[derive(Deserialize)]
    struct R {
        delivery_id: String,
        webhook_id: String,
    }
    let ids = serde_json::to_string(delivery_ids).unwrap_or_else(|_| "[]".into());
    Ok(rows::<R>(db, stmt!(ENDPOINTS_OF, ids)).await?.into_iter().map(|r| (r.delivery_id, r.webhook_id)).collect())
}

/// Pending deliveries whose time passed (their message was lost, none was ever sent from a place without
/// the queue, or their attempt was cut and its claim lapsed): each with its attempt count, to enqueue again.
const OVERDUE: &str = "SELECT delivery_id, attempts FROM webhook_delivery
  WHERE status = 'pending' AND next_attempt_ms < ?1 ORDER BY next_attempt_ms LIMIT 100";

pub async fn overdue(db: &dyn Sql, before_ms: i64) -> DbResult<Vec<(String, i64)>> {
    #[derive(Deserialize)]
    struct R {
        delivery_id: String,
        attempts: i64,
    }
    Ok(rows::<R>(db, stmt!(OVERDUE, before_ms)).await?.into_iter().map(|r| (r.delivery_id, r.attempts)).collect())
}
