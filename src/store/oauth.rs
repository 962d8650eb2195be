//! OAuth clients, grants, codes and tokens. Codes and refresh tokens are used up in one conditional
//! `UPDATE … RETURNING`, so two racing exchanges cannot both win; access tokens are `api_key` rows linked
//! to their grant, so [`super::keys::authenticate`] serves them like any key.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize)]
pub struct ClientRow {
    pub client_id: String,
    pub kind: String,
    pub client_name: String,
    #[serde(deserialize_with = "super::json_text")]
    pub redirect_uris: Vec<String>,
    pub fetched_ms: i64,
}

const CLIENT: &str =
    "SELECT client_id, kind, client_name, redirect_uris, fetched_ms FROM oauth_client WHERE client_id = ?1";

pub async fn client(db: &dyn Sql, client_id: &str) -> DbResult<Option<ClientRow>> {
    first(db, stmt!(CLIENT, client_id)).await
}

const PUT_CLIENT: &str =
    "INSERT INTO oauth_client (client_id, kind, client_name, redirect_uris, created_ms, fetched_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?5)
  ON CONFLICT (client_id) DO UPDATE SET client_name = excluded.client_name,
    redirect_uris = excluded.redirect_uris, fetched_ms = excluded.fetched_ms";

/// Registers a client, or refreshes a metadata document's cached copy.
pub async fn put_client(
    db: &dyn Sql,
    client_id: &str,
    kind: &str,
    client_name: &str,
    redirect_uris: &[String],
    now_ms: i64,
) -> DbResult<()> {
    let uris = serde_json::to_string(redirect_uris).unwrap_or_else(|_| "[]".into());
    db.all(stmt!(PUT_CLIENT, client_id, kind, client_name, uris, now_ms)).await.map(|_| ())
}

const DOCUMENT_FAILED: &str = "SELECT failed_ms FROM oauth_document_failure WHERE client_id = ?1";

#[derive(Deserialize)]
struct Failed {
    failed_ms: i64,
}

/// When fetching the metadata document `client_id` last failed, if a failure is remembered.
pub async fn document_failed_ms(db: &dyn Sql, client_id: &str) -> DbResult<Option<i64>> {
    Ok(first::<Failed>(db, stmt!(DOCUMENT_FAILED, client_id)).await?.map(|f| f.failed_ms))
}

const PUT_DOCUMENT_FAILURE: &str = "INSERT INTO oauth_document_failure (client_id, failed_ms) VALUES (?1, ?2)
  ON CONFLICT (client_id) DO UPDATE SET failed_ms = excluded.failed_ms";
const FORGET_DOCUMENT_FAILURES: &str = "DELETE FROM oauth_document_failure WHERE failed_ms < ?1";

/// Remembers that the metadata document `client_id` could not be used, and forgets failures from before
/// `forget_before_ms` (they no longer keep anything from being fetched), so the table stays small.
pub async fn document_failed(db: &dyn Sql, client_id: &str, now_ms: i64, forget_before_ms: i64) -> DbResult<()> {
    db.batch(vec![stmt!(FORGET_DOCUMENT_FAILURES, forget_before_ms), stmt!(PUT_DOCUMENT_FAILURE, client_id, now_ms)])
        .await
        .map(|_| ())
}

/// A person's consent, and the code it is answered with.
pub struct NewGrant<'a> {
    pub grant_id: &'a str,
    pub account_id: &'a str,
    pub client_id: &'a str,
    pub client_name: &'a str,
    pub redirect_uri: &'a str,
    pub redirect_host: &'a str,
    pub workspace_id: &'a str,
    pub scopes: &'a str,
    pub resource: &'a str,
    pub code_hash: &'a str,
    pub code_challenge: &'a str,
    pub now_ms: i64,
    pub code_expires_ms: i64,
}

const INSERT_GRANT: &str = "INSERT INTO oauth_grant (grant_id, account_id, client_id, client_name, redirect_host,
    workspace_id, scopes, resource, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";
const INSERT_CODE: &str = "INSERT INTO oauth_code (code_hash, grant_id, client_id, redirect_uri, code_challenge,
    created_ms, expires_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// Records a consent and its code together.
pub async fn consent(db: &dyn Sql, g: &NewGrant<'_>) -> DbResult<()> {
    db.batch(vec![
        stmt!(
            INSERT_GRANT,
            g.grant_id,
            g.account_id,
            g.client_id,
            g.client_name,
            g.redirect_host,
            g.workspace_id,
            g.scopes,
            g.resource,
            g.now_ms
        ),
        stmt!(
            INSERT_CODE,
            g.code_hash,
            g.grant_id,
            g.client_id,
            g.redirect_uri,
            g.code_challenge,
            g.now_ms,
            g.code_expires_ms
        ),
    ])
    .await
    .map(|_| ())
}

