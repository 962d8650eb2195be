//! Connectors (targets) and the policies that decide access to them.

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConnectorRow {
    pub connector_id: String,
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub name: String,
    /// `vercel`, `aws`, `gcp`, `supabase`, `github` or `ssh`.
    pub provider: String,
    /// `prod`, `staging`, `preview` or `scm`.
    pub env: String,
    /// Whether credentials are connected.
    #[serde(deserialize_with = "super::int_bool")]
    pub connected: bool,
    pub credentials_expire_ms: Option<i64>,
    /// How it is connected: `env` variables or an `ssh` key (handed over as they are), or a `github_app`
    /// an `aws_role` or a `gcp_service_account` that mints each grant a narrowed credential; absent while
    /// unconnected.
    pub credential_kind: Option<String>,
    pub deploy_command: Option<String>,
    pub created_ms: i64,
    /// Whether a grant gets a credential narrowed to it (a short-lived, down-scoped token) rather than the
    /// connection's own.
    #[serde(default)]
    pub scoped: bool,
    /// Why not, when it does not.
    #[serde(default)]
    pub unscoped_reason: Option<String>,
}

impl ConnectorRow {
    /// Fills in [`Self::scoped`] and [`Self::unscoped_reason`] from how it is connected.
    fn narrowing(mut self) -> Self {
        self.unscoped_reason =
            crate::rules::narrowing::unscoped_reason(&self.provider, self.credential_kind.as_deref())
                .map(str::to_owned);
        self.scoped = self.unscoped_reason.is_none();
        self
    }
}

#[allow(clippy::too_many_arguments)]
pub async fn upsert(
    db: &dyn Sql,
    connector_id: &str,
    workspace_id: &str,
    name: &str,
    provider: &str,
    env: &str,
    sealed: Option<(&str, &str)>,
    expires_ms: Option<i64>,
    now_ms: i64,
) -> DbResult<ConnectorRow> {
    const UPSERT: &str = "INSERT INTO connector (connector_id, workspace_id, name, provider, env, sealed_credentials, credential_kind, credentials_expire_ms, created_ms)
      VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
      ON CONFLICT (workspace_id, name) DO UPDATE SET provider = excluded.provider, env = excluded.env,
        sealed_credentials = COALESCE(excluded.sealed_credentials, connector.sealed_credentials),
        credential_kind = COALESCE(excluded.credential_kind, connector.credential_kind),
        credentials_expire_ms = excluded.credentials_expire_ms
      RETURNING connector_id, workspace_id, name, provider, env, sealed_credentials IS NOT NULL AS connected, credentials_expire_ms, credential_kind, deploy_command, created_ms";
    let (sealed, kind) = (sealed.map(|s| s.0), sealed.map(|s| s.1));
    let row =
        first(db, stmt!(UPSERT, connector_id, workspace_id, name, provider, env, sealed, kind, expires_ms, now_ms))
            .await?;
    row.map(ConnectorRow::narrowing).ok_or_else(|| super::DbError::Other("upsert returned no row".into()))
}

