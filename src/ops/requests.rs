//! What people are asked to decide: every open request of a workspace, across its tasks, with what a
//! person needs to decide it (who asks, in which task, and what). A waiting call is woken by the
//! workspace's feed, so an operator's own MCP client, `sky approvals` or the console sees a new request
//! within moments without polling.

use crate::cx::{Cx, Role};
use crate::error::ApiError;
use crate::rules::cursor;
use crate::rules::params::Int;
use crate::store::{self, requests::OpenRequest, requests::RequestRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Longest wait `list_requests` holds, in seconds.
const MAX_WAIT_SECONDS: i64 = 50;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListRequests {
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
    /// Only requests opened after this `cursor` of a previous call (default: all open ones).
    pub cursor: Option<String>,
    /// When none is newer than `cursor`, wait this long for the next one.
    pub wait_seconds: Option<Int<0, MAX_WAIT_SECONDS>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RequestList {
    /// Open requests, newest first: each with its `request_id` and `task_id` for `answer_request`, its
    /// `kind` and `payload` (what was asked), the agent and session that ask, and the task.
    pub requests: Vec<OpenRequest>,
    /// Pass to the next `list_requests` (with `wait_seconds`) to wait for requests opened after these.
    pub cursor: String,
}

/// list_requests
pub async fn list(cx: &Cx<'_>, p: ListRequests) -> Result<RequestList, ApiError> {
    let wait = p.wait_seconds.map_or(0, Int::get);
    let after = cursor::parse_keyset(p.cursor.as_deref())?;
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    // Requests past their time leave the list (and their agents hear it) before anyone decides them.
    expire_due(cx, Some(&w.workspace_id)).await?;
    let deadline = cx.now_ms + wait * 1000;
    // The feed's version is read before the query, so a request opened after the query moves it and
    // wakes the wait below.
    let mut seen = match wait {
        0 => String::new(),
        _ => cx.env.feeds.wait(&w.workspace_id, "", 0).await.map_err(ApiError::cause)?,
    };
    loop {
        let mut requests =
            store::requests::open_in_workspace(cx.db(), &w.workspace_id, after.clone(), 200, cx.clock_now()).await?;
        for r in &mut requests {
            r.would_allow = would_allow(&r.request);
        }
        let left = deadline - cx.clock_now();
        if !requests.is_empty() || left <= 0 {
            let cursor = match (requests.first(), &after) {
                (Some(newest), _) => cursor::keyset(newest.request.created_ms, &newest.request.request_id),
                (None, Some((at, id))) => cursor::keyset(*at, id),
                // Nothing open and nothing seen: the next request is newer than now.
                (None, None) => cursor::keyset(cx.now_ms, ""),
            };
            return Ok(RequestList { requests, cursor });
        }
        // Woken by any change in the workspace; the query above decides whether it was a new request.
        seen = cx.env.feeds.wait(&w.workspace_id, &seen, left).await.map_err(ApiError::cause)?;
    }
}

/// What approving an access request would allow, in words, for the person deciding.
pub fn would_allow(r: &RequestRow) -> Option<String> {
    if r.kind != "access" {
        return None;
    }
    let p = &r.payload;
    let scopes: Vec<&str> = p["scope"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    Some(format!(
        "{} on `{}` ({} {}) for this session only, for the minutes you choose (1–{}; default {}), or — approved always, by an owner or admin — for every session of the workspace until revoked",
        scopes.join(", "),
        p["target"].as_str().unwrap_or_default(),
        p["provider"].as_str().unwrap_or_default(),
        p["env"].as_str().unwrap_or_default(),
        crate::ops::connectors::ONCE_MAX_MINUTES,
        crate::ops::connectors::ONCE_DEFAULT_MINUTES,
    ))
}

pub use crate::domain::requests::{close_session, end, entry, expire, expire_due, summary};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetRequestExpiry {
    /// How long a request stays open unanswered before it expires, in minutes: 1–43,200 (30 days). The
    /// default is 1,440 (24 hours). Applies to requests opened from now on.
    pub minutes: i64,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RequestExpiry {
    pub workspace: String,
    pub minutes: i64,
}

/// Longest request expiry, in minutes (30 days).
pub const MAX_EXPIRY_MINUTES: i64 = 43_200;

/// set_request_expiry — owners and admins.
pub async fn set_expiry(cx: &Cx<'_>, p: SetRequestExpiry) -> Result<RequestExpiry, ApiError> {
    if !(1..=MAX_EXPIRY_MINUTES).contains(&p.minutes) {
        return Err(ApiError::invalid(format!("`minutes` must be between 1 and {MAX_EXPIRY_MINUTES} (30 days)")));
    }
    let w = cx.workspace(p.workspace.as_deref())?.clone();
    cx.require_role(&w, Role::Admin)?;
    store::requests::set_expiry_minutes(cx.db(), &w.workspace_id, p.minutes).await?;
    let detail = format!("requests expire after {} min", p.minutes);
    let e = store::audit::Entry::change(
        &w.workspace_id,
        &cx.caller()?.account_id,
        "request_expiry_set",
        None,
        &detail,
        cx.now_ms,
    );
    store::audit::record(cx.db(), &e).await?;
    Ok(RequestExpiry { workspace: w.slug, minutes: p.minutes })
}
