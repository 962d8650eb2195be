//! What agents wait on (requests), what they were given (grants), and the session tokens agents call
//! with. Their uses are in the audit log ([`super::audit`]).

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};
use serde_json::Value;

crate::rules::params::words! {
    /// Where a request stands: `open` until answered, or until it `expired` (nobody answered in the
    /// workspace's time), was `closed` (its session ended) or `withdrawn` (the agent took it back).
    pub enum RequestStatus {
        Open = "open",
        Answered = "answered",
        Expired = "expired",
        Closed = "closed",
        Withdrawn = "withdrawn",
    }
}

crate::rules::params::words! {
    /// Where a grant stands: `pending` while its request is open, then `active` or `denied`; an active
    /// one may be `revoked`. (A grant past its time is still `active` here: see `domain::grants::live`.)
    pub enum GrantStatus {
        Pending = "pending",
        Active = "active",
        Denied = "denied",
        Revoked = "revoked",
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct RequestRow {
    pub request_id: String,
    #[serde(skip_serializing, default)]
    pub workspace_id: String,
    pub task_id: String,
    pub session_id: String,
    /// `access`, `plan`, `decision` or `question`.
    pub kind: String,
    /// What was asked: for access `{target, connector_id, scope, reason}`; for a plan
    /// `{summary, files}`; for a decision `{prompt, options}`; for a question `{prompt}`.
    #[serde(deserialize_with = "super::json_text")]
    pub payload: Value,
    pub status: RequestStatus,
    #[serde(deserialize_with = "json_opt")]
    pub answer: Option<Value>,
    pub answered_by: Option<String>,
    pub created_ms: i64,
    /// When it ended (answered, expired, closed or withdrawn).
    pub answered_ms: Option<i64>,
    /// When it expires unanswered (the workspace's request expiry after it opened).
    #[serde(default)]
    pub expires_ms: Option<i64>,
}

/// A request row's columns, in [`RequestRow`]'s order.
macro_rules! request_cols {
    () => {
        "request_id, workspace_id, task_id, session_id, kind, payload, status, answer, answered_by, created_ms, answered_ms, expires_ms"
    };
}

fn json_opt<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    let text = Option::<String>::deserialize(d)?;
    text.map(|t| serde_json::from_str(&t).map_err(serde::de::Error::custom)).transpose()
}

/// Opens a request, expiring after the workspace's request expiry. With a `dedupe_key`, nothing is
/// inserted while the session has an open request with the same key; with `answered_since` too, nor when
/// one with that key was answered since then ([`same_request`] finds either). Returns the id when it
/// opened.
#[allow(clippy::too_many_arguments)]
pub fn insert_request(
    request_id: &str,
    workspace_id: &str,
    task_id: &str,
    session_id: &str,
    kind: &str,
    payload: &Value,
    dedupe_key: Option<&str>,
    answered_since: Option<i64>,
    now_ms: i64,
) -> super::Stmt {
    // `task_id` leads the answered lookup so it runs on the `request_open (task_id, status, …)` index.
    const INSERT: &str = "INSERT INTO request (request_id, workspace_id, task_id, session_id, kind, payload, status,
        created_ms, expires_ms, dedupe_key)
      SELECT ?1, ?2, ?3, ?4, ?5, ?6, 'open', ?7,
        ?7 + 60000 * COALESCE((SELECT request_expiry_minutes FROM workspace WHERE workspace_id = ?2), 1440), ?8
      WHERE ?9 IS NULL OR NOT EXISTS (SELECT 1 FROM request WHERE task_id = ?3 AND status = 'answered'
        AND session_id = ?4 AND dedupe_key = ?8 AND answered_ms >= ?9)
      ON CONFLICT DO NOTHING RETURNING request_id";
    stmt!(
        INSERT,
        request_id,
        workspace_id,
        task_id,
        session_id,
        kind,
        payload.to_string(),
        now_ms,
        dedupe_key,
        answered_since
    )
}

/// The session's open request with this dedupe key, if any.
pub async fn open_duplicate(db: &dyn Sql, session_id: &str, dedupe_key: &str) -> DbResult<Option<RequestRow>> {
    const GET: &str = concat!(
        "SELECT ",
        request_cols!(),
        " FROM request WHERE session_id = ?1 AND dedupe_key = ?2 AND status = 'open'"
    );
    first(db, stmt!(GET, session_id, dedupe_key)).await
}

