//! Per-minute rollups of calls, errors, latency, turns, spend and open requests (`metric_minute`), and
//! where a workspace exports its traces (`trace_export`).

use super::{first, rows, DbResult, Sql};
use crate::rules::metrics::{CallTally, BUCKETS};
use crate::stmt;
use serde::Deserialize;

/// Minutes kept; older ones are pruned by the cron.
pub const KEEP_MINUTES: i64 = 30 * 24 * 60;

/// Finished calls, added to their minute's row (the same sums as one upsert per call).
pub fn add_calls(workspace_id: &str, agent_id: &str, minute: i64, t: &CallTally) -> super::Stmt {
    let h = |i: usize| t.histogram[i];
    stmt!(
        "INSERT INTO metric_minute (workspace_id, agent_id, minute, calls, errors, latency_sum_ms, latency_max_ms,
           h0, h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11)
         VALUES (?1, ?2, ?3, ?18, ?4, ?5, ?19, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)
         ON CONFLICT (workspace_id, minute, agent_id) DO UPDATE SET
           calls = calls + excluded.calls, errors = errors + excluded.errors,
           latency_sum_ms = latency_sum_ms + excluded.latency_sum_ms,
           latency_max_ms = max(latency_max_ms, excluded.latency_max_ms),
           h0 = h0 + excluded.h0, h1 = h1 + excluded.h1, h2 = h2 + excluded.h2, h3 = h3 + excluded.h3,
           h4 = h4 + excluded.h4, h5 = h5 + excluded.h5, h6 = h6 + excluded.h6, h7 = h7 + excluded.h7,
           h8 = h8 + excluded.h8, h9 = h9 + excluded.h9, h10 = h10 + excluded.h10, h11 = h11 + excluded.h11",
        workspace_id,
        agent_id,
        minute,
        t.errors,
        t.latency_sum_ms,
        h(0),
        h(1),
        h(2),
        h(3),
        h(4),
        h(5),
        h(6),
        h(7),
        h(8),
        h(9),
        h(10),
        h(11),
        t.calls,
        t.latency_max_ms,
    )
}

/// What one turn (or one step of it) adds: `turns` is 1 when it ended, `failed` when it ended in error.
pub struct TurnUse {
    pub turns: i64,
    pub failed: bool,
    pub cents: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
}

pub fn add_turn(workspace_id: &str, agent_id: &str, minute: i64, u: &TurnUse) -> super::Stmt {
    stmt!(
        "INSERT INTO metric_minute (workspace_id, agent_id, minute, turns, turn_errors, spend_cents, input_tokens, output_tokens)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
         ON CONFLICT (workspace_id, minute, agent_id) DO UPDATE SET
           turns = turns + excluded.turns, turn_errors = turn_errors + excluded.turn_errors,
           spend_cents = spend_cents + excluded.spend_cents, input_tokens = input_tokens + excluded.input_tokens,
           output_tokens = output_tokens + excluded.output_tokens",
        workspace_id,
        agent_id,
        minute,
        u.turns,
        i64::from(u.failed),
        u.cents,
        u.input_tokens,
        u.output_tokens,
    )
}

/// Samples every workspace's open requests into this minute (highest sample wins), in one statement.
pub fn sample_open_requests(minute: i64) -> super::Stmt {
    stmt!(
        "INSERT INTO metric_minute (workspace_id, agent_id, minute, open_requests)
           SELECT workspace_id, '', ?1, count(*) FROM request WHERE status = 'open' GROUP BY workspace_id
         ON CONFLICT (workspace_id, minute, agent_id) DO UPDATE SET
           open_requests = max(open_requests, excluded.open_requests)",
        minute
    )
}

pub fn prune(now_minute: i64) -> super::Stmt {
    stmt!("DELETE FROM metric_minute WHERE minute < ?1", now_minute - KEEP_MINUTES)
}

/// Summed rows: one per point of a series (`t` its first minute), or one for a whole window.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Rollup {
    #[serde(default)]
    pub t: i64,
    #[serde(default)]
    pub agent_id: String,
    pub calls: i64,
    pub errors: i64,
    pub latency_sum_ms: i64,
    pub latency_max_ms: i64,
    pub h0: i64,
    pub h1: i64,
    pub h2: i64,
    pub h3: i64,
    pub h4: i64,
    pub h5: i64,
    pub h6: i64,
    pub h7: i64,
    pub h8: i64,
    pub h9: i64,
    pub h10: i64,
    pub h11: i64,
    pub turns: i64,
    pub turn_errors: i64,
    pub spend_cents: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// The highest open-requests sample in the point.
    pub open_requests: i64,
}

