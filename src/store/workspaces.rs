//! Workspaces and memberships.

use super::{DbResult, Sql, Stmt};
use crate::stmt;
use serde::{Deserialize, Serialize};

const INSERT_WORKSPACE: &str =
    "INSERT INTO workspace (workspace_id, slug, name, owner_account_id, is_personal, created_ms)
  VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
const INSERT_MEMBERSHIP: &str =
    "INSERT INTO membership (workspace_id, account_id, role, created_ms) VALUES (?1, ?2, ?3, ?4)";

/// The statements that create a workspace with its owner as first member.
pub fn insert(workspace_id: &str, slug: &str, name: &str, owner: &str, personal: bool, now_ms: i64) -> [Stmt; 2] {
    [
        stmt!(INSERT_WORKSPACE, workspace_id, slug, name, owner, personal, now_ms),
        stmt!(INSERT_MEMBERSHIP, workspace_id, owner, "owner", now_ms),
    ]
}

pub async fn create(
    db: &dyn Sql,
    workspace_id: &str,
    slug: &str,
    name: &str,
    owner: &str,
    now_ms: i64,
) -> DbResult<()> {
    db.batch(insert(workspace_id, slug, name, owner, false, now_ms).to_vec()).await.map(drop)
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Overview {
    pub balance_cents: i64,
    #[serde(deserialize_with = "super::int_bool")]
    pub card_saved: bool,
}

const OVERVIEW: &str = "SELECT balance_cents, card_saved FROM workspace WHERE workspace_id = ?1";

/// The wallet and the first agents of a workspace, in one round trip.
pub async fn overview(
    db: &dyn Sql,
    workspace_id: &str,
    agents: i64,
) -> DbResult<Option<(Overview, Vec<super::agents::AgentSummary>)>> {
    let mut results = db
        .batch(vec![stmt!(OVERVIEW, workspace_id), stmt!(super::agents::LIST, workspace_id, agents, 0i64)])
        .await?
        .into_iter();
    let (Some(overview), Some(agent_rows)) = (results.next(), results.next()) else {
        return Err(super::DbError::Other("batch returned fewer results than statements".into()));
    };
    let Some(row) = overview.into_iter().next() else {
        return Ok(None);
    };
    let agents = agent_rows.into_iter().map(super::decode).collect::<DbResult<Vec<_>>>()?;
    Ok(Some((super::decode(row)?, agents)))
}

const BALANCE: &str = "SELECT balance_cents FROM workspace WHERE workspace_id = ?1";

pub async fn balance(db: &dyn Sql, workspace_id: &str) -> DbResult<Option<i64>> {
    #[derive(Deserialize)]
    struct Row {
        balance_cents: i64,
    }
    Ok(super::first::<Row>(db, stmt!(BALANCE, workspace_id)).await?.map(|r| r.balance_cents))
}

const BY_SLUG: &str = "SELECT workspace_id FROM workspace WHERE slug = ?1";

pub async fn id_by_slug(db: &dyn Sql, slug: &str) -> DbResult<Option<String>> {
    #[derive(Deserialize)]
    struct Row {
        workspace_id: String,
    }
    Ok(super::first::<Row>(db, stmt!(BY_SLUG, slug)).await?.map(|r| r.workspace_id))
}

const MOVE_CREDIT: &str =
    "UPDATE workspace SET balance_cents = balance_cents + (SELECT balance_cents FROM workspace WHERE workspace_id = ?1)
  WHERE owner_account_id = ?2 AND is_personal = 1";
const DELETE_RECEIPTS: &str = "DELETE FROM receipt WHERE workspace_id = ?1";
/// Deleting the row cascades to everything that references the workspace.
const DELETE: &str = "DELETE FROM workspace WHERE workspace_id = ?1";

/// Moves the wallet to the owner's personal workspace and deletes the workspace with all it holds, in one
/// atomic batch (its bytes in R2 are queued for the cron's purge). Returns the cents moved.
pub async fn delete(db: &dyn Sql, workspace_id: &str, owner_account_id: &str, now_ms: i64) -> DbResult<i64> {
    let moved = balance(db, workspace_id).await?.unwrap_or(0);
    db.batch(vec![
        stmt!(MOVE_CREDIT, workspace_id, owner_account_id),
        stmt!(DELETE_RECEIPTS, workspace_id),
        stmt!(DELETE, workspace_id),
        super::blobs::queue_purge(workspace_id, now_ms),
    ])
    .await?;
    Ok(moved)
}

const GET: &str =
    "SELECT workspace_id, slug, name, 'owner' AS role, is_personal FROM workspace WHERE workspace_id = ?1";

/// A workspace as work without a caller sees it (a routine fire acts with the owner's standing).
pub async fn as_owner(db: &dyn Sql, workspace_id: &str) -> DbResult<Option<crate::identity::Membership>> {
    super::first(db, stmt!(GET, workspace_id)).await
}
