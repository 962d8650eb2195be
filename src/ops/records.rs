//! The session record and agent performance (contract: `read_session_record`, `read_agent_performance`).
//!
//! People record decisions about a session's result (`adopted`, `rerun`, `revise`, `discard`, `vote`,
//! `did_the_job`, `approve`) and tools report outcomes (`pr_merged`, `deployed`, `reopened`,
//! `later_failure`, `shipped`): members over REST, tools over the workspace's webhook
//! (`POST /v1/webhooks/records/<workspace_id>`, signed like GitHub's webhooks or with the secret as a
//! bearer). Each record moves the read model `agent_performance` in the same batch
//! ([`crate::store::records`]), so `read_agent_performance` sums a few rows per day instead of
//! recounting records.

use crate::cx::{Cx, Role};
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::ops::sessions;
use crate::rules::ids::SessionId;
use crate::rules::params::{words, IdempotencyKey, Text};
use crate::rules::{hmac, ids, limits, seal, time};
use crate::store::{self, records::RecordRow, sessions::SessionRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub const DECISIONS: &[&str] = &["adopted", "rerun", "revise", "discard", "vote", "did_the_job", "approve"];
pub const OUTCOMES: &[&str] = &["pr_merged", "deployed", "reopened", "later_failure", "shipped"];

words! {
    /// What a record says: a decision ([`DECISIONS`]) or an observed outcome ([`OUTCOMES`]).
    pub enum RecordName {
        Adopted = "adopted", Rerun = "rerun", Revise = "revise", Discard = "discard", Vote = "vote",
        DidTheJob = "did_the_job", Approve = "approve", PrMerged = "pr_merged", Deployed = "deployed",
        Reopened = "reopened", LaterFailure = "later_failure", Shipped = "shipped",
    }
}
/// The workspace secret the webhook is verified with (a workspace secret like any other: listed by name,
/// replaced with `put_secret`, removed with `delete_secret`, which turns the webhook off).
pub const WEBHOOK_SECRET: &str = "RECORDS_WEBHOOK_SECRET";
/// Verified webhook posts a workspace takes a minute.
pub const WEBHOOK_CALLS_PER_MIN: u32 = 600;

/// A record as the caller asked for it, checked.
struct Asked<'a> {
    kind: &'static str,
    name: &'a str,
    value: Option<&'a str>,
    note: &'a str,
    url: Option<&'a str>,
}

fn check<'a>(
    name: &'a str,
    value: Option<&'a str>,
    note: Option<&'a str>,
    url: Option<&'a str>,
) -> Result<Asked<'a>, ApiError> {
    let kind = if DECISIONS.contains(&name) {
        "decision"
    } else if OUTCOMES.contains(&name) {
        "outcome"
    } else {
        return Err(ApiError::invalid(format!(
            "`name` must be a decision ({}) or an outcome ({}) (got {})",
            DECISIONS.join(", "),
            OUTCOMES.join(", "),
            crate::rules::params::quoted(name)
        )));
    };
    // Which values a name takes is the name's: the schema publishes them all, this pairs them.
    let takes: &[RecordValue] = match name {
        "vote" => &[RecordValue::Up, RecordValue::Down],
        "did_the_job" => &[RecordValue::Yes, RecordValue::No],
        _ => &[],
    };
    let words = || takes.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(" or ");
    match value {
        None if takes.is_empty() => {}
        None => return Err(ApiError::invalid(format!("`{name}` needs `value`: {}", words()))),
        Some(_) if takes.is_empty() => return Err(ApiError::invalid(format!("`{name}` takes no `value`"))),
        Some(v) if takes.iter().any(|t| t.as_str() == v) => {}
        Some(v) => {
            return Err(ApiError::invalid(format!(
                "`value` must be {} for `{name}` (got {})",
                words(),
                crate::rules::params::quoted(v)
            )))
        }
    }
    let note = note.unwrap_or_default();
    limits::text("note", note, 0, 2_000)?;
    if let Some(u) = url {
        limits::text("url", u, 1, 2_000)?;
        if !(u.starts_with("https://") || u.starts_with("http://")) {
            return Err(ApiError::invalid("`url` must be an http(s) link"));
        }
    }
    Ok(Asked { kind, name, value, note, url })
}

