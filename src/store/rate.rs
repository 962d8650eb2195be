//! The per-minute log of a key's bucket in D1 (`rate_hit`), as an exact sliding window
//! ([`crate::rules::rate`]): a call passes only while fewer than `capacity` calls passed in the window
//! before it, decided in one atomic batch, so racing calls from any isolate never pass together. The
//! statements ride in the batch of the call's own first statement ([`super::Counted::ride`]), so
//! counting costs no round trip of its own.

use super::{DbError, DbResult, Row, Stmt};
use crate::rules::rate::{capacity, Decision};
use crate::stmt;

/// One window; the key buckets count calls per minute.
pub const PERIOD_MS: i64 = 60_000;

/// Counts one call at `now_ms` on the bucket `?1`, `?3` calls (the capacity) per `?4` ms.
const SQL: [&str; 3] = [
    // Whatever left the window, any bucket's: the log never holds more than a window.
    "DELETE FROM rate_hit WHERE at_ms <= ?2 - ?4",
    "INSERT INTO rate_hit (bucket, at_ms) SELECT ?1, ?2
  WHERE (SELECT COUNT(*) FROM rate_hit WHERE bucket = ?1 AND at_ms > ?2 - ?4) < ?3 RETURNING at_ms",
    // How many passed now, and the call that must leave the window before another fits.
    "SELECT (SELECT COUNT(*) FROM rate_hit WHERE bucket = ?1 AND at_ms > ?2 - ?4) AS n,
  (SELECT at_ms FROM rate_hit WHERE bucket = ?1 AND at_ms > ?2 - ?4 ORDER BY at_ms DESC LIMIT 1 OFFSET ?3 - 1) AS blocking",
];

/// Counts one call at `now_ms` on the bucket `name`, `limit` a minute; [`decision`] reads the rows.
pub fn hit(name: &str, limit: u32, now_ms: i64) -> Vec<Stmt> {
    let cap = capacity(limit) as i64;
    SQL.iter().map(|&s| stmt!(s, name, now_ms, cap, PERIOD_MS)).collect()
}

/// What the rows of [`hit`] or [`hit_key`] decided.
pub fn decision(rows: &[Vec<Row>], limit: u32, now_ms: i64) -> DbResult<Decision> {
    let [_, inserted, state] = rows else {
        return Err(DbError::Other(format!("a rate hit answered {} results, not 3", rows.len())));
    };
    let int = |k: &str| state.first().and_then(|r| r.get(k)).and_then(serde_json::Value::as_i64);
    let cap = capacity(limit) as i64;
    Ok(if inserted.is_empty() {
        let blocking = int("blocking").unwrap_or(now_ms - PERIOD_MS);
        Decision::Limited { retry_after_ms: (blocking + PERIOD_MS - now_ms).max(1) }
    } else {
        Decision::Allowed { remaining: (cap - int("n").unwrap_or(cap)).max(0) as u32 }
    })
}