/// The request of the session's task that an [`insert_request`] with this dedupe key gave way to: the
/// session's open one with that key, else the last one answered since `answered_since`.
pub async fn same_request(
    db: &dyn Sql,
    task_id: &str,
    session_id: &str,
    dedupe_key: &str,
    answered_since: i64,
) -> DbResult<Option<RequestRow>> {
    const GET: &str = concat!(
        "SELECT ",
        request_cols!(),
        " FROM request WHERE task_id = ?1 AND status IN ('open', 'answered') AND session_id = ?2 AND dedupe_key = ?3
          AND (status = 'open' OR answered_ms >= ?4)
        ORDER BY status = 'open' DESC, answered_ms DESC LIMIT 1"
    );
    first(db, stmt!(GET, task_id, session_id, dedupe_key, answered_since)).await
}

pub async fn get_request(db: &dyn Sql, request_id: &str) -> DbResult<Option<RequestRow>> {
    const GET: &str = concat!("SELECT ", request_cols!(), " FROM request WHERE request_id = ?1");
    first(db, stmt!(GET, request_id)).await
}

/// A task's open requests, oldest first.
pub async fn open_in_task(db: &dyn Sql, task_id: &str) -> DbResult<Vec<RequestRow>> {
    const OPEN: &str = concat!(
        "SELECT ",
        request_cols!(),
        " FROM request WHERE task_id = ?1 AND status = 'open' ORDER BY created_ms, request_id LIMIT 200"
    );
    rows(db, stmt!(OPEN, task_id)).await
}

/// A session's open requests that have not expired, oldest first: what its agent waits on.
pub async fn open_for_session(db: &dyn Sql, session_id: &str, now_ms: i64) -> DbResult<Vec<RequestRow>> {
    const OPEN: &str = concat!(
        "SELECT ",
        request_cols!(),
        " FROM request WHERE session_id = ?1 AND status = 'open' AND (expires_ms IS NULL OR expires_ms > ?2)
          ORDER BY created_ms, request_id LIMIT 20"
    );
    rows(db, stmt!(OPEN, session_id, now_ms)).await
}

/// An open request with who asks and in which task: what a person needs to decide it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpenRequest {
    #[serde(flatten)]
    pub request: RequestRow,
    /// The agent that asks.
    pub agent_name: String,
    pub agent_id: String,
    /// The asking session's title (its first message, cut short).
    pub session_title: String,
    /// The task's title.
    pub task_title: String,
    /// What approving would allow, in words (access requests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub would_allow: Option<String>,
    /// Who approved it so far, by name, when its target needs more than one approval.
    #[serde(default, deserialize_with = "super::json_text", skip_serializing_if = "Vec::is_empty")]
    pub approved_by: Vec<String>,
}

/// A workspace's open requests, newest first; with `after`, only those opened after that
/// `(created_ms, request_id)`.
pub async fn open_in_workspace(
    db: &dyn Sql,
    workspace_id: &str,
    after: Option<(i64, String)>,
    limit: i64,
    now_ms: i64,
) -> DbResult<Vec<OpenRequest>> {
    const OPEN: &str = "SELECT r.request_id, r.workspace_id, r.task_id, r.session_id, r.kind, r.payload, r.status,
        r.answer, r.answered_by, r.created_ms, r.answered_ms, r.expires_ms,
        COALESCE(s.agent_name, '') AS agent_name, COALESCE(s.agent_id, '') AS agent_id,
        COALESCE(s.title, '') AS session_title, COALESCE(t.title, '') AS task_title,
        (SELECT json_group_array(a.name) FROM request_approval ra JOIN account a ON a.account_id = ra.account_id
          WHERE ra.request_id = r.request_id) AS approved_by
      FROM request r LEFT JOIN session s ON s.session_id = r.session_id LEFT JOIN task t ON t.task_id = r.task_id
      WHERE r.workspace_id = ?1 AND r.status = 'open' AND (r.expires_ms IS NULL OR r.expires_ms > ?5)
        AND (?2 IS NULL OR r.created_ms > ?2 OR (r.created_ms = ?2 AND r.request_id > ?3))
      ORDER BY r.created_ms DESC, r.request_id DESC LIMIT ?4";
    let (at, id) = after.map_or((None, None), |(a, i)| (Some(a), Some(i)));
    rows(db, stmt!(OPEN, workspace_id, at, id, limit, now_ms)).await
}

/// Where an open request stands in its task's queue (1 = next).
pub async fn queue_position(db: &dyn Sql, task_id: &str, created_ms: i64) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        n: i64,
    }
    const POS: &str = "SELECT COUNT(*) AS n FROM request WHERE task_id = ?1 AND status = 'open' AND created_ms <= ?2";
    Ok(first::<Row>(db, stmt!(POS, task_id, created_ms)).await?.map_or(1, |r| r.n.max(1)))
}

