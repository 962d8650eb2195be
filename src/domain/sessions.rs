//! Reaching a session: its object (with its refusals as API errors) and its row, for whoever may see it.

use crate::cx::{Cx, Membership};
use crate::error::{ApiError, Code};
use crate::rules::ids;
pub use crate::session::TurnCancelled;
use crate::session::{calls, SessionRequest};
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

/// Cancels the running turn of a session the caller may steer (with `message_id`, only that message's):
/// the object ends it `cancelled` and goes idle ([`crate::session::Core::cancel_turn`]); then a runner
/// holding it is told through its lease, the agent's open requests are withdrawn, and `turn.finished`
/// says so. Telling the runner is safe to repeat, so a retried cancel finishes that; the withdrawals and
/// `turn.finished` come only from the cancel that ended the turn (a replay is not that turn any more).
pub async fn cancel_turn(cx: &Cx<'_>, row: &SessionRow, message_id: Option<&str>) -> Result<TurnCancelled, ApiError> {
    let ask = calls::CancelTurn { message_id: message_id.map(str::to_owned) };
    let TurnCancelled { message_id, replayed, status } = call(cx, &row.session_id, ask).await?;
    if let Some(lease) = store::runners::cancel(cx.db(), &row.session_id, &message_id).await? {
        // The agent's session token goes with its turn; a job poll waiting on the lease wakes to hear it.
        store::requests::revoke_runner_tokens(cx.db(), &row.session_id, None).await?;
        if let Some(lease) = lease {
            crate::domain::jobs::signal(cx, &row.session_id, crate::domain::jobs::poll_key(&lease)).await?;
        }
    }
    if !replayed {
        // Only a cancel that ended the turn withdraws what its agent waits on: a replay may come after the
        // session moved on, and the open requests then are the next turn's.
        for open in store::requests::open_for_session(cx.db(), &row.session_id, cx.now_ms).await? {
            crate::domain::requests::end(
                cx,
                &open,
                store::requests::RequestStatus::Withdrawn,
                "its turn was cancelled",
            )
            .await?;
        }
        let data = serde_json::json!({ "session_id": row.session_id, "task_id": row.task_id,
            "agent_id": row.agent_id, "message_id": message_id, "reason": "cancelled",
            "spent_cents": row.spent_cents, "error": null });
        let source = format!("{}/{message_id}", row.session_id);
        crate::domain::webhooks::emit(cx.env, &row.workspace_id, "turn.finished", Some(&source), data, cx.now_ms).await;
    }
    Ok(TurnCancelled { message_id, replayed, status })
}
