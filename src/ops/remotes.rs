//! A task's git remote: where `land` pushes the landed tree (through the landing session's runner, with a
//! grant on the remote's connector; see `crate::agent::pushing`).

use crate::cx::Cx;
use crate::error::ApiError;
use crate::identity::Role;
use crate::ops::files::load_task;
use crate::rules::git_remote;
use crate::rules::ids::{ConnectorId, TaskId};
use crate::rules::params::Text;
use crate::store::{self, remotes::RemoteRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetTaskRemote {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// The repository: an `https://` URL on the connector's git host (`github` → `github.com`; no
    /// credentials in it), or one on the runner's machine (`file:///abs/path` or `/abs/path`, under a root
    /// the runner's owner allows with `sky runner --push-root`). `null` removes the remote: `land` then pushes nothing.
    pub url: Option<Text<1, 2_000>>,
    /// The branch `land` pushes to; the task's base branch (`main` unless set) when left out. Up to 200
    /// characters.
    pub branch: Option<Text<1, 200>>,
    /// The connector (`con_…`, from `list_connectors`) whose grant pushes: a git host (provider `github`).
    /// The landing session must hold a live grant on it covering `write`. Required with `url`.
    pub connector_id: Option<ConnectorId>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetTaskRemote {
    /// The task (its first session's id).
    pub task_id: TaskId,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct TaskRemote {
    pub task_id: String,
    /// `null` when the task has none.
    pub remote: Option<RemoteRow>,
}

/// PUT /v1/tasks/{task_id}/remote — owners and admins: the remote decides where the task's code goes.
pub async fn set(cx: &Cx<'_>, p: SetTaskRemote) -> Result<TaskRemote, ApiError> {
    let m = load_task(cx, &p.task_id).await?;
    cx.require_role(&m, Role::Admin)?;
    let db = cx.db();
    let Some(raw) = p.url else {
        if p.branch.is_some() || p.connector_id.is_some() {
            return Err(ApiError::invalid(
                "`branch` and `connector_id` go with a `url`; `url: null` removes the remote",
            ));
        }
        store::remotes::remove(db, &p.task_id).await?;
        return Ok(TaskRemote { task_id: p.task_id.into(), remote: None });
    };
    let url = git_remote::check("url", &raw, cx.env.config.allow_loopback_http).map_err(ApiError::invalid)?;
    let base = store::lanes::settings(db, &p.task_id).await?.map(|s| s.base_branch);
    let branch = p.branch.as_deref().or(base.as_deref()).unwrap_or("main");
    git_remote::branch("branch", branch).map_err(ApiError::invalid)?;
    let connector_id =
        p.connector_id.ok_or_else(|| ApiError::invalid("`connector_id` is required with `url`: its grant pushes"))?;
    let c = store::connectors::get(db, &connector_id).await?;
    let Some(c) = c.filter(|c| c.workspace_id == m.workspace_id) else {
        return Err(ApiError::not_found(&format!("connector `{}` in this workspace", connector_id.as_str())));
    };
    git_remote::bound("url", &url, &c.provider).map_err(ApiError::invalid)?;
    store::remotes::set(db, &p.task_id, &m.workspace_id, &url, branch, &connector_id, cx.now_ms).await?;
    let remote = store::remotes::get(db, &p.task_id).await?;
    Ok(TaskRemote { task_id: p.task_id.into(), remote })
}

/// GET /v1/tasks/{task_id}/remote
pub async fn get(cx: &Cx<'_>, p: GetTaskRemote) -> Result<TaskRemote, ApiError> {
    load_task(cx, &p.task_id).await?;
    let remote = store::remotes::get(cx.db(), &p.task_id).await?;
    Ok(TaskRemote { task_id: p.task_id.into(), remote })
}
