//! `GET /v1/runner/skills?lease_id=`: the workspace's company skills in full, for the runner to write
//! where its agent's CLI reads skills (`.claude/skills/<name>/`, `.codex/skills/<name>/`).

use super::{leased, ok};
use crate::cx::Cx;
use crate::error::ApiError;
use crate::http::{HttpRequest, HttpResponse};
use crate::store;
use agentsky_wire::runner as wire;

pub async fn list(
    cx: &Cx<'_>,
    runner: &store::runners::RunnerRow,
    req: &HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let lease_id = req.query_param("lease_id").ok_or_else(|| ApiError::invalid("`lease_id` is required"))?;
    let turn = leased(cx, runner, &lease_id).await?;
    let skills = store::skills::all(cx.db(), &turn.workspace_id).await?;
    let skills = skills
        .into_iter()
        .map(|s| wire::Skill {
            name: s.name,
            description: s.description,
            skill_md: Some(s.skill_md),
            files: s.files,
            updated_by: s.updated_by,
            created_ms: s.created_ms,
            updated_ms: s.updated_ms,
        })
        .collect();
    Ok(ok(&wire::Skills { skills }))
}
