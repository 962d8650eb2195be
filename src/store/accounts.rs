//! Accounts and their personal workspace, created together in one atomic batch.

use super::{keys, DbResult, Sql};
use crate::stmt;

pub struct NewAccount<'a> {
    pub account_id: &'a str,
    pub name: &'a str,
    pub email: &'a str,
    pub workspace_id: &'a str,
    pub slug: &'a str,
    pub now_ms: i64,
}

const INSERT_ACCOUNT: &str = "INSERT INTO account (account_id, name, email, created_ms) VALUES (?1, ?2, ?3, ?4)";

/// Creates the account, its personal workspace (owner membership) and its first key, or nothing.
/// Fails with a unique violation on `account.email` or `workspace.slug`.
pub async fn create(db: &dyn Sql, a: &NewAccount<'_>, key: &keys::NewKey<'_>) -> DbResult<()> {
    let mut stmts = vec![stmt!(INSERT_ACCOUNT, a.account_id, a.name, a.email, a.now_ms)];
    stmts.extend(super::workspaces::insert(a.workspace_id, a.slug, a.name, a.account_id, true, a.now_ms));
    stmts.push(keys::insert(key));
    db.batch(stmts).await.map(drop)
}

const FIND_BY_EMAIL: &str = "SELECT account_id FROM account WHERE email = ?1";

pub async fn id_by_email(db: &dyn Sql, email: &str) -> DbResult<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Row {
        account_id: String,
    }
    Ok(super::first::<Row>(db, stmt!(FIND_BY_EMAIL, email)).await?.map(|r| r.account_id))
}

/// An account's name, as people read it.
pub async fn name(db: &dyn Sql, account_id: &str) -> DbResult<Option<String>> {
    #[derive(serde::Deserialize)]
    struct Row {
        name: String,
    }
    const GET: &str = "SELECT name FROM account WHERE account_id = ?1";
    Ok(super::first::<Row>(db, crate::stmt!(GET, account_id)).await?.map(|r| r.name))
}
