//! API keys: looked up by the SHA-256 of the presented secret, together with every workspace the account
//! belongs to, so one round trip both authenticates a call and resolves its workspace.

use super::{rows, DbError, DbResult, Row, Sql, Stmt};
use crate::identity::{Caller, Membership};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// Touches `last_used_ms` at most once a minute, so busy keys do not write on every call.
const TOUCH: &str = "UPDATE api_key SET last_used_ms = ?2
  WHERE key_hash = ?1 AND revoked_ms IS NULL AND (last_used_ms IS NULL OR last_used_ms < ?2 - 60000)";

/// The memberships of the account `$account` names (SQL), as one JSON column, `memberships`.
macro_rules! memberships_of {
    ($account:literal) => {
        concat!(
            "(SELECT json_group_array(json_object('workspace_id', w.workspace_id, 'slug', w.slug, 'name', w.name,
            'role', m.role, 'is_personal', w.is_personal))
     FROM membership m JOIN workspace w ON w.workspace_id = m.workspace_id
    WHERE m.account_id = ",
            $account,
            ") AS memberships"
        )
    };
}

/// A [`KeyRow`] of the keys `$which` (SQL) picks.
macro_rules! key_rows {
    ($which:literal) => {
        concat!(
            "SELECT k.key_id, k.account_id, k.key_hash, k.scopes, k.workspace_id AS locked_workspace_id,
  k.oauth_grant_id AS app, ",
            memberships_of!("k.account_id"),
            " FROM api_key k WHERE ",
            $which
        )
    };
}

const AUTHENTICATE: &str =
    key_rows!("k.key_hash = ?1 AND k.revoked_ms IS NULL AND (k.expires_ms IS NULL OR k.expires_ms > ?2)");

#[derive(Deserialize)]
struct KeyRow {
    key_id: String,
    account_id: String,
    key_hash: String,
    scopes: String,
    locked_workspace_id: Option<String>,
    app: Option<String>,
    #[serde(deserialize_with = "super::json_text")]
    memberships: Vec<Membership>,
}

impl From<KeyRow> for Caller {
    fn from(k: KeyRow) -> Caller {
        Caller {
            account_id: k.account_id,
            key_id: k.key_id,
            can_write: k.scopes.split(' ').any(|s| s == "write"),
            locked_workspace_id: k.locked_workspace_id,
            memberships: k.memberships,
            app: k.app,
        }
    }
}

/// The caller behind a key hash, or `None` for an unknown or revoked key.
pub async fn authenticate(db: &dyn Sql, key_hash: &str, now_ms: i64) -> DbResult<Option<Caller>> {
    looked_up(db.batch(lookup(key_hash, now_ms)).await?, key_hash)
}

/// The statements of [`authenticate`], for a batch that carries more (see [`super::Counted::ride`]).
pub fn lookup(key_hash: &str, now_ms: i64) -> Vec<Stmt> {
    vec![stmt!(TOUCH, key_hash, now_ms), stmt!(AUTHENTICATE, key_hash, now_ms)]
}

/// What the rows of [`lookup`] found.
pub fn looked_up(mut rows: Vec<Vec<Row>>, key_hash: &str) -> DbResult<Option<Caller>> {
    caller(rows.pop().unwrap_or_default(), key_hash)
}

fn caller(rows: Vec<Row>, key_hash: &str) -> DbResult<Option<Caller>> {
    let Some(row) = rows.into_iter().next() else {
        return Ok(None);
    };
    let k: KeyRow = super::decode(row)?;
    // The index found the row by digest; comparing the digests again in constant time costs nothing.
    if !crate::rules::ids::constant_time_eq(&k.key_hash, key_hash) {
        return Ok(None);
    }
    Ok(Some(k.into()))
}

/// A new key's row. `scopes` is `read` or `read write`.
pub struct NewKey<'a> {
    pub key_id: &'a str,
    pub account_id: &'a str,
    pub name: &'a str,
    pub key_hash: &'a str,
    pub prefix: &'a str,
    pub scopes: &'a str,
    pub workspace_id: Option<&'a str>,
    pub now_ms: i64,
}

pub const INSERT: &str =
    "INSERT INTO api_key (key_id, account_id, name, key_hash, prefix, scopes, workspace_id, created_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

pub fn insert(k: &NewKey<'_>) -> super::Stmt {
    stmt!(INSERT, k.key_id, k.account_id, k.name, k.key_hash, k.prefix, k.scopes, k.workspace_id, k.now_ms)
}

/// Inserts the key only while the account holds fewer than `max_active` unrevoked keys, in one statement,
/// so racing mints cannot pass the cap together.
const INSERT_UNDER_CAP: &str =
    "INSERT INTO api_key (key_id, account_id, name, key_hash, prefix, scopes, workspace_id, created_ms)
  SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8
  WHERE (SELECT COUNT(*) FROM api_key WHERE account_id = ?2 AND revoked_ms IS NULL AND oauth_grant_id IS NULL) < ?9
  RETURNING key_id";

