//! Who belongs to a workspace: invitations (made, listed, revoked, accepted once) and changes to members
//! (a role changed, a member removed). Each change commits in one batch with its audit entry, guarded so
//! that what the caller checked still holds: the member's role as read, and another owner left when an
//! owner goes.

use super::audit::{self, Entry};
use super::{first, rows, DbResult, Sql, Stmt};
use crate::stmt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Member {
    pub account_id: String,
    pub name: String,
    pub email: String,
    pub role: crate::identity::Role,
    pub created_ms: i64,
}

const MEMBERS: &str = "SELECT a.account_id, a.name, a.email, m.role, m.created_ms
  FROM membership m JOIN account a ON a.account_id = m.account_id
  WHERE m.workspace_id = ?1 AND (?2 IS NULL OR m.account_id = ?2) ORDER BY m.created_ms, m.rowid LIMIT 1000";

pub async fn members(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<Member>> {
    rows(db, stmt!(MEMBERS, workspace_id, None::<&str>)).await
}

pub async fn member(db: &dyn Sql, workspace_id: &str, account_id: &str) -> DbResult<Option<Member>> {
    first(db, stmt!(MEMBERS, workspace_id, account_id)).await
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Invitation {
    pub invitation_id: String,
    /// The role it gives: `admin` or `member`.
    pub role: String,
    /// Whom it is meant for, as a note; accepting never checks it.
    pub email: Option<String>,
    /// The account that made it.
    pub invited_by: String,
    pub created_ms: i64,
    pub expires_ms: i64,
}

pub struct NewInvitation<'a> {
    pub invitation_id: &'a str,
    pub workspace_id: &'a str,
    pub token_hash: &'a str,
    pub role: &'a str,
    pub email: Option<&'a str>,
    pub invited_by: &'a str,
    pub now_ms: i64,
    pub expires_ms: i64,
}

/// Makes an invitation, with its audit entry.
pub async fn invite(db: &dyn Sql, i: &NewInvitation<'_>, detail: &str) -> DbResult<()> {
    const INSERT: &str = "INSERT INTO invitation (invitation_id, workspace_id, token_hash, role, email, invited_by,
        status, created_ms, expires_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 'pending', ?7, ?8)";
    let entry =
        Entry::change(i.workspace_id, i.invited_by, "invitation_created", Some(i.invitation_id), detail, i.now_ms);
    db.batch(vec![
        stmt!(
            INSERT,
            i.invitation_id,
            i.workspace_id,
            i.token_hash,
            i.role,
            i.email,
            i.invited_by,
            i.now_ms,
            i.expires_ms
        ),
        audit::insert(&entry),
    ])
    .await
    .map(drop)
}

/// A workspace's invitations that can still be accepted, newest first.
pub async fn pending(db: &dyn Sql, workspace_id: &str, now_ms: i64) -> DbResult<Vec<Invitation>> {
    const LIST: &str = "SELECT invitation_id, role, email, invited_by, created_ms, expires_ms FROM invitation
      WHERE workspace_id = ?1 AND status = 'pending' AND expires_ms > ?2 ORDER BY created_ms DESC, rowid DESC LIMIT 500";
    rows(db, stmt!(LIST, workspace_id, now_ms)).await
}

/// Revokes a pending invitation of the workspace, with its audit entry; `false` when there is none.
pub async fn revoke(db: &dyn Sql, workspace_id: &str, invitation_id: &str, actor: &str, now_ms: i64) -> DbResult<bool> {
    const REVOKE: &str = "UPDATE invitation SET status = 'revoked', decided_ms = ?3
      WHERE invitation_id = ?1 AND workspace_id = ?2 AND status = 'pending' RETURNING invitation_id";
    let entry = Entry::change(workspace_id, actor, "invitation_revoked", Some(invitation_id), "", now_ms);
    let results =
        db.batch(vec![stmt!(REVOKE, invitation_id, workspace_id, now_ms), audit::insert_if_changed(&entry)]).await?;
    Ok(results.first().is_some_and(|r| !r.is_empty()))
}

