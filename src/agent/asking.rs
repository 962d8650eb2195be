//! `report_status` and `ask_user`: the agent's line on its card, and its questions to the user.

use super::{CallingSession, ToolError, QUESTIONS_PER_MIN};
use crate::domain::requests;
use crate::rules::ids::RequestId;
use crate::rules::params::{self, words, Capped, Text};
use crate::rules::{fingerprint, ids};
use crate::store::{self, requests::RequestStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
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

words! {
    /// What an agent asks a person.
    pub enum AskKind { Plan = "plan", Decision = "decision", Question = "question" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskUser {
    /// `plan`, `decision` or `question`.
    pub kind: AskKind,
    /// `plan`: `{ summary, files[] }`. `decision`: `{ prompt, options[] }` (no options means Yes and No).
    /// `question`: `{ prompt }`.
    #[schemars(with = "AnyPayload")]
    pub payload: Value,
}

/// A plan to approve: what it does and the files it touches.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PlanPayload {
    /// 1–10,000 characters.
    pub summary: Text<1, 10_000>,
    /// Up to 200 paths.
    #[serde(default)]
    pub files: Capped<Text<1, 1_000>, 200>,
}

/// A choice among options (none means Yes and No).
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DecisionPayload {
    /// 1–2,000 characters.
    pub prompt: Text<1, 2_000>,
    /// Up to 20 options.
    #[serde(default)]
    pub options: Capped<Text<1, 1_000>, 20>,
}

/// A question answered in words.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionPayload {
    /// 1–2,000 characters.
    pub prompt: Text<1, 2_000>,
}

/// The payload's published shapes; which one applies is `kind`'s (the server decodes it by `kind`).
#[derive(JsonSchema)]
#[allow(dead_code)]
#[serde(untagged)]
enum AnyPayload {
    Plan(PlanPayload),
    Decision(DecisionPayload),
    Question(QuestionPayload),
}

/// The payload as stored: only the fields of its kind, decoded by its kind's type.
pub fn check_payload(kind: AskKind, payload: &Value) -> Result<Value, ToolError> {
    fn decode<T: serde::de::DeserializeOwned + Serialize>(payload: &Value) -> Result<Value, ToolError> {
        let typed: T = params::decode(payload.clone()).map_err(|e| {
            ToolError::invalid(format!(
                "`payload{}",
                e.strip_prefix('`').map_or_else(|| format!("` {e}"), |rest| format!(".{rest}"))
            ))
        })?;
        Ok(serde_json::to_value(typed).expect("a payload serializes"))
    }
    match kind {
        AskKind::Plan => decode::<PlanPayload>(payload),
        AskKind::Decision => {
            let mut v = decode::<DecisionPayload>(payload)?;
            if v["options"].as_array().is_some_and(Vec::is_empty) {
                v["options"] = json!(["Yes", "No"]);
            }
            Ok(v)
        }
        AskKind::Question => decode::<QuestionPayload>(payload),
    }
}

/// How long after its answer an identical question of the session still gets that answer instead of
/// asking again. A call cut by a crash is retried within a minute or two (a client's timeout, a harness's
/// retry), and its answer may already have been handed to the cut connection, so whether it was delivered
/// cannot tell a retry from a new question; the time since the answer can. Past it, the same words are a
/// new question (the agent asks again on purpose, things having moved on).
pub const SAME_QUESTION_MS: i64 = 10 * 60_000;

/// The request a question is waiting on.
pub struct Asked {
    pub request_id: String,
    /// It was answered already: the question is a retry of one answered moments ago.
    pub answered: bool,
}

/// Opens a question for the user without waiting. An identical question of this session (same kind and
/// payload) that is still open, or was answered in the last [`SAME_QUESTION_MS`], is this one retried: it
/// is given instead, so the person is asked once and the retry gets the answer (as identical
/// `request_access` calls are one).
pub async fn open(a: &CallingSession<'_>, p: AskUser) -> Result<Asked, ToolError> {
    let payload = check_payload(p.kind, &p.payload)?;
    a.bucket("questions", QUESTIONS_PER_MIN, "questions").await?;
    let (cx, me) = (a.cx, &a.me);
    let dedupe_key = format!("ask:{}", fingerprint::of_arguments(&json!([p.kind.as_str(), payload])));
    let answered_since = cx.now_ms - SAME_QUESTION_MS;
    let detail = format!("{}: {}", p.kind, requests::summary(p.kind.as_str(), &payload));
    // Twice at most: the identical question may end unanswered (withdrawn, expired) between the insert
    // and the look-up, and then this one opens.
    for _ in 0..2 {
        let request_id = ids::new_id("req");
        let opened =
            requests::entry(&me.workspace_id, &me.session_id, &request_id, "request_opened", &detail, None, cx.now_ms);
        let inserted = cx
            .db()
            .batch(vec![
                store::requests::insert_request(
                    &request_id,
                    &me.workspace_id,
                    &me.task_id,
                    &me.session_id,
                    p.kind.as_str(),
                    &payload,
                    Some(&dedupe_key),
                    Some(answered_since),
                    cx.now_ms,
                ),
                store::audit::insert_if_changed(&opened),
            ])
            .await?;
        if inserted.first().is_some_and(|rows| !rows.is_empty()) {
            a.changed().await;
            crate::domain::requests::opened(cx, me, &request_id, p.kind.as_str(), &payload).await;
            return Ok(Asked { request_id, answered: false });
        }
        let same =
            store::requests::same_request(cx.db(), &me.task_id, &me.session_id, &dedupe_key, answered_since).await?;
        if let Some(same) = same {
            return Ok(Asked { answered: same.status == RequestStatus::Answered, request_id: same.request_id });
        }
    }
    Err(ToolError::new(-32003, "an identical question just ended unanswered; call ask_user again"))
}

/// The user's answer to a question, or (unanswered) `timed out waiting for the user`, expiring it. A
/// request that ended without an answer (its session ended, it was withdrawn) says so.
pub async fn answer_of(a: &CallingSession<'_>, request_id: &str) -> Result<Value, ToolError> {
    let req =
        store::requests::get_request(a.cx.db(), request_id).await?.ok_or_else(|| a.internal("request vanished"))?;
    let req = super::ended(req)?;
    match (req.status, &req.answer) {
        (RequestStatus::Answered, Some(answer)) => Ok(json!({ "resolution": answer })),
        (RequestStatus::Expired, _) => Err(ToolError::new(-32004, "the request expired unanswered")),
        _ => {
            // Ending it records it, wakes its waiters and tells the people watching.
            requests::expire(a.cx, &req).await.map_err(ToolError::from)?;
            Err(ToolError::new(-32004, "timed out waiting for the user"))
        }
    }
}

/// ask_user
pub async fn ask_user(a: &CallingSession<'_>, p: AskUser) -> Result<Value, ToolError> {
    let asked = open(a, p).await?;
    super::wait(a, &asked.request_id).await?;
    answer_of(a, &asked.request_id).await
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WithdrawRequest {
    /// One of this session's open requests (`req_…`): a question's, or an access request's (from
    /// `check_grant`'s grant, or the id the user saw).
    #[serde(rename = "requestId")]
    pub request_id: RequestId,
}

/// withdraw_request
pub async fn withdraw_request(a: &CallingSession<'_>, p: WithdrawRequest) -> Result<Value, ToolError> {
    let unknown = || ToolError::unknown(format!("no request `{}` of this session", p.request_id));
    let req = store::requests::get_request(a.cx.db(), &p.request_id)
        .await?
        .filter(|r| r.session_id == a.me.session_id)
        .ok_or_else(unknown)?;
    if req.status != RequestStatus::Open {
        return Err(ToolError::refused(format!("request {} is already {}", req.request_id, req.status)));
    }
    match requests::end(a.cx, &req, RequestStatus::Withdrawn, "withdrawn by the agent").await? {
        Some(_) => Ok(json!({ "requestId": req.request_id, "status": "withdrawn" })),
        None => Err(ToolError::refused(format!("request {} was answered meanwhile", req.request_id))),
    }
}
