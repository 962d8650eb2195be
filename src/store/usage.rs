//! The usage ledger and the wallet. Money moves only in atomic batches that write the ledger entry
//! explaining it: a model call holds what it may cost ([`hold`]) and settles what it did cost
//! ([`settle`]), a paid run moves its price between two wallets ([`pay_run`]), and money comes in only
//! with its receipt ([`credit`]: a Stripe event's once, or the admin's). Entry ids are the step's or the
//! run's own, so a replay is never charged twice; no statement here moves a wallet below zero (and the
//! `workspace_balance_never_below_zero` trigger refuses any that would).

use super::{rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// One model call's charge, as its ledger entry records it.
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

/// What a workspace's wallet and a task's budget allow, read in one round trip before a turn begins.
#[derive(Debug, Deserialize)]
pub struct Standing {
    /// `None` when the workspace is gone.
    pub slug: Option<String>,
    pub balance_cents: Option<i64>,
    pub task_budget_cents: Option<i64>,
    pub task_spent_cents: i64,
    /// The session's run price is paid already (a replayed start).
    #[serde(deserialize_with = "super::int_bool")]
    pub run_paid: bool,
}

const STANDING: &str = "SELECT (SELECT slug FROM workspace WHERE workspace_id = ?1) AS slug,
    (SELECT balance_cents FROM workspace WHERE workspace_id = ?1) AS balance_cents,
    (SELECT budget_cents FROM task WHERE task_id = ?2) AS task_budget_cents,
    (SELECT COALESCE(SUM(spent_cents + (reported_micro_usd + 9999) / 10000), 0) FROM session WHERE task_id = ?2)
      AS task_spent_cents,
    EXISTS (SELECT 1 FROM usage_entry WHERE entry_id = ?3) AS run_paid";

pub async fn standing(db: &dyn Sql, workspace_id: &str, task_id: &str, session_id: &str) -> DbResult<Standing> {
    super::first(db, stmt!(STANDING, workspace_id, task_id, run_entry_id(session_id)))
        .await?
        .ok_or_else(|| super::DbError::Other("standing returned no row".into()))
}

/// What [`hold`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// The money is held (now, or by an earlier run of the same step).
    Held,
    /// The step was settled before (a replay): it is not charged again, so nothing is held.
    Settled,
    /// The wallet holds less than the call may cost.
    Short { balance_cents: i64 },
}

/// Debits the hold only when it is new, the step unsettled and the wallet covers it.
const HOLD_DEBIT: &str = "UPDATE workspace SET balance_cents = balance_cents - ?3
  WHERE workspace_id = ?2 AND balance_cents >= ?3
    AND NOT EXISTS (SELECT 1 FROM wallet_hold WHERE hold_id = ?1)
    AND NOT EXISTS (SELECT 1 FROM usage_entry WHERE entry_id = ?1)";
/// Records the hold only if the debit just before it (same batch) happened.
const HOLD_INSERT: &str =
    "INSERT INTO wallet_hold (hold_id, workspace_id, cents, created_ms) SELECT ?1, ?2, ?3, ?4 WHERE changes() = 1";
const HOLD_STATE: &str = "SELECT EXISTS (SELECT 1 FROM wallet_hold WHERE hold_id = ?1) AS held,
    EXISTS (SELECT 1 FROM usage_entry WHERE entry_id = ?1) AS settled,
    COALESCE((SELECT balance_cents FROM workspace WHERE workspace_id = ?2), 0) AS balance_cents";

