//! Registering a runner: the key-authenticated half of the runner protocol (see [`crate::runner`]).

use crate::cx::{Cx, Role};
use crate::error::ApiError;
use crate::rules::{ids, limits};
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterRunner {
    /// A name for the machine, 1–100 characters.
    pub name: String,
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
    limits::text("name", &p.name, 1, 100)?;
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let (runner_id, token) = (ids::new_id("run"), ids::new_secret("srt_"));
    store::runners::register(cx.db(), &runner_id, &w.workspace_id, &p.name, &ids::hash_secret(&token), cx.now_ms)
        .await
        .map_err(|e| cx.internal(e))?;
    Ok(RunnerRegistered { runner_id, token, workspace: w.slug.clone() })
}