impl Rollup {
    pub fn histogram(&self) -> [i64; BUCKETS] {
        [self.h0, self.h1, self.h2, self.h3, self.h4, self.h5, self.h6, self.h7, self.h8, self.h9, self.h10, self.h11]
    }
}

macro_rules! sums {
    () => {
        "coalesce(sum(calls), 0) AS calls, coalesce(sum(errors), 0) AS errors,
         coalesce(sum(latency_sum_ms), 0) AS latency_sum_ms, coalesce(max(latency_max_ms), 0) AS latency_max_ms,
         coalesce(sum(h0), 0) AS h0, coalesce(sum(h1), 0) AS h1, coalesce(sum(h2), 0) AS h2,
         coalesce(sum(h3), 0) AS h3, coalesce(sum(h4), 0) AS h4, coalesce(sum(h5), 0) AS h5,
         coalesce(sum(h6), 0) AS h6, coalesce(sum(h7), 0) AS h7, coalesce(sum(h8), 0) AS h8,
         coalesce(sum(h9), 0) AS h9, coalesce(sum(h10), 0) AS h10, coalesce(sum(h11), 0) AS h11,
         coalesce(sum(turns), 0) AS turns, coalesce(sum(turn_errors), 0) AS turn_errors,
         coalesce(sum(spend_cents), 0) AS spend_cents, coalesce(sum(input_tokens), 0) AS input_tokens,
         coalesce(sum(output_tokens), 0) AS output_tokens"
    };
}

/// The window's points, `step` minutes wide (`t` their first minute: integer arithmetic written out,
/// since D1 may bind a number as a real and `/` would then not round), of a workspace (all its rows) or of one agent (`agent_id`
/// non-empty). Open requests are sampled per workspace, so an agent's series has none.
pub async fn series(
    db: &dyn Sql,
    workspace_id: &str,
    agent_id: &str,
    from_minute: i64,
    to_minute: i64,
    step: i64,
) -> DbResult<Vec<Rollup>> {
    rows(
        db,
        stmt!(
            concat!(
                "SELECT minute - minute % CAST(?4 AS INTEGER) AS t, ",
                sums!(),
                ", coalesce(max(open_requests), 0) AS open_requests
                 FROM metric_minute
                 WHERE workspace_id = ?1 AND minute >= ?2 AND minute <= ?3 AND (?5 = '' OR agent_id = ?5)
                 GROUP BY t ORDER BY t"
            ),
            workspace_id,
            from_minute,
            to_minute,
            step.max(1),
            agent_id
        ),
    )
    .await
}

/// The window's totals per agent ('' for calls no agent made), busiest first.
pub async fn by_agent(db: &dyn Sql, workspace_id: &str, from_minute: i64, to_minute: i64) -> DbResult<Vec<Rollup>> {
    rows(
        db,
        stmt!(
            concat!(
                "SELECT agent_id, ",
                sums!(),
                ", coalesce(max(open_requests), 0) AS open_requests
                 FROM metric_minute WHERE workspace_id = ?1 AND minute >= ?2 AND minute <= ?3
                 GROUP BY agent_id ORDER BY calls + turns DESC LIMIT 100"
            ),
            workspace_id,
            from_minute,
            to_minute
        ),
    )
    .await
}

/// Where a workspace exports traces.
#[derive(Debug, Clone, Deserialize)]
pub struct TraceExport {
    pub url: String,
    pub header_name: Option<String>,
    pub header_sealed: Option<String>,
}

pub async fn trace_export(db: &dyn Sql, workspace_id: &str) -> DbResult<Option<TraceExport>> {
    first(db, stmt!("SELECT url, header_name, header_sealed FROM trace_export WHERE workspace_id = ?1", workspace_id))
        .await
}

pub async fn set_trace_export(
    db: &dyn Sql,
    workspace_id: &str,
    url: &str,
    header: Option<(&str, &str)>,
    now_ms: i64,
) -> DbResult<()> {
    db.all(stmt!(
        "INSERT INTO trace_export (workspace_id, url, header_name, header_sealed, updated_ms) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (workspace_id) DO UPDATE SET url = excluded.url, header_name = excluded.header_name,
           header_sealed = excluded.header_sealed, updated_ms = excluded.updated_ms",
        workspace_id,
        url,
        header.map(|h| h.0.to_owned()),
        header.map(|h| h.1.to_owned()),
        now_ms
    ))
    .await?;
    Ok(())
}

pub async fn clear_trace_export(db: &dyn Sql, workspace_id: &str) -> DbResult<()> {
    db.all(stmt!("DELETE FROM trace_export WHERE workspace_id = ?1", workspace_id)).await?;
    Ok(())
}
