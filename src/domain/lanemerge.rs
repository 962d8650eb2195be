//! Merging a task's base into a session's lane (`land`'s first step): each file both changed since the
//! lane's merge base is merged three ways ([`crate::rules::merge`]); the merged versions are written into
//! the lane and the lane's merge base moves to the head it merged, in one batch. A delete (a tombstone on
//! either side) merges like git's: against an unchanged file it wins, against a change it conflicts. A merge with conflicts
//! writes nothing and records which files conflicted: the agent's next write of such a file is its
//! reconciled version, merged from then on against the base it saw.

use crate::cx::Blobs;
use crate::error::ApiError;
use crate::rules::merge::{self, Merged};
use crate::store::{self, files::FileInfo, lanes::LaneState, lanes::Merging, Sql, Stmt};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Which session's lane, in which task.
#[derive(Debug, Clone, Copy)]
pub struct Lane<'a> {
    pub workspace_id: &'a str,
    pub task_id: &'a str,
    pub session_id: &'a str,
}

/// One file that could not be merged (a delete on one side against a change on the other is a
/// conflict of kind `deleted_in_lane` or `deleted_in_base`).
#[derive(Debug, Clone, Serialize)]
pub struct FileConflict {
    pub path: String,
    #[serde(flatten)]
    pub conflict: merge::Conflict,
    /// The versions merged: the lane's, the base's (either may be its delete), and the merge base's
    /// (`null`: it had none).
    pub lane_version: i64,
    pub base_version: i64,
    pub merge_base_version: Option<i64>,
}

/// What merging the base into a lane came to.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The base head merged.
    pub head: i64,
    /// The base commits merged (0 when the lane was up to date).
    pub commits: i64,
    /// Files whose merged version (or the base's delete) was written into the lane.
    pub written: Vec<String>,
    /// Files left in conflict (nothing was written then).
    pub conflicts: Vec<FileConflict>,
}

/// The merge base of `path` for a lane: the base commit the lane last merged, or the base's head when the
/// lane first wrote the file if that is newer (a lane sees the base's file until it writes its own); for a
/// file that conflicted and which the lane has written since, the head that merge stopped at.
pub async fn merge_base_of(db: &dyn Sql, lane: Lane<'_>, path: &str, state: &LaneState) -> Result<i64, ApiError> {
    let own = store::files::get(db, lane.task_id, lane.session_id, path, None).await?;
    let version = own.map_or(0, |f| f.version);
    if let Some(p) = state.lane_merging.as_ref().and_then(|m| m.files.get(path)).filter(|p| version > p.version) {
        return Ok(p.seq);
    }
    let forked = store::files::forked_at(db, lane.task_id, lane.session_id, path).await?;
    Ok(state.lane_base_seq.max(forked))
}

async fn bytes(blobs: &dyn Blobs, workspace_id: &str, f: &FileInfo) -> Result<Vec<u8>, ApiError> {
    crate::domain::blobs::get(blobs, workspace_id, &f.sha256)
        .await
        .map_err(ApiError::cause)?
        .ok_or_else(|| ApiError::cause(format!("blob {} missing", f.sha256)))
}

/// The lane's files are read in pages of this many; the base's changed paths are listed up to
/// `CHANGED_MAX`, beyond which every lane file is compared.
const PAGE: i64 = 500;
const CHANGED_MAX: usize = 1000;