/// Answers an open request once: `false` when it was already answered or expired.
pub fn answer_request(request_id: &str, answer: &Value, by: &str, now_ms: i64) -> super::Stmt {
    const ANSWER: &str = "UPDATE request SET status = 'answered', answer = ?2, answered_by = ?3, answered_ms = ?4
      WHERE request_id = ?1 AND status = 'open' AND (expires_ms IS NULL OR expires_ms > ?4) RETURNING request_id";
    stmt!(ANSWER, request_id, answer.to_string(), by, now_ms)
}

/// Ends an open request without an answer (`expired`, `closed` or `withdrawn`): the request as it now
/// stands, or `None` when it was no longer open.
pub async fn end_request(
    db: &dyn Sql,
    request_id: &str,
    status: RequestStatus,
    now_ms: i64,
) -> DbResult<Option<RequestRow>> {
    const END: &str = concat!(
        "UPDATE request SET status = ?2, answered_ms = ?3 WHERE request_id = ?1 AND status = 'open' RETURNING ",
        request_cols!()
    );
    first(db, stmt!(END, request_id, status.as_str(), now_ms)).await
}

pub async fn expire_request(db: &dyn Sql, request_id: &str, now_ms: i64) -> DbResult<Option<RequestRow>> {
    end_request(db, request_id, RequestStatus::Expired, now_ms).await
}

/// Closes every open request of a session that ended: the requests closed.
pub async fn close_for_session(db: &dyn Sql, session_id: &str, now_ms: i64) -> DbResult<Vec<RequestRow>> {
    const CLOSE: &str = concat!(
        "UPDATE request SET status = 'closed', answered_ms = ?2 WHERE session_id = ?1 AND status = 'open' RETURNING ",
        request_cols!()
    );
    rows(db, stmt!(CLOSE, session_id, now_ms)).await
}

/// Expires the open requests past their time (in one workspace, or everywhere): the requests expired.
pub async fn expire_due(db: &dyn Sql, workspace_id: Option<&str>, now_ms: i64) -> DbResult<Vec<RequestRow>> {
    const EXPIRE: &str = concat!(
        "UPDATE request SET status = 'expired', answered_ms = ?1
      WHERE status = 'open' AND expires_ms <= ?1 AND (?2 IS NULL OR workspace_id = ?2) RETURNING ",
        request_cols!()
    );
    rows(db, stmt!(EXPIRE, now_ms, workspace_id)).await
}

/// How long a workspace's requests stay open unanswered, in minutes.
pub async fn expiry_minutes(db: &dyn Sql, workspace_id: &str) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        request_expiry_minutes: i64,
    }
    const GET: &str = "SELECT request_expiry_minutes FROM workspace WHERE workspace_id = ?1";
    Ok(first::<Row>(db, stmt!(GET, workspace_id)).await?.map_or(1440, |r| r.request_expiry_minutes))
}

pub async fn set_expiry_minutes(db: &dyn Sql, workspace_id: &str, minutes: i64) -> DbResult<()> {
    const SET: &str = "UPDATE workspace SET request_expiry_minutes = ?2 WHERE workspace_id = ?1";
    db.all(stmt!(SET, workspace_id, minutes)).await.map(drop)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GrantRow {
    pub grant_id: String,
    pub workspace_id: String,
    pub session_id: String,
    pub task_id: String,
    pub connector_id: String,
    pub scopes: String,
    pub status: GrantStatus,
    #[serde(deserialize_with = "super::int_bool")]
    pub persistent: bool,
    pub expires_ms: Option<i64>,
    pub decided_by: Option<String>,
    pub request_id: Option<String>,
    pub created_ms: i64,
}

#[derive(Clone, Copy)]
pub struct NewGrant<'a> {
    pub grant_id: &'a str,
    pub workspace_id: &'a str,
    pub session_id: &'a str,
    pub task_id: &'a str,
    pub connector_id: &'a str,
    pub scopes: &'a str,
    pub status: GrantStatus,
    pub persistent: bool,
    pub expires_ms: Option<i64>,
    pub decided_by: Option<&'a str>,
    pub request_id: Option<&'a str>,
    pub now_ms: i64,
}