/// Creates a key; `false` when the account already holds `max_active` active keys.
pub async fn create(db: &dyn Sql, k: &NewKey<'_>, max_active: i64) -> DbResult<bool> {
    let stmt = stmt!(
        INSERT_UNDER_CAP,
        k.key_id,
        k.account_id,
        k.name,
        k.key_hash,
        k.prefix,
        k.scopes,
        k.workspace_id,
        k.now_ms,
        max_active
    );
    Ok(!db.all(stmt).await?.is_empty())
}

// OAuth access tokens (rows with `oauth_grant_id`) are neither counted nor listed as keys: the console
// shows them as connected apps.
const ACTIVE: &str =
    "SELECT COUNT(*) AS n FROM api_key WHERE account_id = ?1 AND revoked_ms IS NULL AND oauth_grant_id IS NULL";

/// How many unrevoked keys the account holds.
pub async fn active(db: &dyn Sql, account_id: &str) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        n: i64,
    }
    Ok(super::first::<Row>(db, stmt!(ACTIVE, account_id)).await?.map_or(0, |r| r.n))
}

/// What lists show of a key: never the secret or its hash.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct KeyInfo {
    pub key_id: String,
    pub name: String,
    /// The first characters of the key, to recognise it.
    pub prefix: String,
    pub scopes: String,
    /// The slug of the workspace this key is locked to, if any.
    pub workspace: Option<String>,
    pub created_ms: i64,
    pub last_used_ms: Option<i64>,
    pub revoked_ms: Option<i64>,
}

const LIST: &str =
    "SELECT k.key_id, k.name, k.prefix, k.scopes, w.slug AS workspace, k.created_ms, k.last_used_ms, k.revoked_ms
  FROM api_key k LEFT JOIN workspace w ON w.workspace_id = k.workspace_id
  WHERE k.account_id = ?1 AND k.oauth_grant_id IS NULL AND (?2 IS NULL OR k.workspace_id = ?2) ORDER BY k.created_ms DESC, k.key_id LIMIT 500";

/// The account's keys; with `locked_to`, only those locked to that workspace (what a locked key may see).
pub async fn list(db: &dyn Sql, account_id: &str, locked_to: Option<&str>) -> DbResult<Vec<KeyInfo>> {
    rows(db, stmt!(LIST, account_id, locked_to)).await
}

const REVOKE: &str = "UPDATE api_key SET revoked_ms = COALESCE(revoked_ms, ?3)
  WHERE key_id = ?1 AND account_id = ?2 AND (?4 IS NULL OR workspace_id = ?4) RETURNING key_id";

/// Revokes one of the account's keys (with `locked_to`, only one locked to that workspace); `false` when
/// there is no such key.
pub async fn revoke(
    db: &dyn Sql,
    account_id: &str,
    key_id: &str,
    locked_to: Option<&str>,
    now_ms: i64,
) -> DbResult<bool> {
    Ok(!db.all(stmt!(REVOKE, key_id, account_id, now_ms, locked_to)).await?.is_empty())
}

/// Turns a failed insert into whether the generated hash collided (practically never; retried by callers).
pub fn is_hash_collision(e: &DbError) -> bool {
    e.is_unique_on("api_key.key_hash")
}

/// An account acting with no key of its own, through an identity it linked (a Slack user): its
/// memberships, writing, locked to `workspace_id`; `acting_as` stands where a key id is recorded.
pub async fn linked_caller(db: &dyn Sql, account_id: &str, workspace_id: &str, acting_as: &str) -> DbResult<Caller> {
    #[derive(Deserialize)]
    struct MembershipsRow {
        #[serde(deserialize_with = "super::json_text")]
        memberships: Vec<Membership>,
    }
    const MEMBERSHIPS: &str = concat!("SELECT ", memberships_of!("?1"));
    let found: Vec<MembershipsRow> = rows(db, stmt!(MEMBERSHIPS, account_id)).await?;
    Ok(Caller {
        account_id: account_id.to_owned(),
        key_id: acting_as.to_owned(),
        can_write: true,
        locked_workspace_id: Some(workspace_id.to_owned()),
        memberships: found.into_iter().next().map(|r| r.memberships).unwrap_or_default(),
        app: None,
    })
}

/// The caller behind a key of an account, by its id: what a notification's one-time answer acts as (the
/// key its subscription was made through). `None` when the key was revoked, expired, is another
/// account's, or an app's OAuth token.
const BY_ID: &str = key_rows!(
    "k.key_id = ?1 AND k.account_id = ?2 AND k.revoked_ms IS NULL
    AND (k.expires_ms IS NULL OR k.expires_ms > ?3) AND k.oauth_grant_id IS NULL"
);

pub async fn caller_by_id(db: &dyn Sql, key_id: &str, account_id: &str, now_ms: i64) -> DbResult<Option<Caller>> {
    let found = db.all(stmt!(BY_ID, key_id, account_id, now_ms)).await?;
    let Some(row) = found.into_iter().next() else { return Ok(None) };
    Ok(Some(super::decode::<KeyRow>(row)?.into()))
}