/// Holds `cents` of the wallet for the call that settles into entry `hold_id`, in one atomic batch.
pub async fn hold(db: &dyn Sql, hold_id: &str, workspace_id: &str, cents: i64, now_ms: i64) -> DbResult<Hold> {
    #[derive(Deserialize)]
    struct State {
        #[serde(deserialize_with = "super::int_bool")]
        held: bool,
        #[serde(deserialize_with = "super::int_bool")]
        settled: bool,
        balance_cents: i64,
    }
    let cents = cents.max(1);
    let mut results = db
        .batch(vec![
            stmt!(HOLD_DEBIT, hold_id, workspace_id, cents),
            stmt!(HOLD_INSERT, hold_id, workspace_id, cents, now_ms),
            stmt!(HOLD_STATE, hold_id, workspace_id),
        ])
        .await?;
    let row = results.pop().and_then(|rows| rows.into_iter().next());
    let state: State = super::decode(row.ok_or_else(|| super::DbError::Other("hold state missing".into()))?)?;
    Ok(match state {
        State { settled: true, .. } => Hold::Settled,
        State { held: true, .. } => Hold::Held,
        State { balance_cents, .. } => Hold::Short { balance_cents },
    })
}

/// The call's entry: its real price, or as much of it as the hold and the rest of the wallet cover (so
/// the wallet reaches zero, never below). Nothing for a call that used nothing; nothing twice.
const SETTLE_ENTRY: &str = "INSERT INTO usage_entry (entry_id, workspace_id, session_id, key_id, agent_id, model, cents,
    input_tokens, output_tokens, created_ms, kind)
  SELECT ?1, w.workspace_id, ?3, ?4, ?5, ?6,
    MIN(?7, w.balance_cents + COALESCE((SELECT h.cents FROM wallet_hold h WHERE h.hold_id = ?1), 0)), ?8, ?9, ?10, 'model'
  FROM workspace w WHERE w.workspace_id = ?2 AND (?7 > 0 OR ?8 > 0 OR ?9 > 0)
  ON CONFLICT (entry_id) DO NOTHING";
/// Gives the hold back and takes what the entry just written (same batch) charged, in one move.
pub(super) const SETTLE_WALLET: &str = "UPDATE workspace SET balance_cents = balance_cents
    + COALESCE((SELECT cents FROM wallet_hold WHERE hold_id = ?1), 0)
    - CASE WHEN changes() = 1 THEN (SELECT cents FROM usage_entry WHERE entry_id = ?1) ELSE 0 END
  WHERE workspace_id = ?2";
pub(super) const SETTLE_RELEASE: &str = "DELETE FROM wallet_hold WHERE hold_id = ?1";
const SETTLED: &str = "SELECT cents FROM usage_entry WHERE entry_id = ?1";

/// Settles a held call into its ledger entry and releases the rest of the hold, once: a replay finds the
/// entry and only releases. Returns the cents the entry charged (the first settlement's, on a replay).
pub async fn settle(db: &dyn Sql, e: &Entry<'_>) -> DbResult<i64> {
    Ok(settle_claiming(db, e).await?.0)
}

/// [`settle`], and in the same batch the automatic top-up when the settlement left the wallet under its
/// threshold ([`super::billing::CLAIM_AUTO`]): the top-up to start, if this settlement claimed it.
pub async fn settle_claiming(db: &dyn Sql, e: &Entry<'_>) -> DbResult<(i64, Option<super::billing::AutoTopUp>)> {
    #[derive(Deserialize)]
    struct Row {
        cents: i64,
    }
    let mut results = db
        .batch(vec![
            stmt!(
                SETTLE_ENTRY,
                e.entry_id,
                e.workspace_id,
                e.session_id,
                e.key_id,
                e.agent_id,
                e.model,
                e.cents.max(0),
                e.input_tokens,
                e.output_tokens,
                e.now_ms
            ),
            stmt!(SETTLE_WALLET, e.entry_id, e.workspace_id),
            stmt!(SETTLE_RELEASE, e.entry_id),
            stmt!(SETTLED, e.entry_id),
            stmt!(super::billing::CLAIM_AUTO, e.workspace_id, e.now_ms, super::billing::AUTO_PENDING_MS),
        ])
        .await?;
    let claimed = results.pop().and_then(|rows| rows.into_iter().next()).map(super::decode).transpose()?;
    let row = results.pop().and_then(|rows| rows.into_iter().next());
    Ok((row.map(super::decode::<Row>).transpose()?.map_or(0, |r| r.cents), claimed))
}

