//! Targets, access requests and grants: `request_access`, `check_grant`, `get_credential`,
//! `list_targets`. A request is decided by a persistent grant, a target's policy or the workspace's
//! policy when one applies, else by a member through `answer_request`; the call waits for the answer in
//! the session's object.

use super::{wait, CallingSession, ToolError, ACCESS_PER_MIN};
use crate::cx::Cx;
use crate::domain::grants::{covers, expired_view, grant_view, hand_over, live, ssh_hold_s, visible_to, Handed};
use crate::domain::jobs::{self, Asked};
use crate::error::ApiError;
use crate::rules::ids::GrantId;
use crate::rules::params::Text;
use crate::rules::policy::{self, Verdict};
use crate::rules::targets::TargetScope;
use crate::rules::{ids, targets};
use crate::store::requests::{GrantRow, GrantStatus, RequestStatus};
use crate::store::{self, connectors::ConnectorRow};
use agentsky_wire::runner::{JobKind, JobSpec, SshAgentResult};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// How long a grant decided by a policy lasts.
pub const POLICY_GRANT_MS: i64 = 60 * 60_000;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestAccess {
    /// Target name, `provider:env` or `provider-env` (for example `supabase-prod`, `vercel:preview`),
    /// name plus env, or a bare provider. Matched case-insensitively in that order.
    pub target: Text<1, 200>,
    /// At least one of `read`, `write`, `deploy`, `delete`.
    #[schemars(length(min = 1))]
    pub scope: Vec<TargetScope>,
    /// 1–500 characters. Shown to the user word for word.
    pub reason: Text<1, 500>,
    /// The whole command the access is for (up to 2,000 characters), shown to the user as it is, with
    /// anything secret-looking masked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Text<1, 2_000>>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckGrant {
    /// From `request_access`.
    #[serde(rename = "grantId")]
    pub grant_id: GrantId,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GetCredential {
    /// An active grant.
    #[serde(rename = "grantId")]
    pub grant_id: GrantId,
}

/// What a policy or persistent grant decides for a request, if anything: `(status, decided_by,
/// existing grant)`.
pub async fn decide_access(
    cx: &Cx<'_>,
    workspace_id: &str,
    session_id: &str,
    c: &ConnectorRow,
    scopes: &[String],
) -> Result<Option<(GrantStatus, &'static str, Option<GrantRow>)>, ToolError> {
    let internal = |e| ToolError::from(ApiError::cause(e));
    let grants = store::requests::grants_for_session(cx.db(), workspace_id, session_id).await.map_err(internal)?;
    // A live grant that already covers the request answers it: this session's own, or a persistent one.
    if let Some(g) = grants.into_iter().find(|g| {
        (g.persistent || g.session_id == session_id)
            && g.connector_id == c.connector_id
            && live(g, cx.now_ms)
            && covers(g, scopes)
    }) {
        return Ok(Some((GrantStatus::Active, "persistent-grant", Some(g))));
    }
    let policies = store::connectors::policies(cx.db(), workspace_id, &c.connector_id).await.map_err(internal)?;
    Ok(match policy::decide(&policies, &c.connector_id, scopes) {
        Some(Verdict::Deny(level)) => Some((GrantStatus::Denied, level.decided_by(), None)),
        Some(Verdict::Allow(level)) => Some((GrantStatus::Active, level.decided_by(), None)),
        None => None,
    })
}

/// The scopes asked for, each once, in the canonical order so equal requests read the same. The
/// schema's `minItems` is kept here (serde has no rule for it).
fn check_scopes(scope: &[TargetScope]) -> Result<Vec<String>, ToolError> {
    if scope.is_empty() {
        return Err(ToolError::invalid("`scope` needs at least one of read, write, deploy, delete"));
    }
    let mut out: Vec<TargetScope> = scope.to_vec();
    out.sort_by_key(|s| TargetScope::WORDS.iter().position(|w| *w == s.as_str()));
    out.dedup();
    Ok(out.into_iter().map(|s| s.as_str().to_owned()).collect())
}

async fn connectors(a: &CallingSession<'_>) -> Result<Vec<ConnectorRow>, ToolError> {
    Ok(store::connectors::list(a.cx.db(), &a.me.workspace_id).await?)
}

/// A grant as it stands after a wait: re-read from D1, whatever woke the waiter.
async fn settled(a: &CallingSession<'_>, grant_id: &str) -> Result<Value, ToolError> {
    let g = store::requests::get_grant(a.cx.db(), grant_id).await?.ok_or_else(|| a.internal("grant vanished"))?;
    let req = match &g.request_id {
        Some(r) => store::requests::get_request(a.cx.db(), r).await?,
        None => None,
    };
    let pending = g.status == GrantStatus::Pending;
    let position = match &req {
        Some(req) if pending && req.status == RequestStatus::Open => {
            Some(store::requests::queue_position(a.cx.db(), &req.task_id, req.created_ms).await?)
        }
        _ => None,
    };
    // Expired is no stored status: a grant past its time, or one whose request nobody answered in time.
    let mut expired_by = (g.status == GrantStatus::Active && !live(&g, a.cx.now_ms)).then(|| g.decided_by.clone());
    if let Some(req) = req.as_ref().filter(|_| pending) {
        super::ended(req.clone())?;
        if req.status == RequestStatus::Expired {
            expired_by = Some(Some("expiry".into()));
        }
    }
    let mut view = match &expired_by {
        Some(by) => expired_view(&g, by.as_deref()),
        None => grant_view(&g, position),
    };
    // A person's reason for a denial reaches the agent.
    if let Some(reason) = req.as_ref().and_then(|r| r.answer.as_ref()).and_then(|ans| ans["reason"].as_str()) {
        if g.status == GrantStatus::Denied {
            view["reason"] = json!(reason);
        }
    }
    Ok(view)
}

/// request_access
pub async fn request_access(a: &CallingSession<'_>, p: RequestAccess) -> Result<Value, ToolError> {
    let scopes = check_scopes(&p.scope)?;
    a.bucket("access", ACCESS_PER_MIN, "access requests").await?;
    let all = connectors(a).await?;
    let c = match targets::find(&all, &p.target) {
        targets::Match::One(c) => c.clone(),
        targets::Match::Ambiguous(v) => {
            let names: Vec<String> = v.iter().map(|c| format!("{} ({}:{})", c.name, c.provider, c.env)).collect();
            return Err(ToolError::invalid(format!(
                "`{}` matches several targets: {}; name one",
                p.target,
                names.join(", ")
            )));
        }
        targets::Match::None => {
            return Err(ToolError::unknown(format!("no target `{}` in this project; call list_targets", p.target)))
        }
    };
    if !c.connected {
        return Err(ToolError::refused(format!("target `{}` is not connected yet; connect it in agentsky", c.name)));
    }
    if c.credentials_expire_ms.is_some_and(|e| e <= a.cx.now_ms) {
        return Err(ToolError::refused(format!(
            "the credentials of `{}` have expired; reconnect it in agentsky",
            c.name
        )));
    }
    let (cx, me) = (a.cx, &a.me);
    let joined = scopes.join(" ");
    // This session's grant on the target for these scopes; each use below fills in the decision.
    let base = store::requests::NewGrant {
        grant_id: "",
        workspace_id: &me.workspace_id,
        session_id: &me.session_id,
        task_id: &me.task_id,
        connector_id: &c.connector_id,
        scopes: &joined,
        status: GrantStatus::Pending,
        persistent: false,
        expires_ms: None,
        decided_by: None,
        request_id: None,
        now_ms: cx.now_ms,
    };
    if let Some((status, by, existing)) = decide_access(cx, &me.workspace_id, &me.session_id, &c, &scopes).await? {
        if let Some(g) = existing {
            let mut view = grant_view(&g, None);
            if g.persistent {
                view["decidedBy"] = json!(by);
            }
            return Ok(view);
        }
        let grant_id = ids::new_id("gr");
        let expires = (status == GrantStatus::Active).then_some(cx.now_ms + POLICY_GRANT_MS);
        let g = store::requests::NewGrant {
            grant_id: &grant_id,
            status,
            expires_ms: expires,
            decided_by: Some(by),
            ..base
        };
        // Every decision a policy makes is in the audit log, with the rule that made it.
        let verdict = if status == GrantStatus::Active { "allowed" } else { "denied" };
        let detail = format!("{joined}: {verdict} by {by}");
        let entry = store::audit::Entry {
            workspace_id: &me.workspace_id,
            action: "policy_decided",
            detail: &detail,
            session_id: Some(&me.session_id),
            grant_id: Some(&grant_id),
            connector_id: Some(&c.connector_id),
            actor_account_id: None,
            subject: None,
            now_ms: cx.now_ms,
        };
        cx.db().batch(vec![store::requests::insert_grant(&g), store::audit::insert(&entry)]).await?;
        return decided(a, &grant_id).await;
    }
    let command = p.command.as_deref().map(crate::rules::redact::redact);
    let mut payload = json!({ "target": c.name, "connector_id": c.connector_id, "provider": c.provider, "env": c.env,
        "scope": scopes, "reason": p.reason });
    if let Some(command) = command {
        payload["command"] = json!(command);
    }
    // Identical open requests of one session (same target and scopes) are one: a second call waits on the
    // first's request instead of asking the person twice.
    let dedupe_key = format!("{}:{joined}", c.connector_id);
    let (grant_id, request_id) = (ids::new_id("gr"), ids::new_id("req"));
    let g = store::requests::NewGrant { grant_id: &grant_id, request_id: Some(&request_id), ..base };
    let detail = format!("access: {}", crate::domain::requests::summary("access", &payload));
    let opened = crate::domain::requests::entry(
        &me.workspace_id,
        &me.session_id,
        &request_id,
        "request_opened",
        &detail,
        None,
        cx.now_ms,
    );
    cx.db()
        .batch(vec![
            store::requests::insert_request(
                &request_id,
                &me.workspace_id,
                &me.task_id,
                &me.session_id,
                "access",
                &payload,
                Some(&dedupe_key),
                None,
                cx.now_ms,
            ),
            store::requests::insert_grant_for_request(&g),
            store::audit::insert_if_changed(&opened),
        ])
        .await?;
    let (grant_id, request_id) = match store::requests::get_grant(cx.db(), &grant_id).await? {
        Some(_) => {
            a.changed().await;
            crate::domain::requests::opened(cx, me, &request_id, "access", &payload).await;
            (grant_id, request_id)
        }
        None => {
            let dup =
                store::requests::open_duplicate(cx.db(), &me.session_id, &dedupe_key).await?.ok_or_else(|| {
                    ToolError::new(-32003, "an identical request was just decided; call request_access again")
                })?;
            let g = store::requests::grant_for_request(cx.db(), &dup.request_id)
                .await?
                .ok_or_else(|| a.internal("grant missing"))?;
            (g.grant_id, dup.request_id)
        }
    };
    wait(a, &request_id).await?;
    decided(a, &grant_id).await
}

/// A request's answer once decided; an active grant on a target that mints per grant gets its credential
/// minted now (used, and reminted near its end, from then on), so a provider that refuses the connection
/// is said here, with "reconnect it", rather than at the first command.
async fn decided(a: &CallingSession<'_>, grant_id: &str) -> Result<Value, ToolError> {
    let view = settled(a, grant_id).await?;
    if view["status"] == "active" {
        let g = store::requests::get_grant(a.cx.db(), grant_id).await?.ok_or_else(|| a.internal("grant vanished"))?;
        let c = store::connectors::get(a.cx.db(), &g.connector_id).await?;
        if c.is_some_and(|c| c.scoped) {
            hand_over(a.cx, &g, &a.me.session_id).await?;
        }
    }
    Ok(view)
}

/// A grant this session may see: its own, or a persistent one of its workspace.
async fn visible(a: &CallingSession<'_>, grant_id: &str) -> Result<GrantRow, ToolError> {
    let unknown = || ToolError::unknown("unknown grant");
    if !ids::is_id(grant_id, "gr") {
        return Err(unknown());
    }
    let g = store::requests::get_grant(a.cx.db(), grant_id).await?.ok_or_else(unknown)?;
    if visible_to(&g, &a.me.session_id, &a.me.workspace_id) {
        Ok(g)
    } else {
        Err(unknown())
    }
}

/// check_grant
pub async fn check_grant(a: &CallingSession<'_>, p: CheckGrant) -> Result<Value, ToolError> {
    grant_status(a, &p.grant_id).await
}

/// A grant's status once it is decided (waiting while its request is open).
pub async fn grant_status(a: &CallingSession<'_>, grant_id: &str) -> Result<Value, ToolError> {
    let g = visible(a, grant_id).await?;
    if let (Some(r), GrantStatus::Pending) = (&g.request_id, g.status) {
        wait(a, r).await?;
    }
    settled(a, &g.grant_id).await
}

/// How long `get_credential` waits for the runner to load an SSH key.
const SSH_AGENT_WAIT_MS: i64 = 60_000;
/// get_credential
pub async fn get_credential(a: &CallingSession<'_>, p: GetCredential) -> Result<Value, ToolError> {
    let g = visible(a, &p.grant_id).await?;
    if !live(&g, a.cx.now_ms) {
        return Err(ToolError::refused(format!(
            "grant {} is not active: it was denied, has expired or was revoked",
            g.grant_id
        )));
    }
    let cred = hand_over(a.cx, &g, &a.me.session_id)
        .await?
        .ok_or_else(|| ToolError::refused("the target's credentials cannot be opened; reconnect it in agentsky"))?;
    let view = match cred {
        Handed::Env { env, scoped, expires_ms } => {
            json!({ "kind": "env", "env": env, "socketPath": null, "expiresAt": expires_ms, "scoped": scoped })
        }
        // The key goes to the runner's ssh-agent for this turn (never to the agent); the agent gets its socket.
        Handed::Ssh { .. } => {
            let ttl_s = u64::try_from(ssh_hold_s(&g, a.cx.now_ms)).ok();
            let spec = JobSpec { grant_id: Some(g.grant_id.clone()), ttl_s, ..JobSpec::default() };
            let asked = jobs::ask(a.cx, &a.me, JobKind::SshAgent, &spec, SSH_AGENT_WAIT_MS).await?;
            let socket = match asked.read::<SshAgentResult>() {
                Asked::Done(r) => r.socket_path.ok_or_else(|| {
                    let why = r.error.as_deref().unwrap_or("it answered without a socket");
                    ToolError::refused(format!("the runner could not load the SSH key into its ssh-agent: {why}"))
                })?,
                Asked::NoRunner => {
                    return Err(ToolError::refused(
                        "SSH credentials are served as an ssh-agent socket by the runner running this session, and no runner is running it now",
                    ))
                }
                Asked::NoAnswer(why) => return Err(ToolError::refused(format!("no ssh-agent socket: {why}"))),
            };
            json!({
                "kind": "ssh-agent", "env": { "SSH_AUTH_SOCK": socket }, "socketPath": socket,
                "expiresAt": g.expires_ms, "scoped": false,
            })
        }
    };
    store::audit::record(
        a.cx.db(),
        &store::audit::Entry::grant(&g, &a.me.session_id, "get_credential", "", a.cx.now_ms),
    )
    .await?;
    Ok(view)
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Target {
    pub id: String,
    pub name: String,
    pub provider: String,
    pub env: String,
    /// `unconnected`, `expired`, `persistent`, `open` or `locked`.
    pub lock_state: String,
    /// What this task's live grants on the target cover.
    pub scopes: Vec<String>,
    /// Whether a grant gets a credential narrowed to it rather than the connection's own, and why not.
    pub scoped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unscoped_reason: Option<String>,
}

/// list_targets
pub async fn list_targets(a: &CallingSession<'_>) -> Result<Vec<Target>, ToolError> {
    let all = connectors(a).await?;
    let grants = store::requests::grants_for_session(a.cx.db(), &a.me.workspace_id, &a.me.session_id).await?;
    let policies = store::connectors::all_policies(a.cx.db(), &a.me.workspace_id).await?;
    let now = a.cx.now_ms;
    Ok(all
        .into_iter()
        .map(|c| {
            let live_here: Vec<&GrantRow> =
                grants.iter().filter(|g| g.connector_id == c.connector_id && live(g, now)).collect();
            let always_allow =
                matches!(policy::decide(&policies, &c.connector_id, targets::SCOPES), Some(Verdict::Allow(_)));
            let lock_state = if !c.connected {
                "unconnected"
            } else if c.credentials_expire_ms.is_some_and(|e| e <= now) {
                "expired"
            } else if always_allow || live_here.iter().any(|g| g.persistent) {
                "persistent"
            } else if !live_here.is_empty() {
                "open"
            } else {
                "locked"
            };
            let mut scopes: Vec<String> = Vec::new();
            for g in &live_here {
                for s in g.scopes.split(' ') {
                    if !scopes.iter().any(|x| x == s) {
                        scopes.push(s.to_owned());
                    }
                }
            }
            scopes.sort_by_key(|s| targets::SCOPES.iter().position(|x| x == s));
            Target {
                id: c.connector_id,
                name: c.name,
                provider: c.provider,
                env: c.env,
                lock_state: lock_state.into(),
                scopes,
                scoped: c.scoped,
                unscoped_reason: c.unscoped_reason,
            }
        })
        .collect())
}