/// Who recorded it.
struct By<'a> {
    kind: &'static str,
    id: &'a str,
    name: &'a str,
    key_id: Option<&'a str>,
}

/// Stores a record about `session` (idempotent on `dedupe_key`) and returns the stored one; a key reused
/// for another record is `idempotency_conflict`.
async fn store_record(
    cx: &Cx<'_>,
    session: &SessionRow,
    asked: &Asked<'_>,
    by: &By<'_>,
    dedupe_key: Option<&str>,
) -> Result<RecordRow, ApiError> {
    let record_id = ids::new_id("rec");
    let new = store::records::NewRecord {
        record_id: &record_id,
        workspace_id: &session.workspace_id,
        session_id: &session.session_id,
        kind: asked.kind,
        name: asked.name,
        value: asked.value,
        note: asked.note,
        url: asked.url,
        by_kind: by.kind,
        by_id: by.id,
        by_name: by.name,
        by_key_id: by.key_id,
        dedupe_key,
        now_ms: cx.now_ms,
        day_ms: session.created_ms.div_euclid(time::DAY_MS) * time::DAY_MS,
        harness: &session.harness,
        model: &session.model,
    };
    let stored = store::records::insert(cx.db(), &new)
        .await?
        .ok_or_else(|| ApiError::cause("the record vanished after it was stored"))?;
    let same =
        stored.session_id == session.session_id && stored.name == asked.name && stored.value.as_deref() == asked.value;
    if !same {
        return Err(ApiError::new(
            Code::IdempotencyConflict,
            "this key already recorded something else; use a new key for a new record",
        ));
    }
    Ok(stored)
}