/// The caller's entry of a session's paid run: one per session, so a run is paid once.
fn run_entry_id(session_id: &str) -> String {
    format!("run_{session_id}")
}

/// A paid run: the caller's wallet pays the agent's owner its price.
pub struct RunPayment<'a> {
    pub session_id: &'a str,
    pub payer_workspace_id: &'a str,
    pub payee_workspace_id: &'a str,
    pub key_id: Option<&'a str>,
    pub agent_id: &'a str,
    pub cents: i64,
    pub now_ms: i64,
}

/// The caller's entry, only if its wallet covers the price and the owner's workspace exists.
const PAY_ENTRY: &str = "INSERT INTO usage_entry (entry_id, workspace_id, session_id, key_id, agent_id, model, cents,
    created_ms, kind)
  SELECT ?1, w.workspace_id, ?3, ?4, ?5, 'run_price', ?6, ?7, 'run_price' FROM workspace w
  WHERE w.workspace_id = ?2 AND w.balance_cents >= ?6 AND EXISTS (SELECT 1 FROM workspace p WHERE p.workspace_id = ?8)
  ON CONFLICT (entry_id) DO NOTHING";
const PAY_DEBIT: &str =
    "UPDATE workspace SET balance_cents = balance_cents - ?2 WHERE workspace_id = ?1 AND changes() = 1";
/// The owner's entry (negative: money in), without the caller's session or key, which are not theirs to see.
const EARN_ENTRY: &str = "INSERT INTO usage_entry (entry_id, workspace_id, session_id, key_id, agent_id, model, cents,
    created_ms, kind)
  SELECT ?1, ?2, NULL, NULL, ?3, 'run_earning', -?4, ?5, 'run_earning' WHERE changes() = 1
  ON CONFLICT (entry_id) DO NOTHING";
const EARN_CREDIT: &str =
    "UPDATE workspace SET balance_cents = balance_cents + ?2 WHERE workspace_id = ?1 AND changes() = 1";
const PAID: &str = "SELECT 1 AS paid FROM usage_entry WHERE entry_id = ?1";

/// Moves a run's price from the caller's wallet to the owner's as one pair of entries, once per session
/// (a replay finds the pair and moves nothing). `false` when the caller's wallet cannot cover it.
pub async fn pay_run(db: &dyn Sql, p: &RunPayment<'_>) -> DbResult<bool> {
    let paid = run_entry_id(p.session_id);
    let earned = format!("{paid}_earned");
    let results = db
        .batch(vec![
            stmt!(
                PAY_ENTRY,
                paid.as_str(),
                p.payer_workspace_id,
                p.session_id,
                p.key_id,
                p.agent_id,
                p.cents,
                p.now_ms,
                p.payee_workspace_id
            ),
            stmt!(PAY_DEBIT, p.payer_workspace_id, p.cents),
            stmt!(EARN_ENTRY, earned.as_str(), p.payee_workspace_id, p.agent_id, p.cents, p.now_ms),
            stmt!(EARN_CREDIT, p.payee_workspace_id, p.cents),
            stmt!(PAID, paid.as_str()),
        ])
        .await?;
    Ok(results.last().is_some_and(|rows| !rows.is_empty()))
}

const RELEASE_STALE: &str = "UPDATE workspace SET balance_cents = balance_cents
    + (SELECT SUM(h.cents) FROM wallet_hold h WHERE h.workspace_id = workspace.workspace_id AND h.created_ms < ?1)
  WHERE workspace_id IN (SELECT workspace_id FROM wallet_hold WHERE created_ms < ?1)";
const DROP_STALE: &str = "DELETE FROM wallet_hold WHERE created_ms < ?1";

