//! Hosted sandboxes' boots (`sandbox_boot`): each start of a session's sandbox, what it ran and what its
//! time cost. A boot holds the wallet before its container starts ([`super::usage::hold`], under the boot's
//! id); its runner's calls mark it ready and alive ([`super::runners::by_token`]); it settles once, when
//! it is seen asleep, stopped or failed, into a `sandbox` ledger entry of the same id ([`settle`]).
//!
//! Must never: charge a boot twice, or round a session's sandbox time up more than once (each boot is
//! charged what the session's whole time costs, rounded up to a cent, less what its earlier boots paid).

use super::{rows, DbResult, Sql};
use crate::stmt;
use serde::Deserialize;

/// Records a boot about to start (its hold, if any, is taken already), with the hosts it may reach.
pub async fn started(
    db: &dyn Sql,
    boot_id: &str,
    workspace_id: &str,
    session_id: &str,
    egress: &[String],
    now_ms: i64,
) -> DbResult<()> {
    const INSERT: &str = "INSERT INTO sandbox_boot (boot_id, workspace_id, session_id, egress, started_ms, seen_ms)
      VALUES (?1, ?2, ?3, ?4, ?5, ?5)";
    let egress = serde_json::to_string(egress).unwrap_or_else(|_| "[]".into());
    db.all(stmt!(INSERT, boot_id, workspace_id, session_id, egress, now_ms)).await.map(drop)
}

/// The hosts the session's newest boot may reach; none when it has no boot.
pub async fn egress(db: &dyn Sql, session_id: &str) -> DbResult<Vec<String>> {
    #[derive(Deserialize)]
    struct Row {
        #[serde(deserialize_with = "super::json_text")]
        egress: Vec<String>,
    }
    const EGRESS: &str = "SELECT egress FROM sandbox_boot WHERE session_id = ?1 ORDER BY started_ms DESC LIMIT 1";
    Ok(super::first::<Row>(db, stmt!(EGRESS, session_id)).await?.map(|r| r.egress).unwrap_or_default())
}

/// Marks the open boot of the sandbox whose runner holds `token_hash` seen now (and ready, the first time);
/// a person's runner has no session, and no boot.
pub(super) const TOUCH: &str = "UPDATE sandbox_boot SET seen_ms = ?2, ready_ms = COALESCE(ready_ms, ?2)
  WHERE ended_ms IS NULL AND session_id = (SELECT session_id FROM runner WHERE token_hash = ?1)";

/// How a boot ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Its runner exited after its idle time (or died): it ran until its runner's last call.
    Asleep,
    /// Its session stopped it now.
    Stopped,
    /// Its container did not start: nothing ran.
    Failed,
}

impl Ended {
    fn word(self) -> &'static str {
        match self {
            Ended::Asleep => "asleep",
            Ended::Stopped => "stopped",
            Ended::Failed => "failed",
        }
    }
}

/// Ends the boot (once) at `?2`, or at its runner's last call when that is NULL, and prices its seconds:
/// the session's sandbox seconds so far at `?4` cents an hour, rounded up, less what its boots paid. (D1
/// binds numbers as reals: they are made integers before they divide.)
const END: &str =
    "UPDATE sandbox_boot SET ended_ms = MAX(started_ms, CAST(COALESCE(?2, seen_ms) AS INTEGER)), ended = ?3,
    seconds = (MAX(started_ms, CAST(COALESCE(?2, seen_ms) AS INTEGER)) - started_ms + 999) / 1000,
    cents = (((SELECT COALESCE(SUM(b.seconds), 0) FROM sandbox_boot b
               WHERE b.session_id = sandbox_boot.session_id AND b.ended_ms IS NOT NULL)
             + (MAX(started_ms, CAST(COALESCE(?2, seen_ms) AS INTEGER)) - started_ms + 999) / 1000)
            * CAST(?4 AS INTEGER) + 3599) / 3600
          - (SELECT COALESCE(SUM(b.cents), 0) FROM sandbox_boot b
             WHERE b.session_id = sandbox_boot.session_id AND b.ended_ms IS NOT NULL)
  WHERE boot_id = ?1 AND ended_ms IS NULL";
