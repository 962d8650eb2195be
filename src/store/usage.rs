//! The usage ledger and the wallet. A charge is one atomic batch: the ledger row, the wallet and the
//! session's spend move together.

use super::{rows, DbResult, Sql, Stmt};
use crate::stmt;
use serde::{Deserialize, Serialize};

pub struct Entry<'a> {
    pub entry_id: &'a str,
    pub workspace_id: &'a str,
    pub session_id: Option<&'a str>,
    pub key_id: Option<&'a str>,
    pub agent_id: Option<&'a str>,
    pub model: &'a str,
    pub cents: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub now_ms: i64,
}

const INSERT: &str = "INSERT INTO usage_entry (entry_id, workspace_id, session_id, key_id, agent_id, model, cents, input_tokens, output_tokens, created_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (entry_id) DO NOTHING";
/// Debits the wallet only if the ledger insert just before it (same batch, same connection) added a
/// row: `changes()` is the row count of the last completed statement.
const GUARDED_DEBIT: &str =
    "UPDATE workspace SET balance_cents = balance_cents - ?2 WHERE workspace_id = ?1 AND changes() = 1";

/// The statements of one charge. The entry id is deterministic per step, so a replayed step is not
/// charged twice: the insert does nothing and the debit is skipped with it.
pub fn charge(e: &Entry<'_>) -> Vec<Stmt> {
    vec![
        stmt!(
            INSERT,
            e.entry_id,
            e.workspace_id,
            e.session_id,
            e.key_id,
            e.agent_id,
            e.model,
            e.cents,
            e.input_tokens,
            e.output_tokens,
            e.now_ms
        ),
        stmt!(GUARDED_DEBIT, e.workspace_id, e.cents),
    ]
}

const CREDIT: &str =
    "UPDATE workspace SET balance_cents = balance_cents + ?2 WHERE workspace_id = ?1 RETURNING balance_cents";

pub async fn credit(db: &dyn Sql, workspace_id: &str, cents: i64) -> DbResult<Option<i64>> {
    #[derive(Deserialize)]
    struct Row {
        balance_cents: i64,
    }
    Ok(super::first::<Row>(db, stmt!(CREDIT, workspace_id, cents)).await?.map(|r| r.balance_cents))
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Group {
    /// The day (`YYYY-MM-DD`, UTC), session id, key id, agent id or model, by `group_by`.
    pub key: Option<String>,
    pub cents: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub entries: i64,
}

/// Spend in `[from_ms, to_ms)` grouped by one column. The column comes from a fixed list, never input.
pub async fn grouped(
    db: &dyn Sql,
    workspace_id: &str,
    group_by: &str,
    from_ms: i64,
    to_ms: i64,
) -> DbResult<Vec<Group>> {
    const BY_DAY: &str = "SELECT strftime('%Y-%m-%d', created_ms / 1000, 'unixepoch') AS key, SUM(cents) AS cents,
        SUM(input_tokens) AS input_tokens, SUM(output_tokens) AS output_tokens, COUNT(*) AS entries
      FROM usage_entry WHERE workspace_id = ?1 AND created_ms >= ?2 AND created_ms < ?3 GROUP BY 1 ORDER BY 1";
    const BY_SESSION: &str = "SELECT session_id AS key, SUM(cents) AS cents, SUM(input_tokens) AS input_tokens,
        SUM(output_tokens) AS output_tokens, COUNT(*) AS entries
      FROM usage_entry WHERE workspace_id = ?1 AND created_ms >= ?2 AND created_ms < ?3 GROUP BY 1 ORDER BY 2 DESC LIMIT 500";
    const BY_KEY: &str = "SELECT key_id AS key, SUM(cents) AS cents, SUM(input_tokens) AS input_tokens,
        SUM(output_tokens) AS output_tokens, COUNT(*) AS entries
      FROM usage_entry WHERE workspace_id = ?1 AND created_ms >= ?2 AND created_ms < ?3 GROUP BY 1 ORDER BY 2 DESC LIMIT 500";
    const BY_AGENT: &str = "SELECT agent_id AS key, SUM(cents) AS cents, SUM(input_tokens) AS input_tokens,
        SUM(output_tokens) AS output_tokens, COUNT(*) AS entries
      FROM usage_entry WHERE workspace_id = ?1 AND created_ms >= ?2 AND created_ms < ?3 GROUP BY 1 ORDER BY 2 DESC LIMIT 500";
    const BY_MODEL: &str = "SELECT model AS key, SUM(cents) AS cents, SUM(input_tokens) AS input_tokens,
        SUM(output_tokens) AS output_tokens, COUNT(*) AS entries
      FROM usage_entry WHERE workspace_id = ?1 AND created_ms >= ?2 AND created_ms < ?3 GROUP BY 1 ORDER BY 2 DESC LIMIT 500";
    let sql = match group_by {
        "session" => BY_SESSION,
        "api_key" => BY_KEY,
        "agent" => BY_AGENT,
        "model" => BY_MODEL,
        _ => BY_DAY,
    };
    rows(db, stmt!(sql, workspace_id, from_ms, to_ms)).await
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct EntryRow {
    pub entry_id: String,
    pub session_id: Option<String>,
    pub key_id: Option<String>,
    pub agent_id: Option<String>,
    pub model: String,
    pub cents: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub created_ms: i64,
}

/// A session's newest entries.
pub async fn newest_for_session(db: &dyn Sql, session_id: &str, limit: i64) -> DbResult<Vec<EntryRow>> {
    const NEWEST: &str =
        "SELECT entry_id, session_id, key_id, agent_id, model, cents, input_tokens, output_tokens, created_ms
      FROM usage_entry WHERE session_id = ?1 ORDER BY created_ms DESC, entry_id DESC LIMIT ?2";
    rows(db, stmt!(NEWEST, session_id, limit)).await
}