pub async fn list(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<ConnectorRow>> {
    const LIST: &str = "SELECT connector_id, workspace_id, name, provider, env, sealed_credentials IS NOT NULL AS connected,
        credentials_expire_ms, credential_kind, deploy_command, created_ms FROM connector WHERE workspace_id = ?1 ORDER BY name LIMIT 500";
    Ok(rows(db, stmt!(LIST, workspace_id)).await?.into_iter().map(ConnectorRow::narrowing).collect())
}

pub async fn get(db: &dyn Sql, connector_id: &str) -> DbResult<Option<ConnectorRow>> {
    const GET: &str =
        "SELECT connector_id, workspace_id, name, provider, env, sealed_credentials IS NOT NULL AS connected,
        credentials_expire_ms, credential_kind, deploy_command, created_ms FROM connector WHERE connector_id = ?1";
    Ok(first(db, stmt!(GET, connector_id)).await?.map(ConnectorRow::narrowing))
}

pub async fn sealed(db: &dyn Sql, connector_id: &str) -> DbResult<Option<String>> {
    #[derive(Deserialize)]
    struct Row {
        sealed_credentials: Option<String>,
    }
    const GET: &str = "SELECT sealed_credentials FROM connector WHERE connector_id = ?1";
    Ok(first::<Row>(db, stmt!(GET, connector_id)).await?.and_then(|r| r.sealed_credentials))
}

pub async fn delete(db: &dyn Sql, workspace_id: &str, connector_id: &str) -> DbResult<bool> {
    const DELETE: &str = "DELETE FROM connector WHERE workspace_id = ?1 AND connector_id = ?2 RETURNING connector_id";
    Ok(!db.all(stmt!(DELETE, workspace_id, connector_id)).await?.is_empty())
}

/// The provider refused the connection's credentials: they count as expired from `now_ms` (`lockState:
/// expired`, and `request_access` asks for a reconnection) until the target is connected again.
pub async fn refused(db: &dyn Sql, connector_id: &str, now_ms: i64) -> DbResult<()> {
    const SET: &str = "UPDATE connector SET credentials_expire_ms = ?2 WHERE connector_id = ?1";
    db.all(stmt!(SET, connector_id, now_ms)).await.map(drop)
}

pub async fn set_deploy_command(db: &dyn Sql, connector_id: &str, command: &str) -> DbResult<()> {
    const SET: &str = "UPDATE connector SET deploy_command = ?2 WHERE connector_id = ?1";
    db.all(stmt!(SET, connector_id, command)).await.map(drop)
}

pub use crate::rules::policy::PolicyRow;

/// Sets a policy (`connector_id` empty: workspace-wide), recorded in the audit log as `entry` says.
pub async fn set_policy(
    db: &dyn Sql,
    connector_id: &str,
    scope: &str,
    decision: &str,
    entry: &super::audit::Entry<'_>,
) -> DbResult<()> {
    const SET: &str = "INSERT INTO policy (workspace_id, connector_id, scope, decision) VALUES (?1, ?2, ?3, ?4)
      ON CONFLICT (workspace_id, connector_id, scope) DO UPDATE SET decision = excluded.decision";
    db.batch(vec![stmt!(SET, entry.workspace_id, connector_id, scope, decision), super::audit::insert(entry)])
        .await
        .map(drop)
}

/// The policies that apply to a connector: its own and the workspace-wide ones.
pub async fn policies(db: &dyn Sql, workspace_id: &str, connector_id: &str) -> DbResult<Vec<PolicyRow>> {
    const GET: &str =
        "SELECT connector_id, scope, decision FROM policy WHERE workspace_id = ?1 AND connector_id IN (?2, '')";
    rows(db, stmt!(GET, workspace_id, connector_id)).await
}

pub async fn all_policies(db: &dyn Sql, workspace_id: &str) -> DbResult<Vec<PolicyRow>> {
    const GET: &str =
        "SELECT connector_id, scope, decision FROM policy WHERE workspace_id = ?1 ORDER BY connector_id, scope";
    rows(db, stmt!(GET, workspace_id)).await
}

impl agentsky_wire::targets::Target for ConnectorRow {
    fn name(&self) -> &str {
        &self.name
    }
    fn provider(&self) -> &str {
        &self.provider
    }
    fn env(&self) -> &str {
        &self.env
    }
}

/// A target's rule for production deploys and deletes ([`crate::rules::approvals`]), as set.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ApprovalRuleRow {
    pub connector_id: String,
    /// Owners or admins who must approve a `deploy` or `delete` on this production target, 1–5.
    pub approvals: i64,
    /// Whether each such approval needs a console sign-in of the last 10 minutes.
    #[serde(deserialize_with = "super::int_bool")]
    pub fresh_sign_in: bool,
}

impl ApprovalRuleRow {
    pub fn rule(&self) -> crate::rules::approvals::Rule {
        crate::rules::approvals::Rule { approvals: self.approvals, fresh_sign_in: self.fresh_sign_in }
    }
}

pub async fn approval_rule(db: &dyn Sql, connector_id: &str) -> DbResult<Option<ApprovalRuleRow>> {
    const GET: &str = "SELECT connector_id, approvals, fresh_sign_in FROM approval_rule WHERE connector_id = ?1";
    first(db, stmt!(GET, connector_id)).await
}

pub async fn set_approval_rule(db: &dyn Sql, rule: &ApprovalRuleRow, entry: &super::audit::Entry<'_>) -> DbResult<()> {
    const SET: &str =
        "INSERT INTO approval_rule (connector_id, workspace_id, approvals, fresh_sign_in) VALUES (?1, ?2, ?3, ?4)
      ON CONFLICT (connector_id) DO UPDATE SET approvals = excluded.approvals, fresh_sign_in = excluded.fresh_sign_in";
    let set = stmt!(SET, &rule.connector_id, entry.workspace_id, rule.approvals, rule.fresh_sign_in);
    db.batch(vec![set, super::audit::insert(entry)]).await.map(drop)
}