/// A grant's row inserted by `SELECT`, followed by what the insert waits for (nothing, or a condition).
macro_rules! insert_grant_sql {
    ($condition:literal) => {
        concat!(
            "INSERT INTO grant_ (grant_id, workspace_id, session_id, task_id, connector_id, scopes, status, persistent,
            expires_ms, decided_by, request_id, created_ms) SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12",
            $condition
        )
    };
}

pub fn insert_grant(g: &NewGrant<'_>) -> super::Stmt {
    grant_stmt(insert_grant_sql!(""), g)
}

/// Inserts the pending grant of a request only when that request was inserted (not a duplicate).
pub fn insert_grant_for_request(g: &NewGrant<'_>) -> super::Stmt {
    grant_stmt(insert_grant_sql!(" WHERE EXISTS (SELECT 1 FROM request WHERE request_id = ?11)"), g)
}

fn grant_stmt(sql: &'static str, g: &NewGrant<'_>) -> super::Stmt {
    stmt!(
        sql,
        g.grant_id,
        g.workspace_id,
        g.session_id,
        g.task_id,
        g.connector_id,
        g.scopes,
        g.status.as_str(),
        g.persistent,
        g.expires_ms,
        g.decided_by,
        g.request_id,
        g.now_ms
    )
}

pub async fn get_grant(db: &dyn Sql, grant_id: &str) -> DbResult<Option<GrantRow>> {
    const GET: &str =
        "SELECT grant_id, workspace_id, session_id, task_id, connector_id, scopes, status, persistent, expires_ms,
        decided_by, request_id, created_ms FROM grant_ WHERE grant_id = ?1";
    first(db, stmt!(GET, grant_id)).await
}

pub async fn grant_for_request(db: &dyn Sql, request_id: &str) -> DbResult<Option<GrantRow>> {
    const GET: &str =
        "SELECT grant_id, workspace_id, session_id, task_id, connector_id, scopes, status, persistent, expires_ms,
        decided_by, request_id, created_ms FROM grant_ WHERE request_id = ?1";
    first(db, stmt!(GET, request_id)).await
}

/// The grants a session can use: its own, and the workspace's persistent ones.
pub async fn grants_for_session(db: &dyn Sql, workspace_id: &str, session_id: &str) -> DbResult<Vec<GrantRow>> {
    const LIST: &str =
        "SELECT grant_id, workspace_id, session_id, task_id, connector_id, scopes, status, persistent, expires_ms,
        decided_by, request_id, created_ms FROM grant_
      WHERE (session_id = ?2 OR (workspace_id = ?1 AND persistent = 1)) ORDER BY created_ms LIMIT 500";
    rows(db, stmt!(LIST, workspace_id, session_id)).await
}

/// A workspace's grants in force (active, not expired), newest first.
pub async fn live_grants(db: &dyn Sql, workspace_id: &str, now_ms: i64) -> DbResult<Vec<GrantRow>> {
    const LIST: &str =
        "SELECT grant_id, workspace_id, session_id, task_id, connector_id, scopes, status, persistent, expires_ms,
        decided_by, request_id, created_ms FROM grant_
      WHERE workspace_id = ?1 AND status = 'active' AND (expires_ms IS NULL OR expires_ms > ?2)
      ORDER BY created_ms DESC, grant_id LIMIT 500";
    rows(db, stmt!(LIST, workspace_id, now_ms)).await
}

/// Ends an active grant of the workspace; the revoked grant, or `None` when there is no such active one.
pub async fn revoke_grant(db: &dyn Sql, workspace_id: &str, grant_id: &str) -> DbResult<Option<GrantRow>> {
    const REVOKE: &str = "UPDATE grant_ SET status = 'revoked'
      WHERE grant_id = ?1 AND workspace_id = ?2 AND status = 'active'
      RETURNING grant_id, workspace_id, session_id, task_id, connector_id, scopes, status, persistent, expires_ms,
        decided_by, request_id, created_ms";
    first(db, stmt!(REVOKE, grant_id, workspace_id)).await
}

pub fn decide_grant(
    grant_id: &str,
    status: GrantStatus,
    persistent: bool,
    expires_ms: Option<i64>,
    decided_by: &str,
) -> super::Stmt {
    const DECIDE: &str = "UPDATE grant_ SET status = ?2, persistent = ?3, expires_ms = ?4, decided_by = ?5 WHERE grant_id = ?1 AND status = 'pending'";
    stmt!(DECIDE, grant_id, status.as_str(), persistent, expires_ms, decided_by)
}

