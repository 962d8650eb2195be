//! How a request ends without an answer (expired, closed with its session, withdrawn), and how the audit
//! log tells a request's life: shared by the operator's operations, the session server and the cron.

use crate::cx::Cx;
use crate::error::ApiError;
use crate::session::calls;
use crate::store::{self, requests::RequestRow, requests::RequestStatus};
use serde_json::Value;

/// An audit entry about a request; `actor` is the account that decided, when a person did.
pub fn entry<'a>(
    workspace_id: &'a str,
    session_id: &'a str,
    request_id: &'a str,
    action: &'a str,
    detail: &'a str,
    actor: Option<&'a str>,
    now_ms: i64,
) -> store::audit::Entry<'a> {
    store::audit::Entry {
        workspace_id,
        action,
        detail,
        session_id: Some(session_id),
        grant_id: None,
        connector_id: None,
        actor_account_id: actor,
        subject: Some(request_id),
        now_ms,
    }
}

/// A request in one line, for the audit log: what was asked, as a person reads it.
pub fn summary(kind: &str, payload: &Value) -> String {
    let text = |k: &str| payload[k].as_str().unwrap_or_default().to_owned();
    let line = match kind {
        "access" => {
            let scopes: Vec<&str> =
                payload["scope"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            let what = payload["command"].as_str().map_or_else(|| text("reason"), str::to_owned);
            format!("{} {}: {what}", text("target"), scopes.join(" "))
        }
        "plan" => text("summary"),
        _ => text("prompt"),
    };
    match line.char_indices().nth(300) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

/// Ends an open request without an answer (`expired`, `closed`, `withdrawn`): records it, wakes whoever
/// waits on it and tells the people watching. `None` when it was no longer open.
pub async fn end(
    cx: &Cx<'_>,
    req: &RequestRow,
    status: RequestStatus,
    why: &str,
) -> Result<Option<RequestRow>, ApiError> {
    let now = cx.clock_now();
    let Some(ended) = store::requests::end_request(cx.db(), &req.request_id, status, now).await? else {
        return Ok(None);
    };
    let action = format!("request_{status}");
    let detail = format!("{}: {} ({why})", req.kind, summary(&req.kind, &req.payload));
    let e = entry(&req.workspace_id, &req.session_id, &req.request_id, &action, &detail, None, now);
    store::audit::record(cx.db(), &e).await?;
    cx.env.sessions.ask(&req.session_id, calls::Signal { key: req.request_id.clone() }).await.ok();
    let _ = cx.env.feeds.bump(&req.workspace_id).await;
    crate::domain::slack::request_decided(cx, &ended, &format!("{status}: {why}")).await;
    Ok(Some(ended))
}

/// A new request, told to whoever follows the workspace: the members' browsers and phones (Web Push,
/// through the queue, never delaying the agent), its webhooks (`request.opened`) and its Slack channel
/// (with buttons).
pub async fn opened(cx: &Cx<'_>, me: &store::sessions::SessionRow, request_id: &str, kind: &str, payload: &Value) {
    let data = crate::domain::webhooks::opened_data(cx, me, request_id, kind, payload);
    crate::domain::push::request_opened(cx, &me.workspace_id, &data).await;
    crate::domain::webhooks::request_opened(cx, &me.workspace_id, request_id, data).await;
    crate::domain::slack::request_opened(cx, me, request_id, kind, payload).await;
}

/// Expires a request whose time passed.
pub async fn expire(cx: &Cx<'_>, req: &RequestRow) -> Result<Option<RequestRow>, ApiError> {
    let ended = end(cx, req, RequestStatus::Expired, "nobody answered in time").await?;
    if let Some(r) = &ended {
        crate::domain::webhooks::request_expired(cx.env, r, cx.clock_now()).await;
    }
    Ok(ended)
}

/// Expires every open request past its time, in one workspace or (the cron) everywhere: how many.
pub async fn expire_due(cx: &Cx<'_>, workspace_id: Option<&str>) -> Result<usize, ApiError> {
    let now = cx.clock_now();
    let due = store::requests::expire_due(cx.db(), workspace_id, now).await?;
    for req in &due {
        let detail = format!("{}: {} (nobody answered in time)", req.kind, summary(&req.kind, &req.payload));
        let e = entry(&req.workspace_id, &req.session_id, &req.request_id, "request_expired", &detail, None, now);
        store::audit::record(cx.db(), &e).await?;
        cx.env.sessions.ask(&req.session_id, calls::Signal { key: req.request_id.clone() }).await.ok();
        crate::domain::webhooks::request_expired(cx.env, req, now).await;
        crate::domain::slack::request_decided(cx, req, "expired: nobody answered in time").await;
    }
    if let Some(first) = due.first() {
        let _ = cx.env.feeds.bump(&first.workspace_id).await;
    }
    Ok(due.len())
}

/// Closes the open requests of a session that ended (stopped, its workspace deleted): every call waiting
/// on one is answered at once with "session ended", and a late answer is refused.
pub async fn close_session(cx: &Cx<'_>, session_id: &str) -> Result<usize, ApiError> {
    let now = cx.clock_now();
    let closed = store::requests::close_for_session(cx.db(), session_id, now).await?;
    for req in &closed {
        let detail = format!("{}: {} (its session ended)", req.kind, summary(&req.kind, &req.payload));
        let e = entry(&req.workspace_id, &req.session_id, &req.request_id, "request_closed", &detail, None, now);
        store::audit::record(cx.db(), &e).await?;
        cx.env.sessions.ask(session_id, calls::Signal { key: req.request_id.clone() }).await.ok();
    }
    if let Some(first) = closed.first() {
        let _ = cx.env.feeds.bump(&first.workspace_id).await;
    }
    Ok(closed.len())
}
