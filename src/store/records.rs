//! The session record and its read model: each record is inserted in the same atomic batch as the move
//! of the `agent_performance` counters it changes, so the summary can never disagree with the records.

use super::{rows, DbResult, Sql, Stmt};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// The counters of `agent_performance`, in column order after `decided_sessions`.
pub const COUNTERS: [&str; 14] = [
    "adopted",
    "rerun",
    "revise",
    "discard",
    "vote_up",
    "vote_down",
    "did_the_job_yes",
    "did_the_job_no",
    "approve",
    "pr_merged",
    "deployed",
    "reopened",
    "later_failure",
    "shipped",
];

/// The counter a record moves: its name, with the value for `vote` and `did_the_job`.
pub fn counter(name: &str, value: Option<&str>) -> Option<&'static str> {
    let column = match (name, value) {
        ("vote", Some("up")) => "vote_up",
        ("vote", Some("down")) => "vote_down",
        ("did_the_job", Some("yes")) => "did_the_job_yes",
        ("did_the_job", Some("no")) => "did_the_job_no",
        (other, _) => other,
    };
    COUNTERS.iter().find(|c| **c == column).copied()
}

pub struct NewRecord<'a> {
    pub record_id: &'a str,
    pub workspace_id: &'a str,
    pub session_id: &'a str,
    /// `decision` or `outcome`.
    pub kind: &'a str,
    pub name: &'a str,
    pub value: Option<&'a str>,
    pub note: &'a str,
    pub url: Option<&'a str>,
    /// `member` or `webhook`.
    pub by_kind: &'a str,
    pub by_id: &'a str,
    /// Shown when `by_id` is not an account (whose name is shown instead).
    pub by_name: &'a str,
    pub by_key_id: Option<&'a str>,
    pub dedupe_key: Option<&'a str>,
    pub now_ms: i64,
    /// The session's start day (UTC midnight), harness and model: the read model's key.
    pub day_ms: i64,
    pub harness: &'a str,
    pub model: &'a str,
}

const INSERT: &str = "INSERT INTO session_record (record_id, workspace_id, session_id, kind, name, value, note, url,
    by_kind, by_id, by_name, by_key_id, dedupe_key, recorded_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, COALESCE((SELECT name FROM account WHERE account_id = ?10), ?11),
    ?12, ?13, ?14) ON CONFLICT DO NOTHING";
/// Moves the read model only if the insert just before it added the record (`changes()` is the row count
/// of the last completed statement, on the batch's one connection). A session counts as decided once,
/// with its first decision.
const TALLY: &str = "INSERT INTO agent_performance (workspace_id, day_ms, harness, model, decided_sessions, adopted,
    rerun, revise, discard, vote_up, vote_down, did_the_job_yes, did_the_job_no, approve, pr_merged, deployed,
    reopened, later_failure, shipped)
  SELECT ?1, ?2, ?3, ?4,
    CASE WHEN ?5 = 'decision'
      AND (SELECT COUNT(*) FROM session_record WHERE session_id = ?6 AND kind = 'decision') = 1 THEN 1 ELSE 0 END,
    ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20
  WHERE changes() = 1
  ON CONFLICT (workspace_id, day_ms, harness, model) DO UPDATE SET
    decided_sessions = decided_sessions + excluded.decided_sessions, adopted = adopted + excluded.adopted,
    rerun = rerun + excluded.rerun, revise = revise + excluded.revise, discard = discard + excluded.discard,
    vote_up = vote_up + excluded.vote_up, vote_down = vote_down + excluded.vote_down,
    did_the_job_yes = did_the_job_yes + excluded.did_the_job_yes,
    did_the_job_no = did_the_job_no + excluded.did_the_job_no, approve = approve + excluded.approve,
    pr_merged = pr_merged + excluded.pr_merged, deployed = deployed + excluded.deployed,
    reopened = reopened + excluded.reopened, later_failure = later_failure + excluded.later_failure,
    shipped = shipped + excluded.shipped";

/// A record as read back.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RecordRow {
    pub record_id: String,
    #[serde(skip_serializing, default)]
    pub session_id: String,
    /// `decision` or `outcome`.
    pub kind: String,
    pub name: String,
    /// `up`/`down` for `vote`, `yes`/`no` for `did_the_job`.
    pub value: Option<String>,
    pub note: String,
    pub url: Option<String>,
    /// Who recorded it: `member` (through the API) or `webhook`.
    pub by_kind: String,
    /// The member's account id, or the webhook's sender.
    pub by_id: String,
    /// The member's name, or the webhook's sender.
    pub by_name: String,
    pub recorded_ms: i64,
}

const BY_DEDUPE: &str =
    "SELECT record_id, session_id, kind, name, value, note, url, by_kind, by_id, by_name, recorded_ms
  FROM session_record WHERE workspace_id = ?1 AND dedupe_key = ?2";
