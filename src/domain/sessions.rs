//! Reaching a session: its object (with its refusals as API errors) and its row, for whoever may see it.

use crate::cx::{Cx, Membership};
use crate::error::{ApiError, Code};
use crate::rules::ids;
use crate::session::SessionRequest;
use crate::store::{self, sessions::SessionRow};

/// Asks a session's object and turns its refusals into API errors.
pub async fn call<R: SessionRequest>(cx: &Cx<'_>, session_id: &str, req: R) -> Result<R::Reply, ApiError> {
    match cx.env.sessions.ask(session_id, req).await.map_err(ApiError::cause)? {
        Ok(reply) => Ok(reply),
        Err(r) if r.code == Code::Internal => Err(ApiError::cause(r.message)),
        Err(r) => Err(ApiError::new(r.code, r.message)),
    }
}

/// A session the caller may see, with its membership. Anything else is `not_found`.
pub async fn load(cx: &Cx<'_>, session_id: &str) -> Result<(SessionRow, Membership), ApiError> {
    if !ids::is_id(session_id, "ses") {
        return Err(ApiError::not_found("session"));
    }
    let row = store::sessions::get(cx.db(), session_id).await?.ok_or_else(|| ApiError::not_found("session"))?;
    let m = cx.member_of(&row.workspace_id, "session")?;
    Ok((row, m.clone()))
}
