//! Grants: what a decided access request allows, shared by the session server (which asks and checks),
//! the runner protocol (which runs commands under a grant) and the operator's operations (which list and
//! revoke). What a credential may leave behind in a transcript is decided here too.

use crate::cx::Cx;
use crate::domain::mint;
use crate::error::ApiError;
use crate::rules::seal;
use crate::store::{self, requests::GrantRow, requests::GrantStatus};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// One of the contract's shapes, as the grant is stored: active, denied or pending (see [`expired_view`]).
pub fn grant_view(g: &GrantRow, queue_position: Option<i64>) -> Value {
    match g.status {
        GrantStatus::Active => json!({
            "status": "active", "grantId": g.grant_id, "scope": g.scopes.split(' ').collect::<Vec<_>>(),
            "expiresAt": g.expires_ms, "decidedBy": g.decided_by,
        }),
        GrantStatus::Pending => {
            json!({ "status": "pending", "grantId": g.grant_id, "queuePosition": queue_position.unwrap_or(1) })
        }
        // The contract's denied shape, naming the rule or person that denied (`decidedBy`) when known. A
        // revoked grant reads as denied.
        GrantStatus::Denied | GrantStatus::Revoked => match &g.decided_by {
            Some(by) => json!({ "status": "denied", "grantId": g.grant_id, "decidedBy": by }),
            None => json!({ "status": "denied", "grantId": g.grant_id }),
        },
    }
}

/// The contract's `expired` shape, which no grant is stored as: one active past its time, or one whose
/// request nobody answered in time (`decided_by` the expiry).
pub fn expired_view(g: &GrantRow, decided_by: Option<&str>) -> Value {
    json!({ "status": "expired", "grantId": g.grant_id, "decidedBy": decided_by })
}

/// Whether a grant is in force now: active and not past its time.
pub fn live(g: &GrantRow, now_ms: i64) -> bool {
    g.status == GrantStatus::Active && g.expires_ms.is_none_or(|e| e > now_ms)
}

/// Whether a grant covers every one of `scopes`.
pub fn covers(g: &GrantRow, scopes: &[impl AsRef<str>]) -> bool {
    scopes.iter().all(|s| g.scopes.split(' ').any(|have| have == s.as_ref()))
}

/// Whether a session may use a grant: its own, or a persistent one of its workspace.
pub fn visible_to(g: &GrantRow, session_id: &str, workspace_id: &str) -> bool {
    g.session_id == session_id || (g.persistent && g.workspace_id == workspace_id)
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Credential {
    /// Environment variables for the provider's CLI.
    Env { env: serde_json::Map<String, Value> },
    /// An SSH private key, served to agents only through a runner's ssh-agent.
    Ssh { private_key: String },
    /// A GitHub App: each grant gets its own narrowed installation token ([`mint`]).
    GithubApp { app: mint::GithubApp },
    /// An AWS role: each grant assumes it with a session policy of its scopes ([`mint`]).
    AwsRole { role: mint::AwsRole },
    /// A Google service account: each grant gets a token of its own ([`mint`]).
    GcpServiceAccount { account: mint::GcpServiceAccount },
}

/// What a grant hands over: the provider CLI's variables, minted for the grant (`scoped`) where the
/// connection can narrow them, else the connection's own, and until when; or an SSH key (for a runner's
/// ssh-agent only).
pub enum Handed {
    Env { env: serde_json::Map<String, Value>, scoped: bool, expires_ms: Option<i64> },
    Ssh { private_key: String },
}

/// [`Handed`] for `g`, asked by `session_id` (for the audit log of a mint); `None` when the connection's
/// credentials cannot be opened.
pub async fn hand_over(cx: &Cx<'_>, g: &GrantRow, session_id: &str) -> Result<Option<Handed>, ApiError> {
    let Some(credential) = open_credential(cx, g).await? else { return Ok(None) };
    Ok(Some(match credential {
        Credential::Env { env } => Handed::Env { env, scoped: false, expires_ms: g.expires_ms },
        Credential::Ssh { private_key } => Handed::Ssh { private_key },
        Credential::GithubApp { app } => {
            minted(mint::for_grant(cx, g, mint::Narrowing::Github(&app), session_id).await?)
        }
        Credential::AwsRole { role } => minted(mint::for_grant(cx, g, mint::Narrowing::Aws(&role), session_id).await?),
        Credential::GcpServiceAccount { account } => {
            minted(mint::for_grant(cx, g, mint::Narrowing::Gcp(&account), session_id).await?)
        }
    }))
}

/// A credential minted for the grant, handed over as the provider CLI's variables.
fn minted(m: mint::Minted) -> Handed {
    Handed::Env { env: m.env, scoped: true, expires_ms: Some(m.expires_ms) }
}

/// A grant's credential, opened; `None` when it cannot be (no credentials, or sealed under another key).
pub async fn open_credential(cx: &Cx<'_>, g: &GrantRow) -> Result<Option<Credential>, ApiError> {
    let sealed = store::connectors::sealed(cx.db(), &g.connector_id).await?;
    let master = cx.env.config.secrets_key.as_deref().ok_or_else(|| ApiError::cause("no SECRETS_KEY"))?;
    let plain = sealed.and_then(|s| seal::open(master, &seal::connector_aad(&g.workspace_id, &g.connector_id), &s));
    plain.map(|p| serde_json::from_str(&p).map_err(ApiError::cause)).transpose()
}

/// How long a turn's ssh-agent holds the key of a grant that lasts until revoked (a shim loads it again for
/// each ssh).
const SSH_KEY_HOLD_S: i64 = 600;

/// How long a turn's ssh-agent holds a grant's key: the grant's lifetime (an SSH key cannot be narrowed;
/// the grant's time is what bounds it), or [`SSH_KEY_HOLD_S`] for a grant without an end. A revoked
/// grant's key goes at once: the runner ends the turn's ssh-agent (`grant_forget`).
pub fn ssh_hold_s(g: &GrantRow, now_ms: i64) -> i64 {
    g.expires_ms.map_or(SSH_KEY_HOLD_S, |e| ((e - now_ms) / 1000).max(1))
}

/// What of a `get_credential` result may be kept (a transcript, an index): its shape, every value of its
/// `env` replaced by the redaction mark; and those values, so whatever repeats them can be masked too.
pub fn withheld(view: &Value) -> (Value, Vec<String>) {
    let mut kept = view.clone();
    let mut values = Vec::new();
    if let Some(env) = kept.get_mut("env").and_then(Value::as_object_mut) {
        for v in env.values_mut() {
            values.push(v.as_str().map_or_else(|| v.to_string(), str::to_owned));
            *v = json!(crate::rules::redact::MARK);
        }
    }
    (kept, values)
}

/// What of a session tool's result (`text`, as the agent got it) may be persisted where people and indexes
/// read it, and the credential values it carried, for masking wherever they are repeated. Only
/// `get_credential` carries any: its values are replaced, its shape kept.
pub fn persisted(name: &str, text: &str) -> (String, Vec<String>) {
    if name != "get_credential" {
        return (text.to_owned(), vec![]);
    }
    match serde_json::from_str::<Value>(text) {
        Ok(v) if v.is_object() => {
            let (kept, values) = withheld(&v);
            (kept.to_string(), values)
        }
        _ => (crate::rules::redact::MARK.to_owned(), vec![text.to_owned()]),
    }
}
