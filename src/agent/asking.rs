//! `report_status` and `ask_user`: the agent's line on its card, and its questions to the user.

use super::{CallingSession, ToolError, QUESTIONS_PER_MIN};
use crate::domain::requests;
use crate::rules::params::Text;
use crate::rules::{ids, limits};
use crate::store;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReportStatus {
    /// Up to 200 characters. An empty string clears it.
    pub note: Text<0, 200>,
}

/// report_status
pub async fn report_status(a: &CallingSession<'_>, p: ReportStatus) -> Result<Value, ToolError> {
    store::sessions::set_note(a.cx.db(), &a.me.session_id, &p.note, a.cx.now_ms).await?;
    Ok(json!({ "ok": true }))
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUser {
    /// `plan`, `decision` or `question`.
    pub kind: String,
    /// `plan`: `{ summary, files[] }`. `decision`: `{ prompt, options[] }` (no options means Yes and No).
    /// `question`: `{ prompt }`.
    pub payload: Value,
}

fn text_field(payload: &Value, field: &str, max: usize) -> Result<String, ToolError> {
    let s = payload[field]
        .as_str()
        .ok_or_else(|| ToolError::invalid(format!("`payload.{field}` (a string) is required")))?;
    limits::text(&format!("payload.{field}"), s, 1, max).map_err(ToolError::from)?;
    Ok(s.to_owned())
}

fn string_list(payload: &Value, field: &str, max_items: usize) -> Result<Vec<String>, ToolError> {
    match &payload[field] {
        Value::Null => Ok(vec![]),
        Value::Array(items) if items.len() <= max_items => items
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| ToolError::invalid(format!("`payload.{field}` must hold strings")))
            })
            .collect(),
        _ => Err(ToolError::invalid(format!("`payload.{field}` must be a list of at most {max_items} strings"))),
    }
}

/// The payload as stored: only the fields of its kind, checked.
pub fn check_payload(kind: &str, payload: &Value) -> Result<Value, ToolError> {
    Ok(match kind {
        "plan" => {
            json!({ "summary": text_field(payload, "summary", 10_000)?, "files": string_list(payload, "files", 200)? })
        }
        "decision" => {
            let options = string_list(payload, "options", 20)?;
            json!({ "prompt": text_field(payload, "prompt", 2_000)?, "options": if options.is_empty() { vec!["Yes".to_owned(), "No".to_owned()] } else { options } })
        }
        "question" => json!({ "prompt": text_field(payload, "prompt", 2_000)? }),
        other => return Err(ToolError::invalid(format!("`kind` must be plan, decision or question (got {other:?})"))),
    })
}

/// Opens a question for the user without waiting: its request id.
pub async fn open(a: &CallingSession<'_>, p: AskUser) -> Result<String, ToolError> {
    let payload = check_payload(&p.kind, &p.payload)?;
    a.bucket("questions", QUESTIONS_PER_MIN, "questions").await?;
    let (cx, me) = (a.cx, &a.me);
    let request_id = ids::new_id("req");
    let detail = format!("{}: {}", p.kind, requests::summary(&p.kind, &payload));
    let opened =
        requests::entry(&me.workspace_id, &me.session_id, &request_id, "request_opened", &detail, None, cx.now_ms);
    cx.db()
        .batch(vec![
            store::requests::insert_request(
                &request_id,
                &me.workspace_id,
                &me.task_id,
                &me.session_id,
                &p.kind,
                &payload,
                None,
                cx.now_ms,
            ),
            store::audit::insert(&opened),
        ])
        .await?;
    a.changed().await;
    crate::domain::webhooks::request_opened(cx, me, &request_id, &p.kind, &payload).await;
    Ok(request_id)
}

/// The user's answer to a question, or (unanswered) `timed out waiting for the user`, expiring it. A
/// request that ended without an answer (its session ended, it was withdrawn) says so.
pub async fn answer_of(a: &CallingSession<'_>, request_id: &str) -> Result<Value, ToolError> {
    let req =
        store::requests::get_request(a.cx.db(), request_id).await?.ok_or_else(|| a.internal("request vanished"))?;
    let req = super::ended(req)?;
    match (req.status.as_str(), &req.answer) {
        ("answered", Some(answer)) => Ok(json!({ "resolution": answer })),
        ("expired", _) => Err(ToolError::new(-32004, "the request expired unanswered")),
        _ => {
            // Ending it records it, wakes its waiters and tells the people watching.
            requests::expire(a.cx, &req).await.map_err(ToolError::from)?;
            Err(ToolError::new(-32004, "timed out waiting for the user"))
        }
    }
}

/// ask_user
pub async fn ask_user(a: &CallingSession<'_>, p: AskUser) -> Result<Value, ToolError> {
    let request_id = open(a, p).await?;
    super::wait(a, &request_id).await?;
    answer_of(a, &request_id).await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WithdrawRequest {
    /// One of this session's open requests (`req_…`): a question's, or an access request's (from
    /// `check_grant`'s grant, or the id the user saw).
    #[serde(rename = "requestId")]
    pub request_id: String,
}

/// withdraw_request
pub async fn withdraw_request(a: &CallingSession<'_>, p: WithdrawRequest) -> Result<Value, ToolError> {
    let unknown = || ToolError::unknown(format!("no request `{}` of this session", p.request_id));
    if !ids::is_id(&p.request_id, "req") {
        return Err(unknown());
    }
    let req = store::requests::get_request(a.cx.db(), &p.request_id)
        .await?
        .filter(|r| r.session_id == a.me.session_id)
        .ok_or_else(unknown)?;
    if req.status != "open" {
        return Err(ToolError::refused(format!("request {} is already {}", req.request_id, req.status)));
    }
    match requests::end(a.cx, &req, "withdrawn", "withdrawn by the agent").await? {
        Some(_) => Ok(json!({ "requestId": req.request_id, "status": "withdrawn" })),
        None => Err(ToolError::refused(format!("request {} was answered meanwhile", req.request_id))),
    }
}
