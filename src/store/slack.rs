//! A workspace's Slack app connection, the Slack users its members linked, and the message each request
//! was posted as.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// A Slack app connection: its team and channel, its secrets sealed.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SlackConnection {
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    /// The Slack team (workspace) the app is installed in.
    pub team_id: String,
    /// The channel requests are posted to.
    pub channel: String,
    #[serde(skip_serializing, default)]
    pub sealed: String,
    pub created_ms: i64,
}

pub async fn get(db: &dyn Sql, workspace_id: &str) -> DbResult<Option<SlackConnection>> {
    const GET: &str =
        "SELECT workspace_id, team_id, channel, sealed, created_ms FROM slack_connection WHERE workspace_id = ?1";
    first(db, stmt!(GET, workspace_id)).await
}

/// Every connection of a Slack team (one team may serve several agentsky workspaces).
pub async fn of_team(db: &dyn Sql, team_id: &str) -> DbResult<Vec<SlackConnection>> {
    const GET: &str =
        "SELECT workspace_id, team_id, channel, sealed, created_ms FROM slack_connection WHERE team_id = ?1";
    rows(db, stmt!(GET, team_id)).await
}

pub async fn put(db: &dyn Sql, c: &SlackConnection, entry: &super::audit::Entry<'_>) -> DbResult<()> {
    const PUT: &str = "INSERT INTO slack_connection (workspace_id, team_id, channel, sealed, created_ms) VALUES (?1, ?2, ?3, ?4, ?5)
      ON CONFLICT (workspace_id) DO UPDATE SET team_id = excluded.team_id, channel = excluded.channel, sealed = excluded.sealed";
    let put = stmt!(PUT, &c.workspace_id, &c.team_id, &c.channel, &c.sealed, c.created_ms);
    db.batch(vec![put, super::audit::insert(entry)]).await.map(drop)
}

pub async fn delete(db: &dyn Sql, workspace_id: &str, entry: &super::audit::Entry<'_>) -> DbResult<bool> {
    const DELETE: &str = "DELETE FROM slack_connection WHERE workspace_id = ?1 RETURNING workspace_id";
    let done = db.batch(vec![stmt!(DELETE, workspace_id), super::audit::insert(entry)]).await?;
    Ok(done.first().is_some_and(|r| !r.is_empty()))
}

/// Keeps a one-time link code (its hash) for an account in a workspace until `expires_ms`.
pub async fn put_code(
    db: &dyn Sql,
    code_hash: &str,
    workspace_id: &str,
    account_id: &str,
    expires_ms: i64,
) -> DbResult<()> {
    const PUT: &str =
        "INSERT INTO slack_link_code (code_hash, workspace_id, account_id, expires_ms) VALUES (?1, ?2, ?3, ?4)";
    db.batch(vec![stmt!(PUT, code_hash, workspace_id, account_id, expires_ms)]).await.map(drop)
}

/// Uses a link code once: the account and workspace it was made for, if it was live.
pub async fn take_code(db: &dyn Sql, code_hash: &str, now_ms: i64) -> DbResult<Option<(String, String)>> {
    #[derive(Deserialize)]
    struct Row {
        workspace_id: String,
        account_id: String,
    }
    const TAKE: &str =
        "DELETE FROM slack_link_code WHERE code_hash = ?1 AND expires_ms > ?2 RETURNING workspace_id, account_id";
    Ok(first::<Row>(db, stmt!(TAKE, code_hash, now_ms)).await?.map(|r| (r.workspace_id, r.account_id)))
}

/// Links a Slack user to an account (again: the newest link wins).
pub async fn link(db: &dyn Sql, team_id: &str, slack_user_id: &str, account_id: &str, now_ms: i64) -> DbResult<()> {
    const LINK: &str = "INSERT INTO slack_identity (team_id, slack_user_id, account_id, created_ms) VALUES (?1, ?2, ?3, ?4)
      ON CONFLICT (team_id, slack_user_id) DO UPDATE SET account_id = excluded.account_id, created_ms = excluded.created_ms";
    db.batch(vec![stmt!(LINK, team_id, slack_user_id, account_id, now_ms)]).await.map(drop)
}

/// The account a Slack user linked.
pub async fn linked(db: &dyn Sql, team_id: &str, slack_user_id: &str) -> DbResult<Option<String>> {
    #[derive(Deserialize)]
    struct Row {
        account_id: String,
    }
    const GET: &str = "SELECT account_id FROM slack_identity WHERE team_id = ?1 AND slack_user_id = ?2";
    Ok(first::<Row>(db, stmt!(GET, team_id, slack_user_id)).await?.map(|r| r.account_id))
}

/// Where a request was posted, and what it asked (the message's first block, kept for its update).
#[derive(Debug, Clone, Deserialize)]
pub struct Posted {
    pub channel: String,
    pub ts: String,
    pub asked: String,
}

pub async fn posted(db: &dyn Sql, request_id: &str) -> DbResult<Option<Posted>> {
    const GET: &str = "SELECT channel, ts, asked FROM slack_message WHERE request_id = ?1";
    first(db, stmt!(GET, request_id)).await
}

pub async fn put_posted(db: &dyn Sql, request_id: &str, workspace_id: &str, p: &Posted) -> DbResult<()> {
    const PUT: &str = "INSERT OR REPLACE INTO slack_message (request_id, workspace_id, channel, ts, asked) VALUES (?1, ?2, ?3, ?4, ?5)";
    db.batch(vec![stmt!(PUT, request_id, workspace_id, &p.channel, &p.ts, &p.asked)]).await.map(drop)
}