const BY_ID: &str = "SELECT record_id, session_id, kind, name, value, note, url, by_kind, by_id, by_name, recorded_ms
  FROM session_record WHERE record_id = ?1";

/// Adds a record and moves the read model, atomically. With a `dedupe_key` already used in the
/// workspace nothing changes; either way the record now stored under that key (or id) is returned.
pub async fn insert(db: &dyn Sql, r: &NewRecord<'_>) -> DbResult<Option<RecordRow>> {
    let mut counts = [0i64; 14];
    if let Some(c) = counter(r.name, r.value) {
        counts[COUNTERS.iter().position(|x| *x == c).unwrap_or_default()] = 1;
    }
    let mut tally = stmt!(TALLY, r.workspace_id, r.day_ms, r.harness, r.model, r.kind, r.session_id);
    tally.params.extend(counts.iter().map(|&n| n.into()));
    let read_back: Stmt = match r.dedupe_key {
        Some(key) => stmt!(BY_DEDUPE, r.workspace_id, key),
        None => stmt!(BY_ID, r.record_id),
    };
    let stmts = vec![
        stmt!(
            INSERT,
            r.record_id,
            r.workspace_id,
            r.session_id,
            r.kind,
            r.name,
            r.value,
            r.note,
            r.url,
            r.by_kind,
            r.by_id,
            r.by_name,
            r.by_key_id,
            r.dedupe_key,
            r.now_ms
        ),
        tally,
        read_back,
    ];
    let last = db.batch(stmts).await?.pop().unwrap_or_default();
    last.into_iter().next().map(super::decode).transpose()
}

const OF_SESSION: &str = "SELECT record_id, session_id, kind, name, value, note, url, by_kind, by_id, by_name,
    recorded_ms FROM session_record WHERE session_id = ?1 ORDER BY recorded_ms, record_id LIMIT 1000";

/// A session's records, oldest first.
pub async fn of_session(db: &dyn Sql, session_id: &str) -> DbResult<Vec<RecordRow>> {
    rows(db, stmt!(OF_SESSION, session_id)).await
}

/// Sessions and spend of one harness and model.
#[derive(Debug, Clone, Deserialize)]
pub struct SpendRow {
    pub harness: String,
    pub model: String,
    pub sessions: i64,
    pub spent_cents: i64,
    pub reported_micro_usd: i64,
}

/// The read model's counters of one harness and model, summed over days.
#[derive(Debug, Clone, Deserialize)]
pub struct TallyRow {
    pub harness: String,
    pub model: String,
    pub decided_sessions: i64,
    #[serde(flatten)]
    pub counts: std::collections::BTreeMap<String, i64>,
}

const SPEND: &str = "SELECT harness, model, COUNT(*) AS sessions, COALESCE(SUM(spent_cents), 0) AS spent_cents,
    COALESCE(SUM(reported_micro_usd), 0) AS reported_micro_usd
  FROM session WHERE workspace_id = ?1 AND created_ms >= ?2 AND created_ms < ?3 GROUP BY harness, model";
const TALLIES: &str = "SELECT harness, model, SUM(decided_sessions) AS decided_sessions, SUM(adopted) AS adopted,
    SUM(rerun) AS rerun, SUM(revise) AS revise, SUM(discard) AS discard, SUM(vote_up) AS vote_up,
    SUM(vote_down) AS vote_down, SUM(did_the_job_yes) AS did_the_job_yes, SUM(did_the_job_no) AS did_the_job_no,
    SUM(approve) AS approve, SUM(pr_merged) AS pr_merged, SUM(deployed) AS deployed, SUM(reopened) AS reopened,
    SUM(later_failure) AS later_failure, SUM(shipped) AS shipped
  FROM agent_performance WHERE workspace_id = ?1 AND day_ms >= ?2 AND day_ms < ?3 GROUP BY harness, model";

/// Sessions started in `[from_ms, to_ms)` by harness and model, with their spend and the read model's
/// counters for the same days, in one round trip.
pub async fn performance(
    db: &dyn Sql,
    workspace_id: &str,
    from_ms: i64,
    to_ms: i64,
) -> DbResult<(Vec<SpendRow>, Vec<TallyRow>)> {
    let mut results = db
        .batch(vec![stmt!(SPEND, workspace_id, from_ms, to_ms), stmt!(TALLIES, workspace_id, from_ms, to_ms)])
        .await?;
    let tallies = results.pop().unwrap_or_default().into_iter().map(super::decode).collect::<DbResult<_>>()?;
    let spend = results.pop().unwrap_or_default().into_iter().map(super::decode).collect::<DbResult<_>>()?;
    Ok((spend, tallies))
}
