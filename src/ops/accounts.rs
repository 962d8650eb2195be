//! Accounts and API keys (REST only): sign-up, and the keys an account calls with.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::rules::ids::KeyId;
use crate::rules::params::{words, Capped, Email, Text};
use crate::rules::{ids, limits, slug};
use crate::store::{self, keys::NewKey, DbError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Sign-ups allowed per caller address per minute.
const SIGNUPS_PER_MIN: u32 = 20;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateAccount {
    /// Your name. The personal workspace's slug is made from it.
    pub name: Text<1, 100>,
    /// Your email address; one account per address.
    pub email: Email,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AccountCreated {
    pub account: AccountInfo,
    pub workspace: WorkspaceRef,
    /// The first key. `key.key` is shown only here: store it now.
    pub key: KeyCreated,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AccountInfo {
    pub account_id: String,
    pub name: String,
    pub email: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkspaceRef {
    pub workspace_id: String,
    pub slug: String,
    pub name: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyCreated {
    pub key_id: String,
    /// The secret, `ast_…`. Returned once; only its SHA-256 is kept.
    pub key: String,
    pub prefix: String,
    pub scopes: Vec<String>,
    /// The workspace this key is locked to, if any.
    pub workspace: Option<String>,
}

/// A fresh key's secret and stored fields.
struct Minted {
    key_id: String,
    key: String,
    hash: String,
    prefix: String,
}

fn mint() -> Minted {
    let key = ids::new_secret("ast_");
    Minted { key_id: ids::new_id("key"), hash: ids::hash_secret(&key), prefix: ids::key_prefix(&key), key }
}

fn scope_list(scopes: &str) -> Vec<String> {
    scopes.split(' ').map(str::to_owned).collect()
}

/// POST /v1/accounts
pub async fn create(cx: &Cx<'_>, p: CreateAccount) -> Result<AccountCreated, ApiError> {
    if !cx.env.config.open_signup && !cx.admin {
        return Err(ApiError::new(
            Code::Forbidden,
            "sign-up is closed on this server; an administrator creates accounts with the admin token",
        ));
    }
    crate::ops::rate_limit(cx, format!("signup:{}", cx.client_ip), SIGNUPS_PER_MIN).await?;
    let email = p.email.as_str().to_owned();

    let account_id = ids::new_id("acct");
    let workspace_id = ids::new_id("ws");
    let base = slug::slugify(&p.name);
    for attempt in 0..6 {
        let slug = slug::attempt(&base, attempt);
        let minted = mint();
        let key = NewKey {
            key_id: &minted.key_id,
            account_id: &account_id,
            name: "first key",
            key_hash: &minted.hash,
            prefix: &minted.prefix,
            scopes: "read write",
            workspace_id: None,
            now_ms: cx.now_ms,
        };
        let account = store::accounts::NewAccount {
            account_id: &account_id,
            name: &p.name,
            email: &email,
            workspace_id: &workspace_id,
            slug: &slug,
            now_ms: cx.now_ms,
        };
        match store::accounts::create(cx.db(), &account, &key).await {
            Ok(()) => {
                return Ok(AccountCreated {
                    account: AccountInfo { account_id: account_id.clone(), name: p.name.to_string(), email },
                    workspace: WorkspaceRef { workspace_id: workspace_id.clone(), slug, name: p.name.into() },
                    key: KeyCreated {
                        key_id: minted.key_id,
                        key: minted.key,
                        prefix: minted.prefix,
                        scopes: scope_list("read write"),
                        workspace: None,
                    },
                })
            }
            Err(e) if e.is_unique_on("account.email") => {
                return Err(ApiError::new(Code::Conflict, "an account with this email already exists"))
            }
            Err(e) if e.is_unique_on("workspace.slug") || store::keys::is_hash_collision(&e) => continue,
            Err(e) => return Err(ApiError::cause(e)),
        }
    }
    Err(ApiError::cause("could not find a free workspace slug"))
}

words! {
    /// What an API key may do.
    pub enum KeyScope { Read = "read", Write = "write" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateKey {
    /// What the key is for, 1–100 characters (for example the machine or script using it).
    pub name: Text<1, 100>,
    /// `["read"]` lists and reads; `["read", "write"]` also starts sessions and changes things.
    pub scopes: Capped<KeyScope, 2>,
    /// Lock the key to this workspace slug: it then answers `universe_mismatch` for any other.
    pub workspace: Option<String>,
}

/// POST /v1/keys
pub async fn create_key(cx: &Cx<'_>, p: CreateKey) -> Result<KeyCreated, ApiError> {
    let caller = cx.caller()?;
    if p.scopes.is_empty() {
        return Err(ApiError::invalid("`scopes` needs at least one of read, write"));
    }
    let scopes = if p.scopes.contains(&KeyScope::Write) { "read write" } else { "read" };
    // A locked key can only mint keys locked to its own workspace.
    let lock = match (&p.workspace, &caller.locked_workspace_id) {
        (Some(slug), _) => Some(cx.workspace(Some(slug))?),
        (None, Some(_)) => Some(cx.workspace(None)?),
        (None, None) => None,
    };
    let minted = mint();
    let new = NewKey {
        key_id: &minted.key_id,
        account_id: &caller.account_id,
        name: &p.name,
        key_hash: &minted.hash,
        prefix: &minted.prefix,
        scopes,
        workspace_id: lock.map(|m| m.workspace_id.as_str()),
        now_ms: cx.now_ms,
    };
    if !store::keys::create(cx.db(), &new, limits::MAX_ACTIVE_KEYS).await.map_err(|e: DbError| ApiError::cause(e))? {
        return Err(limits::too_many_keys());
    }
    Ok(KeyCreated {
        key_id: minted.key_id,
        key: minted.key,
        prefix: minted.prefix,
        scopes: scope_list(scopes),
        workspace: lock.map(|m| m.slug.clone()),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListKeys {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyList {
    pub keys: Vec<store::keys::KeyInfo>,
}

/// GET /v1/keys
pub async fn list_keys(cx: &Cx<'_>, _: ListKeys) -> Result<KeyList, ApiError> {
    let caller = cx.caller()?;
    let keys = store::keys::list(cx.db(), &caller.account_id, caller.locked_workspace_id.as_deref()).await?;
    Ok(KeyList { keys })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeKey {
    /// The key's id (`key_…`), from `GET /v1/keys`.
    pub key_id: KeyId,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct KeyRevoked {
    pub key_id: String,
    pub revoked: bool,
}

/// DELETE /v1/keys/{key_id}
pub async fn revoke_key(cx: &Cx<'_>, p: RevokeKey) -> Result<KeyRevoked, ApiError> {
    let caller = cx.caller()?;
    let found =
        store::keys::revoke(cx.db(), &caller.account_id, &p.key_id, caller.locked_workspace_id.as_deref(), cx.now_ms)
            .await?;
    if !found {
        return Err(ApiError::not_found("key"));
    }
    crate::keycache::forget_all();
    Ok(KeyRevoked { key_id: p.key_id.into(), revoked: true })
}

/// How long a console sign-in link works.
const CONSOLE_LINK_MS: i64 = 60_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenConsole {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ConsoleLink {
    /// Open it in a browser within a minute: it signs that browser in to the console as this key (its
    /// scopes and workspace lock), once.
    pub url: String,
    pub expires_ms: i64,
}

/// POST /v1/console/link (`sky console`)
pub async fn open_console(cx: &Cx<'_>, _: OpenConsole) -> Result<ConsoleLink, ApiError> {
    let caller = cx.caller()?;
    let base = cx.link_base()?.to_owned();
    let token = ids::new_secret("");
    let expires_ms = cx.now_ms + CONSOLE_LINK_MS;
    store::console::create_link(cx.db(), &ids::hash_secret(&token), &caller.key_id, cx.now_ms, expires_ms).await?;
    Ok(ConsoleLink { url: format!("{base}/console/enter?t={token}"), expires_ms })
}
