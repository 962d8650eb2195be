//! The audit log: every use of a credential (a credential fetched, a key loaded, a granted command's exit)
//! and every change to who may do what in a workspace (invitations, members and roles, approvals,
//! policies). One table, newest first; nothing in it is a secret.

use super::{rows, DbResult, Sql, Stmt};
use crate::stmt;
use crate::store::requests::GrantRow;
use serde::{Deserialize, Serialize};

/// One entry to record.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    pub workspace_id: &'a str,
    /// What happened: `get_credential`, `command_ok`, `invitation_accepted`, `member_removed`, …
    pub action: &'a str,
    /// For people: the command line, the role change, the expiry.
    pub detail: &'a str,
    pub session_id: Option<&'a str>,
    pub grant_id: Option<&'a str>,
    pub connector_id: Option<&'a str>,
    /// The account that acted, for changes made through a key.
    pub actor_account_id: Option<&'a str>,
    /// Whom or what it concerned, when not a grant: an account, an invitation.
    pub subject: Option<&'a str>,
    pub now_ms: i64,
}

impl<'a> Entry<'a> {
    /// A use of `grant` by a session (or by the runner running its turn).
    pub fn grant(g: &'a GrantRow, session_id: &'a str, action: &'a str, detail: &'a str, now_ms: i64) -> Self {
        Self {
            workspace_id: &g.workspace_id,
            action,
            detail,
            session_id: Some(session_id),
            grant_id: Some(&g.grant_id),
            connector_id: Some(&g.connector_id),
            actor_account_id: None,
            subject: None,
            now_ms,
        }
    }

    /// A change an account made in a workspace, concerning `subject`.
    pub fn change(
        workspace_id: &'a str,
        actor: &'a str,
        action: &'a str,
        subject: Option<&'a str>,
        detail: &'a str,
        now_ms: i64,
    ) -> Self {
        Self {
            workspace_id,
            action,
            detail,
            session_id: None,
            grant_id: None,
            connector_id: None,
            actor_account_id: Some(actor),
            subject,
            now_ms,
        }
    }
}

const INSERT: &str = "INSERT INTO audit (audit_id, workspace_id, session_id, grant_id, connector_id, action, detail,
    actor_account_id, subject, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)";
// SQLite's changes() counts the rows the statement before it (in the same batch) changed.
const INSERT_IF_CHANGED: &str = "INSERT INTO audit (audit_id, workspace_id, session_id, grant_id, connector_id,
    action, detail, actor_account_id, subject, created_ms)
  SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10 WHERE changes() > 0";

fn bind(sql: &'static str, e: &Entry<'_>) -> Stmt {
    let id = crate::rules::ids::new_id("aud");
    // Every audit row passes the one redaction rule: a command line stays readable, its secrets replaced.
    let detail = crate::rules::redact::redact(e.detail);
    stmt!(
        sql,
        id,
        e.workspace_id,
        e.session_id,
        e.grant_id,
        e.connector_id,
        e.action,
        detail,
        e.actor_account_id,
        e.subject,
        e.now_ms
    )
}

/// The statement that records `e`.
pub fn insert(e: &Entry<'_>) -> Stmt {
    bind(INSERT, e)
}

/// Records `e` only when the statement just before it in the same batch changed a row, so a change and
/// its entry commit together or not at all, and a change that did not happen leaves no entry.
pub fn insert_if_changed(e: &Entry<'_>) -> Stmt {
    bind(INSERT_IF_CHANGED, e)
}

pub async fn record(db: &dyn Sql, e: &Entry<'_>) -> DbResult<()> {
    db.all(insert(e)).await.map(drop)
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AuditRow {
    pub audit_id: String,
    pub session_id: Option<String>,
    pub grant_id: Option<String>,
    pub connector_id: Option<String>,
    /// `get_credential`, `ssh_key_loaded`, `command_ok`, `command_failed` (a runner's report), `revoked`;
    /// `invitation_created`, `invitation_accepted`, `invitation_revoked`, `member_role_changed`,
    /// `member_removed`, `access_approved`, `access_denied`, `policy_set`.
    pub action: String,
    pub detail: String,
    /// The account that acted, for changes made through a key.
    pub actor_account_id: Option<String>,
    /// Whom or what it concerned: an account, an invitation.
    pub subject: Option<String>,
    pub created_ms: i64,
}

/// A workspace's log, newest first.
pub async fn log(db: &dyn Sql, workspace_id: &str, limit: i64) -> DbResult<Vec<AuditRow>> {
    const LIST: &str = "SELECT audit_id, session_id, grant_id, connector_id, action, detail, actor_account_id, subject,
        created_ms FROM audit WHERE workspace_id = ?1 ORDER BY created_ms DESC, rowid DESC LIMIT ?2";
    rows(db, stmt!(LIST, workspace_id, limit)).await
}
