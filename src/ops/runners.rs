//! Registering a runner: the key-authenticated half of the runner protocol (see [`crate::runner`]).

use crate::cx::{Cx, Role};
use crate::error::ApiError;
use crate::rules::ids;
use crate::rules::ids::RunnerId;
use crate::rules::params::Text;
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRunner {
    /// A name for the machine.
    pub name: Text<1, 100>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RunnerRegistered {
    pub runner_id: String,
    /// The runner's bearer for `/v1/runner/*`, shown once; only its hash is kept.
    pub token: String,
    pub workspace: String,
}

/// POST /v1/runners — owners and admins.
pub async fn register(cx: &Cx<'_>, p: RegisterRunner) -> Result<RunnerRegistered, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let (runner_id, token) = (ids::new_id("run"), ids::new_secret("srt_"));
    store::runners::register(cx.db(), &runner_id, &w.workspace_id, &p.name, &ids::hash_secret(&token), cx.now_ms)
        .await?;
    Ok(RunnerRegistered { runner_id, token, workspace: w.slug.clone() })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRunners {
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RunnerList {
    pub runners: Vec<store::runners::RunnerInfo>,
    pub workspace: String,
}

/// GET /v1/runners
pub async fn list(cx: &Cx<'_>, p: ListRunners) -> Result<RunnerList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let runners = store::runners::list(cx.db(), &w.workspace_id, cx.now_ms).await?;
    Ok(RunnerList { runners, workspace: w.slug.clone() })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeRunner {
    /// The runner's id (`run_…`), from `GET /v1/runners`.
    pub runner_id: RunnerId,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RunnerRevoked {
    pub runner_id: String,
    pub revoked: bool,
}

/// DELETE /v1/runners/{runner_id} — owners and admins. Its token stops working at once; a turn it held
/// goes back to the queue for another runner, and the agent's session token for that turn dies.
pub async fn revoke(cx: &Cx<'_>, p: RevokeRunner) -> Result<RunnerRevoked, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let not_found = || ApiError::not_found(&format!("runner `{}`", p.runner_id));
    if !store::runners::revoke(cx.db(), &w.workspace_id, &p.runner_id).await? {
        return Err(not_found());
    }
    Ok(RunnerRevoked { runner_id: p.runner_id.into(), revoked: true })
}
