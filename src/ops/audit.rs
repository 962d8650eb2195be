//! The workspace's audit log: every credential use and every change to members, roles, approvals and
//! policies, newest first.

use crate::cx::Cx;
use crate::error::ApiError;
use crate::rules::params::Int;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAudit {
    /// Most entries, 1–500 (default 100).
    pub limit: Option<Int<1, 500>>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditLog {
    /// Newest first: every credential use and every change to members, roles, approvals and policies.
    pub entries: Vec<store::audit::AuditRow>,
}

/// GET /v1/audit
pub async fn audit(cx: &Cx<'_>, p: ListAudit) -> Result<AuditLog, ApiError> {
    let limit = p.limit.map_or(100, Int::get);
    let w = cx.workspace(p.workspace.as_deref())?;
    let entries = store::audit::log(cx.db(), &w.workspace_id, limit).await?;
    Ok(AuditLog { entries })
}
