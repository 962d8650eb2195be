//! Web Push: the deployment's VAPID key (its private half arrives here sealed and leaves sealed), people's
//! push subscriptions, and the one-time answers notifications carry (stored hashed).

use super::{DbResult, Row, Sql};
use crate::stmt;
use serde::Serialize;

// Rows are read field by field (not derived): each derived row type costs the Worker's wasm its own
// copy of serde_json's map decoding.
fn text(row: &Row, name: &str) -> String {
    row.get(name).and_then(serde_json::Value::as_str).unwrap_or_default().to_owned()
}

fn int(row: &Row, name: &str) -> Option<i64> {
    row.get(name).and_then(serde_json::Value::as_i64)
}

async fn first_row(db: &dyn Sql, stmt: super::Stmt) -> DbResult<Option<Row>> {
    Ok(db.all(stmt).await?.into_iter().next())
}

/// The deployment's VAPID key pair as stored.
#[derive(Debug, Clone)]
pub struct VapidRow {
    pub public_key: String,
    pub private_sealed: String,
}

const VAPID: &str = "SELECT public_key, private_sealed FROM push_vapid WHERE id = 1";

pub async fn vapid(db: &dyn Sql) -> DbResult<Option<VapidRow>> {
    let row = first_row(db, stmt!(VAPID)).await?;
    Ok(row.map(|r| VapidRow { public_key: text(&r, "public_key"), private_sealed: text(&r, "private_sealed") }))
}

/// Keeps the first key pair made: racing first uses both read back the one that landed.
const INSERT_VAPID: &str =
    "INSERT OR IGNORE INTO push_vapid (id, public_key, private_sealed, created_ms) VALUES (1, ?1, ?2, ?3)";

pub async fn insert_vapid(db: &dyn Sql, public_key: &str, private_sealed: &str, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(INSERT_VAPID, public_key, private_sealed, now_ms)).await.map(drop)
}

/// A subscription as its owner sees it: never its keys.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Subscription {
    pub subscription_id: String,
    /// The push service's URL for this browser (its origin names the service).
    pub endpoint: String,
    /// What the browser said it is (its user agent), or the label given.
    pub label: String,
    pub created_ms: i64,
    /// When a push last went through to it.
    pub last_ok_ms: Option<i64>,
}

/// A subscription with what a push needs.
#[derive(Debug, Clone)]
pub struct Target {
    pub subscription_id: String,
    pub account_id: String,
    pub key_id: String,
    pub endpoint: String,
    pub p256dh: String,
    pub auth: String,
}

pub struct NewSubscription<'a> {
    pub subscription_id: &'a str,
    pub account_id: &'a str,
    pub key_id: &'a str,
    pub endpoint: &'a str,
    pub p256dh: &'a str,
    pub auth: &'a str,
    pub label: &'a str,
    pub now_ms: i64,
}

/// A browser subscribes once: the same endpoint again (new keys, or another person signed in on it)
/// replaces the row and keeps its id.
const UPSERT: &str =
    "INSERT INTO push_subscription (subscription_id, account_id, key_id, endpoint, p256dh, auth, label,
  created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
  ON CONFLICT(endpoint) DO UPDATE SET account_id = excluded.account_id, key_id = excluded.key_id,
    p256dh = excluded.p256dh, auth = excluded.auth, label = excluded.label, created_ms = excluded.created_ms
  RETURNING subscription_id";

pub async fn upsert(db: &dyn Sql, s: &NewSubscription<'_>) -> DbResult<String> {
    let stmt =
        stmt!(UPSERT, s.subscription_id, s.account_id, s.key_id, s.endpoint, s.p256dh, s.auth, s.label, s.now_ms);
    Ok(first_row(db, stmt).await?.map_or_else(|| s.subscription_id.to_owned(), |r| text(&r, "subscription_id")))
}

/// A person holds at most this many subscriptions (browsers and devices).
pub const MAX_PER_ACCOUNT: i64 = 20;

const COUNT: &str = "SELECT COUNT(*) AS n FROM push_subscription WHERE account_id = ?1 AND endpoint <> ?2";

/// The account's subscriptions other than `endpoint`'s.
pub async fn count_other(db: &dyn Sql, account_id: &str, endpoint: &str) -> DbResult<i64> {
    Ok(first_row(db, stmt!(COUNT, account_id, endpoint)).await?.and_then(|r| int(&r, "n")).unwrap_or(0))
}

const LIST: &str = "SELECT subscription_id, endpoint, label, created_ms, last_ok_ms FROM push_subscription
  WHERE account_id = ?1 ORDER BY created_ms DESC, subscription_id";

pub async fn list(db: &dyn Sql, account_id: &str) -> DbResult<Vec<Subscription>> {
    let found = db.all(stmt!(LIST, account_id)).await?;
    Ok(found
        .iter()
        .map(|r| Subscription {
            subscription_id: text(r, "subscription_id"),
            endpoint: text(r, "endpoint"),
            label: text(r, "label"),
            created_ms: int(r, "created_ms").unwrap_or_default(),
            last_ok_ms: int(r, "last_ok_ms"),
        })
        .collect())
}

