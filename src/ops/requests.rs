//! What people are asked to decide: every open request of a workspace, across its tasks, with what a
//! person needs to decide it (who asks, in which task, and what), and the answer (`answer_request`, which
//! decides an access request's grant and wakes the waiting agent). A waiting call is woken by the
//! workspace's feed, so an operator's own MCP client, `sky approvals` or the console sees a new request
//! within moments without polling.

use crate::cx::{Cx, Role};
use crate::error::{ApiError, Code};
use crate::ops::files::load_task;
use crate::rules::cursor;
use crate::rules::ids::{RequestId, TaskId};
use crate::rules::params::{words, Int, Text};
use crate::session::calls;
use crate::store;
use crate::store::requests::{GrantStatus, OpenRequest, RequestRow, RequestStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

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
        ONCE_MAX_MINUTES,
        ONCE_DEFAULT_MINUTES,
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

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerRequest {
    /// The task that waits (its first session's id).
    pub task_id: TaskId,
    /// The request, from `get_task`'s `open_requests`.
    pub request_id: RequestId,
    /// Access: `approve` or `deny`. Plan: `approve`, `reject` or `edit`. Decision: one of its options.
    /// Question: your answer.
    pub answer: Text<1, 4_000>,
    /// A note the agent receives: a plan's note, or why it was denied.
    pub note: Option<Text<0, 2_000>>,
    /// Access only: for every session until revoked (owners and admins).
    pub always: Option<bool>,
    /// Access only: minutes a once-approval lasts (default 60).
    pub expires_in_minutes: Option<Int<1, ONCE_MAX_MINUTES>>,
    /// Ignored: the workspace is the task's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RequestAnswered {
    /// The request: still `open` when its target needs more approvals (see `approvals`).
    pub request: RequestRow,
    /// For access requests: the grant as the agent now sees it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<Value>,
    /// For a production deploy or delete on a target that needs more than one approval: who approved so
    /// far and how many it takes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approvals: Option<ApprovalProgress>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ApprovalProgress {
    /// The accounts that approved, in order.
    pub approved_by: Vec<String>,
    /// Approvals it takes: the target's rule, at most the owners and admins who may approve.
    pub needed: usize,
}

words! {
    /// How a person answers an access request.
    pub enum AccessAnswer { Approve = "approve", Deny = "deny" }
}

words! {
    /// How a person answers a plan.
    pub enum PlanAnswer { Approve = "approve", Reject = "reject", Edit = "edit" }
}

/// `answer` as the word set of the request's kind (which kind it is, only the stored request knows).
fn answer_of<W>(answer: &str, word: fn(&str) -> Option<W>, words: &[&str]) -> Result<W, ApiError> {
    word(answer).ok_or_else(|| {
        ApiError::invalid(format!(
            "`answer` must be one of {} for this request (got {})",
            words.join(", "),
            crate::rules::params::quoted(answer)
        ))
    })
}

/// How long a once-approval lasts unless the answer says otherwise, and at most (a day).
pub const ONCE_DEFAULT_MINUTES: i64 = 60;
pub const ONCE_MAX_MINUTES: i64 = 1_440;

/// answer_request: records the answer once, decides the grant, and wakes the waiting agent at once.
pub async fn answer(cx: &Cx<'_>, p: AnswerRequest) -> Result<RequestAnswered, ApiError> {
    let member = load_task(cx, &p.task_id).await?;
    let req = store::requests::get_request(cx.db(), &p.request_id).await?;
    let req = req.filter(|r| p.task_id == r.task_id).ok_or_else(|| ApiError::not_found("request"))?;
    if req.status == RequestStatus::Open && req.expires_ms.is_some_and(|e| e <= cx.now_ms) {
        crate::ops::requests::expire(cx, &req).await?;
        return Err(ApiError::new(Code::Conflict, format!("request {} is already expired", req.request_id)));
    }
    if req.status != RequestStatus::Open {
        let why = match req.status {
            RequestStatus::Closed => " (its session ended)",
            RequestStatus::Withdrawn => " (the agent withdrew it)",
            _ => "",
        };
        return Err(ApiError::new(
            Code::Conflict,
            format!("request {} is already {}{why}", req.request_id, req.status),
        ));
    }
    let by = cx.caller()?.key_id.clone();
    let resolution = match req.kind.as_str() {
        "access" => {
            let answer = answer_of::<AccessAnswer>(&p.answer, AccessAnswer::from_word, AccessAnswer::WORDS)?;
            let mut r = json!({ "kind": "access", "answer": answer });
            if let Some(n) = p.note.as_ref().filter(|n| answer == AccessAnswer::Deny && !n.is_empty()) {
                r["reason"] = json!(n);
            }
            r
        }
        "plan" => {
            let answer = answer_of::<PlanAnswer>(&p.answer, PlanAnswer::from_word, PlanAnswer::WORDS)?;
            let mut r = json!({ "kind": "plan", "answer": answer });
            if let Some(n) = &p.note {
                r["note"] = json!(n);
            }
            r
        }
        "decision" => {
            let options: Vec<String> = req.payload["options"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o.as_str().map(str::to_owned))
                .collect();
            if !options.is_empty() && !options.iter().any(|o| p.answer == *o.as_str()) {
                return Err(ApiError::invalid(format!("`answer` must be one of the options: {}", options.join(", "))));
            }
            json!({ "kind": "decision", "answer": p.answer })
        }
        _ => json!({ "kind": "question", "answer": p.answer }),
    };
    // Every answer is in the audit log with who gave it (the key; a console sign-in acts through one) and
    // the channel it came through, recorded only when the answer landed.
    let via = cx.channel.word();
    let answered = format!("{}: {} by key {by} via {via}", req.kind, p.answer);
    let account = cx.caller()?.account_id.clone();
    let mut stmts = vec![
        store::requests::answer_request(&req.request_id, &resolution, &by, cx.now_ms),
        store::audit::insert_if_changed(&crate::ops::requests::entry(
            &req.workspace_id,
            &req.session_id,
            &req.request_id,
            "request_answered",
            &answered,
            Some(&account),
            cx.now_ms,
        )),
    ];
    let grant = if req.kind == "access" {
        let g = store::requests::grant_for_request(cx.db(), &req.request_id)
            .await?
            .ok_or_else(|| ApiError::cause("grant missing"))?;
        let mut approved_by = String::new();
        if p.answer.as_str() == "approve" {
            match approval(cx, &member, &req, &g).await? {
                Approval::Recorded(progress) => {
                    let request = store::requests::get_request(cx.db(), &req.request_id)
                        .await?
                        .ok_or_else(|| ApiError::cause("request vanished"))?;
                    return Ok(RequestAnswered { request, grant: None, approvals: Some(progress) });
                }
                Approval::Completes(Some(progress)) => {
                    approved_by = format!(", the last of {} approvals", progress.needed);
                }
                Approval::Completes(None) => {}
            }
        }
        let minutes = p.expires_in_minutes.map_or(ONCE_DEFAULT_MINUTES, Int::get);
        let always = p.always.unwrap_or(false) && p.answer.as_str() == "approve";
        // A persistent grant answers every session of the workspace until revoked, and only owners and
        // admins can revoke one: so only they may make one.
        if always && member.role < Role::Admin {
            return Err(ApiError::new(
                Code::Forbidden,
                format!(
                    "`always` (a persistent grant for every session of `{}`) needs an owner or admin; as a member, approve once, for up to {ONCE_MAX_MINUTES} minutes (`expires_in_minutes`)",
                    member.slug
                ),
            ));
        }
        let (status, expires) = match p.answer.as_str() {
            "approve" if always => (GrantStatus::Active, None),
            "approve" => (GrantStatus::Active, Some(cx.now_ms + minutes * 60_000)),
            _ => (GrantStatus::Denied, None),
        };
        stmts.push(store::requests::decide_grant(&g.grant_id, status, always, expires, "user"));
        let (action, detail) = match (status, always) {
            (GrantStatus::Active, true) => (
                "access_approved",
                format!("{}: always, for every session, by key {by} via {via}{approved_by}", g.scopes),
            ),
            (GrantStatus::Active, false) => (
                "access_approved",
                format!("{}: once, for {minutes} min, by key {by} via {via}{approved_by}", g.scopes),
            ),
            _ => match p.note.as_deref().filter(|n| !n.is_empty()) {
                Some(reason) => ("access_denied", format!("{}: by key {by} via {via}: {reason}", g.scopes)),
                None => ("access_denied", format!("{}: by key {by} via {via}", g.scopes)),
            },
        };
        let entry = store::audit::Entry {
            actor_account_id: Some(&cx.caller()?.account_id),
            subject: Some(&req.request_id),
            ..store::audit::Entry::grant(&g, &g.session_id, action, &detail, cx.now_ms)
        };
        stmts.push(store::audit::insert_if_changed(&entry));
        Some(g.grant_id)
    } else {
        None
    };
    let results = cx.db().batch(stmts).await?;
    if results.first().is_none_or(|rows| rows.is_empty()) {
        return Err(ApiError::new(Code::Conflict, "the request was answered or expired meanwhile"));
    }
    // Wake the agent waiting on it (and a harness step waiting on it).
    cx.env.sessions.ask(&req.session_id, calls::Signal { key: req.request_id.clone() }).await.ok();
    let request = store::requests::get_request(cx.db(), &req.request_id)
        .await?
        .ok_or_else(|| ApiError::cause("request vanished"))?;
    let data = crate::domain::webhooks::request_data(&request, None);
    crate::domain::webhooks::emit(
        cx.env,
        &request.workspace_id,
        "request.answered",
        Some(&request.request_id),
        data,
        cx.now_ms,
    )
    .await;
    let who = store::accounts::name(cx.db(), &account).await?.unwrap_or_default();
    let outcome = match (&resolution["kind"], p.always.unwrap_or(false)) {
        (k, true) if k == "access" && p.answer.as_str() == "approve" => format!("approved always by {who} (via {via})"),
        _ => format!("{} by {who} (via {via})", resolution_word(&p.answer)),
    };
    crate::domain::slack::request_decided(cx, &request, &outcome).await;
    let grant = match grant {
        Some(id) => {
            store::requests::get_grant(cx.db(), &id).await?.map(|g| crate::domain::grants::grant_view(&g, None))
        }
        None => None,
    };
    Ok(RequestAnswered { request, grant, approvals: None })
}

/// An answer as the decided message says it.
fn resolution_word(answer: &str) -> String {
    match answer {
        "approve" => "approved".to_owned(),
        "deny" => "denied".to_owned(),
        "reject" => "rejected".to_owned(),
        "edit" => "sent back for edits".to_owned(),
        other => format!("answered “{other}”"),
    }
}

/// Where an approval leaves a request under its target's rule ([`crate::rules::approvals`]).
enum Approval {
    /// It completes the request (with the progress, when the rule took more than one).
    Completes(Option<ApprovalProgress>),
    /// It was recorded; more are needed, and the request stays open.
    Recorded(ApprovalProgress),
}

/// Applies the target's rule to an approval of an access request for a production deploy or delete:
/// refuses who may not approve (a member, the session's starter while others could, an approver a
/// second time, an approval without a fresh console sign-in when the target asks for one), else records
/// it and says whether it is the last one needed. Any other request completes at once, as before.
async fn approval(
    cx: &Cx<'_>,
    member: &crate::identity::Membership,
    req: &RequestRow,
    g: &store::requests::GrantRow,
) -> Result<Approval, ApiError> {
    use crate::rules::approvals;
    let connector = store::connectors::get(cx.db(), &g.connector_id).await?;
    let scopes: Vec<&str> = g.scopes.split(' ').collect();
    if !connector.is_some_and(|c| approvals::guarded(&c.env, &scopes)) {
        return Ok(Approval::Completes(None));
    }
    let Some(rule) = store::connectors::approval_rule(cx.db(), &g.connector_id).await?.map(|r| r.rule()) else {
        return Ok(Approval::Completes(None));
    };
    let caller = cx.caller()?;
    let (approvers, starter) = store::requests::approvers(cx.db(), &req.workspace_id, &req.session_id).await?;
    let need = approvals::need(rule, &approvers, starter.as_deref());
    let already = store::requests::approvals(cx.db(), &req.request_id).await?;
    let who = approvals::Approver {
        account_id: &caller.account_id,
        may_approve: member.role >= Role::Admin,
        console_sign_in_ms: match cx.channel {
            crate::cx::Channel::Console { signed_in_ms } => Some(signed_in_ms),
            _ => None,
        },
    };
    approvals::refusal(rule, &need, &who, starter.as_deref(), &already, cx.now_ms)
        .map_err(|why| ApiError::new(Code::Forbidden, why))?;
    if rule == approvals::Rule::default() {
        return Ok(Approval::Completes(None));
    }
    let via = cx.channel.word();
    let add = store::requests::add_approval(&req.request_id, &caller.account_id, &caller.key_id, via, cx.now_ms);
    if cx.db().batch(vec![add]).await?.first().is_none_or(|rows| rows.is_empty()) {
        return Err(ApiError::new(Code::Conflict, "the request was answered, expired or approved by you meanwhile"));
    }
    let approved_by = store::requests::approvals(cx.db(), &req.request_id).await?;
    let progress = ApprovalProgress { needed: need.approvals, approved_by };
    if progress.approved_by.len() >= need.approvals {
        return Ok(Approval::Completes(Some(progress)));
    }
    let detail = format!(
        "{}: approval {} of {} by key {} via {via}",
        g.scopes,
        progress.approved_by.len(),
        need.approvals,
        caller.key_id
    );
    let entry = store::audit::Entry {
        actor_account_id: Some(&caller.account_id),
        subject: Some(&req.request_id),
        ..store::audit::Entry::grant(g, &g.session_id, "access_approval_recorded", &detail, cx.now_ms)
    };
    store::audit::record(cx.db(), &entry).await?;
    Ok(Approval::Recorded(progress))
}