/// Gives back holds older than `before_ms`: their step died before settling (a replay that comes later
/// holds again, and settles against the wallet as it then is).
pub async fn release_stale(db: &dyn Sql, before_ms: i64) -> DbResult<()> {
    db.batch(vec![stmt!(RELEASE_STALE, before_ms), stmt!(DROP_STALE, before_ms)]).await.map(drop)
}

/// Money in: a receipt says where it came from. Source `checkout` or `auto` is a Stripe event's, applied
/// once: its id goes in first and the rest happens only when it did (a redelivered event changes nothing),
/// and a Stripe object (checkout session, payment intent) credits at most once whatever event names it.
pub struct Credit<'a> {
    pub receipt_id: &'a str,
    pub workspace_id: &'a str,
    /// `checkout`, `auto` or `admin`.
    pub source: &'a str,
    pub cents: i64,
    pub stripe_object_id: Option<&'a str>,
    /// The Stripe event's id and type.
    pub event: Option<(&'a str, &'a str)>,
    pub now_ms: i64,
}

const CREDIT_EVENT: &str =
    "INSERT INTO stripe_event (event_id, type, applied_ms) VALUES (?1, ?2, ?3) ON CONFLICT (event_id) DO NOTHING";
const CREDIT_RECEIPT: &str = "INSERT INTO credit_receipt (receipt_id, workspace_id, source, cents, stripe_object_id,
    stripe_event_id, created_ms)
  SELECT ?1, w.workspace_id, ?3, ?4, ?5, ?6, ?7 FROM workspace w
  WHERE w.workspace_id = ?2 AND (?6 IS NULL OR changes() = 1)
  ON CONFLICT DO NOTHING";
const CREDIT_WALLET: &str = "UPDATE workspace SET balance_cents = balance_cents + ?2
  WHERE workspace_id = ?1 AND changes() = 1 RETURNING balance_cents";
/// An automatic top-up that arrived ends the one in flight, so the next can fire.
const CREDIT_ENDS_PENDING: &str = "UPDATE billing_account SET auto_pending_ms = NULL, auto_last_error = NULL
  WHERE workspace_id = ?1 AND ?2 = 'auto' AND changes() = 1";

/// Credits the wallet with its receipt in one atomic batch. The new balance, or `None` when nothing was
/// credited (the event or the Stripe object was applied before, or the workspace is gone).
pub async fn credit(db: &dyn Sql, c: &Credit<'_>) -> DbResult<Option<i64>> {
    #[derive(Deserialize)]
    struct Row {
        balance_cents: i64,
    }
    let (event_id, event_type) = c.event.unzip();
    let mut batch = Vec::with_capacity(4);
    if let (Some(id), Some(kind)) = (event_id, event_type) {
        batch.push(stmt!(CREDIT_EVENT, id, kind, c.now_ms));
    }
    batch.push(stmt!(
        CREDIT_RECEIPT,
        c.receipt_id,
        c.workspace_id,
        c.source,
        c.cents,
        c.stripe_object_id,
        event_id,
        c.now_ms
    ));
    batch.push(stmt!(CREDIT_WALLET, c.workspace_id, c.cents));
    batch.push(stmt!(CREDIT_ENDS_PENDING, c.workspace_id, c.source));
    let mut results = db.batch(batch).await?;
    results.pop();
    let row = results.pop().and_then(|rows| rows.into_iter().next());
    Ok(row.map(super::decode::<Row>).transpose()?.map(|r| r.balance_cents))
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
    /// `model` (usage), `run_price` (a paid public agent's price), `run_earning` (your agent's price,
    /// paid to you: negative cents) or `sandbox` (a hosted sandbox's running time).
    pub kind: String,
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
        "SELECT entry_id, kind, session_id, key_id, agent_id, model, cents, input_tokens, output_tokens, created_ms
      FROM usage_entry WHERE session_id = ?1 ORDER BY created_ms DESC, entry_id DESC LIMIT ?2";
    rows(db, stmt!(NEWEST, session_id, limit)).await
}