/// Merges the base's head into the lane (see the module).
pub async fn merge_base_into(
    db: &dyn Sql,
    blobs: &dyn Blobs,
    lane: Lane<'_>,
    now_ms: i64,
) -> Result<Outcome, ApiError> {
    let state = store::lanes::lane_state(db, lane.session_id)
        .await?
        .ok_or_else(|| ApiError::cause(format!("no lane state for {}", lane.session_id)))?;
    let head = store::lanes::head(db, lane.task_id).await?;
    let merging = state.lane_merging.as_ref();
    // Everything the base changed since the oldest merge base any file of this lane has.
    let oldest = merging.into_iter().flat_map(|m| m.files.values().map(|p| p.seq)).fold(state.lane_base_seq, i64::min);
    // Past the cap, every file of the lane is looked at: one the base did not change is skipped below.
    let changed = store::files::base_changed_since(db, lane.task_id, oldest, CHANGED_MAX).await?;
    let own = store::files::list_all(db, lane.task_id, lane.session_id, PAGE).await?;
    let mut out = Outcome { head, commits: head - state.lane_base_seq, ..Default::default() };
    let mut stmts: Vec<Stmt> = Vec::new();
    for mine in own.iter().filter(|f| changed.as_ref().is_none_or(|c| c.contains(&f.path))) {
        let since = merge_base_of(db, lane, &mine.path, &state).await?;
        let Some(base_row) = store::files::get(db, lane.task_id, "", &mine.path, None).await? else { continue };
        // Each side as a file or none: a tombstone is no file (deleted on that side).
        let base = Some(&base_row).filter(|f| !f.deleted);
        let ours = Some(mine).filter(|f| !f.deleted);
        let ancestor = store::files::base_at(db, lane.task_id, &mine.path, since).await?;
        let sha = |f: Option<&FileInfo>| f.map(|f| f.sha256.clone());
        if sha(ours) == sha(base) || sha(ancestor.as_ref()) == sha(base) {
            continue;
        }
        let merged = if sha(ancestor.as_ref()) == sha(ours) {
            Merged::Clean(match base {
                Some(b) => Some(bytes(blobs, lane.workspace_id, b).await?),
                None => None,
            })
        } else {
            let mut read = Vec::new();
            for side in [ancestor.as_ref(), ours, base] {
                read.push(match side {
                    Some(f) => Some(bytes(blobs, lane.workspace_id, f).await?),
                    None => None,
                });
            }
            merge::merge3(read[0].as_deref(), read[1].as_deref(), read[2].as_deref())
        };
        // The lane's new version: the merged text, or a tombstone.
        let version = |content: Option<&[u8]>, sha: &str| {
            store::files::write_stmt(&store::files::NewVersion {
                task_id: lane.task_id,
                workspace_id: lane.workspace_id,
                lane: lane.session_id,
                path: &mine.path,
                size_bytes: content.map_or(0, |c| c.len() as i64),
                sha256: sha,
                writer_session_id: Some(lane.session_id),
                writer_key_id: None,
                now_ms,
                deleted: content.is_none(),
            })
        };
        match merged {
            Merged::Clean(Some(content)) => {
                let sha = hex::encode(Sha256::digest(&content));
                stmts.push(version(Some(&content), &sha));
                crate::domain::blobs::put(blobs, lane.workspace_id, &sha, content).await.map_err(ApiError::cause)?;
                out.written.push(mine.path.clone());
            }
            // The base deleted a file the lane left as it was: the lane deletes it too.
            Merged::Clean(None) if ours.is_some() => {
                stmts.push(version(None, store::files::TOMBSTONE_SHA));
                out.written.push(mine.path.clone());
            }
            Merged::Clean(None) => {}
            Merged::Conflict(conflict) => out.conflicts.push(FileConflict {
                path: mine.path.clone(),
                conflict,
                lane_version: mine.version,
                base_version: base_row.version,
                merge_base_version: ancestor.map(|a| a.version),
            }),
        }
    }
    if !out.conflicts.is_empty() {
        // Files the lane already reconciled keep the merge base they were reconciled against.
        let mut files: BTreeMap<String, store::lanes::Pending> = merging
            .map(|m| {
                m.files
                    .iter()
                    .filter(|(path, p)| own.iter().any(|f| &f.path == *path && f.version > p.version))
                    .map(|(path, p)| (path.clone(), p.clone()))
                    .collect()
            })
            .unwrap_or_default();
        for c in &out.conflicts {
            files.insert(c.path.clone(), store::lanes::Pending { version: c.lane_version, seq: head });
        }
        store::lanes::set_merging(db, lane.session_id, &Merging { files }).await?;
        out.written.clear();
        return Ok(out);
    }
    if head != state.lane_base_seq || merging.is_some() {
        stmts.push(store::lanes::merged_to(lane.session_id, head));
        db.batch(stmts).await?;
    }
    Ok(out)
}
