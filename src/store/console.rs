//! Console sign-ins: a browser's session (its cookie's token, stored hashed) and the one-time links
//! `sky console` opens. Both act through the API key they were made from.

use super::{rows, DbResult, Sql};
use crate::identity::Caller;
use crate::stmt;
use serde::Deserialize;

pub const CREATE_SESSION: &str =
    "INSERT INTO console_session (console_session_id, token_hash, key_id, created_ms, expires_ms) VALUES (?1, ?2, ?3, ?4, ?5)";

pub async fn create_session(
    db: &dyn Sql,
    id: &str,
    token_hash: &str,
    key_id: &str,
    now_ms: i64,
    expires_ms: i64,
) -> DbResult<()> {
    db.all(stmt!(CREATE_SESSION, id, token_hash, key_id, now_ms, expires_ms)).await.map(drop)
}

/// The caller behind a console session: its key's scopes and lock, the account's memberships as they are
/// now. `None` when the session ended or expired, or its key was revoked or expired, or is an app's OAuth
/// access token (bound to `/v1/mcp`, never a console sign-in).
const CALLER: &str = "SELECT k.key_id, k.account_id, k.scopes, k.workspace_id AS locked_workspace_id,
  (SELECT json_group_array(json_object('workspace_id', w.workspace_id, 'slug', w.slug, 'name', w.name,
            'role', m.role, 'is_personal', w.is_personal))
     FROM membership m JOIN workspace w ON w.workspace_id = m.workspace_id
    WHERE m.account_id = k.account_id) AS memberships,
  a.name AS account_name, a.email, c.created_ms AS signed_in_ms
  FROM console_session c JOIN api_key k ON k.key_id = c.key_id JOIN account a ON a.account_id = k.account_id
  WHERE c.token_hash = ?1 AND c.ended_ms IS NULL AND c.expires_ms > ?2 AND k.revoked_ms IS NULL
    AND (k.expires_ms IS NULL OR k.expires_ms > ?2) AND k.oauth_grant_id IS NULL";

#[derive(Deserialize)]
struct CallerRow {
    key_id: String,
    account_id: String,
    scopes: String,
    locked_workspace_id: Option<String>,
    #[serde(deserialize_with = "super::json_text")]
    memberships: Vec<crate::identity::Membership>,
    account_name: String,
    email: String,
    signed_in_ms: i64,
}

/// Who is signed in: the caller, and the person's name and email for the page.
pub struct SignedIn {
    pub caller: Caller,
    pub name: String,
    pub email: String,
    /// When this console session began (a step-up approval needs it recent).
    pub signed_in_ms: i64,
}

pub async fn signed_in(db: &dyn Sql, token_hash: &str, now_ms: i64) -> DbResult<Option<SignedIn>> {
    let found: Vec<CallerRow> = rows(db, stmt!(CALLER, token_hash, now_ms)).await?;
    Ok(found.into_iter().next().map(|r| SignedIn {
        caller: Caller {
            account_id: r.account_id,
            key_id: r.key_id,
            can_write: r.scopes.split(' ').any(|s| s == "write"),
            locked_workspace_id: r.locked_workspace_id,
            memberships: r.memberships,
            app: None,
        },
        name: r.account_name,
        email: r.email,
        signed_in_ms: r.signed_in_ms,
    }))
}

/// Signs a browser out.
pub async fn end_session(db: &dyn Sql, token_hash: &str, now_ms: i64) -> DbResult<()> {
    const END: &str = "UPDATE console_session SET ended_ms = ?2 WHERE token_hash = ?1 AND ended_ms IS NULL";
    db.all(stmt!(END, token_hash, now_ms)).await.map(drop)
}

pub async fn create_link(db: &dyn Sql, link_hash: &str, key_id: &str, now_ms: i64, expires_ms: i64) -> DbResult<()> {
    const INSERT: &str = "INSERT INTO console_link (link_hash, key_id, created_ms, expires_ms) VALUES (?1, ?2, ?3, ?4)";
    db.all(stmt!(INSERT, link_hash, key_id, now_ms, expires_ms)).await.map(drop)
}

/// The account a one-time link signs in as.
#[derive(Deserialize)]
pub struct LinkOwner {
    pub account_id: String,
    pub name: String,
    pub email: String,
}

/// Whose a one-time link is, without using it up: `None` when it was used or expired, or its key is no
/// longer live (the conditions of [`use_link`]).
pub async fn link_owner(db: &dyn Sql, link_hash: &str, now_ms: i64) -> DbResult<Option<LinkOwner>> {
    const OWNER: &str = "SELECT a.account_id, a.name, a.email
      FROM console_link l JOIN api_key k ON k.key_id = l.key_id JOIN account a ON a.account_id = k.account_id
      WHERE l.link_hash = ?1 AND l.used_ms IS NULL AND l.expires_ms > ?2
        AND k.revoked_ms IS NULL AND (k.expires_ms IS NULL OR k.expires_ms > ?2)";
    let found: Vec<LinkOwner> = rows(db, stmt!(OWNER, link_hash, now_ms)).await?;
    Ok(found.into_iter().next())
}

/// Uses a one-time link: the key it signs in with, once, while it is fresh and its key is live.
pub async fn use_link(db: &dyn Sql, link_hash: &str, now_ms: i64) -> DbResult<Option<String>> {
    #[derive(Deserialize)]
    struct Row {
        key_id: String,
    }
    const USE: &str = "UPDATE console_link SET used_ms = ?2
      WHERE link_hash = ?1 AND used_ms IS NULL AND expires_ms > ?2
        AND key_id IN (SELECT key_id FROM api_key WHERE revoked_ms IS NULL AND (expires_ms IS NULL OR expires_ms > ?2))
      RETURNING key_id";
    let found: Vec<Row> = rows(db, stmt!(USE, link_hash, now_ms)).await?;
    Ok(found.into_iter().next().map(|r| r.key_id))
}