/// A pending, unexpired invitation by its token's hash: `(invitation_id, workspace_id, role)`.
pub async fn by_token(db: &dyn Sql, token_hash: &str, now_ms: i64) -> DbResult<Option<(String, String, String)>> {
    #[derive(Deserialize)]
    struct Row {
        invitation_id: String,
        workspace_id: String,
        role: String,
    }
    const GET: &str = "SELECT invitation_id, workspace_id, role FROM invitation
      WHERE token_hash = ?1 AND status = 'pending' AND expires_ms > ?2";
    Ok(first::<Row>(db, stmt!(GET, token_hash, now_ms)).await?.map(|r| (r.invitation_id, r.workspace_id, r.role)))
}

/// Accepts an invitation once: marks it accepted, makes the account a member with its role and records
/// it, in one batch. `false` when it was accepted, revoked or expired meanwhile. A unique failure on
/// `membership` means the account is a member already (nothing is changed then).
pub async fn accept(
    db: &dyn Sql,
    invitation_id: &str,
    workspace_id: &str,
    account_id: &str,
    now_ms: i64,
) -> DbResult<bool> {
    const ACCEPT: &str = "UPDATE invitation SET status = 'accepted', accepted_by = ?2, decided_ms = ?3
      WHERE invitation_id = ?1 AND status = 'pending' AND expires_ms > ?3 RETURNING invitation_id";
    const JOIN: &str = "INSERT INTO membership (workspace_id, account_id, role, created_ms)
      SELECT workspace_id, ?2, role, ?3 FROM invitation WHERE invitation_id = ?1 AND changes() > 0";
    let entry = Entry::change(workspace_id, account_id, "invitation_accepted", Some(invitation_id), "", now_ms);
    let results = db
        .batch(vec![
            stmt!(ACCEPT, invitation_id, account_id, now_ms),
            stmt!(JOIN, invitation_id, account_id, now_ms),
            audit::insert_if_changed(&entry),
        ])
        .await?;
    Ok(results.first().is_some_and(|r| !r.is_empty()))
}

/// A member as changes see them: their role, how many owners the workspace has, and whether they hold it
/// as their personal workspace.
#[derive(Debug, Clone, Deserialize)]
pub struct Standing {
    pub role: crate::identity::Role,
    pub owners: i64,
    #[serde(deserialize_with = "super::int_bool")]
    pub holder: bool,
}

pub async fn standing(db: &dyn Sql, workspace_id: &str, account_id: &str) -> DbResult<Option<Standing>> {
    const GET: &str = "SELECT m.role,
        (SELECT COUNT(*) FROM membership o WHERE o.workspace_id = ?1 AND o.role = 'owner') AS owners,
        (w.is_personal = 1 AND w.owner_account_id = m.account_id) AS holder
      FROM membership m JOIN workspace w ON w.workspace_id = m.workspace_id
      WHERE m.workspace_id = ?1 AND m.account_id = ?2";
    first(db, stmt!(GET, workspace_id, account_id)).await
}

// Both changes hold only while the member's role is still the one read (?3), and an owner goes only while
// another owner stays.
const SET_ROLE: &str = "UPDATE membership SET role = ?4 WHERE workspace_id = ?1 AND account_id = ?2 AND role = ?3
    AND (?3 <> 'owner' OR (SELECT COUNT(*) FROM membership WHERE workspace_id = ?1 AND role = 'owner') > 1
      OR ?4 = 'owner')
  RETURNING account_id";
const REMOVE: &str = "DELETE FROM membership WHERE workspace_id = ?1 AND account_id = ?2 AND role = ?3
    AND (?3 <> 'owner' OR (SELECT COUNT(*) FROM membership WHERE workspace_id = ?1 AND role = 'owner') > 1)
  RETURNING account_id";

/// Moves a member from role `from` to `to` (`None`: out of the workspace), with its audit entry; `false`
/// when the guard no longer held.
pub async fn change(db: &dyn Sql, entry: &Entry<'_>, account_id: &str, from: &str, to: Option<&str>) -> DbResult<bool> {
    let change: Stmt = match to {
        Some(to) => stmt!(SET_ROLE, entry.workspace_id, account_id, from, to),
        None => stmt!(REMOVE, entry.workspace_id, account_id, from),
    };
    let results = db.batch(vec![change, audit::insert_if_changed(entry)]).await?;
    Ok(results.first().is_some_and(|r| !r.is_empty()))
}
