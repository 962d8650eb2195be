//! Task files: the versioned index in D1. Bytes are in R2 (see [`crate::cx::Blobs`]).

use super::{first, rows, DbResult, Sql};
use crate::stmt;
use serde::{Deserialize, Serialize};

/// The latest version of one file, as lists show it.
#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileInfo {
    pub path: String,
    pub version: i64,
    pub size_bytes: i64,
    pub sha256: String,
    /// The session that wrote this version, if an agent did.
    pub writer_session_id: Option<String>,
    /// The API key that wrote this version, if an operator did.
    pub writer_key_id: Option<String>,
    pub updated_ms: i64,
    /// A tombstone: the file was deleted at this version (never shown; readers treat it as absent).
    #[serde(default, skip_serializing, deserialize_with = "super::int_bool")]
    #[schemars(skip)]
    pub deleted: bool,
}

/// The sha256 a tombstone carries: it names no bytes.
pub const TOMBSTONE_SHA: &str = "";

pub struct NewVersion<'a> {
    pub task_id: &'a str,
    pub workspace_id: &'a str,
    pub lane: &'a str,
    pub path: &'a str,
    pub size_bytes: i64,
    pub sha256: &'a str,
    pub writer_session_id: Option<&'a str>,
    pub writer_key_id: Option<&'a str>,
    pub now_ms: i64,
    /// A tombstone (then `size_bytes` is 0 and `sha256` is [`TOMBSTONE_SHA`]).
    pub deleted: bool,
}

/// The next version number is decided inside the insert, so concurrent writers get distinct versions. A
/// base version names the commit written after it in the same batch (the next commit number); a lane
/// version names the base's head when it was written (the base the lane saw for a file it had not written).
/// With `?10` set, nothing is written unless the base's head is still that commit (see [`write_at_head`]).
const WRITE: &str = "INSERT INTO task_file (task_id, workspace_id, lane, path, version, size_bytes, sha256, writer_session_id, writer_key_id, created_ms, base_seq, deleted)
  SELECT * FROM (SELECT ?1, ?2, ?3, ?4, COALESCE(MAX(version), 0) + 1, ?5, ?6, ?7, ?8, ?9,
      (SELECT COALESCE(MAX(seq), 0) + (?3 = '') FROM task_commit WHERE task_id = ?1), ?11
    FROM task_file WHERE task_id = ?1 AND lane = ?3 AND path = ?4)
  WHERE ?10 IS NULL OR (SELECT COALESCE(MAX(seq), 0) FROM task_commit WHERE task_id = ?1) = ?10
  RETURNING path, version, size_bytes, sha256, writer_session_id, writer_key_id, created_ms AS updated_ms, deleted";

/// The statement that writes one version (see [`write`]).
pub fn write_stmt(v: &NewVersion<'_>) -> super::Stmt {
    write_at_head(v, None)
}

/// [`write_stmt`], writing only while the base's head is `head` (a landing checked against it).
pub fn write_at_head(v: &NewVersion<'_>, head: Option<i64>) -> super::Stmt {
    stmt!(
        WRITE,
        v.task_id,
        v.workspace_id,
        v.lane,
        v.path,
        v.size_bytes,
        v.sha256,
        v.writer_session_id,
        v.writer_key_id,
        v.now_ms,
        head,
        v.deleted
    )
}

/// Writes a version; with `commit`, records the base commit in the same atomic batch.
pub async fn write(db: &dyn Sql, v: &NewVersion<'_>, commit: Option<super::Stmt>) -> DbResult<FileInfo> {
    let mut stmts = vec![write_stmt(v)];
    stmts.extend(commit);
    let row = db.batch(stmts).await?.into_iter().next().and_then(|rows| rows.into_iter().next());
    row.map(super::decode).transpose()?.ok_or_else(|| super::DbError::Other("write returned no row".into()))
}

const LATEST: &str = "SELECT f.path, f.version, f.size_bytes, f.sha256, f.writer_session_id, f.writer_key_id, f.created_ms AS updated_ms, f.deleted
  FROM task_file f
  WHERE f.task_id = ?1 AND f.lane = ?2 AND (?3 IS NULL OR f.path >= ?3)
    AND f.version = (SELECT MAX(version) FROM task_file g WHERE g.task_id = f.task_id AND g.lane = f.lane AND g.path = f.path)
    AND (?5 OR f.deleted = 0)
  ORDER BY f.path LIMIT ?4";

/// The latest version of each file in a folder, by path, from `from_path` on; files whose latest version
/// is a tombstone are left out.
pub async fn list(
    db: &dyn Sql,
    task_id: &str,
    lane: &str,
    from_path: Option<&str>,
    limit: i64,
) -> DbResult<Vec<FileInfo>> {
    rows(db, stmt!(LATEST, task_id, lane, from_path, limit, false)).await
}

/// [`list`] with the tombstones: a lane's deletes, which hide the base's files from it.
pub async fn list_with_deletes(
    db: &dyn Sql,
    task_id: &str,
    lane: &str,
    from: Option<&str>,
    limit: i64,
) -> DbResult<Vec<FileInfo>> {
    rows(db, stmt!(LATEST, task_id, lane, from, limit, true)).await
}