/// Stores a session token's hash; with `lease_id`, the token lives only as long as that runner lease,
/// and is stored only while the lease still holds its turn (a cancel may land between the claim and
/// this): `false` when it was not stored.
pub async fn insert_token(
    db: &dyn Sql,
    token_hash: &str,
    session_id: &str,
    workspace_id: &str,
    lease_id: Option<&str>,
    now_ms: i64,
) -> DbResult<bool> {
    const INSERT: &str = "INSERT INTO session_token (token_hash, session_id, workspace_id, lease_id, created_ms)
      SELECT ?1, ?2, ?3, ?4, ?5
      WHERE ?4 IS NULL OR EXISTS (SELECT 1 FROM runner_turn WHERE lease_id = ?4 AND status = 'leased')
      RETURNING token_hash";
    Ok(!db.all(stmt!(INSERT, token_hash, session_id, workspace_id, lease_id, now_ms)).await?.is_empty())
}

/// Revokes the tokens runners were given for a session's turns, except the current lease's.
pub async fn revoke_runner_tokens(db: &dyn Sql, session_id: &str, keep_lease: Option<&str>) -> DbResult<()> {
    const REVOKE: &str =
        "DELETE FROM session_token WHERE session_id = ?1 AND lease_id IS NOT NULL AND (?2 IS NULL OR lease_id <> ?2)";
    db.all(stmt!(REVOKE, session_id, keep_lease)).await.map(drop)
}

/// The live session behind a token: `None` for an unknown token, a terminated session, or a runner's
/// token whose lease no longer holds its turn (cancelled, done or taken over), whether or not it was
/// revoked yet.
pub async fn session_for_token(db: &dyn Sql, token_hash: &str) -> DbResult<Option<super::sessions::SessionRow>> {
    const GET: &str = "SELECT s.session_id, s.workspace_id, s.task_id, s.agent_id, s.agent_name, s.harness, s.model, s.thinking, s.status,
        s.title, s.note, s.budget_cents, s.spent_cents, s.last_message_id, s.relation, s.parent_session_id, s.created_ms, s.updated_ms
      FROM session_token t JOIN session s ON s.session_id = t.session_id
      WHERE t.token_hash = ?1 AND s.status <> 'terminated'
        AND (t.lease_id IS NULL
          OR EXISTS (SELECT 1 FROM runner_turn r WHERE r.lease_id = t.lease_id AND r.status = 'leased'))";
    first(db, stmt!(GET, token_hash)).await
}

/// The accounts that approved `request_id` so far (of a request that needs more than one approval).
pub async fn approvals(db: &dyn Sql, request_id: &str) -> DbResult<Vec<String>> {
    #[derive(Deserialize)]
    struct Row {
        account_id: String,
    }
    const GET: &str = "SELECT account_id FROM request_approval WHERE request_id = ?1 ORDER BY created_ms, account_id";
    Ok(rows::<Row>(db, stmt!(GET, request_id)).await?.into_iter().map(|r| r.account_id).collect())
}

/// Records one approval of an open request, once per account: no row when it was already theirs or the
/// request is no longer open.
pub fn add_approval(request_id: &str, account_id: &str, key_id: &str, channel: &str, now_ms: i64) -> super::Stmt {
    const ADD: &str = "INSERT INTO request_approval (request_id, account_id, key_id, channel, created_ms)
      SELECT ?1, ?2, ?3, ?4, ?5 WHERE EXISTS (SELECT 1 FROM request WHERE request_id = ?1 AND status = 'open')
      ON CONFLICT (request_id, account_id) DO NOTHING RETURNING account_id";
    stmt!(ADD, request_id, account_id, key_id, channel, now_ms)
}

/// The owners and admins of a workspace, and the account whose key started `session_id` (if any).
pub async fn approvers(db: &dyn Sql, workspace_id: &str, session_id: &str) -> DbResult<(Vec<String>, Option<String>)> {
    #[derive(Deserialize)]
    struct Row {
        account_id: String,
        starter: i64,
    }
    const GET: &str = "SELECT account_id, 0 AS starter FROM membership WHERE workspace_id = ?1 AND role IN ('owner', 'admin')
      UNION ALL
      SELECT k.account_id, 1 AS starter FROM session s JOIN api_key k ON k.key_id = s.started_by_key_id WHERE s.session_id = ?2";
    let found: Vec<Row> = rows(db, stmt!(GET, workspace_id, session_id)).await?;
    let starter = found.iter().find(|r| r.starter == 1).map(|r| r.account_id.clone());
    Ok((found.into_iter().filter(|r| r.starter == 0).map(|r| r.account_id).collect(), starter))
}