const DELETE: &str =
    "DELETE FROM push_subscription WHERE subscription_id = ?1 AND account_id = ?2 RETURNING subscription_id";

/// Removes one of the account's subscriptions; `false` when it has none by that id.
pub async fn delete(db: &dyn Sql, account_id: &str, subscription_id: &str) -> DbResult<bool> {
    Ok(!db.all(stmt!(DELETE, subscription_id, account_id)).await?.is_empty())
}

const GONE: &str = "DELETE FROM push_subscription WHERE subscription_id = ?1";

/// A subscription the push service said is gone (404 or 410).
pub async fn gone(db: &dyn Sql, subscription_id: &str) -> DbResult<()> {
    db.all(stmt!(GONE, subscription_id)).await.map(drop)
}

const DELIVERED: &str = "UPDATE push_subscription SET last_ok_ms = ?2 WHERE subscription_id = ?1";

pub async fn delivered(db: &dyn Sql, subscription_id: &str, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(DELIVERED, subscription_id, now_ms)).await.map(drop)
}

/// Every subscription of the workspace's members (each may answer its requests; `answer_request` decides
/// the rest), with the member's role.
const OF_WORKSPACE: &str = "SELECT s.subscription_id, s.account_id, s.key_id, s.endpoint, s.p256dh, s.auth
  FROM push_subscription s JOIN membership m ON m.account_id = s.account_id
  WHERE m.workspace_id = ?1 ORDER BY s.subscription_id";

pub async fn of_workspace(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<Target>> {
    let found = db.all(stmt!(OF_WORKSPACE, workspace_id)).await?;
    Ok(found
        .iter()
        .map(|r| Target {
            subscription_id: text(r, "subscription_id"),
            account_id: text(r, "account_id"),
            key_id: text(r, "key_id"),
            endpoint: text(r, "endpoint"),
            p256dh: text(r, "p256dh"),
            auth: text(r, "auth"),
        })
        .collect())
}

/// A one-time answer a notification carries.
pub struct NewAction<'a> {
    pub token_hash: &'a str,
    pub request_id: &'a str,
    pub task_id: &'a str,
    pub answer: &'a str,
    pub account_id: &'a str,
    pub key_id: &'a str,
    pub expires_ms: i64,
}

const INSERT_ACTION: &str = "INSERT INTO push_action (token_hash, request_id, task_id, answer, account_id, key_id,
  expires_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

pub fn insert_action(a: &NewAction<'_>) -> super::Stmt {
    stmt!(INSERT_ACTION, a.token_hash, a.request_id, a.task_id, a.answer, a.account_id, a.key_id, a.expires_ms)
}

/// What a used action token said.
#[derive(Debug, Clone)]
pub struct Action {
    pub token_hash: String,
    pub request_id: String,
    pub task_id: String,
    pub answer: String,
    pub account_id: String,
    pub key_id: String,
}

/// Uses a token once, before it expires: the row is marked in the same statement, so two taps cannot
/// both answer.
const USE_ACTION: &str = "UPDATE push_action SET used_ms = ?2
  WHERE token_hash = ?1 AND used_ms IS NULL AND expires_ms > ?2
  RETURNING token_hash, request_id, task_id, answer, account_id, key_id";

pub async fn use_action(db: &dyn Sql, token_hash: &str, now_ms: i64) -> DbResult<Option<Action>> {
    let row = first_row(db, stmt!(USE_ACTION, token_hash, now_ms)).await?;
    Ok(row.map(|r| Action {
        token_hash: text(&r, "token_hash"),
        request_id: text(&r, "request_id"),
        task_id: text(&r, "task_id"),
        answer: text(&r, "answer"),
        account_id: text(&r, "account_id"),
        key_id: text(&r, "key_id"),
    }))
}

/// Once a request is answered, its other buttons go.
const SPENT: &str = "UPDATE push_action SET used_ms = ?2 WHERE request_id = ?1 AND used_ms IS NULL";

pub async fn spend_request(db: &dyn Sql, request_id: &str, now_ms: i64) -> DbResult<()> {
    db.all(stmt!(SPENT, request_id, now_ms)).await.map(drop)
}

/// Where a request's notification points: the workspace's slug and the task's title.
#[derive(Debug, Clone)]
pub struct Place {
    pub slug: String,
    pub task_title: String,
}

const PLACE: &str = "SELECT w.slug, COALESCE((SELECT title FROM task WHERE task_id = ?2), '') AS task_title
  FROM workspace w WHERE w.workspace_id = ?1";

pub async fn place(db: &dyn Sql, workspace_id: &str, task_id: &str) -> DbResult<Option<Place>> {
    let row = first_row(db, stmt!(PLACE, workspace_id, task_id)).await?;
    Ok(row.map(|r| Place { slug: text(&r, "slug"), task_title: text(&r, "task_title") }))
}
