//! Lanes and the base folder's history. A lane is a session's own copy of the task folder
//! (`task_file.lane` = its session id); the base has a linear history of commits, one per direct write
//! and one per landing. A lane remembers the commit it last merged (`session.lane_base_seq`).

use super::{first, rows, DbResult, Sql, Stmt};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// A new commit on a task's base, numbered inside the insert so concurrent writers cannot share a number.
/// With `at_head`, it is inserted only while the base's head is still that commit (no row returned else).
#[allow(clippy::too_many_arguments)]
pub fn insert_commit(
    task_id: &str,
    commit_id: &str,
    workspace_id: &str,
    subject: &str,
    body: &str,
    files: &[String],
    session_id: Option<&str>,
    now_ms: i64,
    at_head: Option<i64>,
) -> Stmt {
    const INSERT: &str =
        "INSERT INTO task_commit (task_id, seq, commit_id, workspace_id, subject, body, files, session_id, created_ms)
      SELECT * FROM (SELECT ?1, COALESCE(MAX(seq), 0) + 1 AS seq, ?2, ?3, ?4, ?5, ?6, ?7, ?8 FROM task_commit WHERE task_id = ?1)
      WHERE ?9 IS NULL OR seq = ?9 + 1
      RETURNING seq";
    let files = serde_json::to_string(files).unwrap_or_else(|_| "[]".into());
    stmt!(INSERT, task_id, commit_id, workspace_id, subject, body, files, session_id, now_ms, at_head)
}

/// What a landing writes to the base: the lane's changed files and one commit naming them.
pub struct Landing<'a> {
    pub task_id: &'a str,
    pub workspace_id: &'a str,
    pub session_id: &'a str,
    pub commit_id: &'a str,
    pub subject: &'a str,
    pub body: &'a str,
    pub changes: &'a [LaneChange],
    /// The base commit the lane was merged with and checked against.
    pub head: i64,
    pub now_ms: i64,
}

/// Lands a lane in one atomic batch, only if the base's head is still `head`: every statement is
/// conditional on it (the files and the commit) or on the commit row (the lane's move), so of two
/// landings checked against one head exactly one commits. The new commit's number, or `None` when the
/// base moved meanwhile and nothing was written.
pub async fn land(db: &dyn Sql, l: &Landing<'_>) -> DbResult<Option<i64>> {
    let files: Vec<String> = l.changes.iter().map(|c| c.path.clone()).collect();
    let mut stmts: Vec<Stmt> = l
        .changes
        .iter()
        .map(|c| {
            super::files::write_at_head(
                &super::files::NewVersion {
                    task_id: l.task_id,
                    workspace_id: l.workspace_id,
                    lane: "",
                    path: &c.path,
                    size_bytes: c.size_bytes,
                    sha256: &c.lane_sha,
                    writer_session_id: Some(l.session_id),
                    writer_key_id: None,
                    now_ms: l.now_ms,
                    deleted: c.deleted,
                },
                Some(l.head),
            )
        })
        .collect();
    stmts.push(insert_commit(
        l.task_id,
        l.commit_id,
        l.workspace_id,
        l.subject,
        l.body,
        &files,
        Some(l.session_id),
        l.now_ms,
        Some(l.head),
    ));
    stmts.push(landed(l.session_id, l.task_id, l.commit_id));
    let out = db.batch(stmts).await?;
    let seq = out.get(l.changes.len()).and_then(|rows| rows.first()).and_then(|r| r.get("seq")?.as_i64());
    Ok(seq)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommitRow {
    pub seq: i64,
    pub commit_id: String,
    pub subject: String,
    #[serde(deserialize_with = "super::json_text")]
    pub files: Vec<String>,
    pub session_id: Option<String>,
    pub created_ms: i64,
}

/// The base's commits after `seq`, oldest first.
pub async fn commits_after(db: &dyn Sql, task_id: &str, seq: i64) -> DbResult<Vec<CommitRow>> {
    const AFTER: &str = "SELECT seq, commit_id, subject, files, session_id, created_ms FROM task_commit
      WHERE task_id = ?1 AND seq > ?2 ORDER BY seq LIMIT 500";
    rows(db, stmt!(AFTER, task_id, seq)).await
}

pub async fn head(db: &dyn Sql, task_id: &str) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        seq: Option<i64>,
    }
    const HEAD: &str = "SELECT MAX(seq) AS seq FROM task_commit WHERE task_id = ?1";
    Ok(first::<Row>(db, stmt!(HEAD, task_id)).await?.and_then(|r| r.seq).unwrap_or(0))
}

/// A file a lane holds differently from the base: changed, added, or deleted (a tombstone in the lane
/// over a file the base holds).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LaneChange {
    pub path: String,
    /// Empty for a delete.
    pub lane_sha: String,
    pub size_bytes: i64,
    pub base_sha: Option<String>,
    #[serde(default, deserialize_with = "super::int_bool")]
    pub deleted: bool,
}

/// The most files one landing writes (its batch holds one statement per file). [`changes`] returns one
/// more when a lane changed more, so a caller can tell.
pub const LAND_FILES_MAX: usize = 1000;

