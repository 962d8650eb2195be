//! The per-minute log of a key's bucket in D1 (`rate_log`), as an exact sliding window
//! ([`crate::rules::rate`]): a call passes only while fewer than `capacity` calls passed in the window
//! before it, decided in one atomic batch, so racing calls from any isolate never pass together. The
//! statements ride in the batch of the call's own first statement ([`super::Counted::ride`]), so
//! counting costs no round trip of its own.
//!
//! Every statement is a seek on the primary key, whatever the limit: passed calls are numbered per bucket
//! (`seq`) and their times never go back (a call from a clock behind the last one counts at the last
//! one's time), so after the prune a bucket holds one run of numbers, all inside the window, and its
//! count is `last - first + 1`. The call that must leave before another fits is number
//! `last - capacity + 1`.

use super::{DbError, DbResult, Row, Stmt};
use crate::rules::rate::{capacity, Decision};
use crate::stmt;

/// One window; the key buckets count calls per minute.
pub const PERIOD_MS: i64 = 60_000;

/// Whatever left the window (`?1`: its start), any bucket's: a bucket keeps only calls inside it.
const PRUNE: &str = "DELETE FROM rate_log WHERE at_ms <= ?1";
/// Counts a call at `?2` on the bucket `?1` while fewer than `?3` (the capacity) are in it.
const COUNT: &str = "INSERT INTO rate_log (bucket, seq, at_ms)
  SELECT ?1, COALESCE(l.seq, 0) + 1, MAX(?2, COALESCE(l.at_ms, ?2))
  FROM (SELECT 1) LEFT JOIN (SELECT seq, at_ms FROM rate_log WHERE bucket = ?1 ORDER BY seq DESC LIMIT 1) l
  WHERE COALESCE(l.seq - (SELECT seq FROM rate_log WHERE bucket = ?1 ORDER BY seq LIMIT 1) + 1, 0) < ?3
  RETURNING seq";
/// How many of the bucket `?1` passed now, and the call that must leave the window before another fits.
const STATE: &str = "SELECT l.seq - f.seq + 1 AS n,
  (SELECT at_ms FROM rate_log WHERE bucket = ?1 AND seq = l.seq - ?2 + 1) AS blocking
  FROM (SELECT seq FROM rate_log WHERE bucket = ?1 ORDER BY seq DESC LIMIT 1) l,
  (SELECT seq FROM rate_log WHERE bucket = ?1 ORDER BY seq LIMIT 1) f";

/// Counts one call at `now_ms` on the bucket `name`, `limit` a minute; [`decision`] reads the rows.
pub fn hit(name: &str, limit: u32, now_ms: i64) -> Vec<Stmt> {
    let cap = capacity(limit) as i64;
    vec![stmt!(PRUNE, now_ms - PERIOD_MS), stmt!(COUNT, name, now_ms, cap), stmt!(STATE, name, cap)]
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
