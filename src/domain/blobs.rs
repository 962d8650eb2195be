//! Where bytes live in R2: `w/<workspace_id>/<sha256>`, content-addressed within their workspace (task
//! file versions, and so artifacts, and parsed traces). Keeping them under the workspace makes deleting
//! it delete them: its prefix is purged by the cron once its rows are gone, and nothing can refer to or
//! write under a deleted workspace, so no live bytes go with it. Bytes written before this layout, under
//! `blobs/<sha256>`, are still read.

use crate::cx::{Blobs, Cx};
use crate::store;

/// How long a deleted workspace's prefix keeps being purged: a write in flight when it was deleted has
/// landed by then.
const PURGE_GRACE_MS: i64 = 60 * 60_000;
/// Deleted workspaces purged per cron tick (each up to 1000 keys a tick).
const PURGES_PER_TICK: i64 = 5;

fn prefix(workspace_id: &str) -> String {
    format!("w/{workspace_id}/")
}

pub fn key(workspace_id: &str, sha256: &str) -> String {
    format!("{}{sha256}", prefix(workspace_id))
}

pub async fn put(blobs: &dyn Blobs, workspace_id: &str, sha256: &str, bytes: Vec<u8>) -> Result<(), String> {
    blobs.put(key(workspace_id, sha256), bytes).await
}

/// The bytes, from their workspace's prefix or, for older writes, the shared one.
pub async fn get(blobs: &dyn Blobs, workspace_id: &str, sha256: &str) -> Result<Option<Vec<u8>>, String> {
    match blobs.get(key(workspace_id, sha256)).await? {
        Some(bytes) => Ok(Some(bytes)),
        None => blobs.get(format!("blobs/{sha256}")).await,
    }
}

/// Deletes bytes that no row of their workspace refers to any more (a deleted trace's).
pub async fn forget(cx: &Cx<'_>, workspace_id: &str, sha256: &str) -> Result<(), String> {
    if store::blobs::referenced(cx.db(), workspace_id, sha256).await.map_err(|e| e.to_string())? {
        return Ok(());
    }
    cx.env.blobs.delete(vec![key(workspace_id, sha256)]).await
}

/// The cron's share: deletes a page of each deleted workspace's bytes; a workspace leaves the queue once
/// its prefix lists empty after the grace. Returns how many keys were deleted.
pub async fn purge_deleted(cx: &Cx<'_>) -> Result<usize, String> {
    let mut deleted = 0;
    let db = cx.db();
    for p in store::blobs::due(db, cx.now_ms, PURGES_PER_TICK).await.map_err(|e| e.to_string())? {
        let (keys, _) = cx.env.blobs.list(prefix(&p.workspace_id), None).await?;
        if keys.is_empty() {
            let done = if cx.now_ms - p.deleted_ms >= PURGE_GRACE_MS {
                store::blobs::purged(db, &p.workspace_id).await
            } else {
                store::blobs::recheck_at(db, &p.workspace_id, p.deleted_ms + PURGE_GRACE_MS).await
            };
            done.map_err(|e| e.to_string())?;
            continue;
        }
        deleted += keys.len();
        cx.env.blobs.delete(keys).await?;
    }
    Ok(deleted)
}