/// The boot's ledger entry, when it cost something and was ended just now (same batch): as much of its
/// price as its hold and the rest of the wallet cover, so the wallet reaches zero, never below.
const ENTRY: &str = "INSERT INTO usage_entry (entry_id, workspace_id, session_id, key_id, agent_id, model, cents,
    created_ms, kind)
  SELECT b.boot_id, b.workspace_id, b.session_id, s.started_by_key_id, s.agent_id, 'sandbox',
    MIN(b.cents, w.balance_cents + COALESCE((SELECT h.cents FROM wallet_hold h WHERE h.hold_id = b.boot_id), 0)),
    b.ended_ms, 'sandbox'
  FROM sandbox_boot b JOIN workspace w ON w.workspace_id = b.workspace_id
    LEFT JOIN session s ON s.session_id = b.session_id
  WHERE b.boot_id = ?1 AND changes() = 1 AND b.cents > 0
  ON CONFLICT (entry_id) DO NOTHING";

/// Ends boot `boot_id` and settles its time into the wallet in one atomic batch; a boot ended before is
/// left as it is (and charged nothing again).
pub async fn settle(db: &dyn Sql, boot: &Open, ended: Ended, at_ms: Option<i64>, cents_per_hour: i64) -> DbResult<()> {
    let (boot_id, workspace_id) = (boot.boot_id.as_str(), boot.workspace_id.as_str());
    db.batch(vec![
        stmt!(END, boot_id, at_ms, ended.word(), cents_per_hour.max(0)),
        stmt!(ENTRY, boot_id),
        stmt!(super::usage::SETTLE_WALLET, boot_id, workspace_id),
        stmt!(super::usage::SETTLE_RELEASE, boot_id),
    ])
    .await
    .map(drop)
}

/// A boot not yet ended.
#[derive(Debug, Deserialize)]
pub struct Open {
    pub boot_id: String,
    pub workspace_id: String,
}

/// The open boots of a session, or (with `session_id` `None`) of every session, whose sandbox was last
/// heard from before `seen_before_ms`.
pub async fn open(db: &dyn Sql, session_id: Option<&str>, seen_before_ms: i64) -> DbResult<Vec<Open>> {
    const OPEN: &str = "SELECT boot_id, workspace_id FROM sandbox_boot WHERE ended_ms IS NULL AND seen_ms < ?2
      AND (?1 IS NULL OR session_id = ?1) LIMIT 100";
    rows(db, stmt!(OPEN, session_id, seen_before_ms)).await
}

/// One boot, as the session's sandbox log shows it.
#[derive(Debug, Clone, Deserialize)]
pub struct Boot {
    pub started_ms: i64,
    /// When its runner first called in; `None` while it starts (or if it never did).
    pub ready_ms: Option<i64>,
    /// Its runner's last call.
    pub seen_ms: i64,
    /// `asleep`, `stopped` or `failed`; `None` while it runs.
    pub ended: Option<String>,
    /// Its running time: until it ended, or so far (until its runner's last call).
    pub seconds: i64,
    pub cents: Option<i64>,
}

/// A boot's running time in seconds, as SQL: its own once it ended, else until its runner's last call.
macro_rules! ran {
    () => {
        "COALESCE(seconds, (seen_ms - started_ms + 999) / 1000)"
    };
}

/// A session's newest boots, newest first.
pub async fn recent(db: &dyn Sql, session_id: &str, limit: i64) -> DbResult<Vec<Boot>> {
    const RECENT: &str = concat!(
        "SELECT started_ms, ready_ms, seen_ms, ended, ",
        ran!(),
        " AS seconds, cents FROM sandbox_boot WHERE session_id = ?1 ORDER BY started_ms DESC LIMIT ?2"
    );
    rows(db, stmt!(RECENT, session_id, limit)).await
}

/// A workspace's boots that started in `[from_ms, to_ms)`: their boot times (ready less started, of those
/// that became ready) and their running seconds (ended ones', and open ones' until their last call).
pub async fn window(db: &dyn Sql, workspace_id: &str, from_ms: i64, to_ms: i64) -> DbResult<Vec<(Option<i64>, i64)>> {
    #[derive(Deserialize)]
    struct Row {
        boot_ms: Option<i64>,
        seconds: i64,
    }
    const WINDOW: &str = concat!(
        "SELECT ready_ms - started_ms AS boot_ms, ",
        ran!(),
        " AS seconds FROM sandbox_boot WHERE workspace_id = ?1 AND started_ms >= ?2 AND started_ms < ?3 LIMIT 10000"
    );
    let found = rows::<Row>(db, stmt!(WINDOW, workspace_id, from_ms, to_ms)).await?;
    Ok(found.into_iter().map(|r| (r.boot_ms, r.seconds)).collect())
}