#[derive(Debug, Deserialize)]
pub struct CodeRow {
    pub grant_id: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub code_challenge: String,
    pub expires_ms: i64,
}

const USE_CODE: &str = "UPDATE oauth_code SET used_ms = ?2 WHERE code_hash = ?1 AND used_ms IS NULL
  RETURNING grant_id, client_id, redirect_uri, code_challenge, expires_ms";
const CODE_GRANT: &str = "SELECT grant_id FROM oauth_code WHERE code_hash = ?1";

#[derive(Deserialize)]
struct GrantOf {
    grant_id: String,
}

/// What using a code or refresh token found.
pub enum Used<T> {
    /// It was unused, and now is used.
    Fresh(T),
    /// It had been used before: a replay. The grant it belongs to.
    Replayed(String),
    Unknown,
}

/// Uses a code up.
pub async fn use_code(db: &dyn Sql, code_hash: &str, now_ms: i64) -> DbResult<Used<CodeRow>> {
    if let Some(row) = first::<CodeRow>(db, stmt!(USE_CODE, code_hash, now_ms)).await? {
        return Ok(Used::Fresh(row));
    }
    Ok(match first::<GrantOf>(db, stmt!(CODE_GRANT, code_hash)).await? {
        Some(g) => Used::Replayed(g.grant_id),
        None => Used::Unknown,
    })
}

#[derive(Debug, Deserialize)]
pub struct RefreshRow {
    pub grant_id: String,
    pub expires_ms: i64,
}

const USE_REFRESH: &str = "UPDATE oauth_refresh SET used_ms = ?2 WHERE refresh_hash = ?1 AND used_ms IS NULL
  RETURNING grant_id, expires_ms";
const REFRESH_GRANT: &str = "SELECT grant_id FROM oauth_refresh WHERE refresh_hash = ?1";

/// Uses a refresh token up.
pub async fn use_refresh(db: &dyn Sql, refresh_hash: &str, now_ms: i64) -> DbResult<Used<RefreshRow>> {
    if let Some(row) = first::<RefreshRow>(db, stmt!(USE_REFRESH, refresh_hash, now_ms)).await? {
        return Ok(Used::Fresh(row));
    }
    Ok(match first::<GrantOf>(db, stmt!(REFRESH_GRANT, refresh_hash)).await? {
        Some(g) => Used::Replayed(g.grant_id),
        None => Used::Unknown,
    })
}

#[derive(Debug, Clone, Deserialize)]
pub struct GrantRow {
    pub grant_id: String,
    pub account_id: String,
    pub client_id: String,
    pub client_name: String,
    pub workspace_id: String,
    pub scopes: String,
    pub resource: String,
    pub revoked_ms: Option<i64>,
}

const GRANT: &str = "SELECT grant_id, account_id, client_id, client_name, workspace_id, scopes, resource, revoked_ms
  FROM oauth_grant WHERE grant_id = ?1";

pub async fn grant(db: &dyn Sql, grant_id: &str) -> DbResult<Option<GrantRow>> {
    first(db, stmt!(GRANT, grant_id)).await
}

/// The tokens one exchange issues.
pub struct NewTokens<'a> {
    pub grant_id: &'a str,
    pub key_id: &'a str,
    pub access_hash: &'a str,
    pub access_prefix: &'a str,
    /// At most the grant's scopes.
    pub scopes: &'a str,
    pub access_expires_ms: i64,
    pub refresh_hash: &'a str,
    pub refresh_expires_ms: i64,
    pub now_ms: i64,
}

// Both inserts copy from the grant only while it stands, so a family revoked meanwhile issues nothing.
const INSERT_ACCESS: &str = "INSERT INTO api_key (key_id, account_id, name, key_hash, prefix, scopes, workspace_id,
    created_ms, oauth_grant_id, expires_ms)
  SELECT ?2, account_id, client_name, ?3, ?4, ?5, workspace_id, ?6, grant_id, ?7
  FROM oauth_grant WHERE grant_id = ?1 AND revoked_ms IS NULL RETURNING key_id";
const INSERT_REFRESH: &str = "INSERT INTO oauth_refresh (refresh_hash, grant_id, created_ms, expires_ms)
  SELECT ?2, grant_id, ?3, ?4 FROM oauth_grant WHERE grant_id = ?1 AND revoked_ms IS NULL";

/// Issues an access and a refresh token; `false` when the grant was revoked.
pub async fn issue(db: &dyn Sql, t: &NewTokens<'_>) -> DbResult<bool> {
    let results = db
        .batch(vec![
            stmt!(
                INSERT_ACCESS,
                t.grant_id,
                t.key_id,
                t.access_hash,
                t.access_prefix,
                t.scopes,
                t.now_ms,
                t.access_expires_ms
            ),
            stmt!(INSERT_REFRESH, t.grant_id, t.refresh_hash, t.now_ms, t.refresh_expires_ms),
        ])
        .await?;
    Ok(results.first().is_some_and(|r| !r.is_empty()))
}

