//! The lease of the runner's work queues (`runner_turn`, `runner_checkout`): one set of statements for
//! both. A row is `queued`, `leased` to one runner under a lease id until `lease_expires_ms`, or `done`.
//!
//! - A claim takes the workspace's oldest queued row, or a leased one whose lease lapsed, under a new lease
//!   id, and counts the attempt. Which rows a runner may take at all is the queue's `claims` condition on
//!   the runner's session (`?6`: NULL for a person's runner, the session of a hosted sandbox's).
//! - A lease is *held* until a claim takes its row over, not merely until it lapses: a runner that renews
//!   late (a loaded machine, a slow network) keeps the work while nobody else took it, and its renewal and
//!   its result count. Only a takeover changes the lease id, so the old holder's later calls are refused.
//! - A lease is *live* while it has not lapsed: what tells a waiting caller the runner may still answer.

use super::{first, DbResult, Param, Sql, Stmt};
use crate::stmt;
use serde::de::DeserializeOwned;

/// The runner claiming: its workspace, itself, and the session of a hosted sandbox's runner (`None` for a
/// person's).
#[derive(Debug, Clone, Copy)]
pub struct Claimant<'a> {
    pub workspace_id: &'a str,
    pub runner_id: &'a str,
    pub session_id: Option<&'a str>,
}

/// The lease statements of one queue table (built by [`queue!`] from its name and columns).
pub struct Queue {
    claim: &'static str,
    held: &'static str,
    live: &'static str,
    renew: &'static str,
    finish: &'static str,
}

/// A [`Queue`] of `table`, whose rows are read as `columns`; `claims` is the condition on a row a runner
/// may claim, given its session as `?6` (NULL for a person's runner); `done_sets` is what finishing sets
/// besides the status (`, result = ?3`: its parameters follow the lease id and the runner id).
macro_rules! queue {
    ($table:literal, $columns:literal, claims: $claims:literal, done_sets: $done_sets:literal) => {
        $crate::store::lease::Queue::new(
            concat!(
                "UPDATE ",
                $table,
                " SET status = 'leased', runner_id = ?2, lease_id = ?3,
                   lease_expires_ms = ?4 + ?5, attempts = attempts + 1
                 WHERE rowid = (SELECT rowid FROM ",
                $table,
                " WHERE workspace_id = ?1
                                  AND (status = 'queued' OR (status = 'leased' AND lease_expires_ms < ?4))
                                  AND (",
                $claims,
                ") ORDER BY created_ms LIMIT 1)
                 RETURNING ",
                $columns
            ),
            concat!(
                "SELECT ",
                $columns,
                " FROM ",
                $table,
                " WHERE lease_id = ?1 AND runner_id = ?2 AND status = 'leased'"
            ),
            concat!(
                "SELECT ",
                $columns,
                " FROM ",
                $table,
                " WHERE lease_id = ?1 AND status = 'leased' AND lease_expires_ms >= ?2"
            ),
            concat!(
                "UPDATE ",
                $table,
                " SET lease_expires_ms = MAX(lease_expires_ms, ?3)
                 WHERE lease_id = ?1 AND runner_id = ?2 AND status = 'leased' RETURNING lease_id"
            ),
            concat!(
                "UPDATE ",
                $table,
                " SET status = 'done'",
                $done_sets,
                " WHERE lease_id = ?1 AND runner_id = ?2 AND status = 'leased' RETURNING lease_id"
            ),
        )
    };
}
pub(crate) use queue;

impl Queue {
    pub const fn new(
        claim: &'static str,
        held: &'static str,
        live: &'static str,
        renew: &'static str,
        finish: &'static str,
    ) -> Self {
        Self { claim, held, live, renew, finish }
    }

    /// Leases the workspace's oldest row `runner` may claim to it for `lease_ms`.
    pub async fn claim<T: DeserializeOwned>(
        &self,
        db: &dyn Sql,
        runner: &Claimant<'_>,
        lease_id: &str,
        lease_ms: i64,
        now_ms: i64,
    ) -> DbResult<Option<T>> {
        let Claimant { workspace_id, runner_id, session_id } = *runner;
        first(db, stmt!(self.claim, workspace_id, runner_id, lease_id, now_ms, lease_ms, session_id)).await
    }

    /// The row `runner_id` holds under `lease_id`, lapsed or not, unless another claim took it over.
    pub async fn held<T: DeserializeOwned>(
        &self,
        db: &dyn Sql,
        runner_id: &str,
        lease_id: &str,
    ) -> DbResult<Option<T>> {
        first(db, stmt!(self.held, lease_id, runner_id)).await
    }

    /// The row of a lease that has not lapsed at `now_ms`.
    pub async fn live<T: DeserializeOwned>(&self, db: &dyn Sql, lease_id: &str, now_ms: i64) -> DbResult<Option<T>> {
        first(db, stmt!(self.live, lease_id, now_ms)).await
    }

    /// Extends a held lease to `until_ms`; `false` when the lease is no longer held (taken over, or done).
    pub async fn renew(&self, db: &dyn Sql, runner_id: &str, lease_id: &str, until_ms: i64) -> DbResult<bool> {
        Ok(!db.all(stmt!(self.renew, lease_id, runner_id, until_ms)).await?.is_empty())
    }

    /// Ends the work of a held lease, setting `done_sets` to `more`; `false` when the lease is no longer
    /// held (taken over, or already done: a retried post).
    pub async fn finish(&self, db: &dyn Sql, runner_id: &str, lease_id: &str, more: Vec<Param>) -> DbResult<bool> {
        let mut params = vec![Param::from(lease_id), Param::from(runner_id)];
        params.extend(more);
        Ok(!db.all(Stmt { sql: self.finish, params }).await?.is_empty())
    }
}