words! {
    /// A decision's value: `vote`'s and `did_the_job`'s.
    pub enum RecordValue { Up = "up", Down = "down", Yes = "yes", No = "no" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordSession {
    /// The session.
    pub session_id: SessionId,
    /// A decision (`adopted`, `rerun`, `revise`, `discard`, `vote`, `did_the_job`, `approve`) or an observed
    /// outcome (`pr_merged`, `deployed`, `reopened`, `later_failure`, `shipped`).
    pub name: RecordName,
    /// `up` or `down` for `vote`; `yes` or `no` for `did_the_job`; nothing for the others.
    pub value: Option<RecordValue>,
    /// Why, in a sentence or two.
    pub note: Option<Text<0, 2_000>>,
    /// A link to what it is about: the pull request, the deploy, the bug report.
    pub url: Option<Text<1, 2_000>>,
    /// A key you choose so a retried call records once.
    pub idempotency_key: Option<IdempotencyKey>,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Recorded {
    pub session_id: String,
    pub record: RecordRow,
}

/// record_session
pub async fn record(cx: &Cx<'_>, p: RecordSession) -> Result<Recorded, ApiError> {
    let asked = check(p.name.as_str(), p.value.map(RecordValue::as_str), p.note.as_deref(), p.url.as_deref())?;
    let (session, _) = sessions::load(cx, &p.session_id).await?;
    let caller = cx.caller()?;
    let by = By { kind: "member", id: &caller.account_id, name: "a member", key_id: Some(&caller.key_id) };
    let dedupe = p.idempotency_key.as_ref().map(|k| format!("key:{k}"));
    let record = store_record(cx, &session, &asked, &by, dedupe.as_deref()).await?;
    Ok(Recorded { session_id: session.session_id, record })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadSessionRecord {
    /// The session.
    pub session_id: SessionId,
    /// Ignored: the workspace is the session's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionRecord {
    pub session_id: String,
    /// What people decided about the session's result, oldest first. Empty: nobody decided yet.
    pub decisions: Vec<RecordRow>,
    /// What was observed to happen to it (merged, deployed, reopened, …), oldest first.
    pub outcomes: Vec<RecordRow>,
}

/// read_session_record
pub async fn read(cx: &Cx<'_>, p: ReadSessionRecord) -> Result<SessionRecord, ApiError> {
    let (session, _) = sessions::load(cx, &p.session_id).await?;
    let all = store::records::of_session(cx.db(), &session.session_id).await?;
    let (decisions, outcomes) = all.into_iter().partition(|r| r.kind == "decision");
    Ok(SessionRecord { session_id: session.session_id, decisions, outcomes })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadAgentPerformance {
    /// First UTC day of sessions to count, `YYYY-MM-DD` (default: 29 days before `until`).
    pub since: Option<String>,
    /// Last UTC day, inclusive, `YYYY-MM-DD` (default: today).
    pub until: Option<String>,
    /// A workspace slug from `list_workspaces`; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Decisions {
    pub adopted: i64,
    pub rerun: i64,
    pub revise: i64,
    pub discard: i64,
    pub vote_up: i64,
    pub vote_down: i64,
    pub did_the_job_yes: i64,
    pub did_the_job_no: i64,
    pub approve: i64,
}

#[derive(Debug, Default, Serialize, JsonSchema)]
pub struct Outcomes {
    pub pr_merged: i64,
    pub deployed: i64,
    pub reopened: i64,
    pub later_failure: i64,
    pub shipped: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Performance {
    pub harness: String,
    pub model: String,
    /// Sessions started in the range.
    pub sessions: i64,
    /// What they spent, in cents.
    pub spent_cents: i64,
    /// What coding agent CLIs (`claude-code`, `codex`) reported these sessions cost, in US dollars:
    /// recorded, not charged (each person's CLI pays its own provider).
    pub reported_cost_usd: f64,
    /// Sessions with at least one decision recorded.
    pub decided: i64,
    /// Sessions nobody has decided about yet.
    pub undecided: i64,
    pub decisions: Decisions,
    pub outcomes: Outcomes,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AgentPerformance {
    pub workspace: String,
    pub since: String,
    pub until: String,
    /// One entry per harness and model, most sessions first.
    pub performance: Vec<Performance>,
}

/// read_agent_performance
pub async fn performance(cx: &Cx<'_>, p: ReadAgentPerformance) -> Result<AgentPerformance, ApiError> {
    let until = crate::ops::usage::day("until", p.until.as_deref(), cx.now_ms)?;
    let since = crate::ops::usage::day("since", p.since.as_deref(), until - 29 * time::DAY_MS)?;
    if since > until {
        return Err(ApiError::invalid("`since` must not be after `until`"));
    }
    if until - since > 366 * time::DAY_MS {
        return Err(ApiError::invalid("`since`–`until` may span at most 366 days"));
    }
    let w = cx.workspace(p.workspace.as_deref())?;
    let (spend, tallies) = store::records::performance(cx.db(), &w.workspace_id, since, until + time::DAY_MS).await?;
    let mut out: Vec<Performance> = spend
        .into_iter()
        .map(|s| Performance {
            harness: s.harness,
            model: s.model,
            sessions: s.sessions,
            spent_cents: s.spent_cents,
            reported_cost_usd: store::reported::usd(s.reported_micro_usd),
            decided: 0,
            undecided: 0,
            decisions: Decisions::default(),
            outcomes: Outcomes::default(),
        })
        .collect();
    for t in tallies {
        let n = |k: &str| t.counts.get(k).copied().unwrap_or(0);
        let row = match out.iter_mut().position(|r| r.harness == t.harness && r.model == t.model) {
            Some(i) => &mut out[i],
            // Records about sessions whose model has since been switched: shown under the model they had.
            None => {
                out.push(Performance {
                    harness: t.harness.clone(),
                    model: t.model.clone(),
                    sessions: 0,
                    spent_cents: 0,
                    reported_cost_usd: 0.0,
                    decided: 0,
                    undecided: 0,
                    decisions: Decisions::default(),
                    outcomes: Outcomes::default(),
                });
                out.last_mut().expect("just pushed")
            }
        };
        row.decided = t.decided_sessions;
        row.decisions = Decisions {
            adopted: n("adopted"),
            rerun: n("rerun"),
            revise: n("revise"),
            discard: n("discard"),
            vote_up: n("vote_up"),
            vote_down: n("vote_down"),
            did_the_job_yes: n("did_the_job_yes"),
            did_the_job_no: n("did_the_job_no"),
            approve: n("approve"),
        };
        row.outcomes = Outcomes {
            pr_merged: n("pr_merged"),
            deployed: n("deployed"),
            reopened: n("reopened"),
            later_failure: n("later_failure"),
            shipped: n("shipped"),
        };
    }
    for r in &mut out {
        r.undecided = (r.sessions - r.decided).max(0);
    }
    out.sort_by(|a, b| b.sessions.cmp(&a.sessions).then_with(|| (&a.harness, &a.model).cmp(&(&b.harness, &b.model))));
    Ok(AgentPerformance {
        workspace: w.slug.clone(),
        since: time::format_day(since),
        until: time::format_day(until),
        performance: out,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateRecordWebhook {
    /// The workspace's slug.
    pub workspace: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RecordWebhook {
    pub workspace: String,
    /// Where tools post: a GitHub webhook (content type `application/json`, events "Pull requests" and
    /// "Deployment statuses") or any script.
    pub url: String,
    /// Shown once. GitHub signs with it (`X-Hub-Signature-256`); scripts send it as
    /// `Authorization: Bearer <secret>`. Stored sealed as the workspace secret `RECORDS_WEBHOOK_SECRET`.
    pub secret: String,
    /// What each payload records.
    pub events: Vec<String>,
}

/// create_record_webhook
pub async fn create_webhook(cx: &Cx<'_>, p: CreateRecordWebhook) -> Result<RecordWebhook, ApiError> {
    let w = cx.workspace(Some(&p.workspace))?;
    cx.require_role(w, Role::Admin)?;
    let master = cx.env.config.secrets_key.as_deref().ok_or_else(|| {
        ApiError::new(
            Code::NotImplemented,
            "this deployment has no SECRETS_KEY configured, so it cannot keep a webhook secret",
        )
    })?;
    let secret = ids::new_secret("whs_");
    let sealed = seal::seal(master, &seal::secret_aad(&w.workspace_id, WEBHOOK_SECRET), &secret);
    store::secrets::put(cx.db(), &w.workspace_id, WEBHOOK_SECRET, &sealed, cx.now_ms).await?;
    Ok(RecordWebhook {
        workspace: w.slug.clone(),
        url: format!("{}/v1/webhooks/records/{}", cx.link_base()?, w.workspace_id),
        secret,
        events: vec![
            "GitHub pull_request closed and merged → pr_merged; reopened → reopened (the session id `ses_…` in the \
             title, body or branch)"
                .into(),
            "GitHub deployment_status success → deployed; failure or error → later_failure (the session id in the \
             deployment's description, ref or payload)"
                .into(),
            "JSON {session_id, name, value?, note?, url?, by?, idempotency_key?} → any decision or outcome".into(),
        ],
    })
}

/// What a webhook payload asks to record.
#[derive(Debug, PartialEq)]
enum Hook {
    Record {
        session_id: String,
        name: String,
        value: Option<String>,
        note: Option<String>,
        url: Option<String>,
        by: String,
        dedupe: Option<String>,
    },
    /// Understood, but nothing to record (a ping, an unmerged close, no session id): why.
    Ignored(String),
}

/// The first session id (`ses_` and 26 id characters) in some texts.
fn session_id_in(texts: &[&str]) -> Option<String> {
    texts.iter().find_map(|t| {
        t.match_indices("ses_").find_map(|(at, _)| {
            let candidate = t.get(at..at + 30)?;
            ids::is_id(candidate, "ses").then(|| candidate.to_owned())
        })
    })
}

/// Reads a webhook payload: GitHub's (by its `X-GitHub-Event` header) or the generic JSON.
fn interpret(event: Option<&str>, delivery: Option<&str>, body: &Value) -> Result<Hook, ApiError> {
    let dedupe = delivery.map(|d| format!("delivery:{d}"));
    let sender = format!("github:{}", body["sender"]["login"].as_str().unwrap_or("unknown"));
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    let (name, texts, url, note) = match event {
        None => {
            let field = |k: &str| body[k].as_str().map(str::to_owned);
            let session_id = field("session_id").ok_or_else(|| ApiError::invalid("`session_id` is required"))?;
            let name = field("name").ok_or_else(|| ApiError::invalid("`name` is required"))?;
            let by = field("by").unwrap_or_else(|| "webhook".into());
            limits::text("by", &by, 1, 100)?;
            let dedupe = field("idempotency_key").map(|k| format!("key:{k}")).or(dedupe);
            return Ok(Hook::Record {
                session_id,
                name,
                value: field("value"),
                note: field("note"),
                url: field("url"),
                by,
                dedupe,
            });
        }
        Some("ping") => return Ok(Hook::Ignored("ping received; the webhook is set up".into())),
        Some("pull_request") => {
            let pr = &body["pull_request"];
            let name = match (body["action"].as_str(), pr["merged"].as_bool()) {
                (Some("closed"), Some(true)) => "pr_merged",
                (Some("reopened"), _) => "reopened",
                (action, _) => {
                    return Ok(Hook::Ignored(format!(
                        "pull_request `{}` records nothing (merged pull requests and reopened ones do)",
                        action.unwrap_or("?")
                    )))
                }
            };
            (
                name,
                vec![text(&pr["title"]), text(&pr["body"]), text(&pr["head"]["ref"])],
                text(&pr["html_url"]),
                text(&pr["title"]),
            )
        }
        Some("deployment_status") => {
            let status = &body["deployment_status"];
            let name = match status["state"].as_str() {
                Some("success") => "deployed",
                Some("failure" | "error") => "later_failure",
                other => {
                    return Ok(Hook::Ignored(format!("deployment_status `{}` records nothing", other.unwrap_or("?"))))
                }
            };
            let d = &body["deployment"];
            let url =
                status["target_url"].as_str().or(status["environment_url"].as_str()).unwrap_or_default().to_owned();
            let env = text(&d["environment"]);
            (
                name,
                vec![text(&d["description"]), text(&d["ref"]), d["payload"].to_string()],
                url,
                format!("environment {env}"),
            )
        }
        Some(other) => return Ok(Hook::Ignored(format!("GitHub event `{other}` records nothing"))),
    };
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let Some(session_id) = session_id_in(&refs) else {
        return Ok(Hook::Ignored(
            "no session id (`ses_…`) in the pull request's title, body or branch, or the deployment's description, \
             ref or payload"
                .into(),
        ));
    };
    let url = Some(url).filter(|u| u.starts_with("http"));
    Ok(Hook::Record {
        session_id,
        name: name.into(),
        value: None,
        note: Some(note.chars().take(2_000).collect()),
        url,
        by: sender,
        dedupe,
    })
}

/// `POST /v1/webhooks/records/{workspace_id}`: a tool reports an outcome (or a decision) about a session.
/// Verified with the workspace's webhook secret: GitHub's `X-Hub-Signature-256`, or the secret as a bearer.
pub async fn receive(cx: &Cx<'_>, workspace_id: &str, req: &HttpRequest) -> HttpResponse {
    match receive_inner(cx, workspace_id, req).await {
        Ok((status, body)) => HttpResponse::json(status, &body),
        Err(e) => crate::error::error_response(&e.finish(&cx.request_id)),
    }
}

async fn receive_inner(cx: &Cx<'_>, workspace_id: &str, req: &HttpRequest) -> Result<(u16, Value), ApiError> {
    if req.method != "POST" {
        return Err(ApiError::invalid("webhooks are POSTed"));
    }
    let no_hook = || {
        ApiError::new(
            Code::NotFound,
            "no records webhook here; create one with POST /v1/workspaces/{workspace}/records-webhook",
        )
    };
    if !ids::is_id(workspace_id, "ws") {
        return Err(no_hook());
    }
    let sealed = store::secrets::sealed(cx.db(), workspace_id, WEBHOOK_SECRET).await?;
    let master = cx.env.config.secrets_key.as_deref();
    let secret = sealed
        .zip(master)
        .and_then(|(sealed, master)| seal::open(master, &seal::secret_aad(workspace_id, WEBHOOK_SECRET), &sealed))
        .ok_or_else(no_hook)?;
    let bearer =
        req.header("authorization").and_then(|h| h.split_once(' ')).filter(|(s, _)| s.eq_ignore_ascii_case("bearer"));
    let verified = match (req.header("x-hub-signature-256"), bearer) {
        (Some(signature), _) => hmac::signature_matches(&secret, &req.body, signature),
        (None, Some((_, token))) => ids::constant_time_eq(token.trim(), &secret),
        (None, None) => false,
    };
    if !verified {
        return Err(ApiError::new(
            Code::Unauthorized,
            "the webhook's signature (X-Hub-Signature-256) or bearer secret does not match this workspace's",
        ));
    }
    // Counted only once verified: unsigned posts from anyone must never spend the workspace's own calls.
    crate::ops::rate_limit(cx, format!("webhook:{workspace_id}"), WEBHOOK_CALLS_PER_MIN).await?;
    let body: Value = serde_json::from_slice(&req.body)
        .map_err(|e| ApiError::invalid(format!("the webhook body is not JSON: {e}")))?;
    let hook = interpret(req.header("x-github-event"), req.header("x-github-delivery"), &body)?;
    let (session_id, name, value, note, url, by, dedupe) = match hook {
        Hook::Record { session_id, name, value, note, url, by, dedupe } => {
            (session_id, name, value, note, url, by, dedupe)
        }
        Hook::Ignored(why) => return Ok((202, json!({ "recorded": false, "reason": why }))),
    };
    let asked = check(&name, value.as_deref(), note.as_deref(), url.as_deref())?;
    let session = store::sessions::get(cx.db(), &session_id)
        .await?
        .filter(|s| s.workspace_id == workspace_id)
        .ok_or_else(|| ApiError::new(Code::NotFound, format!("session `{session_id}` not found in this workspace")))?;
    let by = By { kind: "webhook", id: &by, name: &by, key_id: None };
    let record = store_record(cx, &session, &asked, &by, dedupe.as_deref()).await?;
    Ok((200, json!({ "recorded": true, "session_id": session.session_id, "record": record })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merged_pull_request_naming_a_session_is_pr_merged() {
        let ses = ids::new_id("ses");
        let body = json!({
            "action": "closed", "sender": {"login": "octocat"},
            "pull_request": {"merged": true, "title": "Fix login", "body": format!("Made by {ses}."),
                "head": {"ref": "fix"}, "html_url": "https://github.com/o/r/pull/7"},
        });
        match interpret(Some("pull_request"), Some("d-1"), &body).unwrap() {
            Hook::Record { session_id, name, by, url, dedupe, .. } => {
                assert_eq!((session_id, name.as_str(), by.as_str()), (ses, "pr_merged", "github:octocat"));
                assert_eq!(url.as_deref(), Some("https://github.com/o/r/pull/7"));
                assert_eq!(dedupe.as_deref(), Some("delivery:d-1"));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unmerged_closes_pings_and_prs_without_a_session_record_nothing() {
        let closed = json!({"action": "closed", "pull_request": {"merged": false, "title": "x"}});
        assert!(matches!(interpret(Some("pull_request"), None, &closed).unwrap(), Hook::Ignored(_)));
        assert!(matches!(interpret(Some("ping"), None, &json!({})).unwrap(), Hook::Ignored(_)));
        let anonymous = json!({"action": "closed", "pull_request": {"merged": true, "title": "ses_short"}});
        assert!(matches!(interpret(Some("pull_request"), None, &anonymous).unwrap(), Hook::Ignored(_)));
    }

    #[test]
    fn records_are_checked_by_kind_and_value() {
        assert_eq!(check("adopted", None, None, None).unwrap().kind, "decision");
        assert_eq!(check("shipped", None, None, None).unwrap().kind, "outcome");
        assert!(check("vote", None, None, None).is_err());
        assert!(check("vote", Some("sideways"), None, None).is_err());
        assert!(check("vote", Some("up"), None, None).is_ok());
        assert!(check("adopted", Some("yes"), None, None).is_err());
        assert!(check("liked", None, None, None).is_err());
        assert!(check("deployed", None, None, Some("javascript:x")).is_err());
    }
}
