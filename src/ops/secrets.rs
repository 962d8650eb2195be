//! Workspace secrets over REST: set, list names, delete. Values go in sealed and never come out through
//! the API; harnesses open them inside the session's object when a turn needs them.
//!
//! One role rule covers every way a secret can be reached: setting, deleting and *naming* one (an
//! agent's MCP server `bearer_secret`), because whoever names a secret decides where its value is sent,
//! which is as good as reading it ([`require_role`]).

use crate::cx::{Cx, Membership, Role};
use crate::error::{ApiError, Code};
use crate::rules::params::Text;
use crate::rules::{outbound, seal};
use crate::store;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The role that may set, delete or name a workspace's secrets.
pub const ROLE: Role = Role::Admin;

/// Refuses unless the caller holds [`ROLE`] in `m`; `what` says what needed it.
pub fn require_role(m: &Membership, what: &str) -> Result<(), ApiError> {
    if m.role >= ROLE {
        return Ok(());
    }
    Err(ApiError::new(
        Code::Forbidden,
        format!(
            "{what} needs the {} role in `{}`, as reading and setting its secrets do; yours is {}",
            ROLE.as_str(),
            m.slug,
            m.role.as_str()
        ),
    ))
}

/// Secrets whose value is a URL the Worker calls: checked by the outbound rule when set, and again when
/// used ([`crate::egress`]).
const URL_SECRETS: &[&str] = &["OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"];

fn check_name(name: &str) -> Result<(), ApiError> {
    let ok = (1..=64).contains(&name.len())
        && name.starts_with(|c: char| c.is_ascii_uppercase())
        && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid(format!(
            "`name` must be 1–64 of A–Z, 0–9 and _, starting with a letter (got {})",
            crate::rules::params::quoted(name)
        )))
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PutSecret {
    /// The secret's name, like `OPENAI_API_KEY`.
    pub name: String,
    /// Its value. Stored sealed; never shown again.
    pub value: Text<1, 8_000>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SecretSet {
    pub name: String,
    pub workspace: String,
}

/// PUT /v1/secrets/{name} — owners and admins.
pub async fn put(cx: &Cx<'_>, p: PutSecret) -> Result<SecretSet, ApiError> {
    check_name(&p.name)?;
    let w = cx.workspace(p.workspace.as_deref())?;
    require_role(w, "setting a secret")?;
    if URL_SECRETS.contains(&p.name.as_str()) {
        outbound::check(&p.name, &p.value, cx.env.config.allow_loopback_http).map_err(ApiError::invalid)?;
    }
    let master = cx.env.config.secrets_key.as_deref().ok_or_else(|| {
        ApiError::new(Code::NotImplemented, "this deployment has no SECRETS_KEY configured, so it cannot store secrets")
    })?;
    let sealed = seal::seal(master, &seal::secret_aad(&w.workspace_id, &p.name), &p.value);
    store::secrets::put(cx.db(), &w.workspace_id, &p.name, &sealed, cx.now_ms).await?;
    Ok(SecretSet { name: p.name, workspace: w.slug.clone() })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListSecrets {
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SecretList {
    /// Names and times only.
    pub secrets: Vec<store::secrets::SecretInfo>,
}

/// GET /v1/secrets
pub async fn list(cx: &Cx<'_>, p: ListSecrets) -> Result<SecretList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let secrets = store::secrets::list(cx.db(), &w.workspace_id).await?;
    Ok(SecretList { secrets })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteSecret {
    /// The secret's name.
    pub name: String,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SecretDeleted {
    pub name: String,
    pub deleted: bool,
}

/// DELETE /v1/secrets/{name} — owners and admins.
pub async fn delete(cx: &Cx<'_>, p: DeleteSecret) -> Result<SecretDeleted, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    require_role(w, "deleting a secret")?;
    let deleted = store::secrets::delete(cx.db(), &w.workspace_id, &p.name).await?;
    if !deleted {
        return Err(ApiError::not_found("secret"));
    }
    Ok(SecretDeleted { name: p.name, deleted })
}
