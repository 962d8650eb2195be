//! Grants in force: what operators see of the access agents were given, and revoking one (the runners
//! holding its credential are told to forget it).

use crate::cx::{Cx, Role};
use crate::error::ApiError;
use crate::rules::ids::GrantId;
use crate::store;
use agentsky_wire::runner::{JobKind, JobSpec};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListGrants {
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// A grant in force, as operators see it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GrantInfo {
    pub grant_id: String,
    pub connector_id: String,
    /// The session that asked (a persistent grant answers every session of the workspace).
    pub session_id: String,
    pub task_id: String,
    pub scopes: Vec<String>,
    pub persistent: bool,
    /// Epoch ms; `null` for an `always` grant.
    pub expires_ms: Option<i64>,
    /// `user`, `policy`, `target-policy` or `persistent-grant`.
    pub decided_by: Option<String>,
    pub created_ms: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GrantList {
    pub grants: Vec<GrantInfo>,
}

/// GET /v1/grants
pub async fn list_grants(cx: &Cx<'_>, p: ListGrants) -> Result<GrantList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let rows = store::requests::live_grants(cx.db(), &w.workspace_id, cx.now_ms).await?;
    let grants = rows
        .into_iter()
        .map(|g| GrantInfo {
            scopes: g.scopes.split(' ').map(str::to_owned).collect(),
            grant_id: g.grant_id,
            connector_id: g.connector_id,
            session_id: g.session_id,
            task_id: g.task_id,
            persistent: g.persistent,
            expires_ms: g.expires_ms,
            decided_by: g.decided_by,
            created_ms: g.created_ms,
        })
        .collect();
    Ok(GrantList { grants })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeGrant {
    /// The grant's id (`gr_…`), from `list_grants`.
    pub grant_id: GrantId,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GrantRevoked {
    pub grant_id: String,
    pub revoked: bool,
}

/// DELETE /v1/grants/{grant_id} — owners and admins. From the next call on, `get_credential` and the
/// shims refuse it and `check_grant` answers `denied`.
pub async fn revoke_grant(cx: &Cx<'_>, p: RevokeGrant) -> Result<GrantRevoked, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let not_found = || ApiError::not_found(&format!("active grant `{}`", p.grant_id));
    let db = cx.db();
    let g = store::requests::revoke_grant(db, &w.workspace_id, &p.grant_id).await?;
    let g = g.ok_or_else(not_found)?;
    let caller = cx.caller()?;
    let by = format!("by key {}", caller.key_id);
    let entry = store::audit::Entry {
        actor_account_id: Some(&caller.account_id),
        ..store::audit::Entry::grant(&g, &g.session_id, "revoked", &by, cx.now_ms)
    };
    store::audit::record(db, &entry).await?;
    // A runner may hold the grant's credential now: in a command it runs for a shim (ended now) or, for an
    // ssh key, in its turn's ssh-agent (which ends with every key it held).
    let ssh = store::connectors::get(db, &g.connector_id).await?.is_some_and(|c| c.provider == "ssh");
    let session = (!g.persistent).then_some(g.session_id.as_str());
    let leases = store::runners::live_leases(db, &w.workspace_id, session, cx.now_ms).await?;
    let spec = JobSpec { grant_id: Some(g.grant_id.clone()), ssh: Some(ssh), ..JobSpec::default() };
    crate::domain::jobs::tell(cx, &leases, JobKind::GrantForget, &spec).await?;
    Ok(GrantRevoked { grant_id: p.grant_id.into(), revoked: true })
}
