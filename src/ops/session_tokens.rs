//! A session's token for an agent harness outside agentsky (a runner, `sky mcp`): the bearer of
//! `POST /v1/session/mcp`, shown once, stored hashed, dead once the session ends.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::ops::sessions;
use crate::rules::ids::{self, SessionId};
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueSessionToken {
    /// The session.
    pub session_id: SessionId,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionToken {
    pub session_id: String,
    /// The bearer for `POST /v1/session/mcp`, shown once; only its hash is kept. Dead once the session
    /// ends.
    pub token: String,
    pub server_url: String,
}

/// POST /v1/sessions/{session_id}/token: a token for an agent harness outside agentsky (a runner, `sky mcp`).
pub async fn issue_token(cx: &Cx<'_>, p: IssueSessionToken) -> Result<SessionToken, ApiError> {
    let (row, _) = sessions::load(cx, &p.session_id).await?;
    if row.status == store::sessions::SessionStatus::Terminated {
        return Err(ApiError::new(Code::SessionTerminated, "this session has ended"));
    }
    let token = ids::new_secret("sst_");
    store::requests::insert_token(
        cx.db(),
        &ids::hash_secret(&token),
        &row.session_id,
        &row.workspace_id,
        None,
        cx.now_ms,
    )
    .await?;
    Ok(SessionToken { session_id: row.session_id, token, server_url: format!("{}/v1/session/mcp", cx.link_base()?) })
}
