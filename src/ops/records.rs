//! The session record and agent performance (contract: `read_session_record`, `read_agent_performance`).
//!
//! People record decisions about a session's result (`adopted`, `rerun`, `revise`, `discard`, `vote`,
//! `did_the_job`, `approve`) and tools report outcomes (`pr_merged`, `deployed`, `reopened`,
//! `later_failure`, `shipped`): members over REST, tools over the workspace's webhook
//! (`POST /v1/webhooks/records/<workspace_id>`, received by [`crate::receivers::records`]). Each record moves the read model `agent_performance` in the same batch
//! ([`crate::store::records`]), so `read_agent_performance` sums a few rows per day instead of
//! recounting records.

use crate::cx::{Cx, Role};
use crate::error::{ApiError, Code};
use crate::ops::sessions;
use crate::rules::ids::SessionId;
use crate::rules::params::{words, IdempotencyKey, Text};
use crate::rules::{ids, limits, seal, time};
use crate::store::{self, records::RecordRow, sessions::SessionRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
pub struct Asked<'a> {
    kind: &'static str,
    name: &'a str,
    value: Option<&'a str>,
    note: &'a str,
    url: Option<&'a str>,
}

pub fn check<'a>(
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
pub struct By<'a> {
    pub kind: &'static str,
    pub id: &'a str,
    pub name: &'a str,
    pub key_id: Option<&'a str>,
}

/// Stores a record about `session` (idempotent on `dedupe_key`) and returns the stored one; a key reused
/// for another record is `idempotency_conflict`.
pub async fn store_record(
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

#[cfg(test)]
mod tests {
    use super::*;

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