const REVOKE_GRANT: &str = "UPDATE oauth_grant SET revoked_ms = COALESCE(revoked_ms, ?2) WHERE grant_id = ?1";
const REVOKE_GRANT_KEYS: &str = "UPDATE api_key SET revoked_ms = COALESCE(revoked_ms, ?2) WHERE oauth_grant_id = ?1";
const REVOKE_GRANT_REFRESH: &str = "UPDATE oauth_refresh SET used_ms = COALESCE(used_ms, ?2) WHERE grant_id = ?1";

/// Revokes a grant and every token it issued, at once.
pub async fn revoke_grant(db: &dyn Sql, grant_id: &str, now_ms: i64) -> DbResult<()> {
    db.batch(vec![
        stmt!(REVOKE_GRANT, grant_id, now_ms),
        stmt!(REVOKE_GRANT_KEYS, grant_id, now_ms),
        stmt!(REVOKE_GRANT_REFRESH, grant_id, now_ms),
    ])
    .await
    .map(|_| ())
}

const ACCESS_GRANT: &str = "SELECT k.oauth_grant_id AS grant_id FROM api_key k
  JOIN oauth_grant g ON g.grant_id = k.oauth_grant_id WHERE k.key_hash = ?1 AND g.client_id = ?2";
const REVOKE_ACCESS: &str = "UPDATE api_key SET revoked_ms = COALESCE(revoked_ms, ?2)
  WHERE key_hash = ?1 AND oauth_grant_id IS NOT NULL";
const REFRESH_OF_CLIENT: &str = "SELECT r.grant_id FROM oauth_refresh r
  JOIN oauth_grant g ON g.grant_id = r.grant_id WHERE r.refresh_hash = ?1 AND g.client_id = ?2";

/// RFC 7009 for `client_id`: an access token of its is revoked alone; a refresh token of its revokes its
/// whole grant. A token of another client, or none, changes nothing.
pub async fn revoke_token(db: &dyn Sql, token_hash: &str, client_id: &str, now_ms: i64) -> DbResult<()> {
    if first::<GrantOf>(db, stmt!(ACCESS_GRANT, token_hash, client_id)).await?.is_some() {
        return db.all(stmt!(REVOKE_ACCESS, token_hash, now_ms)).await.map(|_| ());
    }
    if let Some(g) = first::<GrantOf>(db, stmt!(REFRESH_OF_CLIENT, token_hash, client_id)).await? {
        return revoke_grant(db, &g.grant_id, now_ms).await;
    }
    Ok(())
}

/// A connected app as the console lists it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectedApp {
    pub grant_id: String,
    pub client_name: String,
    /// The client's id: an https URL (a metadata document) or `oac_…` (registered).
    pub client_id: String,
    /// Where its sign-in redirected.
    pub redirect_host: String,
    /// The workspace it may act in.
    pub workspace: String,
    pub scopes: String,
    pub created_ms: i64,
    pub last_used_ms: Option<i64>,
}

const LIST: &str = "SELECT g.grant_id, g.client_name, g.client_id, g.redirect_host, w.slug AS workspace, g.scopes,
    g.created_ms, (SELECT MAX(k.last_used_ms) FROM api_key k WHERE k.oauth_grant_id = g.grant_id) AS last_used_ms
  FROM oauth_grant g JOIN workspace w ON w.workspace_id = g.workspace_id
  WHERE g.account_id = ?1 AND g.revoked_ms IS NULL AND (?2 IS NULL OR g.workspace_id = ?2)
  ORDER BY g.created_ms DESC, g.grant_id LIMIT 200";

/// The account's standing grants (with `locked_to`, only those of that workspace).
pub async fn list(db: &dyn Sql, account_id: &str, locked_to: Option<&str>) -> DbResult<Vec<ConnectedApp>> {
    rows(db, stmt!(LIST, account_id, locked_to)).await
}

const OWNED: &str = "SELECT grant_id FROM oauth_grant
  WHERE grant_id = ?1 AND account_id = ?2 AND revoked_ms IS NULL AND (?3 IS NULL OR workspace_id = ?3)";

/// Disconnects one of the account's apps; `false` when there is no such standing grant.
pub async fn disconnect(
    db: &dyn Sql,
    account_id: &str,
    grant_id: &str,
    locked_to: Option<&str>,
    now_ms: i64,
) -> DbResult<bool> {
    if first::<GrantOf>(db, stmt!(OWNED, grant_id, account_id, locked_to)).await?.is_none() {
        return Ok(false);
    }
    revoke_grant(db, grant_id, now_ms).await?;
    Ok(true)
}
