//! What coding agent CLIs report their turns used: recorded beside the wallet's ledger, never in it (the
//! person's own CLI pays its provider). One row per turn, replaced as the turn reports more; the session's
//! total (`session.reported_micro_usd`) moves in the same batch, so budgets and performance read one row.

use super::{rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// A turn's usage so far, as its runner reported it.
pub struct Report<'a> {
    /// The turn's own: one per turn, so a later report replaces an earlier one.
    pub entry_id: &'a str,
    pub workspace_id: &'a str,
    pub session_id: &'a str,
    pub agent_id: Option<&'a str>,
    pub harness: &'a str,
    pub model: &'a str,
    pub input_tokens: i64,
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
    /// Millionths of a US dollar.
    pub micro_usd: i64,
    /// Priced from the tokens by this deployment, the CLI having said no cost.
    pub estimated: bool,
    pub now_ms: i64,
}

/// The CLI's own cost always replaces; an estimate replaces only a smaller estimate (a report retried
/// late never takes a turn's figure back).
const UPSERT: &str =
    "INSERT INTO reported_usage (entry_id, workspace_id, session_id, agent_id, harness, model, input_tokens,
    cached_input_tokens, output_tokens, micro_usd, estimated, created_ms, updated_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?12)
  ON CONFLICT (entry_id) DO UPDATE SET input_tokens = excluded.input_tokens,
    cached_input_tokens = excluded.cached_input_tokens, output_tokens = excluded.output_tokens,
    micro_usd = excluded.micro_usd, estimated = excluded.estimated, updated_ms = excluded.updated_ms
  WHERE excluded.estimated = 0
    OR (reported_usage.estimated = 1 AND excluded.micro_usd >= reported_usage.micro_usd)";
const TOTAL: &str = "UPDATE session SET reported_micro_usd =
    (SELECT COALESCE(SUM(micro_usd), 0) FROM reported_usage WHERE session_id = ?1)
  WHERE session_id = ?1 RETURNING reported_micro_usd";

/// Records a turn's report; returns the session's reported total, in millionths of a dollar.
pub async fn record(db: &dyn Sql, r: &Report<'_>) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Total {
        reported_micro_usd: i64,
    }
    let mut results = db
        .batch(vec![
            stmt!(
                UPSERT,
                r.entry_id,
                r.workspace_id,
                r.session_id,
                r.agent_id,
                r.harness,
                r.model,
                r.input_tokens,
                r.cached_input_tokens,
                r.output_tokens,
                r.micro_usd,
                r.estimated,
                r.now_ms
            ),
            stmt!(TOTAL, r.session_id),
        ])
        .await?;
    let row = results.pop().and_then(|rows| rows.into_iter().next());
    Ok(row.map(super::decode::<Total>).transpose()?.map_or(0, |t| t.reported_micro_usd))
}

/// One turn's reported usage, as `get_usage` shows a session's.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ReportedRow {
    pub entry_id: String,
    pub harness: String,
    pub model: String,
    pub input_tokens: i64,
    pub cached_input_tokens: i64,
    pub output_tokens: i64,
    /// What the turn cost, in US dollars: the CLI's own figure, or priced by this deployment from the
    /// tokens when `estimated`.
    pub cost_usd: f64,
    #[serde(deserialize_with = "super::int_bool")]
    pub estimated: bool,
    pub updated_ms: i64,
}

/// A session's newest reported turns.
pub async fn newest_for_session(db: &dyn Sql, session_id: &str, limit: i64) -> DbResult<Vec<ReportedRow>> {
    const NEWEST: &str = "SELECT entry_id, harness, model, input_tokens, cached_input_tokens, output_tokens,
    micro_usd / 1000000.0 AS cost_usd, estimated, updated_ms
  FROM reported_usage WHERE session_id = ?1 ORDER BY created_ms DESC, entry_id DESC LIMIT ?2";
    rows(db, stmt!(NEWEST, session_id, limit)).await
}

/// Millionths of a dollar as dollars, as answers show them.
pub fn usd(micro_usd: i64) -> f64 {
    micro_usd as f64 / 1_000_000.0
}

/// Millionths of a dollar as whole cents, rounded up: what a budget in cents compares against.
pub fn cents(micro_usd: i64) -> i64 {
    (micro_usd.max(0) + 9_999) / 10_000
}

/// A session's reported total, in millionths of a dollar.
pub async fn session_total(db: &dyn Sql, session_id: &str) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Total {
        reported_micro_usd: i64,
    }
    const TOTAL: &str = "SELECT reported_micro_usd FROM session WHERE session_id = ?1";
    Ok(super::first::<Total>(db, stmt!(TOTAL, session_id)).await?.map_or(0, |t| t.reported_micro_usd))
}