const ONE: &str =
    "SELECT path, version, size_bytes, sha256, writer_session_id, writer_key_id, created_ms AS updated_ms, deleted
  FROM task_file WHERE task_id = ?1 AND lane = ?2 AND path = ?3 AND (?4 IS NULL OR version = ?4)
  ORDER BY version DESC LIMIT 1";

/// One file's latest version, or a given one; it may be a tombstone ([`FileInfo::deleted`]).
pub async fn get(
    db: &dyn Sql,
    task_id: &str,
    lane: &str,
    path: &str,
    version: Option<i64>,
) -> DbResult<Option<FileInfo>> {
    first(db, stmt!(ONE, task_id, lane, path, version)).await
}

const BY_WRITER: &str =
    "SELECT f.path, f.version, f.size_bytes, f.sha256, f.writer_session_id, f.writer_key_id, f.created_ms AS updated_ms
  FROM task_file f WHERE f.writer_session_id = ?1
    AND f.version = (SELECT MAX(version) FROM task_file g
                      WHERE g.writer_session_id = ?1 AND g.task_id = f.task_id AND g.lane = f.lane AND g.path = f.path)
    AND f.deleted = 0
  ORDER BY f.path LIMIT 1000";

/// The files a session wrote, each at the newest version it wrote (not those it last deleted).
pub async fn written_by(db: &dyn Sql, session_id: &str) -> DbResult<Vec<FileInfo>> {
    rows(db, stmt!(BY_WRITER, session_id)).await
}

const AT_COMMIT: &str =
    "SELECT path, version, size_bytes, sha256, writer_session_id, writer_key_id, created_ms AS updated_ms, deleted
  FROM task_file WHERE task_id = ?1 AND lane = '' AND path = ?2 AND COALESCE(base_seq, 0) <= ?3
  ORDER BY version DESC LIMIT 1";

/// A base file as it was once the base's commit `seq` was made (`None`: it did not exist then, or was
/// deleted).
pub async fn base_at(db: &dyn Sql, task_id: &str, path: &str, seq: i64) -> DbResult<Option<FileInfo>> {
    Ok(first::<FileInfo>(db, stmt!(AT_COMMIT, task_id, path, seq)).await?.filter(|f| !f.deleted))
}

const CHANGED_SINCE: &str =
    "SELECT DISTINCT path FROM task_file WHERE task_id = ?1 AND lane = '' AND COALESCE(base_seq, 0) > ?2 LIMIT ?3";

/// The base files written by commits after `seq`; `None` when more than `max` were (then treat every
/// file as possibly changed).
pub async fn base_changed_since(db: &dyn Sql, task_id: &str, seq: i64, max: usize) -> DbResult<Option<Vec<String>>> {
    #[derive(Deserialize)]
    struct Row {
        path: String,
    }
    let found: Vec<String> = rows::<Row>(db, stmt!(CHANGED_SINCE, task_id, seq, max as i64 + 1))
        .await?
        .into_iter()
        .map(|r| r.path)
        .collect();
    Ok((found.len() <= max).then_some(found))
}

/// Every file of a folder, latest versions with its tombstones, read in pages of `page` (at least 2).
pub async fn list_all(db: &dyn Sql, task_id: &str, lane: &str, page: i64) -> DbResult<Vec<FileInfo>> {
    let mut all: Vec<FileInfo> = Vec::new();
    loop {
        // `list` starts at `from` inclusive: that one is already here.
        let from = all.last().map(|f| f.path.clone());
        let got = list_with_deletes(db, task_id, lane, from.as_deref(), page).await?;
        let full = got.len() as i64 == page;
        all.extend(got.into_iter().skip(usize::from(from.is_some())));
        if !full {
            return Ok(all);
        }
    }
}

const HOLDING: &str = "SELECT DISTINCT lane FROM task_file f WHERE task_id = ?1 AND path = ?2 AND lane != '' AND deleted = 0
    AND version = (SELECT MAX(version) FROM task_file g WHERE g.task_id = f.task_id AND g.lane = f.lane AND g.path = f.path)
  ORDER BY lane LIMIT 5";

/// The lanes (session ids, at most 5) whose latest version of `path` is a file: work not landed yet.
pub async fn lanes_holding(db: &dyn Sql, task_id: &str, path: &str) -> DbResult<Vec<String>> {
    #[derive(Deserialize)]
    struct Row {
        lane: String,
    }
    Ok(rows::<Row>(db, stmt!(HOLDING, task_id, path)).await?.into_iter().map(|r| r.lane).collect())
}

const FORK: &str = "SELECT COALESCE(base_seq, 0) AS seq FROM task_file WHERE task_id = ?1 AND lane = ?2 AND path = ?3
  ORDER BY version LIMIT 1";

/// The base head when a lane first wrote `path` (0 when unknown or never): until then the lane saw the
/// base's file, so the lane's file starts from the base as it was then.
pub async fn forked_at(db: &dyn Sql, task_id: &str, lane: &str, path: &str) -> DbResult<i64> {
    #[derive(Deserialize)]
    struct Row {
        seq: i64,
    }
    Ok(first::<Row>(db, stmt!(FORK, task_id, lane, path)).await?.map_or(0, |r| r.seq))
}