/// The files a lane changed against the base (empty once it has landed), at most [`LAND_FILES_MAX`] + 1.
pub async fn changes(db: &dyn Sql, task_id: &str, lane: &str) -> DbResult<Vec<LaneChange>> {
    // SQLite takes a bare column from the row that holds the MAX() of its group.
    // A tombstone is a change only over a file the base holds; a base tombstone is no file.
    const CHANGES: &str = "WITH lane AS (SELECT path, sha256, size_bytes, deleted, MAX(version) AS v FROM task_file
                            WHERE task_id = ?1 AND lane = ?2 GROUP BY path),
           base AS (SELECT path, sha256, deleted, MAX(version) AS v FROM task_file WHERE task_id = ?1 AND lane = ''
                      GROUP BY path)
      SELECT lane.path, lane.sha256 AS lane_sha, lane.size_bytes, base.sha256 AS base_sha, lane.deleted
      FROM lane LEFT JOIN base ON base.path = lane.path AND base.deleted = 0
      WHERE CASE WHEN lane.deleted THEN base.sha256 IS NOT NULL ELSE base.sha256 IS NULL OR base.sha256 <> lane.sha256 END
      ORDER BY lane.path LIMIT ?3";
    rows(db, stmt!(CHANGES, task_id, lane, LAND_FILES_MAX as i64 + 1)).await
}

/// Moves a session's lane to the base commit `seq` it merged (or landed as), ending any merge in progress.
pub fn merged_to(session_id: &str, seq: i64) -> Stmt {
    const SET: &str = "UPDATE session SET lane_base_seq = ?2, lane_merging = NULL WHERE session_id = ?1";
    stmt!(SET, session_id, seq)
}

/// Records a merge stopped on conflicts (see [`LaneState::merging`]).
pub async fn set_merging(db: &dyn Sql, session_id: &str, merging: &Merging) -> DbResult<()> {
    const SET: &str = "UPDATE session SET lane_merging = ?2 WHERE session_id = ?1";
    let text = serde_json::to_string(merging).unwrap_or_default();
    db.all(stmt!(SET, session_id, text)).await.map(drop)
}

/// A merge of the base into a lane that stopped on conflicts: its files by path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Merging {
    pub files: std::collections::BTreeMap<String, Pending>,
}

/// A file that conflicted: the lane's version of it then, and the base head the merge stopped at.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pending {
    pub version: i64,
    pub seq: i64,
}

/// Moves a lane to the commit it just landed as, ending any merge in progress; nothing if that commit
/// was not written.
fn landed(session_id: &str, task_id: &str, commit_id: &str) -> Stmt {
    const SET: &str =
        "UPDATE session SET lane_base_seq = (SELECT seq FROM task_commit WHERE task_id = ?2 AND commit_id = ?3),
        lane_merging = NULL
      WHERE session_id = ?1 AND EXISTS (SELECT 1 FROM task_commit WHERE task_id = ?2 AND commit_id = ?3)";
    stmt!(SET, session_id, task_id, commit_id)
}

/// Whether a task gives sessions lanes, and how work lands.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TaskSettings {
    #[serde(deserialize_with = "super::int_bool")]
    pub lanes: bool,
    /// `auto` (land merges) or `manual` (the person reviews and merges).
    pub review: String,
    /// The name the task's base shows as, and the branch a new remote pushes to (`main` by default).
    pub base_branch: String,
}

pub async fn settings(db: &dyn Sql, task_id: &str) -> DbResult<Option<TaskSettings>> {
    const GET: &str = "SELECT lanes, review, base_branch FROM task WHERE task_id = ?1";
    first(db, stmt!(GET, task_id)).await
}

pub async fn set_settings(db: &dyn Sql, task_id: &str, s: &TaskSettings) -> DbResult<()> {
    const SET: &str = "UPDATE task SET lanes = ?2, review = ?3, base_branch = ?4 WHERE task_id = ?1";
    db.all(stmt!(SET, task_id, s.lanes, s.review.as_str(), s.base_branch.as_str())).await.map(drop)
}

/// A session's lane state and what it was asked to remember.
#[derive(Debug, Clone, Deserialize)]
pub struct LaneState {
    /// The base commit the lane last merged: its merge base.
    pub lane_base_seq: i64,
    pub asked: String,
    /// A merge stopped on conflicts, until the lane lands.
    #[serde(default, deserialize_with = "merging")]
    pub lane_merging: Option<Merging>,
}

fn merging<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Merging>, D::Error> {
    let text: Option<String> = Option::deserialize(d)?;
    Ok(text.and_then(|t| serde_json::from_str(&t).ok()))
}

pub async fn lane_state(db: &dyn Sql, session_id: &str) -> DbResult<Option<LaneState>> {
    const GET: &str = "SELECT lane_base_seq, asked, lane_merging FROM session WHERE session_id = ?1";
    first(db, stmt!(GET, session_id)).await
}

/// Whether agentsky asked any session of the task for a command of `kind`.
pub async fn asked_in_task(db: &dyn Sql, task_id: &str, kind: &str) -> DbResult<bool> {
    #[derive(serde::Deserialize)]
    struct Row {
        #[serde(deserialize_with = "super::int_bool")]
        asked: bool,
    }
    const ASKED: &str = "SELECT EXISTS (SELECT 1 FROM session WHERE task_id = ?1
        AND (' ' || asked || ' ') LIKE ('% ' || ?2 || ' %')) AS asked";
    Ok(super::first::<Row>(db, stmt!(ASKED, task_id, kind)).await?.is_some_and(|r| r.asked))
}

/// Records that agentsky asked a session for a command (`run`, `deploy` or `checks`).
pub async fn ask(db: &dyn Sql, session_id: &str, kind: &str) -> DbResult<()> {
    const ASK: &str = "UPDATE session SET asked = TRIM(asked || ' ' || ?2) WHERE session_id = ?1 AND (' ' || asked || ' ') NOT LIKE ('% ' || ?2 || ' %')";
    db.all(stmt!(ASK, session_id, kind)).await.map(drop)
}
